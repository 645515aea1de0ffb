/* The fused backend: pooling tiled over query blocks and key blocks with an online softmax
 * (running row max, running row sum, unnormalised accumulator), so the m×n weights never
 * exist. Tile products go through cblas_sgemm; everything else is the BLAS backend's. */
#ifndef NWATTN_FUSED_KERNELS_H
#define NWATTN_FUSED_KERNELS_H

#include "mask.h"
#include "pool.h"
#include "score/score.h"

/* Largest m·n·k of one tile product. OpenBLAS runs a GEMM with m·n·k at most 65536 ·
 * GEMM_MULTITHREAD_THRESHOLD (4 in its default build, hence 2^18) on the calling thread, so
 * tiles this small never wake its thread pool: the fused path's workers and the BLAS's threads
 * never compete, and no process-wide BLAS setting needs changing. */
#define NW_FUSED_TILE_MNK ((size_t)1 << 18)

/* How one fused call is cut: units are (item, query block) pairs, item = b·heads + h. */
typedef struct nw_fused_plan {
    const nw_pool_args *a;
    size_t bm, bn;       /* query rows and keys per tile */
    size_t blocks;       /* query blocks per item */
    size_t items;        /* batch · heads */
    size_t shared_bytes; /* the key statistics, before the workers' scratch */
    size_t unit_bytes;   /* scratch per worker */
    unsigned char *scratch;
    nw_keys_info *item;  /* each item's keys (score.h), in the shared part */
    double *info_store;  /* items × info_doubles(d): what the infos point at */
    int partial;         /* write states instead of outputs */
} nw_fused_plan;

/* Fills the tile sizes and the scratch sizes; unit_bytes is SIZE_MAX on overflow. */
void nw_fused_plan_init(nw_fused_plan *plan, const nw_pool_args *args, int partial);

/* The key information of one item (plan->item[item]). */
void nw_fused_prepare_item(const nw_fused_plan *plan, size_t item);

/* Runs one unit with `worker`'s scratch. Units touch disjoint outputs. */
void nw_fused_unit(const nw_fused_plan *plan, size_t unit, size_t worker);

size_t nw_fused_pool_workspace(const nw_pool_args *args, size_t threads);
void nw_fused_pool(const nw_pool_args *args, void *scratch, nw_workers *workers);
size_t nw_fused_partial_workspace(const nw_pool_args *args, size_t threads);
void nw_fused_partial(const nw_pool_args *args, void *scratch, nw_workers *workers);

#endif /* NWATTN_FUSED_KERNELS_H */
