/* The reference pooling and partial states: every row from the definition in double (scores,
 * the softmax row of core/row_state.h, the weighted sum), rounded to float only when written.
 * This is the oracle the fast paths are tested against. */
#include "core/row_state.h"
#include "mask.h"
#include "pool.h"
#include "ref_kernels.h"

/* Scratch: n values and dv accumulator entries, in double. */
size_t nw_ref_pool_workspace(const nw_pool_args *a, size_t threads) {
    (void)threads;
    size_t count, bytes;
    if (!nw_add(a->n, a->dv, &count) || !nw_add(count, 1, &count) ||
        !nw_mul(count, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

static void pool_row(const nw_pool_args *a, size_t b, size_t h, size_t i, double *x,
                     double *acc) {
    const nw_mask_row rm = nw_mask_row_get(&a->mask, b, i, a->n);
    const float *q = NW_ITEM(a, q, b, h) + i * a->ldq;
    const float *k = NW_ITEM(a, k, b, h);
    const float *v = NW_ITEM(a, v, b, h);
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < a->n; j++) {
        const int live = j < rm.limit && !nw_mask_row_drops(&rm, j);
        x[j] = live ? nw_mask_value_d(&rm, nw_ref_score(&a->score, a->d, q, k + j * a->ldk), j)
                    : -INFINITY;
        nw_tile_see(&tile, x[j]);
    }
    nw_row row = nw_row_empty();
    (void)nw_row_rescale(&row, &tile);
    for (size_t c = 0; c < a->dv; c++)
        acc[c] = 0.0;
    double sum = 0.0;
    for (size_t j = 0; j < a->n; j++) {
        const double e = nw_row_factor(&row, x[j]);
        sum += e;
        for (size_t c = 0; c < a->dv; c++) /* weight-0 keys pass NaN and Inf values on */
            acc[c] += e * (double)v[j * a->ldv + c];
    }
    nw_row_add(&row, sum);

    float *out = NW_ITEM(a, o, b, h) + i * a->ldo;
    if (a->state_max != NULL) {
        const size_t at = b * a->stride_stats + h * a->hstride_stats + i;
        const double factor = nw_row_store(&row, &a->state_max[at], &a->state_sum[at]);
        for (size_t c = 0; c < a->dv; c++)
            out[c] = (float)(acc[c] * factor);
        return;
    }
    const double inv = nw_row_inverse(&row);
    for (size_t c = 0; c < a->dv; c++)
        out[c] = (float)(acc[c] * inv);
    if (a->w != NULL) {
        float *w = NW_ITEM(a, w, b, h) + i * a->ldw;
        for (size_t j = 0; j < a->n; j++)
            w[j] = (float)nw_row_weight(&row, x[j]);
    }
    if (a->lse != NULL)
        NW_ITEM(a, lse, b, h)[i] = (float)nw_row_lse(&row);
}

void nw_ref_pool(const nw_pool_args *a, void *scratch, nw_workers *workers) {
    (void)workers;
    double *x = scratch;
    double *acc = x + a->n;
    for (size_t b = 0; b < a->batch; b++)
        for (size_t h = 0; h < a->heads; h++)
            for (size_t i = 0; i < a->m; i++)
                pool_row(a, b, h, i, x, acc);
}
