/* The constant score 0 of average pooling: uniform weights over the live keys. Internal: no
 * caller names it (nwattn_average_pool uses it). */
#include <string.h>

#include "score.h"

static double ref(const nw_score *score, size_t d, const float *q, const float *k) {
    (void)score, (void)d, (void)q, (void)k;
    return 0.0;
}

static size_t none(size_t rows, size_t d) {
    (void)rows, (void)d;
    return 0;
}

static void keys_info(const nw_score *score, size_t n, size_t d, const float *k, size_t ldk,
                      double *store, nw_keys_info *info) {
    (void)score, (void)n, (void)d, (void)k, (void)ldk, (void)store;
    info->finite = 1; /* the data are never looked at */
    info->max_abs = 0.0;
    info->exponent = 0;
    info->centre = info->inv_h = NULL;
}

static int row_fast(const nw_score *score, size_t d, const float *q, const nw_keys_info *info) {
    (void)score, (void)d, (void)q, (void)info;
    return 1;
}

static void prepare(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                    size_t n, size_t d, const float *k, size_t ldk, float *kp) {
    (void)score, (void)info, (void)simd, (void)n, (void)d, (void)k, (void)ldk, (void)kp;
}

static void block(const nw_score *score, const nw_keys_info *info, const nw_simd *simd, size_t m,
                  size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                  const float *k, size_t ldk, const float *kp, size_t np, float *t,
                  size_t ldt) {
    (void)score, (void)info, (void)simd, (void)d, (void)q, (void)ldq, (void)qs, (void)k,
        (void)ldk, (void)kp, (void)np;
    for (size_t i = 0; i < m; i++)
        memset(t + i * ldt, 0, n * sizeof(float));
}

const nw_score_desc nw_score_uniform = {
    .name = "uniform",
    .ref = ref,
    .info_doubles = nw_score_no_doubles,
    .keys_info = keys_info,
    .row_fast = row_fast,
    .prep_floats = none,
    .row_floats = none,
    .prepare = prepare,
    .prepare_rows = nw_score_no_rows,
    .block = block,
    .scale = nw_score_unit_scale,
    .constant = 1,
};
