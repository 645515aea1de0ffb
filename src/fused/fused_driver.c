/* The fused driver: tile sizes, working memory, and the units spread over the workers. */
#include "blas/blas_distance.h"
#include "fused_kernels.h"
#include "threads.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Tiles of 64 query rows by as many keys as keep each product within NW_FUSED_TILE_MNK (at
 * least 16, at most 256); with very wide rows the query block shrinks as well. */
static void tile_sizes(const nw_pool_args *a, size_t *bm, size_t *bn) {
    const size_t width = max_size(max_size(a->d, a->dv), 1);
    size_t rows = 64;
    size_t keys = NW_FUSED_TILE_MNK / rows / width;
    if (keys > 256)
        keys = 256;
    if (keys < 16) {
        keys = 16;
        rows = max_size(NW_FUSED_TILE_MNK / keys / width, 1);
        rows = min_size(rows, 64);
    }
    *bm = min_size(rows, a->m);
    *bn = max_size(min_size(keys, a->n), 1);
}

/* Adds `count` elements of `elem` bytes, rounded up to 64 bytes, to *total. */
static int add_piece(size_t *total, size_t count, size_t elem) {
    size_t bytes;
    return nw_mul(count, elem, &bytes) && nw_add(*total, nw_round_up(bytes), total) &&
           *total != SIZE_MAX;
}

static int is_distance(const nw_pool_args *a) {
    return a->score.kind == NWATTN_SCORE_GAUSSIAN || a->score.kind == NWATTN_SCORE_LAPLACE;
}

/* Sizes the prepared keys (see nw_fused_plan); keys_bytes is SIZE_MAX on overflow. */
static void plan_keys(nw_fused_plan *plan) {
    const nw_pool_args *a = plan->a;
    plan->key_items = plan->key_tiles = plan->keys_bytes = 0;
    plan->keys = plan->key_norms = plan->centres = NULL;
    if (!is_distance(a))
        return;
    plan->key_items = a->stride_k == 0 && a->hstride_k == 0 ? 1 : a->batch * a->heads;
    plan->key_tiles = (a->n + plan->bn - 1) / plan->bn;
    size_t tile, keys, norms, total = 0;
    int ok = nw_mul(plan->bn, a->d, &tile) && nw_mul(tile, plan->key_tiles, &keys) &&
             nw_mul(keys, plan->key_items, &keys) &&
             nw_mul(plan->key_tiles * plan->bn, plan->key_items, &norms) && /* <= keys */
             add_piece(&total, keys, sizeof(float)) && add_piece(&total, norms, sizeof(float)) &&
             nw_mul(2 * a->d, plan->key_items, &keys) && add_piece(&total, keys, sizeof(float));
    plan->keys_bytes = ok ? total : SIZE_MAX;
}

size_t nw_fused_key_item(const nw_fused_plan *plan, size_t item) {
    return plan->key_items == 1 ? 0 : item;
}

/* Prepares key item `index` (a unit of nw_parallel_for). */
static void prepare_keys(void *arg, size_t index, size_t worker) {
    (void)worker;
    const nw_fused_plan *plan = arg;
    const nw_pool_args *a = plan->a;
    const size_t d = a->d, bn = plan->bn, tile = bn * d;
    const float *k = NW_ITEM(a, k, index / a->heads, index % a->heads);
    float *keys = plan->keys + index * plan->key_tiles * tile;
    float *norms = plan->key_norms + index * plan->key_tiles * bn;
    float *centre = plan->centres + index * 2 * d, *inv_h = centre + d;
    nw_inverse_bandwidths(&a->score, d, inv_h);
    if (d == 1) { /* direct distances (q - k) / h: the keys as they are, contiguous */
        centre[0] = 0.0f;
        for (size_t j = 0; j < a->n; j++)
            keys[j] = k[j * a->ldk];
        return;
    }
    nw_mean_key(a->n, d, k, a->ldk, centre); /* all keys: one centre per item */
    for (size_t t = 0; t < plan->key_tiles; t++) {
        const size_t j0 = t * bn, cols = min_size(bn, a->n - j0);
        nw_rescale_rows_transposed(cols, d, k + j0 * a->ldk, a->ldk, centre, inv_h,
                                   keys + t * tile, bn, norms + j0);
    }
}

