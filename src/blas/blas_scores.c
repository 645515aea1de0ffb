/* BLAS scores. Dot: S = scale · Q K^T in one sgemm. Gaussian and Laplace with d == 1: (q - k)/h
 * directly (a rank-1 sgemm would only lose accuracy). With d > 1: the centred distance
 * expansion of blas_distance.h, with the product in sgemm. */
#include "blas_distance.h"
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
    if (d == 1) {
        float inv_h;
        nw_inverse_bandwidths(score, 1, &inv_h);
        nw_distance_scores_1d(score->kind, m, n, q, ldq, k, ldk, inv_h, s, lds);
        return;
    }
    float *centre = scratch;
    float *inv_h = centre + d;
    float *kp = inv_h + d;
    float *qp = kp + n * d;
    float *knorm = qp + m * d;
    float *qnorm = knorm + n;

    nw_inverse_bandwidths(score, d, inv_h);
    nw_mean_key(n, d, k, ldk, centre);
    nw_rescale_rows(n, d, k, ldk, centre, inv_h, kp, knorm);
    nw_rescale_rows(m, d, q, ldq, centre, inv_h, qp, qnorm);
    nw_blas_sgemm(1, m, n, d, -2.0f, qp, d, kp, d, 0.0f, s, lds); /* -2 q'·k' */
    nw_distance_scores(score->kind, m, n, qnorm, knorm, s, lds);
}
