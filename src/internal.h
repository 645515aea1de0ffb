/* Internal declarations shared by the dispatch layer and the kernels. Never installed. */
#ifndef NWATTN_INTERNAL_H
#define NWATTN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "nwattn.h"
#include "frame/tiles.h"
#include "simd/simd.h"
#include "threads.h"

#define NW_ERRMSG_BYTES 256

struct nwattn_context {
    nwattn_allocator allocator;
    nwattn_backend backend;
    nwattn_nw_method nw_method; /* regression rows: AUTO (0), DIRECT or FASTSUM */
    double nw_tolerance;        /* the Gaussian fast sums' bound; 0: the default */
    nw_workers workers; /* thread count and the team kept between calls */
    const nw_simd *simd; /* vector kernels for this CPU, chosen at creation */
    nw_tiles tiles;      /* the caches read at creation, the caller's tile sizes */
    void *workspace; /* grown on demand, kept across calls */
    size_t workspace_bytes;
    char errmsg[NW_ERRMSG_BYTES];
};

/* ---- Errors ----------------------------------------------------------------------------- */
/* Records a formatted message in ctx (if any) and returns status. */
nwattn_status nw_fail(nwattn_context *ctx, nwattn_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Propagates a non-OK status, keeping each check to one line. */
#define NW_TRY(expr)                          \
    do {                                      \
        nwattn_status nw_try_status_ = (expr); \
        if (nw_try_status_ != NWATTN_OK)      \
            return nw_try_status_;            \
    } while (0)

/* Clears the last error at the start of a public call on ctx; fails on ctx == NULL. */
nwattn_status nw_begin(nwattn_context *ctx);

/* ---- Working memory ---------------------------------------------------------------------- */
/* Returns a workspace of at least `bytes` in *out, reusing the context's block. */
nwattn_status nw_workspace(nwattn_context *ctx, size_t bytes, void **out);

/* Checked size arithmetic: false on overflow. */
static inline int nw_mul(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}
static inline int nw_add(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a)
        return 0;
    *out = a + b;
    return 1;
}

/* ---- Masks ------------------------------------------------------------------------------- */
/* A validated mask with defaults filled in; kernels evaluate it per row (see mask.h). */
typedef struct nw_mask {
    unsigned flags;
    const size_t *valid_lens;
    const float *additive;
    size_t ld_additive, stride_additive;
    const unsigned char *keep;
    size_t ld_keep, stride_keep;
    size_t m; /* rows per item: indexes per-row valid lengths */
    /* Key 0 of the call is key key_offset of the whole problem (partial states over a shard):
     * causal, valid lengths and leave-one-out count in whole-problem keys, additive and keep
     * columns are the shard's. 0 everywhere else. */
    size_t key_offset;
} nw_mask;

/* ---- Kernels ----------------------------------------------------------------------------- */
struct nw_score_desc; /* score/score.h */

/* A score with validated parameters; bandwidths points at d values or is NULL (scalar). desc
 * is the kind's descriptor: average pooling's constant score has no public kind. */
typedef struct nw_score {
    const struct nw_score_desc *desc;
    nwattn_score_kind kind;
    float scale;
    float bandwidth;
    const float *bandwidths;
} nw_score;

struct nw_pool_args; /* pool.h */

/* How a call may run: the context's vector kernels and worker count. */
typedef struct nw_exec {
    const nw_simd *simd;
    nw_workers *workers;
} nw_exec;

/* A kernel provider: every primitive the drivers compose (the reference in double, or BLAS
 * with the vector kernels). Kernels get validated arguments
 * and never fail; the memory they need is sized by *_workspace and handed in.
 *
 * Scores travel as row_scale[i] · t[i][j]: t is float, row_scale[i] an exact power of two kept
 * in double. Scores beyond the float range (tiny bandwidths, huge dot scales or data) thus reach
 * the softmax intact instead of rounding to ±inf, which the softmax would read as "masked". */
/* A projection's rows out head by head: column block h of row i (out/heads columns) goes to
 * y + (h·rows + row0 + i)·(out/heads), dense blocks of `rows` rows per head (rows: of the
 * whole layout, row0: this call's first). The rows are rearranged while in cache, a block at a
 * time through buffer: at least max(rows of the call × out, threads × NW_LINEAR_ROWS × out)
 * floats (threads: the workers'). */
typedef struct nw_heads_out {
    size_t heads, rows, row0;
    float *buffer;
} nw_heads_out;

/* Rows per block of the projections (blas_gemm.c). */
#define NW_LINEAR_ROWS ((size_t)256)

