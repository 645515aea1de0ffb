/* The laplace score: -|q - k| / h (Euclidean norm of the rescaled difference): the exponential-decay kernel.
 * The machinery is shared with the other distance score (score_distance.c). */
#include <math.h>

#include "score_distance.h"

static double ref(const nw_score *score, size_t d, const float *q, const float *k) {
    return -sqrt(nw_distance_ref_t(score, d, q, k));
}

static void block(const nw_score *score, const nw_keys_info *info, const nw_simd *simd, size_t m,
                  size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                  const float *k, size_t ldk, const float *kp, size_t np, float *t,
                  size_t ldt) {
    (void)score, (void)k, (void)ldk;
    nw_distance_block(0, info, simd, m, n, d, q, ldq, qs, kp, np, t, ldt);
}

static double scale(const nw_score *score, const nw_keys_info *info) {
    (void)score;
    return ldexp(1.0, info->exponent);
}

const nw_score_desc nw_score_laplace = {
    .name = "laplace",
    .check = nw_distance_check,
    .ref = ref,
    .info_doubles = nw_distance_info_doubles,
    .keys_info = nw_distance_keys_info,
    .row_fast = nw_distance_row_fast,
    .prep_floats = nw_distance_prep_floats,
    .row_floats = nw_distance_row_floats,
    .prepare = nw_distance_prepare,
    .prepare_rows = nw_distance_prepare_rows,
    .block = block,
    .scale = scale,
    .row_direct_max_d = 1,
    .dist1 = NW_DIST1_LAPLACE,
};