void nw_fused_plan_init(nw_fused_plan *plan, const nw_pool_args *a, int partial) {
    plan->a = a;
    plan->partial = partial;
    plan->scratch = NULL;
    tile_sizes(a, &plan->bm, &plan->bn);
    plan->blocks = plan->bm > 0 ? (a->m + plan->bm - 1) / plan->bm : 0;
    /* Must match the carving in nw_fused_unit. */
    const size_t bm = plan->bm, bn = plan->bn, d = a->d;
    size_t total = 0, tile, qrows, krows;
    int ok = nw_mul(bm, bn, &tile) && nw_mul(bm, d, &qrows) && nw_mul(bn, d, &krows) &&
             add_piece(&total, tile, sizeof(float)) &&           /* scores, then P */
             add_piece(&total, bm, sizeof(nw_mask_row)) && /* mask rows */
             add_piece(&total, bm, sizeof(float)) &&             /* running max */
             add_piece(&total, bm, sizeof(double));              /* running sum */
    if (ok && a->score.kind == NWATTN_SCORE_DOT)
        ok = add_piece(&total, krows, sizeof(float)); /* the key tile transposed */
    if (ok && is_distance(a))
        ok = add_piece(&total, qrows, sizeof(float)) && add_piece(&total, bm, sizeof(float));
    plan->unit_bytes = ok ? total : SIZE_MAX;
    plan_keys(plan);
}

static size_t workers(const nw_fused_plan *plan, size_t threads) {
    size_t units = plan->a->batch * plan->a->heads * plan->blocks; /* <= m·batch·heads */
    return max_size(min_size(threads, units), 1);
}

static size_t workspace(const nw_pool_args *a, size_t threads, int partial) {
    nw_fused_plan plan;
    nw_fused_plan_init(&plan, a, partial);
    size_t bytes;
    if (plan.unit_bytes == SIZE_MAX || plan.keys_bytes == SIZE_MAX ||
        !nw_mul(plan.unit_bytes, workers(&plan, threads), &bytes) ||
        !nw_add(bytes, plan.keys_bytes, &bytes) || bytes == SIZE_MAX)
        return SIZE_MAX;
    return bytes;
}

static void run_unit(void *arg, size_t unit, size_t worker) {
    nw_fused_unit(arg, unit, worker);
}

static void run(const nw_pool_args *a, void *scratch, size_t threads, int partial) {
    if (nw_pool_is_empty(a))
        return;
    nw_fused_plan plan;
    nw_fused_plan_init(&plan, a, partial);
    plan.scratch = scratch;
    const size_t count = workers(&plan, threads);
    if (plan.key_items > 0 && a->n > 0) { /* carved as plan_keys sized them */
        unsigned char *cursor = plan.scratch + count * plan.unit_bytes;
        const size_t tile = plan.bn * a->d, padded = plan.key_tiles * plan.bn;
        plan.keys = (float *)(void *)cursor;
        cursor += nw_round_up(plan.key_items * plan.key_tiles * tile * sizeof(float));
        plan.key_norms = (float *)(void *)cursor;
        cursor += nw_round_up(plan.key_items * padded * sizeof(float));
        plan.centres = (float *)(void *)cursor;
        nw_parallel_for(min_size(threads, plan.key_items), plan.key_items, prepare_keys, &plan);
    }
    nw_parallel_for(count, a->batch * a->heads * plan.blocks, run_unit, &plan);
}

size_t nw_fused_pool_workspace(const nw_pool_args *a, size_t threads) {
    return workspace(a, threads, 0);
}

void nw_fused_pool(const nw_pool_args *a, void *scratch, size_t threads) {
    run(a, scratch, threads, 0);
}

size_t nw_fused_partial_workspace(const nw_pool_args *a, size_t threads) {
    return workspace(a, threads, 1);
}

void nw_fused_partial(const nw_pool_args *a, void *scratch, size_t threads) {
    run(a, scratch, threads, 1);
}
