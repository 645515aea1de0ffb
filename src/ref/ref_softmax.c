/* Reference masked softmax: double precision, max-shifted. */
#include <math.h>

#include "mask.h"
#include "ref_kernels.h"

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, double scale,
                        const float *srow, float *wrow, float *lse) {
    const nw_mask_row rm = nw_mask_row_get(mask, b, i, n);
    const nw_row_scan rs = nw_row_scan_of(&rm, scale, srow);
    if (nw_softmax_special_row(&rm, &rs, scale, n, srow, wrow, lse))
        return;
    double sum = 0.0;
    for (size_t j = 0; j < rm.limit; j++)
        sum += exp(nw_row_value(&rm, scale, srow, j) - rs.max); /* masked: exp(-inf) = 0 */
    const double lse_value = rs.max + log(sum);
    for (size_t j = 0; j < n; j++)
        wrow[j] = (float)(exp(nw_row_value(&rm, scale, srow, j) - rs.max) / sum);
    if (lse != NULL)
        *lse = (float)lse_value;
}

void nw_ref_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                    size_t rows, size_t n, const float *s, size_t lds,
                    const double *row_scale, float *w, size_t ldw, float *lse) {
    (void)simd; /* double precision throughout */
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, row_scale != NULL ? row_scale[r] : 1.0, s + r * lds,
                    w + r * ldw, lse ? lse + r : NULL);
}
