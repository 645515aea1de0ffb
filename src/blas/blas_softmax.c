/* Float masked softmax: max shift and sum in double (scores may lie beyond the float range, see
 * nw_kernels), exponentials in float, written in place. */
#include <math.h>

#include "blas_kernels.h"
#include "mask.h"

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, double scale,
                        const float *srow, float *wrow, float *lse) {
    const nw_mask_row rm = nw_mask_row_get(mask, b, i, n);
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
    for (size_t j = rm.limit; j < n; j++)
        wrow[j] = 0.0f;
    const float inv = (float)(1.0 / sum); /* sum >= 1: the maximum contributes expf(0) */
    for (size_t j = 0; j < rm.limit; j++)
        wrow[j] *= inv;
    if (lse != NULL)
        *lse = (float)(rs.max + log(sum));
}

void nw_blas_softmax(const nw_mask *mask, size_t b, size_t i0, size_t rows, size_t n,
                     const float *s, size_t lds, const double *row_scale, float *w, size_t ldw,
                     float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, row_scale != NULL ? row_scale[r] : 1.0, s + r * lds,
                    w + r * ldw, lse ? lse + r : NULL);
}
