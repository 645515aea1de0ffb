/* Reference masked softmax: each row's values in double, through the row contract
 * (core/row_state.h), exponentials in double. */
#include "core/row_state.h"
#include "mask.h"
#include "ref_kernels.h"

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, double scale,
                        const float *srow, float *wrow, float *lse) {
    const nw_mask_row rm = nw_mask_row_get(mask, b, i, n);
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < rm.limit; j++)
        nw_tile_see(&tile, nw_mask_value(&rm, scale, srow, j));
    nw_row row = nw_row_empty();
    (void)nw_row_rescale(&row, &tile);
    double sum = 0.0;
    for (size_t j = 0; j < rm.limit; j++)
        sum += nw_row_factor(&row, nw_mask_value(&rm, scale, srow, j));
    nw_row_add(&row, sum);
    /* w may be s: each w[j] is written after s[j] was read */
    for (size_t j = 0; j < n; j++)
        wrow[j] = (float)nw_row_weight(&row, nw_mask_value(&rm, scale, srow, j));
    if (lse != NULL)
        *lse = (float)nw_row_lse(&row);
}

void nw_ref_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                    size_t rows, size_t n, const float *s, size_t lds,
                    const double *row_scale, float *w, size_t ldw, float *lse) {
    (void)simd; /* double precision throughout */
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, row_scale != NULL ? row_scale[r] : 1.0, s + r * lds,
                    w + r * ldw, lse ? lse + r : NULL);
}
