/* Float masked softmax: max shift, exponentials written in place by the context's vector
 * kernels (simd.h), sum accumulated in double. */
#include <math.h>
#include <string.h>

#include "blas_kernels.h"
#include "mask.h"

/* A row that only a limit masks (no keep bytes, no additive values, no excluded key before the
 * limit): the vector kernels take it as it is. Returns 0 if the row needs the general path (a
 * row without any finite-or-+inf entry, which may be all NaN). */
static int plain_row(const nw_simd *simd, size_t limit, size_t n, const float *srow, float *wrow,
                     float *lse) {
    const float max = simd->max(srow, limit);
    if (max == -INFINITY)
        return 0;
    if (wrow != srow)
        memcpy(wrow, srow, limit * sizeof(float));
    const double sum = simd->exp_sum(wrow, limit, max);
    const float inv = (float)(1.0 / sum);
    for (size_t j = 0; j < limit; j++)
        wrow[j] *= inv;
    for (size_t j = limit; j < n; j++)
        wrow[j] = 0.0f;
    if (lse != NULL)
        *lse = max + (float)log(sum);
    return 1;
}

static void softmax_row(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i, size_t n,
                        const float *srow, float *wrow, float *lse) {
    const nw_mask_row row = nw_mask_row_get(mask, b, i, n);
    const size_t limit = row.limit;
    const float *add = row.additive;
    if (row.keep == NULL && add == NULL && row.excluded >= limit &&
        plain_row(simd, limit, n, srow, wrow, lse))
        return;

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
    /* Pass 2: exponentials and their sum. Masked keys hold -inf, whose exponential is exactly
     * 0 even if max is not finite (a row of NaN). */
    double sum;
    if (max == -INFINITY) { /* only NaN is live: exp(NaN) is NaN, exp(-inf - -inf) too */
        sum = 0.0;
        for (size_t j = 0; j < limit; j++) {
            wrow[j] = wrow[j] == -INFINITY ? 0.0f : NAN;
            sum += (double)wrow[j];
        }
    } else {
        sum = simd->exp_sum(wrow, limit, max);
    }
    const float inv = (float)(1.0 / sum);
    for (size_t j = 0; j < limit; j++)
        wrow[j] *= inv;
    if (lse != NULL)
        *lse = max + (float)log(sum);
}

void nw_blas_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0, size_t rows,
                     size_t n, const float *s, size_t lds, float *w, size_t ldw, float *lse) {
    for (size_t r = 0; r < rows; r++)
        softmax_row(simd, mask, b, i0 + r, n, s + r * lds, w + r * ldw, lse ? lse + r : NULL);
}
