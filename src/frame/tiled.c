/* The tiled driver (tiled.h): tile sizes, working memory, and the units spread over the
 * workers. */
#include "threads.h"
#include "tiled.h"
#include "tiles.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* The one-pass 1-D row of blas_tile.c (dist1_row) runs where these hold. */
static int one_pass_rows(const nw_pool_args *a) {
    return a->d == 1 && a->dv == 1 && a->ldv == 1 && a->score.desc->dist1;
}

int nw_tile_piece(size_t *total, size_t count, size_t elem) {
    size_t bytes;
    return nw_mul(count, elem, &bytes) && nw_add(*total, nw_round_up(bytes), total) &&
           *total != SIZE_MAX;
}

static void plan_init(nw_tiled_plan *plan, const nw_tile_provider *provider,
                      const nw_pool_args *a, int partial, size_t threads) {
    plan->a = a;
    plan->provider = provider;
    plan->partial = partial;
    plan->scratch = NULL;
    plan->item = NULL;
    plan->info_store = NULL;
    plan->one_pass = one_pass_rows(a);
    nw_tile_shape(a->tiles, a->m, a->n, a->d, a->dv, plan->one_pass, &plan->bp, &plan->bc);
    plan->bn = min_size(plan->bc * nw_tile_key_chunks(a->tiles, plan->bp, plan->bc,
                                                      plan->one_pass || nw_tile_rows_direct(a)),
                        max_size(a->n, plan->bc)); /* bc <= n unless n is 0 */
    plan->items = a->batch * a->heads; /* <= batch·heads·m, which the checks bounded */
    const size_t product_blocks = plan->items * ((a->m + plan->bp - 1) / plan->bp);
    plan->bm = max_size(min_size(plan->bp * nw_tile_groups(a->tiles, product_blocks, threads,
                                                           plan->one_pass),
                                 a->m),
                        1);
    plan->blocks = (a->m + plan->bm - 1) / plan->bm;
    plan->unit_bytes = provider->unit_bytes(plan);
    /* Shared: each item's key information and what it points at. */
    size_t shared = 0, doubles;
    const int ok = !provider->key_info ||
                   (nw_tile_piece(&shared, plan->items, sizeof(nw_keys_info)) &&
                    nw_mul(plan->items, a->score.desc->info_doubles(a->d), &doubles) &&
                    nw_tile_piece(&shared, doubles, sizeof(double)));
    plan->shared_bytes = ok ? shared : SIZE_MAX;
}

static size_t workers(const nw_tiled_plan *plan, size_t threads) {
    size_t units = plan->items * plan->blocks; /* <= m·batch·heads */
    return max_size(min_size(threads, units), 1);
}

size_t nw_tiled_workspace(const nw_tile_provider *provider, const nw_pool_args *a,
                          size_t threads, int partial) {
    nw_tiled_plan plan;
    plan_init(&plan, provider, a, partial, threads);
    size_t bytes;
    if (plan.unit_bytes == SIZE_MAX || plan.shared_bytes == SIZE_MAX ||
        !nw_mul(plan.unit_bytes, workers(&plan, threads), &bytes) ||
        !nw_add(bytes, plan.shared_bytes, &bytes))
        return SIZE_MAX;
    return bytes;
}

static void run_unit(void *arg, size_t unit, size_t worker) {
    const nw_tiled_plan *plan = arg;
    plan->provider->unit(plan, unit, worker);
}

/* The key information of one item (plan->item[item]). */
static void run_item(void *arg, size_t index, size_t worker) {
    (void)worker;
    const nw_tiled_plan *plan = arg;
    const nw_pool_args *a = plan->a;
    const size_t doubles = a->score.desc->info_doubles(a->d);
    a->score.desc->keys_info(&a->score, a->n, a->d,
                             NW_ITEM(a, k, index / a->heads, index % a->heads), a->ldk,
                             plan->info_store + index * doubles, &plan->item[index]);
}

void nw_tiled_run(const nw_tile_provider *provider, const nw_pool_args *a, void *scratch,
                  nw_workers *team, int partial) {
    if (nw_pool_is_empty(a))
        return;
    nw_tiled_plan plan;
    plan_init(&plan, provider, a, partial, team->threads); /* as the workspace was sized */
    /* Shared part first (carved as plan_init sized it), then the workers'. */
    if (provider->key_info) {
        unsigned char *shared = scratch;
        plan.item = (nw_keys_info *)(void *)shared;
        plan.info_store =
            (double *)(void *)(shared + nw_round_up(plan.items * sizeof(nw_keys_info)));
    }
    plan.scratch = (unsigned char *)scratch + plan.shared_bytes;
    const size_t n_workers = workers(&plan, team->threads); /* as the workspace sized them */
    if (provider->key_info)
        nw_parallel_for(team, n_workers, plan.items, run_item, &plan);
    nw_parallel_for(team, n_workers, plan.items * plan.blocks, run_unit, &plan);
}
