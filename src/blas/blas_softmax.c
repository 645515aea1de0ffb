/* Float masked softmax through the row contract (core/row_state.h): the common row (no keep
 * bytes, no excluded key, no score scale or additive mask, a finite maximum, no NaN) in the
 * vector kernels' passes; every other row forms score + additive in double (scores may lie
 * beyond the float range, see nw_kernels) and takes float exponentials of value - max. */
#include <string.h>

#include "blas_kernels.h"
#include "core/row_state.h"
#include "mask.h"

/* w = e / L over the live keys (e already in wrow), zeros beyond them. */
static void normalise(const nw_mask_row *rm, size_t n, float *wrow, const nw_row *row,
                      float *lse) {
    for (size_t j = rm->limit; j < n; j++)
        wrow[j] = 0.0f;
    const float inv = (float)nw_row_inverse(row);
    for (size_t j = 0; j < rm->limit; j++)
        wrow[j] *= inv;
    if (lse != NULL)
        *lse = (float)nw_row_lse(row);
}

/* The common row, or 0 if it is not one. */
static int common_row(const nw_simd *simd, const nw_mask_row *rm, size_t n, const float *srow,
                      float *wrow, float *lse) {
    if (rm->keep != NULL || rm->excluded < rm->limit || rm->limit == 0 || rm->additive != NULL)
        return 0;
    /* A finite maximum means a live key and no +inf (max ignores NaN, +inf would win), and
     * x·x is NaN exactly when some x is NaN. */
    const float max = simd->max(srow, rm->limit);
    if (!isfinite(max) || isnan(simd->dot(srow, srow, rm->limit)))
        return 0;
    if (wrow != srow)
        memcpy(wrow, srow, rm->limit * sizeof(float));
    nw_row row = nw_row_empty();
    (void)nw_row_update_fast(&row, simd, wrow, rm->limit, max, 1);
    normalise(rm, n, wrow, &row, lse);
    return 1;
}

static void softmax_row(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i, size_t n,
                        double scale, const float *srow, float *wrow, float *lse) {
    const nw_mask_row rm = nw_mask_row_get(mask, b, i, n);
    if (scale == 1.0 && common_row(simd, &rm, n, srow, wrow, lse))
        return;
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < rm.limit; j++)
        nw_tile_see(&tile, nw_mask_value(&rm, scale, srow, j));
    nw_row row = nw_row_empty();
    (void)nw_row_rescale(&row, &tile);
    if (isnan(row.sum)) { /* live weights NaN, masked ones 0 */
        for (size_t j = 0; j < n; j++)
            wrow[j] = (float)nw_row_weight(&row, nw_mask_value(&rm, scale, srow, j));
        if (lse != NULL)
            *lse = NAN;
        return;
    }
    /* w may be s: each w[j] is written after s[j] was read */
    double sum = 0.0;
    for (size_t j = 0; j < rm.limit; j++) {
        const float e = nw_row_factorf(&row, nw_mask_value(&rm, scale, srow, j));
        wrow[j] = e;
        sum += (double)e;
    }
    nw_row_add(&row, sum);
    normalise(&rm, n, wrow, &row, lse);
}

void nw_blas_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                     size_t rows, size_t n, const float *s, size_t lds,
                     const double *row_scale, float *w, size_t ldw, float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(simd, mask, b, i0 + r, n, row_scale != NULL ? row_scale[r] : 1.0, s + r * lds,
                    w + r * ldw, lse ? lse + r : NULL);
}
