/* BLAS scores. Dot: S = scale · Q K^T in one sgemm. Gaussian and Laplace: the squared distance
 * |q'|^2 + |k'|^2 - 2 q'·k' with the product in sgemm, on q' = (q - c) / h and
 * k' = (k - c) / h where c is the mean key: centring removes most of the cancellation the
 * expansion suffers when the data sit far from the origin (x in [100, 101], say).
 *
 * Range: when the data or parameters would push a float product out of range (dot scores of
 * huge data, bandwidths of 1e-30 or 1e30), the operands are rescaled by powers of two and the
 * factor goes to row_scale (see nw_kernels), so no intermediate overflows or underflows.
 * Non-finite data take the reference formulas, so both backends agree on where NaN and Inf go. */
#include <math.h>

#include "blas_kernels.h"

/* Rescaled coordinates of magnitude 2^-DISTANCE_SAFE .. 2^DISTANCE_SAFE are used as they are:
 * their squares neither overflow nor underflow a float. */
#define DISTANCE_SAFE 40
/* Dot products whose largest term and result stay within 2^-DOT_SAFE .. 2^DOT_SAFE go straight
 * to sgemm. */
#define DOT_SAFE 100

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Scratch, in this order: Gaussian and Laplace: 1/h (d doubles), centre (d doubles), then floats
 * K' (n×d), Q' (m×d), |k'|^2 (n), |q'|^2 (m). Dot: K' (n×d) and Q' (m×d) floats, used only when
 * the data need rescaling. The reference fallback for non-finite data uses the same block. */
size_t nw_blas_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    if (score->kind == NW_SCORE_ZERO)
        return 0;
    size_t rows, floats, bytes;
    if (!nw_add(m, n, &rows) || !nw_mul(rows, d, &floats))
        return SIZE_MAX;
    size_t doubles = 0;
    if (score->kind != NWATTN_SCORE_DOT) {
        if (!nw_add(floats, rows, &floats) || !nw_mul(d, 2, &doubles))
            return SIZE_MAX;
    }
    /* floats rounded up to an even count keeps the total a multiple of 8 bytes */
    if (!nw_add(floats, floats & 1, &floats) || !nw_mul(floats, sizeof(float), &bytes) ||
        !nw_mul(doubles, sizeof(double), &doubles) || !nw_add(bytes, doubles, &bytes))
        return SIZE_MAX;
    size_t fallback = nw_reference_kernels.scores_workspace(score, m, n, d);
    return max_size(bytes, fallback);
}

/* Largest |x| over a rows×cols matrix, or -1 if an entry is not finite. */
static double max_abs(size_t rows, size_t cols, const float *x, size_t ldx) {
    float largest = 0.0f;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            float a = fabsf(x[i * ldx + j]);
            if (!isfinite(a))
                return -1.0;
            largest = a > largest ? a : largest;
        }
    return (double)largest;
}

static int in_range(double x, int exponent) {
    return x >= ldexp(1.0, -exponent) && x <= ldexp(1.0, exponent);
}

static void fill_row_scale(size_t m, double *row_scale, double value) {
    for (size_t i = 0; i < m; i++)
        row_scale[i] = value;
}

/* dst (rows×cols, pitch cols) = src · 2^-exponent: exact unless an entry underflows, and those
 * are below the rounding error of the largest product anyway. */
static void copy_scaled(size_t rows, size_t cols, const float *src, size_t ld, int exponent,
                        float *dst) {
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            dst[i * cols + j] = (float)ldexp((double)src[i * ld + j], -exponent);
}

static void dot_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                       double *row_scale, void *scratch, double max_q, double max_k) {
    const double product = max_q * max_k; /* the largest |q_j k_j| */
    const double largest = product * (double)d * fmax(1.0, fabs((double)score->scale));
    if (product == 0.0 || (in_range(product, DOT_SAFE) && largest <= ldexp(1.0, DOT_SAFE))) {
        nw_blas_sgemm(1, m, n, d, score->scale, q, ldq, k, ldk, 0.0f, t, ldt);
        fill_row_scale(m, row_scale, 1.0);
        return;
    }
    int eq, ek, es;
    (void)frexp(max_q, &eq); /* max_q < 2^eq, so |q · 2^-eq| < 1 */
    (void)frexp(max_k, &ek);
    const float mantissa = (float)frexp((double)score->scale, &es); /* exact */
    float *kp = scratch;
    float *qp = kp + n * d;
    copy_scaled(n, d, k, ldk, ek, kp);
    copy_scaled(m, d, q, ldq, eq, qp);
    nw_blas_sgemm(1, m, n, d, mantissa, qp, d, kp, d, 0.0f, t, ldt);
    fill_row_scale(m, row_scale, ldexp(1.0, eq + ek + es));
}

