/* The fused driver: tile sizes, working memory, and the units spread over the workers. */
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

void nw_fused_plan_init(nw_fused_plan *plan, const nw_pool_args *a, int partial) {
    plan->a = a;
    plan->partial = partial;
    plan->scratch = NULL;
    tile_sizes(a, &plan->bm, &plan->bn);
    plan->blocks = plan->bm > 0 ? (a->m + plan->bm - 1) / plan->bm : 0;
    /* Must match the carving in unit_init (fused_unit.c). */
    const size_t bm = plan->bm, bn = plan->bn, d = a->d;
    size_t total = 0, tile, qrows, krows;
    int ok = nw_mul(bm, bn, &tile) && nw_mul(bm, d, &qrows) && nw_mul(bn, d, &krows) &&
             add_piece(&total, tile, sizeof(float)) &&       /* scores, then P */
             add_piece(&total, tile, sizeof(double)) &&      /* scores in double (exact mode) */
             add_piece(&total, bm, sizeof(nw_mask_row)) &&   /* mask rows */
             add_piece(&total, bm, sizeof(double)) &&        /* running max */
             add_piece(&total, bm, sizeof(double));          /* running sum */
    if (ok && a->score.kind != NW_SCORE_ZERO) /* rescaled rows, centre and 1/h */
        ok = add_piece(&total, qrows, sizeof(float)) && add_piece(&total, bm, sizeof(float)) &&
             add_piece(&total, krows, sizeof(float)) && add_piece(&total, bn, sizeof(float)) &&
             add_piece(&total, d, 2 * sizeof(double));
    plan->unit_bytes = ok ? total : SIZE_MAX;
}

static size_t workers(const nw_fused_plan *plan, size_t threads) {
    size_t units = plan->a->batch * plan->a->heads * plan->blocks; /* <= m·batch·heads */
    return max_size(min_size(threads, units), 1);
}

static size_t workspace(const nw_pool_args *a, size_t threads, int partial) {
    nw_fused_plan plan;
    nw_fused_plan_init(&plan, a, partial);
    size_t bytes;
    if (plan.unit_bytes == SIZE_MAX || !nw_mul(plan.unit_bytes, workers(&plan, threads), &bytes))
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
    nw_parallel_for(workers(&plan, threads), a->batch * a->heads * plan.blocks, run_unit, &plan);
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
