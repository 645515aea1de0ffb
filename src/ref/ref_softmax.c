/* Reference masked softmax: double precision, max-shifted. */
#include <math.h>

#include "mask.h"
#include "ref_kernels.h"

/* The value key j contributes to row i, or -INFINITY if it is masked. */
static double masked_value(const float *srow, const float *add, const unsigned char *keep,
                           size_t excluded, size_t j) {
    if (j == excluded || (keep != NULL && keep[j] == 0))
        return -INFINITY;
    double v = (double)srow[j];
    if (add != NULL)
        v += (double)add[j];
    return v;
}

static void softmax_row(const nw_mask *mask, size_t b, size_t i, size_t n, const float *srow,
                        float *wrow, float *lse) {
    const size_t limit = nw_mask_row_limit(mask, b, i, n);
    const size_t excluded = nw_mask_excluded_key(mask, i);
    const float *add = nw_mask_additive_row(mask, b, i);
    const unsigned char *keep = nw_mask_keep_row(mask, b, i);

    /* A key counts when it is not masked and not -inf; NaN counts, and so propagates. */
    size_t live = 0;
    double max = -INFINITY;
    for (size_t j = 0; j < limit; j++) {
        double v = masked_value(srow, add, keep, excluded, j);
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
    for (size_t j = 0; j < limit; j++) {
        double v = masked_value(srow, add, keep, excluded, j);
        if (v != -INFINITY)
            sum += exp(v - max);
    }
    for (size_t j = 0; j < n; j++) {
        double v = j < limit ? masked_value(srow, add, keep, excluded, j) : -INFINITY;
        wrow[j] = v == -INFINITY ? 0.0f : (float)(exp(v - max) / sum);
    }
    if (lse != NULL)
        *lse = (float)(max + log(sum));
}

void nw_ref_softmax(const nw_mask *mask, size_t b, size_t i0, size_t rows, size_t n,
                    const float *s, size_t lds, float *w, size_t ldw, float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(mask, b, i0 + r, n, s + r * lds, w + r * ldw, lse ? lse + r : NULL);
}
