/* Float masked softmax: max shift, exponentials written in place, sum accumulated in double. */
#include <math.h>

#include "blas_kernels.h"
#include "mask.h"

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, const float *srow,
                        float *wrow, float *lse) {
    const nw_mask_row row = nw_mask_row_get(mask, b, i, n);
    const size_t limit = row.limit;
    const float *add = row.additive;

    /* Pass 1: w = s + additive, -inf where masked; the maximum; whether any key is live.
     * NaN is live and propagates through the sum, as it should. */
    size_t live = 0;
    float max = -INFINITY;
    for (size_t j = 0; j < limit; j++) {
        float v = nw_mask_row_drops(&row, j) ? -INFINITY : srow[j] + (add ? add[j] : 0.0f);
        wrow[j] = v;
        if (v != -INFINITY) {
            live++;
            max = v > max ? v : max;
        }
    }
    for (size_t j = limit; j < n; j++)
        wrow[j] = 0.0f;
    if (live == 0) {
        for (size_t j = 0; j < limit; j++)
            wrow[j] = 0.0f;
        if (lse != NULL)
            *lse = -INFINITY;
        return;
    }
    /* Pass 2: exponentials and their sum; masked keys stay exactly 0 even if max is not
     * finite (a row of NaN). */
    double sum = 0.0;
    for (size_t j = 0; j < limit; j++) {
        float e = wrow[j] == -INFINITY ? 0.0f : expf(wrow[j] - max);
        wrow[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    for (size_t j = 0; j < limit; j++)
        wrow[j] *= inv;
    if (lse != NULL)
        *lse = max + (float)log(sum);
}

void nw_blas_softmax(const nw_mask *mask, size_t b, size_t i0, size_t rows, size_t n,
                     const float *s, size_t lds, float *w, size_t ldw, float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, s + r * lds, w + r * ldw, lse ? lse + r : NULL);
}