static void mean_key(size_t n, size_t d, const float *k, size_t ldk, double *centre) {
    for (size_t j = 0; j < d; j++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += (double)k[i * ldk + j];
        centre[j] = n > 0 ? sum / (double)n : 0.0;
    }
}

/* Largest |(x - centre) / h| over the rows. */
static double max_rescaled(size_t rows, size_t d, const float *x, size_t ldx,
                           const double *centre, const double *inv_h) {
    double largest = 0.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < d; j++)
            largest = fmax(largest, fabs(((double)x[i * ldx + j] - centre[j]) * inv_h[j]));
    return largest;
}

/* out = (x - centre) / h · 2^-exponent row by row (pitch d); norms = squared row lengths. */
static void rescale_rows(size_t rows, size_t d, const float *x, size_t ldx,
                         const double *centre, const double *inv_h, int exponent, float *out,
                         float *norms) {
    for (size_t i = 0; i < rows; i++) {
        double norm = 0.0;
        for (size_t j = 0; j < d; j++) {
            float u = (float)ldexp(((double)x[i * ldx + j] - centre[j]) * inv_h[j], -exponent);
            out[i * d + j] = u;
            norm += (double)u * (double)u;
        }
        norms[i] = (float)norm;
    }
}

static void distance_scores(const nw_score *score, size_t m, size_t n, size_t d,
                            const float *q, size_t ldq, const float *k, size_t ldk, float *t,
                            size_t ldt, double *row_scale, void *scratch) {
    double *inv_h = scratch;
    double *centre = inv_h + d;
    float *kp = (float *)(centre + d);
    float *qp = kp + n * d;
    float *knorm = qp + m * d;
    float *qnorm = knorm + n;

    for (size_t j = 0; j < d; j++)
        inv_h[j] = 1.0 / (double)(score->bandwidths ? score->bandwidths[j] : score->bandwidth);
    mean_key(n, d, k, ldk, centre);
    /* |q'|, |k'| are kept below 2^DISTANCE_SAFE (so |q'|^2 + |k'|^2 fits a float) and, when
     * they are tiny, brought up near 1 (so the squares do not underflow). */
    const double largest = fmax(max_rescaled(n, d, k, ldk, centre, inv_h),
                                max_rescaled(m, d, q, ldq, centre, inv_h));
    int exponent = 0;
    if (largest > 0.0 && !in_range(largest, DISTANCE_SAFE))
        (void)frexp(largest, &exponent);
    rescale_rows(n, d, k, ldk, centre, inv_h, exponent, kp, knorm);
    rescale_rows(m, d, q, ldq, centre, inv_h, exponent, qp, qnorm);

    nw_blas_sgemm(1, m, n, d, -2.0f, qp, d, kp, d, 0.0f, t, ldt); /* -2 q'·k' */
    const int gaussian = score->kind == NWATTN_SCORE_GAUSSIAN;
    for (size_t i = 0; i < m; i++) {
        float *row = t + i * ldt;
        for (size_t j = 0; j < n; j++) {
            float dist2 = qnorm[i] + knorm[j] + row[j];
            dist2 = dist2 > 0.0f ? dist2 : 0.0f; /* rounding can make it slightly negative */
            row[j] = gaussian ? -0.5f * dist2 : -sqrtf(dist2);
        }
    }
    /* Gaussian scores scale with the square of the coordinates, Laplace ones linearly. */
    fill_row_scale(m, row_scale, ldexp(1.0, gaussian ? 2 * exponent : exponent));
}

void nw_blas_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                    size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                    double *row_scale, void *scratch) {
    if (m == 0 || n == 0)
        return;
    if (score->kind == NW_SCORE_ZERO) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                t[i * ldt + j] = 0.0f;
        fill_row_scale(m, row_scale, 1.0);
        return;
    }
    const double max_q = max_abs(m, d, q, ldq), max_k = max_abs(n, d, k, ldk);
    if (max_q < 0.0 || max_k < 0.0) { /* NaN or Inf in the data */
        nw_reference_kernels.scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch);
        return;
    }
    if (score->kind == NWATTN_SCORE_DOT)
        dot_scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch, max_q, max_k);
    else
        distance_scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch);
}