typedef struct nw_kernels {
    const char *name;
    /* Bytes of scratch `scores` needs for a block of m queries against n keys (SIZE_MAX when
     * that overflows). A multiple of 8 bytes, used with 8-byte alignment. */
    size_t (*scores_workspace)(const nw_score *score, size_t m, size_t n, size_t d);
    void (*scores)(const nw_simd *simd, const nw_score *score, size_t m, size_t n, size_t d,
                   const float *q, size_t ldq, const float *k, size_t ldk,
                   float *t, size_t ldt, double *row_scale, void *scratch);
    /* Rows i0 .. i0+rows-1 of item b: w = masked softmax(row_scale · s); row_scale NULL means
     * all ones; lse optional (NULL). w may be s (same ld). See nwattn.h "Non-finite values". */
    void (*softmax)(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0, size_t rows,
                    size_t n, const float *s, size_t lds, const double *row_scale, float *w,
                    size_t ldw, float *lse);
    /* c = a·b for one item (m×k times k×n). */
    void (*gemm)(size_t m, size_t n, size_t k, const float *a, size_t lda,
                 const float *b, size_t ldb, float *c, size_t ldc);
    /* Bytes of scratch `bmm` needs for `batch` items. */
    size_t (*bmm_workspace)(size_t batch);
    void (*bmm)(const nw_exec *exec, size_t batch, size_t m, size_t n, size_t k,
                const float *a, size_t lda, size_t stride_a,
                const float *b, size_t ldb, size_t stride_b,
                float *c, size_t ldc, size_t stride_c, void *scratch);
    /* y = x·w^T + bias for rows×in x (pitch ldx), dense out×in w, bias NULL or out floats,
     * rows×out y (pitch ldy), or with heads head by head (nw_heads_out; ldy unused): the
     * projections of attention layers. workers: the context's (NULL: the calling thread); a
     * row's result never depends on their number, nor on heads. */
    void (*linear)(nw_workers *workers, size_t rows, size_t out, size_t in, const float *x,
                   size_t ldx, const float *w, const float *bias, float *y, size_t ldy,
                   const struct nw_heads_out *heads);
    /* The provider's tiles for the tiled driver (frame/tiled.h). */
    const struct nw_tile_provider *tiles;
} nw_kernels;

extern const nw_kernels nw_reference_kernels;
extern const nw_kernels nw_blas_kernels;

/* The pooling drivers (frame/): the unfused one (scores, softmax and W·V a block of query rows
 * at a time) and the tiled one (online softmax over key tiles; the m×n weights never exist). */
typedef enum nw_driver { NW_DRIVER_UNFUSED, NW_DRIVER_TILED } nw_driver;

/* How a pooling runs: a driver over a provider. The public backends are such pairs:
 * REFERENCE (tiled, reference), BLAS (unfused, BLAS), FUSED (tiled, BLAS); AUTO picks by
 * shape. Partial states exist tile by tile: they always take the tiled driver. */
typedef struct nw_pooling {
    const nw_kernels *kernels;
    nw_driver driver;
} nw_pooling;

/* Largest value a BLAS integer argument (dimension, leading dimension, increment) may take. */
#define NW_BLAS_INT_MAX 2147483647u

/* Picks the provider for ctx's backend and this problem (FUSED: BLAS, as nothing outside a
 * pooling fuses). `blas_ok` says whether every leading dimension and stride handed to the BLAS
 * fits its integer: AUTO falls back to the reference, BLAS and FUSED refuse with
 * NWATTN_ERR_TOO_LARGE. */
nwattn_status nw_select_kernels(nwattn_context *ctx, int blas_ok, const nw_kernels **out);

/* The same for a pooling, with the driver: AUTO also chooses between the unfused and the
 * tiled driver by shape. `n_ok` says whether n fits the BLAS integer (the unfused driver's
 * score blocks have leading dimension n). */
nwattn_status nw_select_pooling(nwattn_context *ctx, int blas_ok, int n_ok,
                                const struct nw_pool_args *args, nw_pooling *out);

/* AUTO pools with the fused kernels from this many keys on, for rows (d and dv) at most this
 * wide (measured: see NWATTN_BACKEND_AUTO in nwattn.h). */
#define NW_AUTO_FUSED_MIN_KEYS ((size_t)32)
#define NW_AUTO_FUSED_MAX_WIDTH ((size_t)128)

/* Bytes rounded up to a multiple of 64 (cache line, any object type); SIZE_MAX stays. */
static inline size_t nw_round_up(size_t bytes) {
    return bytes > SIZE_MAX - 63 ? SIZE_MAX : (bytes + 63) & ~(size_t)63;
}

#endif /* NWATTN_INTERNAL_H */
