/* BLAS scores. Dot: S = scale · Q K^T in one sgemm. Gaussian and Laplace: the centred distance
 * expansion of blas_distance.h, with the product in sgemm; with d == 1 (q' - k')^2 directly.
 *
 * Range: when the data or parameters would push a float product out of range (dot scores of
 * huge data, bandwidths of 1e-30 or 1e30), the operands are rescaled by powers of two and the
 * factor goes to row_scale (see nw_kernels), so no intermediate overflows or underflows.
 * Non-finite data take the reference formulas, so both backends agree on where NaN and Inf go. */
#include <math.h>

#include "blas_distance.h"
#include "blas_kernels.h"

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Scratch, in this order: Gaussian and Laplace: 1/h (d doubles), centre (d doubles), then floats
 * K' (n×d), Q' (m×d), |k'|^2 (n), |q'|^2 (m). Dot: K' (n×d) and Q' (m×d) floats, used only when
 * the data need rescaling. The reference fallback for non-finite data uses the same block. */
size_t nw_blas_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    if (score->kind == NW_SCORE_ZERO)
        return 0;
    size_t rows, floats, bytes, doubles = 0;
    if (!nw_add(m, n, &rows) || !nw_mul(rows, d, &floats))
        return SIZE_MAX;
    if (score->kind != NWATTN_SCORE_DOT &&
        (!nw_add(floats, rows, &floats) || !nw_mul(d, 2 * sizeof(double), &doubles)))
        return SIZE_MAX;
    /* floats rounded up to an even count keep the total a multiple of 8 bytes */
    if (!nw_add(floats, floats & 1, &floats) || !nw_mul(floats, sizeof(float), &bytes) ||
        !nw_add(bytes, doubles, &bytes))
        return SIZE_MAX;
    return max_size(bytes, nw_reference_kernels.scores_workspace(score, m, n, d));
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
    if (nw_dot_in_range(max_q, max_k, d, score->scale)) {
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

static void distance_scores(const nw_score *score, size_t m, size_t n, size_t d,
                            const float *q, size_t ldq, const float *k, size_t ldk, float *t,
                            size_t ldt, double *row_scale, void *scratch) {
    double *inv_h = scratch;
    double *centre = inv_h + d;
    float *kp = (float *)(centre + d);
    float *qp = kp + n * d;
    float *knorm = qp + m * d;
    float *qnorm = knorm + n;

    nw_inverse_bandwidths(score, d, inv_h);
    nw_mean_key(n, d, k, ldk, centre);
    const int exponent = nw_distance_exponent(fmax(nw_max_rescaled(n, d, k, ldk, centre, inv_h),
                                                   nw_max_rescaled(m, d, q, ldq, centre, inv_h)));
    nw_rescale_rows(n, d, k, ldk, centre, inv_h, exponent, kp, knorm);
    nw_rescale_rows(m, d, q, ldq, centre, inv_h, exponent, qp, qnorm);
    if (d == 1) {
        nw_distance_scores_1d(score->kind, m, n, qp, kp, t, ldt);
    } else {
        nw_blas_sgemm(1, m, n, d, -2.0f, qp, d, kp, d, 0.0f, t, ldt); /* -2 q'·k' */
        nw_distance_scores(score->kind, m, n, qnorm, knorm, t, ldt);
    }
    fill_row_scale(m, row_scale, nw_distance_scale(score->kind, exponent));
}

void nw_blas_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                    size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                    double *row_scale, void *scratch) {
    if (m == 0)
        return;
    if (n == 0) { /* no scores, but the softmax still reads each row's scale */
        fill_row_scale(m, row_scale, 1.0);
        return;
    }
    if (score->kind == NW_SCORE_ZERO) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                t[i * ldt + j] = 0.0f;
        fill_row_scale(m, row_scale, 1.0);
        return;
    }
    const double max_q = nw_max_abs(m, d, q, ldq), max_k = nw_max_abs(n, d, k, ldk);
    if (max_q < 0.0 || max_k < 0.0) { /* NaN or Inf in the data */
        nw_reference_kernels.scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch);
        return;
    }
    if (score->kind == NWATTN_SCORE_DOT)
        dot_scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch, max_q, max_k);
    else
        distance_scores(score, m, n, d, q, ldq, k, ldk, t, ldt, row_scale, scratch);
}
