/* The dot-product score: scale · q·k (scaled dot-product attention: scale = 1/sqrt(d)).
 * Fast scores are one sgemm; a row whose products would leave the float range is exact. */
#include <math.h>

#include "blas/blas_kernels.h"
#include "checks.h"
#include "core/range.h"
#include "score.h"

/* Up to this many keys the block multiplies by a transposed copy of them where the BLAS runs
 * small untransposed products without packing (OpenBLAS's Skylake-X kernels: about a third
 * faster than Q·K^T there), and the copy is one pass over keys that are in cache anyway.
 * Elsewhere the BLAS packs either way and the copy is lost time (12 % of a 4096^2 SDPA on
 * OpenBLAS's Haswell kernels, measured on a Zen 5): Q·K^T directly. */
#define DOT_COPY_MAX_KEYS ((size_t)256)

static int copies_keys(size_t n) { return n <= DOT_COPY_MAX_KEYS && nw_blas_small_products(); }

nwattn_status nw_scale_check(nw_call *call, const nwattn_score *score, size_t d, nw_score *out) {
    (void)d, (void)out;
    if (!isfinite(score->scale))
        return nw_fail(call->ctx, NWATTN_ERR_BAD_PARAMETER, "%s scale %g is not finite",
                       score->kind == NWATTN_SCORE_COSINE ? "cosine" : "dot-product",
                       (double)score->scale);
    return NWATTN_OK;
}

static double ref(const nw_score *score, size_t d, const float *q, const float *k) {
    double sum = 0.0;
    for (size_t l = 0; l < d; l++)
        sum += (double)q[l] * (double)k[l];
    return (double)score->scale * sum;
}

static int row_fast(const nw_score *score, size_t d, const float *q, const nw_keys_info *info) {
    const double max_q = nw_max_abs(1, d, q, d);
    return max_q >= 0.0 && nw_dot_in_range(max_q, info->max_abs, d, (double)score->scale);
}

static size_t prep_floats(size_t n, size_t d) {
    size_t floats;
    return !copies_keys(n) ? 0 : nw_mul(n, d, &floats) ? floats : SIZE_MAX;
}

static size_t row_floats(size_t m, size_t d) {
    (void)m, (void)d;
    return 0;
}

static void prepare(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                    size_t n, size_t d, const float *k, size_t ldk, float *kp) {
    (void)score, (void)info;
    if (copies_keys(n))
        simd->transpose(k, n, d, ldk, kp, n);
}

static void block(const nw_score *score, const nw_keys_info *info, const nw_simd *simd, size_t m,
                  size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                  const float *k, size_t ldk, const float *kp, size_t np, float *t,
                  size_t ldt) {
    (void)info, (void)simd, (void)qs;
    if (!copies_keys(np)) /* as prepare decided */
        nw_blas_sgemm(1, m, n, d, score->scale, q, ldq, k, ldk, 0.0f, t, ldt);
    else
        nw_blas_sgemm(0, m, n, d, score->scale, q, ldq, kp, np, 0.0f, t, ldt);
}

const nw_score_desc nw_score_dot = {
    .name = "dot",
    .check = nw_scale_check,
    .ref = ref,
    .info_doubles = nw_score_no_doubles,
    .keys_info = nw_score_plain_keys_info,
    .row_fast = row_fast,
    .prep_floats = prep_floats,
    .row_floats = row_floats,
    .prepare = prepare,
    .prepare_rows = nw_score_no_rows,
    .block = block,
    .scale = nw_score_unit_scale,
};
