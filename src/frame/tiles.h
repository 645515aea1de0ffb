/* Tile sizes of the fused path, from the caches the CPU reports (read once per context) and
 * the BLAS's small-product threshold, or as the caller set them
 * (nwattn_context_set_tiles); nwattn_context_describe shows the choice. */
#ifndef NWATTN_FRAME_TILES_H
#define NWATTN_FRAME_TILES_H

#include <stddef.h>

typedef struct nw_tiles {
    size_t l1d, l2;   /* bytes per core */
    int from_cpu;     /* 1: read from the system (sysconf); 0: the defaults below */
    size_t rows, keys; /* the caller's tile sizes; 0: derived */
} nw_tiles;

/* Where the system says nothing: a common x86-64 core (Zen 3, Skylake-SP). */
#define NW_DEFAULT_L1D ((size_t)32 << 10)
#define NW_DEFAULT_L2 ((size_t)512 << 10)

/* The caches of the CPU this runs on, no caller sizes. */
void nw_tiles_probe(nw_tiles *t);

/* Query rows and keys per tile for m query rows, n keys and rows d (scores) and dv (values)
 * wide (tiles NULL: the defaults); one_pass: the 1-D Nadaraya-Watson row of blas_tile.c,
 * whose tiles only stream keys and values. Both at least 1. */
void nw_tile_shape(const nw_tiles *tiles, size_t m, size_t n, size_t d, size_t dv,
                   int one_pass, size_t *bm, size_t *bn);

/* Product blocks of bp rows per unit of rows (1 to NW_TILE_MAX_GROUPS), for `blocks` such
 * blocks in all (items × row blocks of each) and `threads` workers: a unit prepares each key
 * tile (the dot score's transposed copy) once for all its groups, so more groups amortise that,
 * while every worker keeps a few units. Derived tiles only (1 where the caller set the rows),
 * and never the one-pass 1-D row. No row's result depends on it: the products are the same
 * bp-row blocks either way. */
#define NW_TILE_MAX_GROUPS 4
/* Product chunks of bc keys per tile (1 to NW_TILE_KEY_CHUNKS) for groups of bp rows: the row
 * softmax runs once per tile, so wider tiles cut its per-tile cost while each product stays
 * within the BLAS's small size; as many as keep a group's scores within two thirds of L1d
 * (2 on a 48 KiB L1d at 64 × 64, 1 on 32 KiB). Derived tiles only, and not where rows are
 * scored one at a time (direct). */
#define NW_TILE_KEY_CHUNKS 2
size_t nw_tile_key_chunks(const nw_tiles *tiles, size_t bp, size_t bc, int direct);
size_t nw_tile_groups(const nw_tiles *tiles, size_t blocks, size_t threads, int one_pass);

#endif /* NWATTN_FRAME_TILES_H */
