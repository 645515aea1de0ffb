/* The reference tile provider of the tiled driver (frame/tiled.h): each row of a unit from the
 * definition in double, key tile by key tile through the row contract (core/row_state.h):
 * scores, exponentials, sums and the accumulator are doubles, rounded to float only when
 * written. REFERENCE poolings and partial states run on it; it is the oracle the fast paths are
 * tested against. */
#include "frame/tiled.h"
#include "ref_kernels.h"

/* Scratch per worker: the values of one tile (bn doubles) and the accumulator (dv doubles). */
static size_t unit_bytes(const nw_tiled_plan *plan) {
    const nw_pool_args *a = plan->a;
    size_t total = 0;
    return nw_tile_piece(&total, plan->bn, sizeof(double)) &&
                   nw_tile_piece(&total, a->dv, sizeof(double))
               ? total
               : SIZE_MAX;
}

/* Row i's values for keys j0 .. j0+cols-1 into x: -INFINITY where masked, else the score in
 * double plus the additive mask. */
static void tile_values(const nw_pool_args *a, const nw_mask_row *rm, const float *q,
                        const float *k, size_t j0, size_t cols, double *x) {
    for (size_t j = 0; j < cols; j++) {
        const size_t key = j0 + j;
        const int live = key < rm->limit && !nw_mask_row_drops(rm, key);
        x[j] = live ? nw_mask_value_d(rm, nw_ref_score(&a->score, a->d, q, k + key * a->ldk),
                                      key)
                    : -INFINITY;
    }
}

static void unit_row(const nw_tiled_plan *plan, size_t b, size_t h, size_t i, double *x,
                     double *acc) {
    const nw_pool_args *a = plan->a;
    const nw_mask_row rm = nw_mask_row_get(&a->mask, b, i, a->n);
    const float *q = NW_ITEM(a, q, b, h) + i * a->ldq;
    const float *k = NW_ITEM(a, k, b, h);
    const float *v = NW_ITEM(a, v, b, h);
    nw_row row = nw_row_empty();
    for (size_t c = 0; c < a->dv; c++)
        acc[c] = 0.0;
    for (size_t j0 = 0; j0 < a->n; j0 += plan->bn) {
        const size_t cols = a->n - j0 < plan->bn ? a->n - j0 : plan->bn;
        tile_values(a, &rm, q, k, j0, cols, x);
        nw_tile tile = nw_tile_empty();
        for (size_t j = 0; j < cols; j++)
            nw_tile_see(&tile, x[j]);
        const double alpha = nw_row_rescale(&row, &tile);
        if (alpha != 1.0)
            for (size_t c = 0; c < a->dv; c++)
                acc[c] *= alpha;
        double sum = 0.0;
        for (size_t j = 0; j < cols; j++) {
            const double e = nw_row_factor(&row, x[j]);
            sum += e;
            for (size_t c = 0; c < a->dv; c++) /* weight-0 keys pass NaN and Inf values on */
                acc[c] += e * (double)v[(j0 + j) * a->ldv + c];
        }
        nw_row_add(&row, sum);
    }

    float *out = NW_ITEM(a, o, b, h) + i * a->ldo;
    if (plan->partial) {
        const size_t at = b * a->stride_stats + h * a->hstride_stats + i;
        const double factor = nw_row_store(&row, &a->state_max[at], &a->state_sum[at]);
        for (size_t c = 0; c < a->dv; c++)
            out[c] = (float)(acc[c] * factor);
        return;
    }
    const double inv = nw_row_inverse(&row);
    for (size_t c = 0; c < a->dv; c++)
        out[c] = (float)(acc[c] * inv);
    if (a->lse != NULL)
        NW_ITEM(a, lse, b, h)[i] = (float)nw_row_lse(&row);
    if (a->w == NULL)
        return;
    float *w = NW_ITEM(a, w, b, h) + i * a->ldw; /* second pass: the same tiles' values */
    for (size_t j0 = 0; j0 < a->n; j0 += plan->bn) {
        const size_t cols = a->n - j0 < plan->bn ? a->n - j0 : plan->bn;
        tile_values(a, &rm, q, k, j0, cols, x);
        for (size_t j = 0; j < cols; j++)
            w[j0 + j] = (float)nw_row_weight(&row, x[j]);
    }
}

static void run_unit(const nw_tiled_plan *plan, size_t index, size_t worker) {
    size_t b, h, i0, rows;
    nw_tile_unit_rows(plan, index, &b, &h, &i0, &rows);
    unsigned char *cursor = plan->scratch + worker * plan->unit_bytes;
    double *x = (double *)(void *)nw_tile_take(&cursor, plan->bn, sizeof(double));
    double *acc = (double *)(void *)nw_tile_take(&cursor, plan->a->dv, sizeof(double));
    for (size_t r = 0; r < rows; r++)
        unit_row(plan, b, h, i0 + r, x, acc);
}

const nw_tile_provider nw_ref_tiles = {
    .name = "reference",
    .unit_bytes = unit_bytes,
    .key_info = 0,
    .unit = run_unit,
};
