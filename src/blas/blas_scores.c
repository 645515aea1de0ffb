/* BLAS scores. Dot: S = scale · Q K^T in one sgemm. Gaussian and Laplace with d == 1: (q - k)/h
 * directly (a rank-1 sgemm would only lose accuracy). With d > 1: the squared distance
 * |q'|^2 + |k'|^2 - 2 q'·k' with the product in sgemm, on q' = (q - c) / h and
 * k' = (k - c) / h where c is the mean key: centring removes most of the cancellation the
 * expansion suffers when the data sit far from the origin (x in [100, 101], say). */
#include <math.h>

#include "blas_kernels.h"

/* Scratch layout for the distance scores, in floats: centre (d), 1/h (d), K' (n×d), Q' (m×d),
 * |k'|^2 (n), |q'|^2 (m). */
size_t nw_blas_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    if (score->kind == NWATTN_SCORE_DOT || score->kind == NW_SCORE_ZERO)
        return 0;
    size_t rows, floats, bytes;
    if (!nw_add(m, n, &rows) || !nw_add(rows, 2, &rows) || !nw_mul(rows, d, &floats) ||
        !nw_add(floats, m, &floats) || !nw_add(floats, n, &floats) ||
        !nw_mul(floats, sizeof(float), &bytes))
        return SIZE_MAX; /* the allocation fails and is reported */
    return bytes;
}

static void mean_key(size_t n, size_t d, const float *k, size_t ldk, float *centre) {
    for (size_t j = 0; j < d; j++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += (double)k[i * ldk + j];
        centre[j] = n > 0 ? (float)(sum / (double)n) : 0.0f;
    }
}

/* out = (x - centre) · inv_h row by row (pitch d); norms = squared row lengths. */
static void rescale_rows(size_t rows, size_t d, const float *x, size_t ldx, const float *centre,
                         const float *inv_h, float *out, float *norms) {
    for (size_t i = 0; i < rows; i++) {
        double norm = 0.0;
        for (size_t j = 0; j < d; j++) {
            float u = (x[i * ldx + j] - centre[j]) * inv_h[j];
            out[i * d + j] = u;
            norm += (double)u * (double)u;
        }
        norms[i] = (float)norm;
    }
}

void nw_blas_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                    size_t ldq, const float *k, size_t ldk, float *s, size_t lds, void *scratch) {
    if (m == 0 || n == 0)
        return;
    if (score->kind == NWATTN_SCORE_DOT) {
        nw_blas_sgemm(1, m, n, d, score->scale, q, ldq, k, ldk, 0.0f, s, lds);
        return;
    }
    if (score->kind == NW_SCORE_ZERO) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                s[i * lds + j] = 0.0f;
        return;
    }
    const int gaussian = score->kind == NWATTN_SCORE_GAUSSIAN;
    if (d == 1) { /* a rank-1 product gains nothing from sgemm: (q - k) / h directly is exact */
        const float inv_h = (float)(1.0 / (double)(score->bandwidths ? score->bandwidths[0]
                                                                      : score->bandwidth));
        for (size_t i = 0; i < m; i++) {
            float *row = s + i * lds;
            const float qi = q[i * ldq];
            for (size_t j = 0; j < n; j++) {
                float u = (qi - k[j * ldk]) * inv_h;
                row[j] = gaussian ? -0.5f * u * u : -fabsf(u);
            }
        }
        return;
    }
    float *centre = scratch;
    float *inv_h = centre + d;
    float *kp = inv_h + d;
    float *qp = kp + n * d;
    float *knorm = qp + m * d;
    float *qnorm = knorm + n;

    for (size_t j = 0; j < d; j++)
        inv_h[j] = (float)(1.0 / (double)(score->bandwidths ? score->bandwidths[j]
                                                            : score->bandwidth));
    mean_key(n, d, k, ldk, centre);
    rescale_rows(n, d, k, ldk, centre, inv_h, kp, knorm);
    rescale_rows(m, d, q, ldq, centre, inv_h, qp, qnorm);

    nw_blas_sgemm(1, m, n, d, -2.0f, qp, d, kp, d, 0.0f, s, lds); /* -2 q'·k' */
    for (size_t i = 0; i < m; i++) {
        float *row = s + i * lds;
        for (size_t j = 0; j < n; j++) {
            float dist2 = qnorm[i] + knorm[j] + row[j];
            dist2 = dist2 > 0.0f ? dist2 : 0.0f; /* rounding can make it slightly negative */
            row[j] = gaussian ? -0.5f * dist2 : -sqrtf(dist2);
        }
    }
}
