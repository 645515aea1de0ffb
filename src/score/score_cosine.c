/* The cosine score: scale · q·k / (|q| |k|), the cosine attention of Swin Transformer v2 and of
 * retrieval. A query or key of norm zero has no direction: its scores are 0 (it faces every
 * key alike). Fast scores normalise the rows (norms in double) and take one sgemm; they stay
 * in range for any |scale| <= 2^100, beyond which rows are exact. */
#include <math.h>

#include "blas/blas_kernels.h"
#include "checks.h"
#include "core/range.h"
#include "score.h"

static double ref(const nw_score *score, size_t d, const float *q, const float *k) {
    double qq = 0.0, kk = 0.0, qk = 0.0;
    for (size_t l = 0; l < d; l++) {
        qq += (double)q[l] * (double)q[l];
        kk += (double)k[l] * (double)k[l];
        qk += (double)q[l] * (double)k[l];
    }
    if (qq == 0.0 || kk == 0.0)
        return 0.0;
    return (double)score->scale * (qk / (sqrt(qq) * sqrt(kk)));
}

static int row_fast(const nw_score *score, size_t d, const float *q, const nw_keys_info *info) {
    (void)info;
    return nw_max_abs(1, d, q, d) >= 0.0 && fabs((double)score->scale) <= ldexp(1.0, NW_DOT_SAFE);
}

static size_t floats_of(size_t rows, size_t d) {
    size_t floats;
    return nw_mul(rows, d, &floats) ? floats : SIZE_MAX;
}

/* out[l·pitch] = x[l] / |x| (0 for a zero row), the norm in double. */
static void normalise(size_t d, const float *x, float *out, size_t pitch) {
    double norm = 0.0;
    for (size_t l = 0; l < d; l++)
        norm += (double)x[l] * (double)x[l];
    const double inv = norm > 0.0 ? 1.0 / sqrt(norm) : 0.0;
    for (size_t l = 0; l < d; l++)
        out[l * pitch] = (float)((double)x[l] * inv);
}

static void prepare(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                    size_t n, size_t d, const float *k, size_t ldk, float *kp) {
    (void)score, (void)info, (void)simd;
    for (size_t j = 0; j < n; j++) /* normalised keys, transposed: d × n */
        normalise(d, k + j * ldk, kp + j, n);
}

static void prepare_rows(const nw_score *score, const nw_keys_info *info, size_t m, size_t d,
                         const float *q, size_t ldq, float *qs) {
    (void)score, (void)info;
    for (size_t i = 0; i < m; i++) /* normalised rows, pitch d */
        normalise(d, q + i * ldq, qs + i * d, 1);
}

static void block(const nw_score *score, const nw_keys_info *info, const nw_simd *simd, size_t m,
                  size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                  const float *k, size_t ldk, const float *kp, size_t np, float *t,
                  size_t ldt) {
    (void)info, (void)simd, (void)q, (void)ldq, (void)k, (void)ldk;
    nw_blas_sgemm(0, m, n, d, score->scale, qs, d, kp, np, 0.0f, t, ldt);
}

const nw_score_desc nw_score_cosine = {
    .name = "cosine",
    .check = nw_scale_check,
    .ref = ref,
    .info_doubles = nw_score_no_doubles,
    .keys_info = nw_score_plain_keys_info,
    .row_fast = row_fast,
    .prep_floats = floats_of,
    .row_floats = floats_of,
    .prepare = prepare,
    .prepare_rows = prepare_rows,
    .block = block,
    .scale = nw_score_unit_scale,
};
