/* Reference scores: each kind's definition in double (score/), stored as float times a
 * per-row power of two so that scores beyond the float range keep their differences. */
#include "core/range.h"
#include "ref_kernels.h"
#include "score/score.h"

double nw_ref_score(const nw_score *score, size_t d, const float *q, const float *k) {
    return score->desc->ref(score, d, q, k);
}

size_t nw_ref_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    (void)score, (void)m, (void)d;
    size_t bytes;
    return nw_mul(n, sizeof(double), &bytes) ? bytes : SIZE_MAX; /* one row of double scores */
}

void nw_ref_score_row(const nw_score *score, size_t n, size_t d, const float *q, const float *k,
                      size_t ldk, float *t, double *row_scale, double *x) {
    for (size_t j = 0; j < n; j++)
        x[j] = nw_ref_score(score, d, q, k + j * ldk);
    const double scale = nw_row_pow2_scale(n, x);
    for (size_t j = 0; j < n; j++)
        t[j] = (float)(x[j] / scale); /* exact: scale is a power of two */
    *row_scale = scale;
}

void nw_ref_scores(const nw_simd *simd, const nw_score *score, size_t m, size_t n, size_t d,
                   const float *q, size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                   double *row_scale, void *scratch) {
    (void)simd;
    for (size_t i = 0; i < m; i++)
        nw_ref_score_row(score, n, d, q + i * ldq, k, ldk, t + i * ldt, &row_scale[i], scratch);
}
