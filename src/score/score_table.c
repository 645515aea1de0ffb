/* The public score kinds and their descriptors. */
#include "core/range.h"
#include "score.h"

size_t nw_score_no_doubles(size_t d) {
    (void)d;
    return 0;
}

void nw_score_plain_keys_info(const nw_score *score, size_t n, size_t d, const float *k,
                              size_t ldk, double *store, nw_keys_info *info) {
    (void)score, (void)store;
    info->max_abs = nw_max_abs(n, d, k, ldk);
    info->finite = info->max_abs >= 0.0;
    info->exponent = 0;
    info->centre = info->inv_h = NULL;
}

void nw_score_no_rows(const nw_score *score, const nw_keys_info *info, size_t m, size_t d,
                      const float *q, size_t ldq, float *qs) {
    (void)score, (void)info, (void)m, (void)d, (void)q, (void)ldq, (void)qs;
}

double nw_score_unit_scale(const nw_score *score, const nw_keys_info *info) {
    (void)score, (void)info;
    return 1.0;
}

const nw_score_desc *nw_score_desc_of(nwattn_score_kind kind) {
    switch (kind) {
    case NWATTN_SCORE_DOT:
        return &nw_score_dot;
    case NWATTN_SCORE_GAUSSIAN:
        return &nw_score_gaussian;
    case NWATTN_SCORE_LAPLACE:
        return &nw_score_laplace;
    case NWATTN_SCORE_COSINE:
        return &nw_score_cosine;
    }
    return NULL;
}
