/* The tiled driver: a pooling cut into units of (item, block of query rows), each run against
 * all its keys tile by tile with the online softmax of core/row_state.h, so the m×n weights
 * never exist. The driver is written once; what a unit computes with comes from a tile
 * provider: the reference (ref/ref_tile.c, everything in double) or BLAS (blas/blas_tile.c,
 * float tiles through cblas_sgemm and the vector kernels). Units touch disjoint outputs and
 * run on the context's workers; no unit's result depends on how many there are. */
#ifndef NWATTN_FRAME_TILED_H
#define NWATTN_FRAME_TILED_H

#include "core/row_state.h"
#include "mask.h"
#include "pool.h"
#include "score/score.h"

/* Largest m·n·k of one tile product. OpenBLAS runs a GEMM with m·n·k at most 65536 ·
 * GEMM_MULTITHREAD_THRESHOLD (4 in its default build, hence 2^18) on the calling thread, so
 * tiles this small never wake its thread pool: the workers and the BLAS's threads never
 * compete, and no process-wide BLAS setting needs changing. */
#define NW_TILE_MNK ((size_t)1 << 18)

struct nw_tiled_plan;

typedef struct nw_tile_provider {
    const char *name;
    /* Bytes of one worker's scratch for the plan's units (bm rows in groups of bp, tiles of
     * bn keys; SIZE_MAX on overflow). */
    size_t (*unit_bytes)(const struct nw_tiled_plan *plan);
    /* Whether units read each item's key information (score.h), found once per item. */
    int key_info;
    /* Runs unit `unit` with worker `worker`'s scratch. */
    void (*unit)(const struct nw_tiled_plan *plan, size_t unit, size_t worker);
} nw_tile_provider;

extern const nw_tile_provider nw_ref_tiles, nw_blas_tiles;

/* How one call is cut: units are (item, query block) pairs, item = b·heads + h. */
typedef struct nw_tiled_plan {
    const nw_pool_args *a;
    const nw_tile_provider *provider;
    size_t bm, bn;       /* query rows per unit and keys per tile */
    size_t bp;           /* query rows per product: a unit's rows go in groups of bp */
    size_t bc;           /* keys per product: a tile's keys go in chunks of bc */
    int one_pass;        /* the problem fits the one-pass 1-D distance row (blas_tile.c) */
    size_t blocks;       /* query blocks per item */
    size_t items;        /* batch · heads */
    size_t shared_bytes; /* the items' key information, before the workers' scratch */
    size_t unit_bytes;   /* scratch per worker */
    unsigned char *scratch;
    nw_keys_info *item;  /* each item's keys (key_info providers), in the shared part */
    double *info_store;  /* items × info_doubles(d): what the infos point at */
    int partial;         /* write states instead of outputs */
} nw_tiled_plan;

/* Rows this narrow (d <= the score's row_direct_max_d) are scored one at a time, just before
 * the row is used (blas_tile.c), so their tiles take one key chunk. */
static inline int nw_tile_rows_direct(const nw_pool_args *a) {
    return a->d <= a->score.desc->row_direct_max_d;
}

/* A worker's scratch is carved with this: count elements of elem bytes, rounded up to 64
 * bytes (the providers' unit_bytes add pieces the same way, nw_tile_piece). */
static inline unsigned char *nw_tile_take(unsigned char **cursor, size_t count, size_t elem) {
    unsigned char *piece = *cursor;
    *cursor += nw_round_up(count * elem);
    return piece;
}
/* Adds such a piece to *total; 0 on overflow. */
int nw_tile_piece(size_t *total, size_t count, size_t elem);

/* The unit's rows: item, first row and count. */
static inline void nw_tile_unit_rows(const nw_tiled_plan *plan, size_t unit, size_t *b,
                                     size_t *h, size_t *i0, size_t *rows) {
    const nw_pool_args *a = plan->a;
    const size_t item = unit / plan->blocks, block = unit % plan->blocks;
    *b = item / a->heads;
    *h = item % a->heads;
    *i0 = block * plan->bm;
    *rows = a->m - *i0 < plan->bm ? a->m - *i0 : plan->bm;
}

/* Scratch for the pooling (partial: the states) of args with `threads` workers, and the run. */
size_t nw_tiled_workspace(const nw_tile_provider *provider, const nw_pool_args *args,
                          size_t threads, int partial);
void nw_tiled_run(const nw_tile_provider *provider, const nw_pool_args *args, void *scratch,
                  nw_workers *workers, int partial);

#endif /* NWATTN_FRAME_TILED_H */
