/* The fused driver: tile sizes, working memory, and the units spread over the workers. */
#include "core/row_state.h"
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
    const nw_score_desc *desc = a->score.desc;
    const size_t bm = plan->bm, bn = plan->bn, d = a->d;
    const size_t prep = desc->prep_floats(bn, d), rows = desc->row_floats(bm, d);
    size_t total = 0, tile;
    int ok = prep != SIZE_MAX && rows != SIZE_MAX && nw_mul(bm, bn, &tile) &&
             add_piece(&total, tile, sizeof(float)) &&     /* scores, then P */
             add_piece(&total, tile, sizeof(double)) &&    /* scores in double (exact rows) */
             add_piece(&total, bm, sizeof(nw_mask_row)) && /* mask rows */
             add_piece(&total, bm, sizeof(nw_row)) &&      /* row states */
             add_piece(&total, bm, 1) &&                   /* exact flags */
             add_piece(&total, prep, sizeof(float)) &&     /* the prepared key tile */
             add_piece(&total, rows, sizeof(float));       /* the score block's scratch */
    /* Shared: each item's key information and what it points at. */
    size_t shared = 0, doubles;
    plan->items = a->batch * a->heads; /* <= batch·heads·m, which the checks bounded */
    ok = ok && add_piece(&shared, plan->items, sizeof(nw_keys_info)) &&
         nw_mul(plan->items, desc->info_doubles(d), &doubles) &&
         add_piece(&shared, doubles, sizeof(double));
    plan->shared_bytes = ok ? shared : SIZE_MAX;
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
    if (plan.unit_bytes == SIZE_MAX || plan.shared_bytes == SIZE_MAX ||
        !nw_mul(plan.unit_bytes, workers(&plan, threads), &bytes) ||
        !nw_add(bytes, plan.shared_bytes, &bytes))
        return SIZE_MAX;
    return bytes;
}

static void run_unit(void *arg, size_t unit, size_t worker) {
    nw_fused_unit(arg, unit, worker);
}

static void run_item(void *arg, size_t item, size_t worker) {
    (void)worker;
    nw_fused_prepare_item(arg, item);
}

static void run(const nw_pool_args *a, void *scratch, nw_workers *team, int partial) {
    if (nw_pool_is_empty(a))
        return;
    nw_fused_plan plan;
    nw_fused_plan_init(&plan, a, partial);
    /* Shared part first (carved as nw_fused_plan_init sized it), then the workers'. */
    unsigned char *shared = scratch;
    plan.item = (nw_keys_info *)(void *)shared;
    plan.info_store = (double *)(void *)(shared + nw_round_up(plan.items * sizeof(nw_keys_info)));
    plan.scratch = (unsigned char *)scratch + plan.shared_bytes;
    const size_t n_workers = workers(&plan, team->threads); /* as workspace() sized them */
    nw_parallel_for(team, n_workers, plan.items, run_item, &plan);
    nw_parallel_for(team, n_workers, plan.items * plan.blocks, run_unit, &plan);
}

size_t nw_fused_pool_workspace(const nw_pool_args *a, size_t threads) {
    return workspace(a, threads, 0);
}

void nw_fused_pool(const nw_pool_args *a, void *scratch, nw_workers *team) {
    run(a, scratch, team, 0);
}

size_t nw_fused_partial_workspace(const nw_pool_args *a, size_t threads) {
    return workspace(a, threads, 1);
}

void nw_fused_partial(const nw_pool_args *a, void *scratch, nw_workers *team) {
    run(a, scratch, team, 1);
}
