/* Tile sizes (tiles.h). */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "tiled.h"
#include "tiles.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* A cache size from sysconf, or 0 where the system does not say (or says nonsense). */
static size_t cache_bytes(int name) {
    const long bytes = sysconf(name);
    return bytes >= 4096 && bytes <= (1L << 30) ? (size_t)bytes : 0;
}

void nw_tiles_probe(nw_tiles *t) {
    size_t l1d = 0, l2 = 0;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    l1d = cache_bytes(_SC_LEVEL1_DCACHE_SIZE);
    l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE);
#endif
    t->from_cpu = l1d > 0 && l2 > 0;
    t->l1d = t->from_cpu ? l1d : NW_DEFAULT_L1D;
    t->l2 = t->from_cpu ? l2 : NW_DEFAULT_L2;
    t->rows = t->keys = 0;
}

/* The 1-D row streams keys and values (8 bytes a key) past 64 query rows: tiles that fill
 * half of L1 (the rest holds the row's state and what else runs), 3072 keys on a 48 KiB L1
 * (Zen 4 and 5), 2048 on 32 KiB; measured 8 % faster than 256 keys at m = n = 16384. */
static size_t one_pass_keys(const nw_tiles *t) {
    const size_t l1d = t ? t->l1d : NW_DEFAULT_L1D;
    return min_size(max_size(l1d / 2 / (2 * sizeof(float)), 256), 8192);
}

/* The other tiles: 64 query rows by as many keys as keep each product within NW_TILE_MNK, the
 * size OpenBLAS runs on the calling thread (and, on its Skylake-X kernels, without packing);
 * with very wide rows the query block shrinks as well. Such a tile (Q, K, V blocks, scores and
 * accumulators: at most 5 · 2^18 / 64 floats at d = dv = 64, about 100 KiB) fits L2 on every
 * x86-64 core since Haswell, so the caches do not move it; larger tiles measured no faster
 * on OpenBLAS's Haswell kernels either (docs/performance.md, "Tiles"). */
void nw_tile_shape(const nw_tiles *t, size_t m, size_t n, size_t d, size_t dv, int one_pass,
                   size_t *bm, size_t *bn) {
    const size_t width = max_size(max_size(d, dv), 1);
    size_t rows = 64, keys;
    if (one_pass) {
        keys = one_pass_keys(t);
    } else {
        keys = min_size(NW_TILE_MNK / rows / width, 256);
        if (keys < 16) {
            keys = 16;
            rows = min_size(max_size(NW_TILE_MNK / keys / width, 1), 64);
        }
    }
    if (t != NULL && t->rows > 0)
        rows = t->rows;
    if (t != NULL && t->keys > 0)
        keys = t->keys;
    *bm = max_size(min_size(rows, m), 1);
    *bn = max_size(min_size(keys, n), 1);
}

/* Up to 4 groups (256 rows at d = 64: a 4096^2 scaled dot-product attention spent a fifth of
 * its time transposing key tiles with one group, measured on a Xeon with OpenBLAS's Skylake-X
 * kernels), keeping at least 4 units per worker for the balance of causal rows. */
#define NW_TILE_UNITS_PER_WORKER 4

size_t nw_tile_groups(const nw_tiles *t, size_t blocks, size_t threads, int one_pass) {
    if (one_pass || (t != NULL && t->rows > 0))
        return 1;
    const size_t per_worker = blocks / max_size(threads, 1) / NW_TILE_UNITS_PER_WORKER;
    return max_size(min_size(per_worker, NW_TILE_MAX_GROUPS), 1);
}

size_t nw_tile_key_chunks(const nw_tiles *t, size_t bp, size_t bc, int direct) {
    if (direct || (t != NULL && t->keys > 0))
        return 1;
    const size_t l1d = t ? t->l1d : NW_DEFAULT_L1D, chunk = max_size(bp * bc, 1) * sizeof(float);
    return max_size(min_size(l1d / 3 * 2 / chunk, NW_TILE_KEY_CHUNKS), 1);
}
