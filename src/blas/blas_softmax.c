/* Float masked softmax: max shift, exponentials written in place, sum accumulated in double.
 * Rows with a score scale or an additive mask form score + additive in double (scores may lie
 * beyond the float range, see nw_kernels); plain rows stay in float, which gives the same bits:
 * both round the exact difference s - max once. */
#include <math.h>
#include <string.h>

#include "blas_kernels.h"
#include "mask.h"

/* Pass 2 and 3 of an ordinary row: w = exp(value - max) / sum over the live keys. */
static void normalise(const nw_mask_row *rm, size_t n, float *wrow, double sum, double max,
                      float *lse) {
    for (size_t j = rm->limit; j < n; j++)
        wrow[j] = 0.0f;
    const float inv = (float)(1.0 / sum); /* sum >= 1: the maximum contributes expf(0) */
    for (size_t j = 0; j < rm->limit; j++)
        wrow[j] *= inv;
    if (lse != NULL)
        *lse = (float)(max + log(sum));
}

/* Pass 1 of a float row: live keys, +inf and NaN among them, the largest finite value. Keys
 * masked by position are not visited; the keep bytes and leave-one-out only when present, so
 * that an unmasked row runs a branch-free loop. */
static nw_row_scan scan_plain(const nw_mask_row *rm, const float *srow) {
    nw_row_scan rs = {0, 0, 0, -INFINITY};
    float max = -INFINITY;
    size_t neg_inf = 0, pos_inf = 0, dropped = 0;
    int nan = 0;
    const int drops = rm->keep != NULL || rm->excluded < rm->limit;
    for (size_t j = 0; j < rm->limit; j++) {
        float v = srow[j];
        if (drops && nw_mask_row_drops(rm, j)) {
            dropped++;
            continue;
        }
        neg_inf += v == -INFINITY;
        pos_inf += v == INFINITY;
        nan |= v != v;
        max = v > max && v != INFINITY ? v : max;
    }
    rs.live = rm->limit - dropped - neg_inf;
    rs.pos_inf = pos_inf;
    rs.nan = nan;
    rs.max = (double)max;
    return rs;
}

/* A row without scale or additive mask, in float. Without keep bytes or an excluded key the
 * exponentials come from the context's vector kernels (simd.h): s - max rounded once, then
 * exp within 2 ulp; -inf scores give exactly 0. */
static void plain_row(const nw_simd *simd, const nw_mask_row *rm, size_t n, const float *srow,
                      float *wrow, float *lse) {
    if (rm->keep == NULL && rm->excluded >= rm->limit && rm->limit > 0) {
        /* The common row, in vector passes: a finite maximum means a live key and no +inf
         * (max ignores NaN, +inf would win), and x·x is NaN exactly when some x is NaN. */
        const float max = simd->max(srow, rm->limit);
        if (isfinite(max) && !isnan(simd->dot(srow, srow, rm->limit))) {
            if (wrow != srow)
                memcpy(wrow, srow, rm->limit * sizeof(float));
            const double sum = simd->exp_sum(wrow, rm->limit, max);
            normalise(rm, n, wrow, sum, (double)max, lse);
            return;
        }
    }
    const nw_row_scan rs = scan_plain(rm, srow);
    if (nw_softmax_special_row(rm, &rs, 1.0, n, srow, wrow, lse))
        return;
    const float max = (float)rs.max; /* finite here */
    const int drops = rm->keep != NULL || rm->excluded < rm->limit;
    if (!drops) {
        if (wrow != srow)
            memcpy(wrow, srow, rm->limit * sizeof(float));
        const double sum = simd->exp_sum(wrow, rm->limit, max);
        normalise(rm, n, wrow, sum, rs.max, lse);
        return;
    }
    double sum = 0.0;
    for (size_t j = 0; j < rm->limit; j++) {
        /* -inf scores give expf(-inf) = 0 by themselves */
        const float e = drops && nw_mask_row_drops(rm, j) ? 0.0f : expf(srow[j] - max);
        wrow[j] = e;
        sum += (double)e;
    }
    normalise(rm, n, wrow, sum, rs.max, lse);
}

static void softmax_row(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i, size_t n,
                        double scale, const float *srow, float *wrow, float *lse) {
    const nw_mask_row rm = nw_mask_row_get(mask, b, i, n);
    if (scale == 1.0 && rm.additive == NULL) {
        plain_row(simd, &rm, n, srow, wrow, lse);
        return;
    }
    const nw_row_scan rs = nw_row_scan_of(&rm, scale, srow);
    if (nw_softmax_special_row(&rm, &rs, scale, n, srow, wrow, lse))
        return;
    /* v - max <= 0; below -FLT_MAX it rounds to -inf, whose exponential is the right 0. */
    double sum = 0.0;
    for (size_t j = 0; j < rm.limit; j++) {
        const double v = nw_row_value(&rm, scale, srow, j);
        const float e = v == -INFINITY ? 0.0f : expf((float)(v - rs.max));
        wrow[j] = e;
        sum += (double)e;
    }
    normalise(&rm, n, wrow, sum, rs.max, lse);
}

void nw_blas_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                     size_t rows, size_t n, const float *s, size_t lds,
                     const double *row_scale, float *w, size_t ldw, float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(simd, mask, b, i0 + r, n, row_scale != NULL ? row_scale[r] : 1.0, s + r * lds,
                    w + r * ldw, lse ? lse + r : NULL);
}
