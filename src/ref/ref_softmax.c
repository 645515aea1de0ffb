/* Reference masked softmax: double precision, max-shifted. */
#include <math.h>

#include "mask.h"
#include "ref_kernels.h"

/* The value key j contributes to its row, or -INFINITY if it is masked. */
static double masked_value(const nw_mask_row *row, const float *srow, size_t j) {
    if (j >= row->limit || nw_mask_row_drops(row, j))
        return -INFINITY;
    double v = (double)srow[j];
    if (row->additive != NULL)
        v += (double)row->additive[j];
    return v;
}

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, const float *srow,
                        float *wrow, float *lse) {
    const nw_mask_row row = nw_mask_row_get(mask, b, i, n);

    /* A key counts when it is not masked and not -inf; NaN counts, and so propagates. */
    size_t live = 0;
    double max = -INFINITY;
    for (size_t j = 0; j < row.limit; j++) {
        double v = masked_value(&row, srow, j);
        if (v == -INFINITY)
            continue;
        live++;
        if (v > max)
            max = v;
    }
    if (live == 0) {
        for (size_t j = 0; j < n; j++)
            wrow[j] = 0.0f;
        if (lse != NULL)
            *lse = -INFINITY;
        return;
    }
    double sum = 0.0;
    for (size_t j = 0; j < row.limit; j++) {
        double v = masked_value(&row, srow, j);
        if (v != -INFINITY)
            sum += exp(v - max);
    }
    for (size_t j = 0; j < n; j++) {
        double v = masked_value(&row, srow, j);
        wrow[j] = v == -INFINITY ? 0.0f : (float)(exp(v - max) / sum);
    }
    if (lse != NULL)
        *lse = (float)(max + log(sum));
}

void nw_ref_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0, size_t rows,
                    size_t n, const float *s, size_t lds, float *w, size_t ldw, float *lse) {
    (void)simd; /* double precision throughout */
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, s + r * lds, w + r * ldw, lse ? lse + r : NULL);
}
