/*
 * nwattn.h — attention pooling as Nadaraya-Watson kernel regression.
 *
 * This header is the manual: everything the library exports is declared here, each function
 * with its contract directly above it. It computes
 *
 *   O = softmax(score(Q, K) + mask) · V
 *
 * with a scaled dot product, Gaussian or Laplace score, plus attention layers, partial states
 * for sharded keys, and a Nadaraya-Watson regression toolkit (last part of this header).
 *
 * Conventions shared by every function
 * - float32 data, row-major. A matrix argument is (pointer, leading dimension ld*: elements
 *   between consecutive rows, >= the row length) and, for the batched primitives, a batch
 *   stride (stride_*: elements between items, as torch.bmm). With batch == 1 strides are
 *   ignored; an input stride of 0 broadcasts one matrix to every item; an output stride must
 *   keep items apart: stride >= (rows - 1) * ld + cols.
 * - Shapes: Q is m×d, K is n×d, V is n×dv, scores and weights m×n, O m×dv. d >= 1. batch == 0
 *   or m == 0 is a valid empty problem (NWATTN_OK, nothing written); dv == 0 leaves O empty
 *   (weights and lse are still written when asked for); n == 0 makes every row fully masked.
 * - Every function returns an nwattn_status. On any error nothing that the caller passed as
 *   an output has been written; nwattn_context_last_error() says what was wrong.
 * - A context (nwattn_context) holds the backend, the worker threads and reusable working
 *   memory. One context per thread at a time; distinct contexts are independent, read-only
 *   inputs may be shared. No aborts, exits, prints, asserts or mutable global state.
 *
 * Contents: version · status codes · context (backends, threads, memory) · scores and masks ·
 * pooling · building blocks (scores, softmax, bmm) · partial states · attention layers ·
 * Nadaraya-Watson regression · random numbers and data sets.
 * The long form lives in docs/: numerics.md (accuracy, range, non-finite values, the softmax
 * row contract, partial states), fused.md, threads.md, regression.md, performance.md,
 * bindings.md, building.md.
 */
#ifndef NWATTN_H
#define NWATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Visibility -------------------------------------------------------------------------- */
#if defined(NWATTN_BUILDING_LIBRARY) && defined(__GNUC__)
#  define NWATTN_API __attribute__((visibility("default")))
#else
#  define NWATTN_API
#endif

/* ---- Version ----------------------------------------------------------------------------- */
/* The release version. The ABI is versioned separately by the SONAME (libnwattn.so.0). */
#define NWATTN_VERSION_MAJOR 0
#define NWATTN_VERSION_MINOR 1
#define NWATTN_VERSION_PATCH 0
#define NWATTN_VERSION_NUMBER \
    (NWATTN_VERSION_MAJOR * 10000 + NWATTN_VERSION_MINOR * 100 + NWATTN_VERSION_PATCH)
#define NWATTN_VERSION_STRING "0.1.0"

/* The version of the library actually loaded (compare with NWATTN_VERSION_NUMBER). */
NWATTN_API unsigned nwattn_version_number(void);
NWATTN_API const char *nwattn_version_string(void);

/* ---- Status codes ------------------------------------------------------------------------ */
/* The values are fixed forever; new codes are only ever appended. */
typedef enum nwattn_status {
    NWATTN_OK = 0,
    NWATTN_ERR_NULL_POINTER = 1,    /* a required pointer is NULL */
    NWATTN_ERR_BAD_DIMENSION = 2,   /* a dimension is out of its range (d == 0, say) */
    NWATTN_ERR_BAD_LEADING_DIM = 3, /* a leading dimension is smaller than its row */
    NWATTN_ERR_BAD_STRIDE = 4,      /* an output batch stride makes items overlap */
    NWATTN_ERR_BAD_PARAMETER = 5,   /* a bandwidth or scale is not finite, or not > 0 */
    NWATTN_ERR_BAD_ENUM = 6,        /* an unknown enum value or flag bit */
    NWATTN_ERR_BAD_MASK = 7,        /* a valid length is larger than n */
    NWATTN_ERR_ALIASING = 8,        /* an output shares an element with an input or output */
    NWATTN_ERR_OVERFLOW = 9,        /* a size or byte count does not fit in size_t */
    NWATTN_ERR_TOO_LARGE = 10,      /* a leading dimension or stride exceeds the BLAS integer */
    NWATTN_ERR_ALLOC = 11,          /* the allocator returned NULL */
    NWATTN_ERR_UNSUPPORTED = 12,    /* the backend cannot do this here (see the message) */
    NWATTN_ERR_DEGENERATE_DATA = 13 /* too few points, or a coordinate without spread */
} nwattn_status;

/* "NWATTN_ERR_NULL_POINTER" etc.; "NWATTN_ERR_UNKNOWN" for values that are no status. */
NWATTN_API const char *nwattn_status_name(nwattn_status status);
/* A one-line English description of the status. Never NULL. */
NWATTN_API const char *nwattn_status_describe(nwattn_status status);

/* ---- Context ----------------------------------------------------------------------------- */
/* The caller-owned handle for settings and reusable working memory. It must not be used by two
 * threads at the same time: one per thread. */
typedef struct nwattn_context nwattn_context;

/* Working memory comes from this allocator; alloc returning NULL makes the call fail with
 * NWATTN_ERR_ALLOC and leaves the outputs untouched. */
typedef struct nwattn_allocator {
    void *(*alloc)(void *user, size_t bytes); /* aligned for any object type, like malloc */
    void (*free)(void *user, void *ptr);      /* never called with NULL */
    void *user;
} nwattn_allocator;

/* Creates a context with NWATTN_BACKEND_AUTO, one thread and the C library's malloc/free. */
NWATTN_API nwattn_status nwattn_context_create(nwattn_context **out);
/* The same with a caller's allocator (copied; it is used for the context itself as well). */
NWATTN_API nwattn_status nwattn_context_create_with_allocator(nwattn_context **out,
                                                              const nwattn_allocator *allocator);
/* Frees the context, its working memory and its worker threads. NULL is a no-op. */
NWATTN_API void nwattn_context_destroy(nwattn_context *ctx);

/* The message of the last failed call on this context ("" after a successful call). Valid until
 * the next call on the context. Never NULL, also for ctx == NULL. */
NWATTN_API const char *nwattn_context_last_error(const nwattn_context *ctx);

/* How a pooling (nwattn_pool, nwattn_average_pool, nwattn_attention) is computed. Accuracy per
 * backend and score kind: docs/numerics.md; the fused path and AUTO's measurements:
 * docs/fused.md.
 * - REFERENCE: the definitions with double accumulation, (q - k)^2 computed directly: the
 *   float rounding of the exact result up to a few ulp. The oracle.
 * - BLAS: unfused. Scores of a block of query rows (at most 16 MiB of them) in one sgemm, a
 *   masked float softmax, then W·V in one sgemm. Scores are rounded like a float32 GEMM.
 * - FUSED: tiles of up to 64 query rows × 16 .. 256 keys through cblas_sgemm with an online
 *   softmax (row sums in double); the m×n weights never exist, working memory is a few tiles
 *   per worker. Scores exactly as BLAS; the tests hold FUSED and BLAS to the same bounds.
 * - AUTO: REFERENCE when a leading dimension does not fit the BLAS integer; for poolings FUSED
 *   when n >= 32 and d, dv <= 128, else BLAS. By shape only: requesting weights or lse never
 *   changes the output.
 * BLAS and FUSED exponentials are the library's vector kernels (AVX-512F, AVX2 + FMA or
 * portable C, chosen when the context is created): within 2 ulp of the correctly rounded expf,
 * exp(-INFINITY) exactly 0, NaN kept. The other primitives (scores, softmax, bmm) have nothing
 * to fuse: FUSED runs them like BLAS. Partial states use the fused tiles under every backend
 * but REFERENCE. */
typedef enum nwattn_backend {
    NWATTN_BACKEND_AUTO = 0,      /* by shape: see above */
    NWATTN_BACKEND_REFERENCE = 1, /* plain loops, double accumulation: the oracle */
    NWATTN_BACKEND_BLAS = 2,      /* cblas_sgemm / sgemv / sgemm_batch, float softmax */
    NWATTN_BACKEND_FUSED = 3      /* tiled online softmax on cblas_sgemm tiles */
} nwattn_backend;

/* The context's backend (default NWATTN_BACKEND_AUTO); an unknown value is NWATTN_ERR_BAD_ENUM. */
NWATTN_API nwattn_status nwattn_context_set_backend(nwattn_context *ctx, nwattn_backend backend);
NWATTN_API nwattn_backend nwattn_context_get_backend(const nwattn_context *ctx);

/* Worker threads (docs/threads.md). A context has `threads` workers (default 1: everything on
 * the calling thread) for the fused pooling, nwattn_bmm's small products and the fast path of
 * the regression functions: the calling thread plus threads - 1 pthreads owned by the context,
 * started by the first call that needs them and joined by nwattn_context_destroy or a change
 * of the count. Between calls they spin 1 ms (yielding), then sleep. They are named nwattn-w1,
 * nwattn-w2, ..., block every signal and are never shared between contexts; a forked child
 * starts new ones. A thread that cannot be started costs speed, never a failure.
 * Their BLAS calls are sized (m·n·k <= 2^18) so that OpenBLAS runs them without waking its own
 * pool. The library never calls openblas_set_num_threads or changes any process-wide setting;
 * the unfused BLAS path and nwattn_attention's projections use the BLAS's own threads as the
 * caller configured them. Use one pool at a time: context threads with the fused path, or
 * BLAS threads with one context thread.
 * 1 <= threads <= NWATTN_MAX_THREADS, else NWATTN_ERR_BAD_PARAMETER. */
#define NWATTN_MAX_THREADS 256
NWATTN_API nwattn_status nwattn_context_set_threads(nwattn_context *ctx, size_t threads);
/* The context's thread count (1 for ctx == NULL). */
NWATTN_API size_t nwattn_context_get_threads(const nwattn_context *ctx);

/* Tile sizes of the fused path (docs/performance.md, "Tiles"). By default they are derived
 * per call from the caches the CPU reports when the context is created (sysconf; 32 KiB L1d
 * and 512 KiB L2 where the system says nothing) and from the BLAS's small-product threshold:
 * products of 64 query rows by keys such that m·n·k <= 2^18 (a tile holds two such key
 * chunks where L1d holds their scores, a unit of work up to four such row groups), and for
 * the one-pass
 * 1-D Nadaraya-Watson row (d = 1, one value per key, Gaussian or Laplace) as many keys as
 * fill half of L1d with keys and values. set_tiles overrides either (0: derived again; an
 * override is the product size itself, without groups or chunks on that side);
 * results change only by rounding (the softmax is summed tile by tile) and never with the
 * thread count. 0 <= rows <= NWATTN_MAX_TILE_ROWS, 0 <= keys <= NWATTN_MAX_TILE_KEYS, else
 * NWATTN_ERR_BAD_PARAMETER. get_tiles reports the override (0 where there is none). */
#define NWATTN_MAX_TILE_ROWS 4096
#define NWATTN_MAX_TILE_KEYS 65536
NWATTN_API nwattn_status nwattn_context_set_tiles(nwattn_context *ctx, size_t rows, size_t keys);
NWATTN_API nwattn_status nwattn_context_get_tiles(const nwattn_context *ctx, size_t *rows,
                                                  size_t *keys);

/* What the context runs on, as one line of text for logs and bug reports: the vector kernels
 * (and the best this CPU has), the BLAS's core (OpenBLAS) and whether it has small-product
 * kernels (then the fused SDPA multiplies by a transposed copy of each key tile), the cache
 * sizes read and where from, the tile override, and
 * the products the fused path takes for three shapes (scaled dot product d = 64, the 1-D
 * Gaussian, d = 8 distances: query rows × keys per product), how many such row groups a unit
 * of work holds at most (it prepares each key tile once for all of them; fewer where the call
 * has few row blocks, 1 with a row override) and how many key chunks a tile holds (its row
 * softmax runs once per tile; 1 with a key override and for rows scored one at a time), e.g.
 *   "simd=avx2 cpu=avx512 blas=Haswell small_products=0 l1d=49152 l2=1048576 caches=sysconf
 *    override=0x0 tiles: dot64=64x64 nw1d=64x3072 dist8=64x256 groups<=4 chunks=2"
 * (one line). Writes at most `size` bytes including the terminating NUL into buf (buf may be
 * NULL when size is 0) and returns the length of the whole text, as snprintf does; 0 for
 * ctx == NULL. */
NWATTN_API size_t nwattn_context_describe(const nwattn_context *ctx, char *buf, size_t size);

/* Working memory: the context keeps the largest block any call needed (scores of a block of
 * query rows, centred copies of Q and K, pointer arrays) and reuses it, so a steady workload
 * allocates only on its first call. These report and release it. */
NWATTN_API size_t nwattn_context_workspace_bytes(const nwattn_context *ctx);
NWATTN_API void nwattn_context_release_workspace(nwattn_context *ctx);

/* ---- Scores and masks -------------------------------------------------------------------- */
typedef enum nwattn_score_kind {
    NWATTN_SCORE_DOT = 0,      /* scale · q·k; scaled dot product: scale = 1/sqrt(d) */
    NWATTN_SCORE_GAUSSIAN = 1, /* -|q - k|^2 / (2 h^2)            (Nadaraya-Watson, Gaussian) */
    NWATTN_SCORE_LAPLACE = 2,  /* -|q - k| / h, Euclidean norm     (exponential decay kernel) */
    NWATTN_SCORE_COSINE = 3    /* scale · q·k / (|q| |k|), 0 if q or k is 0 (cosine attention) */
} nwattn_score_kind;

/* How a query is compared with a key. With per-dimension bandwidths h_j the distance is taken
 * on the rescaled coordinates: Gaussian -sum_j (q_j - k_j)^2 / (2 h_j^2), Laplace
 * -sqrt(sum_j ((q_j - k_j) / h_j)^2). d2l's nonparametric pooling is Gaussian with h = 1, its
 * parametric model softmax(-((x - x_i) w)^2 / 2) is Gaussian with h = 1/|w|.
 * Accuracy per kind and backend (BLAS and FUSED: float32 GEMM rounding for dot and cosine;
 * Gaussian and Laplace with d <= 8 computed directly, (d + 4)·2^-24 relative; REFERENCE in
 * double from input to output): docs/numerics.md "Scores, per kind".
 * NaN and Inf in Q or K give the IEEE score of the definition under every backend; for Gaussian
 * and Laplace an infinite coordinate facing a finite one gives score -INFINITY (masked). */
typedef struct nwattn_score {
    nwattn_score_kind kind;
    float scale;             /* DOT and COSINE only: finite */
    float bandwidth;         /* GAUSSIAN, LAPLACE: finite and > 0; unused if bandwidths is set */
    const float *bandwidths; /* NULL, or d per-dimension bandwidths, each finite and > 0 */
} nwattn_score;

/* Key j is masked for query i of item b when any part of the mask says so, or when its score
 * or additive value is -INFINITY. A masked key gets exactly zero weight (not the tiny weight of
 * d2l's -1e6 trick), and its score and additive value are never looked at. A row whose keys
 * are all masked gets zero weights, a zero output and log-sum-exp -INFINITY: never NaN. */
enum {
    NWATTN_MASK_LEAVE_ONE_OUT = 1u << 0, /* key i is masked for query i (d2l's training set-up) */
    NWATTN_MASK_CAUSAL = 1u << 1,        /* keys j > i are masked */
    NWATTN_MASK_LENS_PER_ROW = 1u << 2   /* valid_lens holds batch·m entries, [b·m + i] */
};

/* The parts are combined; zero-initialise and set what you need. NULL means no mask. */
typedef struct nwattn_mask {
    unsigned flags; /* NWATTN_MASK_* bits */
    /* NULL, or valid lengths: keys j >= len are masked. One per item (valid_lens[b]), or one per
     * query row with NWATTN_MASK_LENS_PER_ROW. Each must be <= n. */
    const size_t *valid_lens;
    /* NULL, or m×n floats added to the scores before the softmax (-INFINITY masks). */
    const float *additive;
    size_t ld_additive, stride_additive;
    /* NULL, or m×n bytes: 0 masks the key, anything else keeps it. */
    const unsigned char *keep;
    size_t ld_keep, stride_keep;
} nwattn_mask;

/* ---- Pooling ----------------------------------------------------------------------------- */
/* O_b = softmax(score(Q_b, K_b) + mask) · V_b in one call.
 * weights (m×n) and lse (lse[b·stride_lse + i]) are optional outputs (NULL to skip): pass
 * weights to draw heatmaps. Without them the m×n weights never exist as a whole: the unfused
 * path forms them a block of query rows at a time in the context's working memory, the fused
 * path a tile at a time. Outputs must share no element with the inputs or each other
 * (ALIASING).
 * Rows follow the softmax row contract (see nwattn_softmax). Scores never pass through float
 * on their way to the softmax, so any valid bandwidth (smallest positive float .. FLT_MAX) and
 * scale works: with h = 1e-30 the nearest key gets weight 1. NaN/Inf in V reach every row that
 * gives the key a nonzero weight; through a zero weight they may or may not (keep padding
 * values finite). Accuracy: docs/numerics.md. */
NWATTN_API nwattn_status nwattn_pool(nwattn_context *ctx, const nwattn_score *score,
                                     const nwattn_mask *mask,
                                     size_t batch, size_t m, size_t n, size_t d, size_t dv,
                                     const float *q, size_t ldq, size_t stride_q,
                                     const float *k, size_t ldk, size_t stride_k,
                                     const float *v, size_t ldv, size_t stride_v,
                                     float *o, size_t ldo, size_t stride_o,
                                     float *weights, size_t ldw, size_t stride_w,
                                     float *lse, size_t stride_lse);

/* ---- Gradients of the pooling ------------------------------------------------------------ */
/* Backpropagation through nwattn_pool: from the forward's inputs, what it wrote (O and lse)
 * and dO = dL/dO, the gradients of L with respect to Q, K, V and the score's parameter:
 *   D_i = dO_i . O_i,  dP = dO V^T,  dS = P o (dP - D),  dV = P^T dO,
 *   dQ, dK, d(parameter) = dS through the score's own chain rule:
 *     DOT      dQ = a dS K, dK = a dS^T Q, d_scale = sum dS o (Q K^T)
 *     COSINE   through q/|q| and k/|k| (a zero row has gradient 0), d_scale = sum dS o cos
 *     GAUSSIAN dQ_i = sum_j dS_ij (k_j - q_i) / h^2 (per dimension: / h_l^2), dK likewise,
 *              d_bandwidth = sum dS_ij |q_i - k_j|^2 / h^3 (per dimension: d_bandwidths)
 *     LAPLACE  the same with dS_ij divided by the scaled distance; at q = k the subgradient 0.
 *   d(mask.additive) = dS itself (grads.d_additive, optional: learned attention biases).
 * P is the forward's weights. Masked pairs contribute nothing: a key masked for every query
 * gets exactly zero dK and dV, a fully masked row (lse -INFINITY) exactly zero dQ (dO finite).
 * A live NaN (the forward's NaN rows) makes the row's gradient and those of its live keys NaN.
 * Broadcast inputs (stride 0) get one gradient per item: sum them for the shared matrix. The
 * parameter gradient is one number (or d) for the whole batch, summed in double.
 *
 * The shape of the call: its first seventeen arguments are nwattn_pool's own, unchanged, so a
 * binding passes the forward's inputs as they were; what the forward wrote plus dO
 * (nwattn_pool_upstream) and what this call writes (nwattn_pool_grads) are two plain structs
 * of pointer + leading dimension + stride fields, like nwattn_mask and nwattn_pool_state:
 * ctypes and Julia mirror each with one struct, no field is a union or a callback, and a NULL
 * parameter-gradient field means "not asked for". A flat list would have 35 positional
 * arguments where nothing says which ld belongs to which matrix. Before a release the structs
 * grow only at their end, by optional outputs whose NULL means "not asked for" (d_additive
 * came so): source that zero-initialises them compiles unchanged and asks for nothing new.
 * The library reads the whole struct, so after a release a new field is an ABI change (a new
 * function, or a SONAME bump), never a silent one.
 *
 * Backends. REFERENCE: the definition in double (scores, weights and sums recomputed from Q,
 * K, V; o and lse are checked but not read): the float rounding of the exact gradient, up to
 * a few ulp of the largest term of each sum. Every other backend: FlashAttention-2's
 * backward. P is rebuilt tile by tile from lse and the forward's scores (the same descriptor
 * code), D from O, and the tile products go through cblas_sgemm, five per tile pair (S, dP,
 * dV, dK, dQ). Each item's blocks of 64 keys (fewer for rows wider than 64) are dealt into G
 * groups (block j to group j mod G), G a power of two up to 16 chosen from the item's m, n,
 * d, dv and score kind alone;
 * a unit walks one group's key blocks in order, each against every query block in order,
 * writing dK and dV of its keys and adding into its group's dQ sum; the groups' sums are then
 * added in group order (in double). So the context's threads are used even when batch is 1,
 * and as G never depends on the thread count or the rest of the batch and every sum runs in a
 * fixed order (the parameter gradient adds the units' shares in a fixed order too), an item's
 * gradients have the same bits for any thread count and alone or inside any batch.
 * Working memory: a few 64×64 tiles per worker, 9 bytes per query row, and the groups' dQ
 * sums, (G - 1)·m·d floats per item (and G·m doubles for Gaussian and Laplace), which G is
 * lowered to keep within 48 MiB (items run in phases of as many as fit): about 48.6 MiB at
 * m = n = 65536, d = 64, about 15 MiB at 4096². Where not even two groups fit (m·d above
 * about 12.5 million) and n > 64, the backward runs seven products per tile pair instead (dK
 * and dV by blocks of keys, dQ by blocks of queries, each forming S and dP itself; same
 * guarantees) in a few tiles of working memory, whatever m and n.
 * Accuracy: each weight carries a relative error of about (|lse_i| + |x_ij| + 4)·2^-24 from
 * the float lse and exponential, the products float32 GEMM rounding (tested against REFERENCE
 * to 2e-4 of each gradient's largest entry: docs/numerics.md "Gradients"). A call whose Q or K holds NaN or Inf, or whose lse holds NaN,
 * +INFINITY or a finite value beyond ±1024 (where a float lse no longer pins P down) runs the
 * reference under every backend.
 * All outputs are required except d_additive and the parameter gradient: set the one field of
 * grads that matches the score (d_scale for DOT and COSINE, d_bandwidth for a scalar bandwidth,
 * d_bandwidths for per-dimension ones; another field set is NWATTN_ERR_BAD_PARAMETER).
 * m == 0 or n == 0 write zero gradients. Outputs must overlap no input or each other. */
typedef struct nwattn_pool_upstream {
    const float *o; /* the forward's output, m×dv per item */
    size_t ldo, stride_o;
    const float *lse; /* the forward's log-sum-exp, lse[b·stride_lse + i] */
    size_t stride_lse;
    const float *d_o; /* dL/dO, m×dv per item */
    size_t ld_do, stride_do;
} nwattn_pool_upstream;

typedef struct nwattn_pool_grads {
    float *d_q; /* m×d per item */
    size_t ld_dq, stride_dq;
    float *d_k; /* n×d per item */
    size_t ld_dk, stride_dk;
    float *d_v; /* n×dv per item */
    size_t ld_dv, stride_dv;
    float *d_scale;      /* NULL or 1 float: DOT and COSINE */
    float *d_bandwidth;  /* NULL or 1 float: GAUSSIAN and LAPLACE with score.bandwidths NULL */
    float *d_bandwidths; /* NULL or d floats: GAUSSIAN and LAPLACE with score.bandwidths */
    /* NULL, or dL/d(mask.additive) (learned attention biases): dS_ij = P_ij (dP_ij - D_i), laid
     * out like the forward's additive mask, m×n per item (pitch ld_d_additive >= n, items
     * stride_d_additive apart). Where the forward broadcasts one additive matrix to every item
     * (mask.stride_additive == 0 with batch > 1) this is one m×n matrix holding the sum over
     * the items, added in item order (stride_d_additive unused): the same bits for any thread
     * count. Masked pairs (an additive -INFINITY, a masked key, a fully masked row) get exactly
     * 0. Needs mask.additive (else NWATTN_ERR_BAD_PARAMETER). Fields are only ever appended
     * to this struct: a caller that zero-initialises it ({0}, designated initialisers, or a
     * positional list of the earlier fields) leaves d_additive NULL. */
    float *d_additive;
    size_t ld_d_additive, stride_d_additive;
} nwattn_pool_grads;

NWATTN_API nwattn_status nwattn_pool_backward(nwattn_context *ctx, const nwattn_score *score,
                                              const nwattn_mask *mask,
                                              size_t batch, size_t m, size_t n, size_t d,
                                              size_t dv,
                                              const float *q, size_t ldq, size_t stride_q,
                                              const float *k, size_t ldk, size_t stride_k,
                                              const float *v, size_t ldv, size_t stride_v,
                                              const nwattn_pool_upstream *upstream,
                                              const nwattn_pool_grads *grads);

/* Average pooling, the baseline: every unmasked key gets the same weight, so each row of O_b is
 * the mean of the V_b rows its mask keeps (all of them without a mask). Additive mask values
 * act on a zero score, so they reweight keys. Fully masked rows give zeros. */
NWATTN_API nwattn_status nwattn_average_pool(nwattn_context *ctx, const nwattn_mask *mask,
                                             size_t batch, size_t m, size_t n, size_t dv,
                                             const float *v, size_t ldv, size_t stride_v,
                                             float *o, size_t ldo, size_t stride_o);

/* ---- Building blocks: scores, softmax, batched product ----------------------------------- */
/* S_b = score(Q_b, K_b): m×n raw scores, no mask. Each is the float rounding of the score, so
 * scores beyond ±FLT_MAX come out as ±INFINITY; since nwattn_softmax reads -INFINITY as masked,
 * use nwattn_pool (which can also return the weights) for such extreme scales. */
NWATTN_API nwattn_status nwattn_scores(nwattn_context *ctx, const nwattn_score *score,
                                       size_t batch, size_t m, size_t n, size_t d,
                                       const float *q, size_t ldq, size_t stride_q,
                                       const float *k, size_t ldk, size_t stride_k,
                                       float *s, size_t lds, size_t stride_s);

/* W_b = softmax over each row of (S_b + mask), max-shifted. W may be S itself (same pointer and
 * ld, and stride when batch > 1) for an in-place softmax. lse, if not NULL, receives each row's
 * log-sum-exp of the unmasked (S + additive) entries, lse[b·stride_lse + i].
 * The row contract (also nwattn_pool's; in full in docs/numerics.md): a live key's value is
 * score + additive in double (it may be +INFINITY or NaN, never overflows); then per row
 *   no live key                 -> weights 0, output 0, lse -INFINITY ("fully masked");
 *   some live value is NaN      -> live weights NaN, masked weights 0, output and lse NaN;
 *   c live values are +INFINITY -> weight 1/c on each of them, 0 elsewhere, lse +INFINITY;
 *   otherwise                   -> the ordinary max-shifted softmax.
 * lse is rounded to float, so it is ±INFINITY when the true value lies beyond ±FLT_MAX. */
NWATTN_API nwattn_status nwattn_softmax(nwattn_context *ctx, const nwattn_mask *mask,
                                        size_t batch, size_t m, size_t n,
                                        const float *s, size_t lds, size_t stride_s,
                                        float *w, size_t ldw, size_t stride_w,
                                        float *lse, size_t stride_lse);

/* C_b = A_b · B_b with A_b m×k, B_b k×n, C_b m×n: torch.bmm. With A = weights and B = values
 * this is the weighted average O = W·V. Goes through cblas_sgemm_batch where the BLAS has it;
 * single-column and single-row products go through sgemv, and a batch of dot products
 * (m = n = 1, d2l's (B, 1, n) × (B, n, 1), with contiguous columns of B) through the library's
 * vector dot kernel in one pass. With context threads > 1, items with m·n·k <= 2^18 are spread
 * over the workers; larger ones run one after the other on the BLAS's threads. NaN and Inf in
 * A or B follow IEEE arithmetic (0 · NaN may or may not reach C: docs/numerics.md). */
NWATTN_API nwattn_status nwattn_bmm(nwattn_context *ctx, size_t batch,
                                    size_t m, size_t n, size_t k,
                                    const float *a, size_t lda, size_t stride_a,
                                    const float *b, size_t ldb, size_t stride_b,
                                    float *c, size_t ldc, size_t stride_c);

/* ---- Partial states: pooling over shards of the keys -------------------------------------- */
/* The online-softmax state of a pooling over a subset of the keys, for each query row i:
 *   max[i]  a shift: the largest masked score (plus additive mask) of the subset,
 *           -INFINITY if none of its keys is live;
 *   sum[i]  the sum over the subset's live keys j of exp(s_ij - max[i]);
 *   acc[i]  the sum over the same keys of exp(s_ij - max[i]) · v_j (dv floats).
 * A state with sum 0 is empty (max -INFINITY, acc zeros): the identity of merging.
 * Merging the states of two disjoint subsets gives the state of their union, and finishing a
 * state gives the pooling over its keys: O = acc / sum, lse = max + log(sum). Merging is
 * commutative and associative up to float rounding, so keys can be sharded in any way and the
 * states merged in any order. Non-finite values follow the row contract (a live NaN makes the
 * row's state NaN; live +INFINITY values give max = +INFINITY, sum = their count and acc =
 * the sum of their values, which merging and finishing carry to the limit). The shift is a
 * float: a row whose largest live value lies beyond ±FLT_MAX gets a NaN state, never an
 * empty one (use nwattn_pool for such scales). Details: docs/numerics.md. */
typedef struct nwattn_pool_state {
    float *acc; /* batch × m × dv: acc[b·stride_acc + i·ld_acc + c] */
    size_t ld_acc, stride_acc;
    float *max; /* batch × m: max[b·stride_stats + i] */
    float *sum; /* batch × m: sum[b·stride_stats + i] */
    size_t stride_stats;
} nwattn_pool_state;

/* Writes the state of queries Q_b pooled over keys key_offset .. key_offset+n-1 of a larger
 * problem (all m rows). k and v point at those keys: row 0 of K_b and V_b is key key_offset.
 * The mask is the whole problem's mask seen through the shard: causal, leave-one-out and valid
 * lengths count whole-problem keys (a valid length may be anything, keys at or beyond it are
 * masked), while mask.additive and mask.keep point at the shard's first column (the whole
 * mask's pointer + key_offset, with the whole mask's leading dimension and stride).
 * n == 0 writes empty states. REFERENCE evaluates the definition in double; every other
 * backend uses the fused tiles (cblas_sgemm), with the context's threads. The three state
 * arrays must not overlap each other or an input. */
NWATTN_API nwattn_status nwattn_pool_partial(nwattn_context *ctx, const nwattn_score *score,
                                             const nwattn_mask *mask, size_t batch, size_t m,
                                             size_t n, size_t d, size_t dv, size_t key_offset,
                                             const float *q, size_t ldq, size_t stride_q,
                                             const float *k, size_t ldk, size_t stride_k,
                                             const float *v, size_t ldv, size_t stride_v,
                                             const nwattn_pool_state *state);

/* into = into merged with from, row by row: with M = max(M_1, M_2) and a_t = exp(M_t - M),
 * max = M, sum = a_1 sum_1 + a_2 sum_2, acc = a_1 acc_1 + a_2 acc_2, evaluated in double and
 * rounded once (an empty state leaves the other unchanged). The two states must not overlap.
 * One implementation serves every backend. */
NWATTN_API nwattn_status nwattn_pool_state_merge(nwattn_context *ctx, size_t batch, size_t m,
                                                 size_t dv, const nwattn_pool_state *into,
                                                 const nwattn_pool_state *from);

/* O_b = acc / sum and lse = max + log(sum), row by row; empty rows give zeros and -INFINITY,
 * as a fully masked row of nwattn_pool does. o may be the state's accumulator itself (same
 * pointer and leading dimension, and stride when batch > 1) to finish in place; lse is
 * optional (NULL). */
NWATTN_API nwattn_status nwattn_pool_state_finish(nwattn_context *ctx, size_t batch, size_t m,
                                                  size_t dv, const nwattn_pool_state *state,
                                                  float *o, size_t ldo, size_t stride_o,
                                                  float *lse, size_t stride_lse);

/* ---- Attention layers: positional encoding, self-, cross- and multi-head attention -------- */
/* d2l's sinusoidal positional encoding of positions p = first .. first+t-1 (row i is p =
 * first + i), for j = 0 .. (d-1)/2:
 *   P[i, 2j] = sin(p / 10000^(2j/d)),   P[i, 2j+1] = cos(p / 10000^(2j/d))
 * (an odd d ends with a sine column). Evaluated in double and rounded once, the same under
 * every backend. Add it to the embeddings (X + P) before the attention's projections; `first`
 * lets incremental decoding continue where the last chunk ended. d >= 1. */
NWATTN_API nwattn_status nwattn_positional_encoding(nwattn_context *ctx, size_t t, size_t d,
                                                    size_t first, float *p, size_t ldp);

/* The weights of an attention layer. Every matrix is dense row-major with the nn.Linear
 * layout (out_features × in_features, y = x·W^T + b):
 *   Q = X_q·W_q^T + b_q   (d_qk wide)     K = X_k·W_k^T + b_k   (d_qk wide)
 *   V = X_v·W_v^T + b_v   (d_v wide)
 *   head h (0 .. heads-1) takes columns h·d_qk/heads .. of Q and K and h·d_v/heads .. of V:
 *   O_h = softmax(score(Q_h, K_h) + mask) · V_h,   Y = concat(O_0 .. O_{heads-1})·W_o^T + b_o
 * Without w_o the output is the concatenation itself (d_v wide): a minimal single-head
 * SelfAttention(d_model, d_k, d_v) is heads = 1, d_qk = d_k, d_v = d_v, w_o = NULL.
 *
 * Loading PyTorch's nn.MultiheadAttention(E, H) (batch_first=True, bias=True, kdim = vdim = E):
 *   heads = H, d_q_in = d_k_in = d_v_in = d_qk = d_v = d_out = E,
 *   w_q = in_proj_weight,  w_k = in_proj_weight + E·E,  w_v = in_proj_weight + 2·E·E,
 *   b_q = in_proj_bias,    b_k = in_proj_bias + E,      b_v = in_proj_bias + 2·E,
 *   w_o = out_proj.weight, b_o = out_proj.bias,  score NULL (scaled dot, 1/sqrt(E/H)).
 * With kdim or vdim != E PyTorch keeps q_proj_weight (E×E), k_proj_weight (E×kdim) and
 * v_proj_weight (E×vdim) apart: w_q, w_k, w_v point at them, d_k_in = kdim, d_v_in = vdim.
 * bias=False: the four bias pointers are NULL. Its masks: attn_mask (T_q×T_kv, float added
 * or bool True = masked) is mask.additive, or mask.keep with the bytes inverted;
 * is_causal is NWATTN_MASK_CAUSAL; key_padding_mask (B×T_kv) is valid_lens when it pads the
 * end of each sequence, else mask.keep. need_weights=True, average_attn_weights=False is the
 * weights output below (PyTorch's default averages it over the heads). Dropout: none. */
typedef struct nwattn_attention_params {
    size_t heads;                 /* >= 1, divides d_qk and d_v */
    size_t d_q_in, d_k_in, d_v_in; /* widths of the query, key and value inputs, >= 1 */
    size_t d_qk;                  /* projected query and key width (heads × per-head d) */
    size_t d_v;                   /* projected value width (heads × per-head dv) */
    size_t d_out;                 /* rows of w_o, the output width; unused without w_o */
    const float *w_q;             /* d_qk × d_q_in */
    const float *w_k;             /* d_qk × d_k_in */
    const float *w_v;             /* d_v × d_v_in */
    const float *w_o;             /* d_out × d_v, or NULL: no output projection */
    const float *b_q, *b_k, *b_v, *b_o; /* NULL (no bias) or d_qk, d_qk, d_v, d_out floats;
                                         * b_o without w_o is NWATTN_ERR_BAD_PARAMETER */
} nwattn_attention_params;

/* Y_b = attention of the batch item's query sequence X_q (t_q × d_q_in) over its key and
 * value sequences X_k (t_kv × d_k_in) and X_v (t_kv × d_v_in). Self-attention passes the same
 * sequence three times (t_q == t_kv); cross-attention passes the encoder output as X_k and
 * X_v. The inputs may alias each other; Y (t_q × d_out, or d_v without w_o) must overlap none.
 * score: NULL is the scaled dot product with scale 1/sqrt(d_qk/heads); any other score is
 * applied per head with d = d_qk/heads (Gaussian heads: Nadaraya-Watson on the projections).
 * mask: as for nwattn_pool with m = t_q, n = t_kv, per batch item; all heads share it.
 * weights (optional, NULL to skip): the per-head attention weights for heatmaps, item b's
 * head h in rows h·t_q .. h·t_q+t_q-1 of weights + b·stride_w, row pitch ldw (>= t_kv): a
 * contiguous (batch, heads, t_q, t_kv) array has ldw = t_kv, stride_w = heads·t_q·t_kv.
 * The projections are cblas_sgemm calls (double loops under REFERENCE) on the calling thread,
 * the pooling follows the backend (AUTO, BLAS, FUSED, REFERENCE) and the context's threads.
 * Working memory: the projected Q, K, V (head by head) and the concatenated heads, one more
 * buffer the size of the largest of them, plus what the pooling needs. */
NWATTN_API nwattn_status nwattn_attention(nwattn_context *ctx,
                                          const nwattn_attention_params *params,
                                          const nwattn_score *score, const nwattn_mask *mask,
                                          size_t batch, size_t t_q, size_t t_kv,
                                          const float *x_q, size_t ldx_q, size_t stride_x_q,
                                          const float *x_k, size_t ldx_k, size_t stride_x_k,
                                          const float *x_v, size_t ldx_v, size_t stride_x_v,
                                          float *y, size_t ldy, size_t stride_y,
                                          float *weights, size_t ldw, size_t stride_w);

/* The gradients of an attention layer, the outputs of nwattn_attention_backward. Every field
 * is optional: NULL is "not needed" (data inputs usually have no gradient). The weight and
 * bias gradients are dense with the layout of nwattn_attention_params' fields (nn.Linear's)
 * and summed over the batch; db_* may be set where the layer has no bias (the gradient of a
 * zero bias); dw_o and db_o need w_o. d_score: the score's parameter, summed over heads and
 * batch: 1 float (the scale, also for the default score: a learnable temperature; or the one
 * bandwidth), or d_qk/heads with per-dimension bandwidths. For self-attention (one X passed
 * three times) dL/dX = dx_q + dx_k + dx_v. */
typedef struct nwattn_attention_grads {
    float *dx_q; /* t_q × d_q_in per item */
    size_t ld_dx_q, stride_dx_q;
    float *dx_k; /* t_kv × d_k_in per item */
    size_t ld_dx_k, stride_dx_k;
    float *dx_v; /* t_kv × d_v_in per item */
    size_t ld_dx_v, stride_dx_v;
    float *dw_q, *dw_k, *dw_v, *dw_o; /* d_qk × d_q_in, d_qk × d_k_in, d_v × d_v_in, d_out × d_v */
    float *db_q, *db_k, *db_v, *db_o; /* d_qk, d_qk, d_v, d_out */
    float *d_score;
    /* NULL, or dL/d(mask.additive) (a learned attention bias), t_q × t_kv per item laid out
     * as nwattn_pool_grads.d_additive is: summed over the heads (which share the mask), head
     * by head in order, and over the items too where the mask is one matrix for every item
     * (mask.stride_additive == 0, batch > 1). Needs mask.additive. Appended after d_score:
     * zero-initialised callers leave it NULL. */
    float *d_additive;
    size_t ld_d_additive, stride_d_additive;
} nwattn_attention_grads;

/* Backpropagation through nwattn_attention: from the same inputs (its first sixteen arguments
 * unchanged) and dY = dL/dY (t_q × d_out per item, d_v without w_o), the gradients asked for
 * in grads. It runs the forward again (projections and pooling with lse, in working memory)
 * and then, in order: dW_o = sum_b dY^T C, db_o = sum dY, dC = dY W_o; per head
 * nwattn_pool_backward's computation (same paths, accuracy and threads); dW_x = sum_b dX'^T
 * X, db_x = column sums, dX = dX' W_x for x = q, k, v (X' the projection). REFERENCE runs every
 * product in double; the others through cblas_sgemm (the projections' products on the BLAS's
 * own threads, as the forward's). Working memory: the projections, the concatenated heads and
 * their gradients, the heads of C and dC once more as dense blocks (2·(t_q·(d_qk + 2·d_v) +
 * t_kv·(d_qk + d_v)) floats per item), one more buffer the size of the largest projection,
 * plus the pooling's. Outputs must overlap no input and each other. */
NWATTN_API nwattn_status nwattn_attention_backward(nwattn_context *ctx,
                                                   const nwattn_attention_params *params,
                                                   const nwattn_score *score,
                                                   const nwattn_mask *mask,
                                                   size_t batch, size_t t_q, size_t t_kv,
                                                   const float *x_q, size_t ldx_q,
                                                   size_t stride_x_q,
                                                   const float *x_k, size_t ldx_k,
                                                   size_t stride_x_k,
                                                   const float *x_v, size_t ldx_v,
                                                   size_t stride_x_v,
                                                   const float *dy, size_t ldy, size_t stride_dy,
                                                   const nwattn_attention_grads *grads);

/* Training without the forward twice. nwattn_attention_backward recomputes the projections
 * and the pooling (about a quarter of an 8 × 512 × 512, 8-head layer's backward); a training
 * step that keeps the forward's activations skips that:
 *
 *     nwattn_attention_saved_floats(ctx, &params, batch, t_q, t_kv, &floats);  (allocate)
 *     nwattn_attention_save(ctx, ..., y, ldy, stride_y, saved, floats);         (forward)
 *     nwattn_attention_backward_saved(ctx, ..., dy, ldy, stride_dy, saved, floats, &grads);
 *
 * The "..." are nwattn_attention's arguments from params to stride_x_v, unchanged;
 * nwattn_attention_save has no attention-weights output (nwattn_attention gives heatmaps).
 * saved is the caller's array of at least nwattn_attention_saved_floats floats, written by
 * nwattn_attention_save and read by nwattn_attention_backward_saved, which needs the same
 * arguments and context settings as the forward that wrote it (it cannot check that): the
 * projections Q, K and V head by head (heads × batch·t_q × d_qk/heads, heads × batch·t_kv ×
 * d_qk/heads and × d_v/heads), the concatenated heads C (batch·t_q × d_v, heads side by side)
 * and the heads' log-sum-exp (batch × heads × t_q), in that order (with t_q = 0 nothing is
 * written, and nothing is read). Results are bit-identical to
 * nwattn_attention and nwattn_attention_backward with the same context and arguments.
 * saved_floats below the count gives NWATTN_ERR_BAD_DIMENSION; saved may be NULL only when
 * the count is 0, and must overlap no other operand. */
NWATTN_API nwattn_status nwattn_attention_saved_floats(nwattn_context *ctx,
                                                       const nwattn_attention_params *params,
                                                       size_t batch, size_t t_q, size_t t_kv,
                                                       size_t *floats);
NWATTN_API nwattn_status nwattn_attention_save(nwattn_context *ctx,
                                               const nwattn_attention_params *params,
                                               const nwattn_score *score,
                                               const nwattn_mask *mask, size_t batch,
                                               size_t t_q, size_t t_kv, const float *x_q,
                                               size_t ldx_q, size_t stride_x_q,
                                               const float *x_k, size_t ldx_k,
                                               size_t stride_x_k, const float *x_v,
                                               size_t ldx_v, size_t stride_x_v, float *y,
                                               size_t ldy, size_t stride_y, float *saved,
                                               size_t saved_floats);
NWATTN_API nwattn_status nwattn_attention_backward_saved(
    nwattn_context *ctx, const nwattn_attention_params *params, const nwattn_score *score,
    const nwattn_mask *mask, size_t batch, size_t t_q, size_t t_kv, const float *x_q,
    size_t ldx_q, size_t stride_x_q, const float *x_k, size_t ldx_k, size_t stride_x_k,
    const float *x_v, size_t ldx_v, size_t stride_x_v, const float *dy, size_t ldy,
    size_t stride_dy, const float *saved, size_t saved_floats,
    const nwattn_attention_grads *grads);

/* ============================================================================================ */
/* ---- Nadaraya-Watson regression ------------------------------------------------------------ */
/*
 * Kernel regression of y on x, as statsmodels' KernelReg or R's np::npreg do it, with the
 * bandwidth chosen by exact leave-one-out cross-validation. docs/regression.md is the long form.
 *
 * One data set per call (no batch argument): training inputs x (n×d, row pitch ldx), training
 * targets y (n×dv, ldy), queries xq (m×d, ldq), predictions m×dv. Every x, y and xq value must
 * be finite and every bandwidth finite and > 0 (else NWATTN_ERR_BAD_PARAMETER). Duplicate x
 * values are ordinary points.
 *
 * Kernels. With bandwidths h_1..h_d, training point x_j is seen from the query q through the
 * scaled squared distance  t = sum_k ((q_k - x_jk) / h_k)^2  and weighs K(t):
 *   NWATTN_KERNEL_GAUSSIAN      exp(-t / 2)
 *   NWATTN_KERNEL_LAPLACE       exp(-sqrt(t))                  (exponential decay)
 *   NWATTN_KERNEL_EPANECHNIKOV  1 - t                 if t < 1, else 0
 *   NWATTN_KERNEL_TRICUBE       (1 - t^(3/2))^3       if t < 1, else 0
 *   NWATTN_KERNEL_UNIFORM       1                     if t <= 1, else 0   (boxcar: edge included)
 *   NWATTN_KERNEL_MATERN32      (1 + r) e^-r,          r = sqrt(t)         (C^1 at 0)
 *   NWATTN_KERNEL_MATERN52      (1 + r + r^2/3) e^-r                       (C^2 at 0)
 * Normalising constants are left out (they cancel). With d > 1 every kernel is radial in the
 * rescaled coordinates, as NWATTN_SCORE_GAUSSIAN and _LAPLACE. Epanechnikov, tricube and
 * uniform are compact (K = 0 beyond t = 1); the others are positive everywhere. LAPLACE,
 * MATERN32 and MATERN52 are the Laplace family poly(r) e^-r of Hofmeyr's FKSUM (its beta
 * coefficients (1), (1, 1) and (1, 1, 1/3)): with d == 1 their sums are exact in O(n log n)
 * (NWATTN_NW_METHOD_FASTSUM below).
 *
 * Estimators.
 *   Local constant (Nadaraya-Watson):  yhat(q) = sum_j K_j y_j / sum_j K_j. Gaussian and
 *     Laplace run through nwattn_pool (max-shifted: a query far from every training point gets
 *     the weights of its nearest points, never 0/0) unless the fast sums are chosen (which
 *     shift by the nearest point alike); the others normalise directly.
 *   Local linear:  yhat(q) = a, where (a, b) minimise sum_j K_j |y_j - a - b·(x_j - q)|^2
 *     (b is d×dv): no boundary bias, affine functions reproduced exactly. Each query's
 *     (d+1)×(d+1) system is solved by Cholesky (LAPACKE; closed form for d == 1 on the fast path).
 *
 * Rows without an estimate are reported through two optional outputs: row_flags (one byte per
 * query: 0, or an OR of NWATTN_ROW_* bits) and n_flagged (how many rows have a flag). Nothing
 * is ever silently 0 or accidentally NaN:
 * - NWATTN_ROW_EMPTY: a compact kernel and no training point with K > 0. The row gets what the
 *   model's `empty` field says (nwattn_empty). Rows of the non-compact kernels are never empty.
 * - NWATTN_ROW_SINGULAR: local linear only. The weighted moment matrix M, equilibrated to
 *   D M D with D = diag(M)^(-1/2) (so that the test does not depend on h or on the units of x),
 *   has a reciprocal condition number (LAPACK dpocon, 1-norm) below 1e-7: the row falls back to
 *   the local constant estimate with the same weights. As h grows the fit tends to the global
 *   (weighted) least-squares plane, which is never flagged unless the x themselves are
 *   collinear. An empty row is flagged EMPTY only.
 *
 * Methods (nwattn_nw_method, from the context): with d == 1 the rows of the non-compact
 * kernels can come from fast 1-D kernel sums instead (FASTSUM, chosen by AUTO by predicted
 * cost; see nwattn_context_set_nw_method below for their cost and accuracy).
 * Backends (from the context). REFERENCE: every weight in double with the C library's exp,
 * over all n points; local linear systems through LAPACKE for every d: the oracle. AUTO, BLAS,
 * FUSED (the fast path): local constant Gaussian and Laplace fits through nwattn_pool; all else
 * float32 weights (vectorised exp, x86-64 copies for AVX2 and AVX-512 chosen at run time) with
 * double sums; with d == 1 only the points whose weight can matter are visited (what is left
 * out weighs less than e^-17 of the total). With d == 2 the same rule through strips: the
 * training copy is cut by its second coordinate into about sqrt(n) strips of equal count,
 * each sorted by the first, and a row visits in each strip its window meets one run of
 * points: those with t <= 1 (compact kernels), else with t <= t_up + 2T (Gaussian) or
 * sqrt(t) <= sqrt(t_up) + T (Laplace; T + 8 for the Matern kernels), T = 17 + ln n, t_up >=
 * t_near the t of a point found near the query: the same e^-17 bound. Rows whose runs would
 * hold more than half of the points visit every point instead (large bandwidths). A local
 * linear fit that is singular but for weights below that bound falls back to local constant
 * (as in 1-D). nwattn_nw_cv, nwattn_nw_select_bandwidth, nwattn_nw_predict_backward and
 * nwattn_nw_predict (but its local constant Gaussian and Laplace fits, which go through
 * nwattn_pool) take these rows. Agreement with the reference, tested: at bandwidths no
 * smaller than the point spacing CV within 1e-7 relative and h·dCV/dh within 2e-6·CV; below
 * it local linear systems are near singular and the error grows like 2^-24 / rcond (1e-4 and
 * 1e-2 hold there); predictions to a few float32 ulp (docs/regression.md). The fast path spreads query rows over the context's threads in fixed
 * units whose sums are added in order: the same bits for any thread count. Working memory is
 * O((n + m) · (d + dv)) per thread beyond nwattn_pool's blocks: never an n×n matrix unless the
 * caller asks for the m×n weights.
 */

typedef enum nwattn_kernel {
    NWATTN_KERNEL_GAUSSIAN = 0,
    NWATTN_KERNEL_LAPLACE = 1,
    NWATTN_KERNEL_EPANECHNIKOV = 2,
    NWATTN_KERNEL_TRICUBE = 3,
    NWATTN_KERNEL_UNIFORM = 4,
    NWATTN_KERNEL_MATERN32 = 5, /* (1 + r) e^-r,  r = sqrt(t): FKSUM's beta = (1, 1) */
    NWATTN_KERNEL_MATERN52 = 6  /* (1 + r + r^2/3) e^-r:       FKSUM's beta = (1, 1, 1/3) */
} nwattn_kernel;

/* How the regression functions compute their rows (per context, nwattn_context_set_nw_method);
 * the backend REFERENCE overrides it (every row over all n points in double: the oracle).
 * - DIRECT: each row visits its points (with d <= 2 only its window, see above): O(m · window).
 * - FASTSUM: fast 1-D kernel sums, O(n log n + m log n) for every bandwidth, the local linear
 *   moments and the CV derivative in the same pass. Needs d == 1, a kernel below and no
 *   weights matrix; otherwise NWATTN_ERR_BAD_PARAMETER.
 *   Laplace family (LAPLACE, MATERN32, MATERN52): exact, by recursion over the sorted points
 *   (Hofmeyr's FKSUM, in a translated form that never expands around an absolute origin): up
 *   to double rounding, a relative error of a few n·2^-53 of the sum of |terms|.
 *   GAUSSIAN: a 1-D fast Gauss transform (Taylor expansions about centres of clusters of
 *   width <= h/2, source and, for the CV rows and queries inside dense clusters, target
 *   expansions; direct sums where they do not pay), within the bound eps of
 *   nwattn_context_set_nw_tolerance.
 *   Working memory O(n): about 8 bytes per training point beyond the sorted copy (the
 *   Gaussian about 40 + 8 dv).
 *   The rows are spread over the context's threads in fixed blocks: the same bits for any
 *   thread count. docs/regression.md has the methods and measurements.
 * - AUTO: FASTSUM where it can run and its predicted cost is below the direct path's
 *   m · window points (window from the data's range, the bandwidth and e^-(17 + ln n); for
 *   local constant Gaussian and Laplace predictions, whose direct path is the dense pool,
 *   m · n pairs at half a window point each); else DIRECT. Predicted fast-sum cost: Laplace
 *   family 3 n + m recursion steps of (1 + dv)·k^2 flops (k = 2 .. 7 moments); Gaussian,
 *   where its clusters of width h/2 would hold 24 points or more were the data spread evenly,
 *   20 n + 150 m, else 8 m · window (the rows then sum points one by one), times 1 + dv
 *   (units: one direct window point per vector; measured, docs/regression.md). */
typedef enum nwattn_nw_method {
    NWATTN_NW_METHOD_AUTO = 0,
    NWATTN_NW_METHOD_DIRECT = 1,
    NWATTN_NW_METHOD_FASTSUM = 2
} nwattn_nw_method;

/* The context's regression method (default AUTO); an unknown value is NWATTN_ERR_BAD_ENUM. */
NWATTN_API nwattn_status nwattn_context_set_nw_method(nwattn_context *ctx,
                                                      nwattn_nw_method method);
/* The method set (AUTO for ctx == NULL). */
NWATTN_API nwattn_nw_method nwattn_context_get_nw_method(const nwattn_context *ctx);

/* The Gaussian fast sums' error bound eps (default NWATTN_NW_TOLERANCE_DEFAULT, allowed
 * [1e-15, 1e-2], else NWATTN_ERR_BAD_PARAMETER). Every moment sum of a row,
 * S_a = sum_i c_i u_i^a K_i (c = 1 or a y column, u = (x_i - q) / h, a <= 4), is within
 *   eps · max_i |c_i| · sum_i (1 + |u_i|)^a K_i
 * of its exact value: for the weight sum (a = 0, c = 1) eps relative (leave-one-out rows of
 * nwattn_nw_cv: 3 eps, the left-out point being subtracted from an expansion); hence a local
 * constant prediction within 2 eps max|y|. The getter returns the bound in use (the default
 * for ctx == NULL). */
#define NWATTN_NW_TOLERANCE_DEFAULT 1e-7
NWATTN_API nwattn_status nwattn_context_set_nw_tolerance(nwattn_context *ctx, double tolerance);
NWATTN_API double nwattn_context_get_nw_tolerance(const nwattn_context *ctx);

typedef enum nwattn_degree {
    NWATTN_LOCAL_CONSTANT = 0, /* Nadaraya-Watson */
    NWATTN_LOCAL_LINEAR = 1
} nwattn_degree;

/* What a query with an empty support (NWATTN_ROW_EMPTY) gets. */
typedef enum nwattn_empty {
    /* The mean y of the training points nearest to the query in t (ties share equally): the
     * h -> 0 limit of the Gaussian estimate. Its weights row puts 1/count on those points. */
    NWATTN_EMPTY_NEAREST = 0,
    NWATTN_EMPTY_NAN = 1, /* a quiet NaN in every column, on purpose; weights row all zero */
    NWATTN_EMPTY_ZERO = 2 /* zeros; weights row all zero */
} nwattn_empty;

/* Bits of row_flags. */
enum {
    NWATTN_ROW_EMPTY = 1u << 0,   /* compact kernel, no training point in the support */
    NWATTN_ROW_SINGULAR = 1u << 1 /* local linear system (nearly) singular: local constant used */
};

/* The estimator. Zero-initialised it is the Gaussian Nadaraya-Watson estimator. */
typedef struct nwattn_regression {
    nwattn_kernel kernel;
    nwattn_degree degree;
    nwattn_empty empty;
} nwattn_regression;

/* yq = the model's estimate at the m queries xq, from the n training pairs (x, y), with the d
 * bandwidths (one per input dimension; pass a pointer to one float when d == 1).
 * weights (m×n, ldw), optional: each query's weights on the training points, in their order;
 *   yq = weights · y. Local constant: K_j / sum K. Local linear: the equivalent kernel
 *   K_j · e_0' M^-1 z_j (may be negative). On the fast path with d <= 2 weights of points left
 *   out as negligible (see above) are written as 0.
 * row_flags (m bytes) and n_flagged, optional: see "Rows without an estimate" above.
 * n must be >= 1 (NWATTN_ERR_DEGENERATE_DATA otherwise). m == 0 writes only *n_flagged = 0;
 * dv == 0 writes only the optional weights, flags and count. */
NWATTN_API nwattn_status nwattn_nw_predict(nwattn_context *ctx, const nwattn_regression *model,
                                           const float *bandwidths,
                                           size_t m, size_t n, size_t d, size_t dv,
                                           const float *xq, size_t ldq,
                                           const float *x, size_t ldx,
                                           const float *y, size_t ldy,
                                           float *yq, size_t ldyq,
                                           float *weights, size_t ldw,
                                           unsigned char *row_flags, size_t *n_flagged);

/* Learning the bandwidths: d_bandwidths (d floats) = dL/dh_k for a loss L whose gradient with
 * respect to nwattn_nw_predict's yq is dyq (m×dv, lddyq), with the same model, bandwidths and
 * data: sum_i sum_c dyq_ic · d yq_ic / dh_k, from the analytic derivative of each row's estimate
 * (nwattn_nw_cv's: local constant and local linear, every kernel; the uniform kernel's estimate
 * is piecewise constant in h and its gradient is 0, an empty row's policy estimate contributes
 * nothing). Backends as nwattn_nw_predict's row engines: REFERENCE in double over all points;
 * the others the fast path (float weights, double sums, the context's threads, the same bits
 * for any thread count). d2l's learnable-w model is the Gaussian case with h = 1/|w|:
 * dL/dw = -sign(w) dL/dh / w^2. dyq must be finite. */
NWATTN_API nwattn_status nwattn_nw_predict_backward(nwattn_context *ctx,
                                                    const nwattn_regression *model,
                                                    const float *bandwidths,
                                                    size_t m, size_t n, size_t d, size_t dv,
                                                    const float *xq, size_t ldq,
                                                    const float *x, size_t ldx,
                                                    const float *y, size_t ldy,
                                                    const float *dyq, size_t lddyq,
                                                    float *d_bandwidths);

/* ---- Bandwidth selection ------------------------------------------------------------------ */
/*
 * The leave-one-out cross-validation score of bandwidths h (d of them):
 *
 *   CV(h) = (1/n) sum_i |y_i - yhat_{-i}(x_i)|^2
 *
 * where yhat_{-i} is the estimate from all training pairs but the i-th and |.|^2 sums over the
 * dv columns (statsmodels' cv_ls objective). It costs one fit, never n refits: the term j == i
 * is left out of the full fit's sums (local constant; the local linear fit does the same with
 * its moment sums). Only point i itself is left out, never its duplicates.
 * - If some leave-one-out row is empty (a compact kernel and a point with no other point
 *   within its bandwidth), CV = +INFINITY: the bandwidth is not admissible.
 * - Leave-one-out rows whose local linear system is singular use the local constant fallback;
 *   they are counted in `flagged`.
 * The gradient dCV/dh_k is analytic (for the uniform kernel CV is piecewise constant in h and
 * the gradient is 0). n must be >= 3 and every coordinate of x must take at least two
 * values, else NWATTN_ERR_DEGENERATE_DATA.
 */

/* cv[g] = CV(h_g) for n_bw bandwidth vectors h_g = bandwidths[g·ldb + 0 .. d-1] (a grid).
 * gradient (n_bw×d, ldg), optional: dCV/dh_k at each. flagged (n_bw), optional: leave-one-out
 * rows flagged NWATTN_ROW_SINGULAR (or EMPTY: then cv is +INFINITY and the gradient 0). */
NWATTN_API nwattn_status nwattn_nw_cv(nwattn_context *ctx, const nwattn_regression *model,
                                      size_t n, size_t d, size_t dv,
                                      const float *x, size_t ldx, const float *y, size_t ldy,
                                      size_t n_bw, const float *bandwidths, size_t ldb,
                                      double *cv, double *gradient, size_t ldg,
                                      size_t *flagged);

/* Rules of thumb for a starting bandwidth, per dimension j, from the sample standard deviation
 * s_j (n - 1 in the denominator) and interquartile range iqr_j (linear interpolation between
 * order statistics, as numpy and R's default):
 *   NWATTN_RULE_SILVERMAN         0.9  · min(s_j, iqr_j / 1.34) · n^(-1/(d+4))  (R bw.nrd0)
 *   NWATTN_RULE_SCOTT             1.06 · min(s_j, iqr_j / 1.34) · n^(-1/(d+4))  (R bw.nrd)
 *   NWATTN_RULE_NORMAL_REFERENCE  1.06 · s_j · n^(-1/(d+4))     (statsmodels' normal_reference)
 * With d == 1 the exponent is the familiar -1/5. When iqr_j == 0 (more than half the values
 * tie) s_j is used alone. Needs n >= 2 and s_j > 0 for every j (NWATTN_ERR_DEGENERATE_DATA). */
typedef enum nwattn_bandwidth_rule {
    NWATTN_RULE_SILVERMAN = 0,
    NWATTN_RULE_SCOTT = 1,
    NWATTN_RULE_NORMAL_REFERENCE = 2
} nwattn_bandwidth_rule;

/* bandwidths (d floats) = the rule's bandwidth for each dimension of x (n×d). */
NWATTN_API nwattn_status nwattn_bandwidth_rule_of_thumb(nwattn_context *ctx,
                                                        nwattn_bandwidth_rule rule,
                                                        size_t n, size_t d,
                                                        const float *x, size_t ldx,
                                                        float *bandwidths);

/* How nwattn_nw_select_bandwidth searches. Zero fields take the defaults in brackets;
 * nwattn_cv_options_default fills them in explicitly. */
typedef struct nwattn_cv_options {
    size_t grid_points;     /* grid size [16], >= 2 */
    float scale_min;        /* grid from scale_min · start ... [0.05] */
    float scale_max;        /* ... to scale_max · start, log-spaced [20] */
    const float *start;     /* d starting bandwidths [NULL: NWATTN_RULE_NORMAL_REFERENCE] */
    size_t max_evaluations; /* CV evaluations in all, grid included [100] */
    double tolerance;       /* relative precision of the bandwidth [1e-4] */
} nwattn_cv_options;

NWATTN_API void nwattn_cv_options_default(nwattn_cv_options *options);

typedef struct nwattn_cv_report {
    double cv;            /* CV at the chosen bandwidths */
    size_t evaluations;   /* CV evaluations used, grid included */
    size_t flagged_rows;  /* leave-one-out rows on the local constant fallback there */
    int at_grid_edge;     /* -1 / +1: the best grid point was the smallest / largest scale */
    int converged;        /* 1: the tolerance was met; 0: max_evaluations stopped the search */
} nwattn_cv_report;

/* Chooses bandwidths by minimising CV(h):
 * 1. start = options->start, or the normal-reference rule;
 * 2. grid: CV(s · start) for grid_points scales s log-spaced from scale_min to scale_max. For a
 *    compact kernel the lower end is raised to the smallest admissible scale (every point has
 *    another within its bandwidth), so CV is finite on the whole grid;
 * 3. refinement from the best grid point s*:
 *    d == 1: the minimum lies between the grid neighbours of s*; the side is chosen by the sign
 *      of the analytic derivative, then safeguarded cubic (Hermite) interpolation on CV and
 *      dCV/dlog h, with bisection when it does not shrink the bracket fast enough, until the
 *      bracket is narrower than `tolerance` (relative). The uniform kernel, whose derivative
 *      is 0, uses golden-section search instead.
 *    d > 1: quasi-Newton (BFGS) on log h_1 .. log h_d from s* · start, with the analytic
 *      gradient and a backtracking line search, until no log h_k moves by more than
 *      `tolerance`, or until two steps in a row lower CV by at most tolerance² relative (a
 *      direction in which CV is flat, such as h_k -> infinity for an x_k that y hardly depends
 *      on: the search stops there as converged): one bandwidth per dimension. The search is
 *      not confined to the grid's range: h_k may leave [scale_min, scale_max] · start_k (an h_k far above it says that y
 *      hardly depends on x_k, as statsmodels' huge bandwidths do). It stays within
 *      start_k · [1e-12, 1e12], where float32 weights no longer change with h.
 * If s* is an end of the grid, report->at_grid_edge says which. With d == 1 the answer then
 * stays there (the minimum may lie outside: widen the grid; +1 often means y does not depend
 * on x and CV prefers average pooling); with d > 1 it only says where BFGS started.
 * Ties on the grid go to the larger bandwidth.
 * Outputs: bandwidths (d floats, always finite and > 0), report (optional), and the grid's CV
 * curve (optional): curve_scales and curve_cv of options' grid_points entries each.
 * With observation weights (survey, importance or frequency weights): the newer
 * nwattn_nw_select_bandwidth_weighted below (the same search; weights all 1 give this call's
 * answer bit for bit). */
NWATTN_API nwattn_status nwattn_nw_select_bandwidth(nwattn_context *ctx,
                                                    const nwattn_regression *model,
                                                    size_t n, size_t d, size_t dv,
                                                    const float *x, size_t ldx,
                                                    const float *y, size_t ldy,
                                                    const nwattn_cv_options *options,
                                                    float *bandwidths,
                                                    nwattn_cv_report *report,
                                                    float *curve_scales, double *curve_cv);

/* nwattn_nw_select_bandwidth with observation weights (obs_weights: n finite values >= 0, at
 * least 3 positive; NULL: none), minimising the weighted leave-one-out CV
 *
 *   CV_w(h) = sum_i w_i |y_i - yhat_-i(x_i)|^2 / sum_i w_i,
 *
 * yhat_-i the weighted fit without one unit of weight, min(1, w_i), of point i (nwattn_nw_summary's
 * cv with dv = 1; frequency weights: an integer weight c is c repeated rows, and leaving one
 * unit out leaves c - 1 copies in, as nwattn_nw_cv leaves a point's duplicates in). The same
 * search, options, report and curve; the differences:
 * - the default start is the normal-reference rule with frequency weights, 1.06 s_w N^(-1/(d+4))
 *   (N = sum w, s_w the weighted standard deviation, N - 1 in its denominator: the rule on the
 *   repeated rows; NWATTN_ERR_DEGENERATE_DATA unless N > 1 and s_w > 0);
 * - a compact kernel's smallest admissible scale asks a neighbour of positive weight only of
 *   the points of weight in (0, 1] (a heavier point keeps a unit of itself);
 * - CV and its analytic gradient come from the reference row engine in double, on the calling
 *   thread (every backend), O(n^2 d) per evaluation.
 * Weights all exactly 1 (or NULL) are the unweighted problem: the call is then
 * nwattn_nw_select_bandwidth's, bit for bit, on the context's row engine. Integer weights give
 * the bandwidths of the repeated rows to within the search's tolerance (tested). */
NWATTN_API nwattn_status nwattn_nw_select_bandwidth_weighted(nwattn_context *ctx,
                                                             const nwattn_regression *model,
                                                             size_t n, size_t d, size_t dv,
                                                             const float *x, size_t ldx,
                                                             const float *y, size_t ldy,
                                                             const float *obs_weights,
                                                             const nwattn_cv_options *options,
                                                             float *bandwidths,
                                                             nwattn_cv_report *report,
                                                             float *curve_scales,
                                                             double *curve_cv);

/* ---- Inference: observation weights, standard errors, derivatives, summaries, bands ------ */
/*
 * The functions of this part treat one response (y: n floats) and work in double on every
 * backend, one query row after another on the calling thread, O(n) per query row (O(n^2) for
 * the training-set summaries): the statistics of the fit, not its fast path. The fit itself is
 * nwattn_nw_predict's reference path (same kernels, degrees, singular test and fallback);
 * model->empty is checked but unused: a row without weight (a compact kernel) is NaN.
 *
 * Observation weights (obs_weights: n finite values >= 0, NULL: all 1; survey, importance or
 * frequency weights) multiply each training point's kernel weight: local constant
 * yhat(q) = sum_j w_j K_j y_j / sum_j w_j K_j, local linear minimises sum_j w_j K_j |.|^2. They
 * are frequency weights: an integer weight c gives the results of c repeated rows, in every
 * output below (fit, slopes, leave-one-out CV, R^2, degrees of freedom, variances; not the
 * bootstrap's draws). Leave-one-out removes one unit of weight, min(1, w_i), of point i: scale
 * weights so that all are <= 1 to leave whole observations out (the fit does not depend on the
 * weights' scale). A point of weight 0 is ignored.
 *
 * Every result is linear in y: yhat(q) = sum_j l_j(q) y_j with the smoother weights l_j(q)
 * (nwattn_nw_predict's weights output, times w_j), and each derivative too. Hence:
 * - Derivatives (deriv: m×d, d yhat / d q_k):
 *     local linear: the fitted slope b_k (statsmodels KernelReg's marginal effects);
 *     local constant: the derivative of the ratio, sum_j w_j dK_j/dq_k (y_j - yhat) / sum_j w_j K_j
 *     (0 for the uniform kernel; the Laplace kernel's kink at t = 0 counts as slope 0).
 * - Variances (se: standard errors sqrt(Var yhat(q)), and deriv_se of the derivatives), with
 *   the training fit's residuals r_j = y_j - yhat(x_j) and leverages L_jj:
 *     NWATTN_VARIANCE_HOMOSCEDASTIC:   Var = sigma2 · sum_j l_j^2 / w_j,
 *       sigma2 = sum_j w_j r_j^2 / (sum_j w_j - 2 tr L + sum_ij w_i l_ij^2 / w_j)
 *       (with unit weights RSS / (n - 2 tr L + tr L'L): Wasserman, All of Nonparametric
 *       Statistics, 5.86);
 *     NWATTN_VARIANCE_HETEROSCEDASTIC: Var = sum_j (l_j^2 / w_j) e_j^2,
 *       e_j = r_j / (1 - L_jj / w_j)  (HC3: the jackknife residual, with unit weights the
 *       leave-one-out residual y_j - yhat_-j(x_j) of a local polynomial fit; MacKinnon &
 *       White 1985, the small-sample choice of Long & Ervin 2000; the raw r_j where
 *       L_jj / w_j >= 1). It is slightly conservative under
 *       homoscedasticity, to offset the z quantile's optimism with a variance estimated from
 *       the few residuals near q (about n·h·2.5 for the Gaussian kernel); the bands still
 *       cover up to ~2 points below nominal there (docs/regression.md).
 *   These are the variances of yhat around its mean E yhat(q), which differs from the true
 *   regression function by the smoothing bias: bands yhat ± z · se cover E yhat, and the truth
 *   where the bias is small against se (undersmoothing; docs/regression.md has the coverage
 *   simulation).
 * Accuracy: double sums over float inputs; results agree with a long double evaluation to
 * ~1e-12 relative where the local systems are well conditioned (tested to 1e-9), and with
 * statsmodels' KernelReg (fit, marginal effects, R^2) to 1e-6.
 */
typedef enum nwattn_variance {
    NWATTN_VARIANCE_HOMOSCEDASTIC = 0,
    NWATTN_VARIANCE_HETEROSCEDASTIC = 1
} nwattn_variance;

/* Summaries of the fit on its own training set at bandwidths h. */
typedef struct nwattn_fit_summary {
    double r2;          /* 1 - sum w r^2 / sum w (y - ybar_w)^2 (NaN when y is constant) */
    double r2_corr;     /* squared correlation of y and yhat (statsmodels' KernelReg.r_squared and
                           R np's R^2, unweighted; centred at the mean of yhat as statsmodels) */
    double dof;         /* effective degrees of freedom: tr L = sum_i l_i(x_i) */
    double dof_resid;   /* sum w - 2 tr L + sum_ij w_i l_ij^2 / w_j (the denominator of sigma2) */
    double sigma2;      /* residual variance estimate (NaN if dof_resid <= 0) */
    double rss;         /* sum w r^2 */
    double cv;          /* leave-one-out CV: sum w_i (y_i - yhat_-i(x_i))^2 / sum w (+INFINITY if a
                           leave-one-out row is empty); with unit weights nwattn_nw_cv's value */
    size_t flagged_rows; /* training rows (fit or leave-one-out) flagged empty or singular */
} nwattn_fit_summary;

/* The summary of the fit at bandwidths h (d floats) on (x, y): n >= 3 points with positive
 * weight, every coordinate with two values at least (else NWATTN_ERR_DEGENERATE_DATA). fitted
 * (n floats) and leverage (n doubles: L_ii / w_i, a point's weight on itself) are optional. */
NWATTN_API nwattn_status nwattn_nw_summary(nwattn_context *ctx, const nwattn_regression *model,
                                           const float *bandwidths, size_t n, size_t d,
                                           const float *x, size_t ldx, const float *y,
                                           const float *obs_weights,
                                           nwattn_fit_summary *summary, float *fitted,
                                           double *leverage);

/* Fit, standard errors and derivatives at m queries xq (m×d, ldq). Outputs are optional
 * (NULL), in double: fit (m), se (m), deriv (m×d, ldd), deriv_se (m×d, ldds), row_flags (m
 * bytes; NWATTN_ROW_EMPTY rows get NaN everywhere, NWATTN_ROW_SINGULAR rows the local constant
 * fit and derivative). se and deriv_se need the training set's residuals: one summary pass
 * (O(n^2)). Data requirements as nwattn_nw_summary. */
NWATTN_API nwattn_status nwattn_nw_inference(nwattn_context *ctx, const nwattn_regression *model,
                                             const float *bandwidths, size_t n, size_t d,
                                             const float *x, size_t ldx, const float *y,
                                             const float *obs_weights, nwattn_variance variance,
                                             size_t m, const float *xq, size_t ldq, double *fit,
                                             double *se, double *deriv, size_t ldd,
                                             double *deriv_se, size_t ldds,
                                             unsigned char *row_flags);

/* Wild bootstrap bands of the fit at m queries, at bandwidths h: `replicates` (>= 2) draws
 * y*_j = yhat(x_j) + e_j v_j with Rademacher v_j (+-1, from nwattn_rng seeded with seed) and
 * e_j = r_j / (1 - L_jj / w_j) the HC3 residuals of NWATTN_VARIANCE_HETEROSCEDASTIC (the
 * rescaled residuals of the wild-bootstrap literature: Davidson & Flachaire 2008); each
 * refit at the same h is yhat*(q) = yhat(q) + sum_j l_j(q) e_j v_j (the smoother is linear:
 * no refits).
 *   pointwise (lower, upper): yhat(q) + the (1 -+ level)/2 quantiles of yhat* - yhat;
 *   simultaneous (sim_lower, sim_upper): yhat(q) ± c · sd*(q), sd* the bootstrap standard
 *     deviation and c the level quantile of max_i |yhat*(q_i) - yhat(q_i)| / sd*(q_i)
 *     (rows with sd* = 0 left out of the max), covering all m queries at once.
 * Quantiles interpolate linearly between order statistics (numpy's default). The same seed
 * gives the same bands everywhere. level in (0, 1). Outputs (m doubles each) optional; flagged
 * rows as in nwattn_nw_inference. Working memory m·(n + replicates) doubles.
 * These percentile bands under-cover (91.1-94.2 % pointwise for a nominal 95 % in
 * docs/regression.md's simulation): the newer nwattn_nw_bootstrap_t_bands below (studentised,
 * bootstrap-t; the same draws for the same seed) covers 93.1-95.5 % there. */
NWATTN_API nwattn_status nwattn_nw_bootstrap_bands(nwattn_context *ctx,
                                                   const nwattn_regression *model,
                                                   const float *bandwidths, size_t n, size_t d,
                                                   const float *x, size_t ldx, const float *y,
                                                   const float *obs_weights, size_t m,
                                                   const float *xq, size_t ldq,
                                                   size_t replicates, uint64_t seed,
                                                   double level, double *lower, double *upper,
                                                   double *sim_lower, double *sim_upper);

/* Studentised (bootstrap-t) wild bootstrap bands: the draws of nwattn_nw_bootstrap_bands (same
 * seed, same v_j), each replicate's fit divided by its own HC3 standard error. Replicate b
 * refits y*_j = yhat(x_j) + u_bj, u_bj = e_j v_bj (the smoother is linear: no refits); its
 * training residuals r*_bj = y*_j - yhat*_b(x_j) give its HC3 residuals e*_bj = r*_bj / (1 -
 * L_jj / w_j) and standard error se*_b(q) = sqrt(sum_j (l_j(q)^2 / w_j) e*_bj^2) (the rule of
 * NWATTN_VARIANCE_HETEROSCEDASTIC); t*_b(q) = sum_j l_j(q) u_bj / se*_b(q) (the deviation from
 * the bootstrap mean, 0 where se*_b(q) = 0). With se(q) nwattn_nw_inference's heteroscedastic
 * standard error:
 *   pointwise (lower, upper): yhat(q) ± crit · se(q), crit the level quantile of |t*(q)|
 *     (symmetric percentile-t: crit replaces the z quantile 1.96, and is larger when se is
 *     estimated from few residuals near q);
 *   simultaneous (sim_lower, sim_upper): yhat(q) ± sim_crit · se(q), sim_crit the level
 *     quantile of max_i |t*(q_i)| over the m queries; sim_crit >= every crit, so the
 *     simultaneous band contains the pointwise one.
 * Quantiles interpolate as in nwattn_nw_bootstrap_bands. The same seed gives the same bands
 * everywhere. level in (0, 1), replicates >= 2. Outputs optional: lower, upper, sim_lower,
 * sim_upper, crit (m doubles each), sim_crit (one double; m == 0 writes nothing). Empty rows
 * get NaN bounds (crit 0).
 * O(replicates · n · (n + m)) work; working memory replicates · (2n + m) + 5n + 2m doubles.
 * 95 % coverage by simulation: docs/regression.md. */
NWATTN_API nwattn_status nwattn_nw_bootstrap_t_bands(nwattn_context *ctx,
                                                     const nwattn_regression *model,
                                                     const float *bandwidths, size_t n, size_t d,
                                                     const float *x, size_t ldx, const float *y,
                                                     const float *obs_weights, size_t m,
                                                     const float *xq, size_t ldq,
                                                     size_t replicates, uint64_t seed,
                                                     double level, double *lower, double *upper,
                                                     double *sim_lower, double *sim_upper,
                                                     double *crit, double *sim_crit);

/* ---- Kernel density estimation (the Nadaraya-Watson denominator) --------------------------- */
/* Gaussian product-kernel density with bandwidths h (d floats, finite > 0) and optional
 * observation weights (as above; NULL: all 1):
 *   f(q) = sum_j w_j prod_k phi((q_k - x_jk) / h_k) / h_k  /  sum_j w_j,   phi the N(0,1) density
 * (scipy.stats.gaussian_kde with d == 1 and bw_method = h / std(x); statsmodels'
 * KDEMultivariate(var_type = 'c'·d, bw = h)). density: m doubles. n >= 1 with positive total
 * weight. Accuracy: double sums, ~1e-13 relative where f is not underflowing. */
NWATTN_API nwattn_status nwattn_kde(nwattn_context *ctx, const float *bandwidths, size_t m,
                                    size_t n, size_t d, const float *xq, size_t ldq,
                                    const float *x, size_t ldx, const float *obs_weights,
                                    double *density);

/* Bandwidth selection objectives of the density above at n_bw bandwidth vectors (ldb apart),
 * with f_-i the leave-one-out density (one unit of weight left out, as above):
 *   lscv[g]   = integral f^2 - 2 sum_i w_i f_-i(x_i) / sum w   (least-squares CV, minimise;
 *               the integral in closed form: Gaussians of bandwidth sqrt(2) h)
 *   loglik[g] = sum_i w_i log f_-i(x_i) / sum w                 (likelihood CV, maximise;
 *               -INFINITY when some f_-i underflows to 0)
 * With unit weights, n · loglik is minus statsmodels' cv_ml objective and lscv its cv_ls
 * objective (KDEMultivariate.imse / loo_likelihood). Both outputs optional; n >= 2. O(n^2 d). */
NWATTN_API nwattn_status nwattn_kde_cv(nwattn_context *ctx, size_t n_bw, const float *bandwidths,
                                       size_t ldb, size_t n, size_t d, const float *x, size_t ldx,
                                       const float *obs_weights, double *lscv, double *loglik);

/* ---- Mixed data: continuous, unordered and ordered categorical columns -------------------- */
/* Column types of a mixed-data product kernel. A categorical column holds integer codes (as
 * floats, integral values); its bandwidth is lambda in [0, 1]. With c the number of distinct
 * values of the column in x (the training data) and q, x_j one column's query and training
 * values:
 *   NWATTN_VAR_CONTINUOUS           phi((q - x_j) / h) / h   (Gaussian, h > 0)
 *   NWATTN_VAR_UNORDERED            1 - lambda if q == x_j, else lambda / (c - 1)
 *                                   (Aitchison-Aitken; needs c >= 2; statsmodels' default)
 *   NWATTN_VAR_ORDERED              1 - lambda if q == x_j, else (1 - lambda)/2 · lambda^|q - x_j|
 *                                   (Wang-van Ryzin; statsmodels' default)
 *   NWATTN_VAR_UNORDERED_LI_RACINE  1 if q == x_j, else lambda        (R np's regression default)
 *   NWATTN_VAR_ORDERED_LI_RACINE    lambda^|q - x_j|                   (likewise)
 * The kernel of a point is the product over the d columns (statsmodels' gpke, var_type 'c',
 * 'u', 'o'). lambda = 0 is exact matching; lambda at its upper end makes the column irrelevant
 * (Aitchison-Aitken at (c-1)/c, Li-Racine at 1). */
typedef enum nwattn_var_type {
    NWATTN_VAR_CONTINUOUS = 0,
    NWATTN_VAR_UNORDERED = 1,
    NWATTN_VAR_ORDERED = 2,
    NWATTN_VAR_UNORDERED_LI_RACINE = 3,
    NWATTN_VAR_ORDERED_LI_RACINE = 4
} nwattn_var_type;

/* Local constant regression with the mixed kernel at m queries: fit[i] = sum_j w_j K_j y_j /
 * sum_j w_j K_j (observation weights as for nwattn_nw_summary; NULL: all 1), in double. A
 * query whose weights are all 0 (exact matching on a category no training point has) gets
 * NaN. types: d values; bandwidths: d floats (h > 0 for continuous columns, lambda in [0, 1]
 * for the others); y: n floats. n >= 1. Agrees with statsmodels' KernelReg(var_type,
 * reg_type='lc') to 1e-6 relative. Local linear: nwattn_mixed_predict_estimator below. */
NWATTN_API nwattn_status nwattn_mixed_predict(nwattn_context *ctx, const nwattn_var_type *types,
                                              const float *bandwidths, size_t m, size_t n,
                                              size_t d, const float *xq, size_t ldq,
                                              const float *x, size_t ldx, const float *y,
                                              const float *obs_weights, double *fit);

/* Leave-one-out CV of that regression at n_bw bandwidth vectors (ldb apart): cv[g] =
 * sum_i w_i (y_i - yhat_-i(x_i))^2 / sum w (one unit of weight left out; +INFINITY if some
 * leave-one-out row has no weight). With unit weights it is statsmodels' KernelReg.cv_loo (to
 * 1e-6). Needs 2 points of positive weight. O(n^2 d) per bandwidth vector. Local linear:
 * nwattn_mixed_cv_estimator below. */
NWATTN_API nwattn_status nwattn_mixed_cv(nwattn_context *ctx, const nwattn_var_type *types,
                                         size_t n_bw, const float *bandwidths, size_t ldb,
                                         size_t n, size_t d, const float *x, size_t ldx,
                                         const float *y, const float *obs_weights, double *cv);

/* Which estimator nwattn_mixed_predict_estimator and nwattn_mixed_cv_estimator compute, with
 * the product kernel K_j = w_j prod_k K_k(q_k, x_jk) above (observation weights w_j):
 *   NWATTN_MIXED_LOCAL_CONSTANT   sum_j K_j y_j / sum_j K_j (nwattn_mixed_predict; statsmodels'
 *                                 reg_type 'lc', R np's regtype "lc").
 *   NWATTN_MIXED_LOCAL_LINEAR     yhat(q) = a, (a, b) minimising sum_j K_j (y_j - a - b'z_j)^2
 *                                 with z_j = (x_jk - q_k)_k over the CONTINUOUS columns only;
 *                                 the categorical columns enter through their kernels alone.
 *                                 R np's npreg(regtype = "ll") (Li & Racine 2004, "Cross-
 *                                 validated local linear nonparametric regression"). The
 *                                 principled default: a slope in an unordered category's code
 *                                 depends on how the categories happen to be numbered. Without
 *                                 continuous columns it is the local constant estimate.
 *   NWATTN_MIXED_LOCAL_LINEAR_ALL the same with z_j over EVERY column, categorical codes
 *                                 included (a slope per code unit): statsmodels'
 *                                 KernelReg(reg_type = 'll') (_est_loc_linear), for parity.
 * Local linear fits reproduce y = a + b'x exactly in the columns of z (any bandwidths). Each
 * row's (1 + |z|)-square system takes nwattn_nw_predict's singular rule: the moment matrix,
 * equilibrated by its diagonal, with a reciprocal condition number (LAPACK dpocon) below 1e-7
 * makes the row fall back to the local constant estimate with the same weights, flagged
 * NWATTN_ROW_SINGULAR (statsmodels solves with a pseudo-inverse instead: with
 * NWATTN_MIXED_LOCAL_LINEAR_ALL and an unordered lambda = 0, where every weighted point shares
 * the query's code, its fit drops that column's slope and ours is the local constant one). */
typedef enum nwattn_mixed_estimator {
    NWATTN_MIXED_LOCAL_CONSTANT = 0,
    NWATTN_MIXED_LOCAL_LINEAR = 1,    /* slopes in the continuous columns: R np */
    NWATTN_MIXED_LOCAL_LINEAR_ALL = 2 /* slopes in every column, codes too: statsmodels */
} nwattn_mixed_estimator;

/* nwattn_mixed_predict with a choice of estimator (an unknown one is NWATTN_ERR_BAD_ENUM).
 * NWATTN_MIXED_LOCAL_CONSTANT gives nwattn_mixed_predict's fit bit for bit. A row whose
 * weights are all 0 is NaN and flagged NWATTN_ROW_EMPTY; a singular local linear row is
 * flagged NWATTN_ROW_SINGULAR (see above). row_flags (m bytes) and n_flagged (their count) are
 * optional (m == 0 writes only *n_flagged = 0). In double, on the calling thread,
 * O(n · (d + p^2) + p^3) per query with p the number of unknowns (1, 1 + the continuous
 * columns, or 1 + d). Accuracy (tested): NWATTN_MIXED_LOCAL_LINEAR_ALL agrees with
 * statsmodels' KernelReg(var_type, reg_type='ll') to 1e-9 relative (measured: 6e-13 at most,
 * benchmarks/mixed_parity.py); both local linear estimators agree with a direct weighted
 * least-squares solve in long double to 1e-11; with every column continuous both are
 * nwattn_nw_predict's local linear Gaussian fit (nwattn_nw_inference's, to 1e-12). */
NWATTN_API nwattn_status nwattn_mixed_predict_estimator(nwattn_context *ctx,
                                                        const nwattn_var_type *types,
                                                        nwattn_mixed_estimator estimator,
                                                        const float *bandwidths, size_t m,
                                                        size_t n, size_t d, const float *xq,
                                                        size_t ldq, const float *x, size_t ldx,
                                                        const float *y, const float *obs_weights,
                                                        double *fit, unsigned char *row_flags,
                                                        size_t *n_flagged);

/* nwattn_mixed_cv with a choice of estimator: the leave-one-out CV of that estimator (one unit
 * of weight left out, each leave-one-out row solved afresh; +INFINITY if some leave-one-out row
 * has no weight). flagged (n_bw, optional): the leave-one-out rows flagged empty or singular
 * at each bandwidth vector. NWATTN_MIXED_LOCAL_CONSTANT gives nwattn_mixed_cv's values bit for
 * bit; NWATTN_MIXED_LOCAL_LINEAR_ALL with unit weights is statsmodels' KernelReg.cv_loo with
 * reg_type 'll' (where no row is singular, and every category has two points at least: it
 * counts the Aitchison-Aitken c per fold). O(n^2 (d + p^2) + n p^3) per bandwidth vector. */
NWATTN_API nwattn_status nwattn_mixed_cv_estimator(nwattn_context *ctx,
                                                   const nwattn_var_type *types,
                                                   nwattn_mixed_estimator estimator, size_t n_bw,
                                                   const float *bandwidths, size_t ldb, size_t n,
                                                   size_t d, const float *x, size_t ldx,
                                                   const float *y, const float *obs_weights,
                                                   double *cv, size_t *flagged);

/* The mixed-data density at m queries: f(q) = sum_j w_j prod_k K_k / sum w (continuous factors
 * normalised, categorical ones as above: statsmodels' KDEMultivariate(var_type) with
 * 'u' = Aitchison-Aitken and 'o' = Wang-van Ryzin): density (m doubles). loglik (optional,
 * one double; needs 2 points of positive weight): the mean
 * leave-one-out log density sum_i w_i log f_-i(x_i) / sum w (likelihood CV, maximise). */
NWATTN_API nwattn_status nwattn_mixed_kde(nwattn_context *ctx, const nwattn_var_type *types,
                                          const float *bandwidths, size_t m, size_t n, size_t d,
                                          const float *xq, size_t ldq, const float *x,
                                          size_t ldx, const float *obs_weights, double *density,
                                          double *loglik);

/* ---- The learnable-w model (d2l's parametric attention pooling) --------------------------- */
/*
 *   yhat_i = sum_j softmax_j(-((xq_i - x_j) w)^2 / 2) y_j        (|.|: Euclidean when d > 1)
 *
 * the Gaussian Nadaraya-Watson estimator with bandwidth h = 1/|w| and a learnable scalar w
 * (w == 0 gives average pooling). The mask is nwattn_pool's (batch 1): d2l trains with
 * NWATTN_MASK_LEAVE_ONE_OUT, queries = the training inputs themselves.
 * The loss is that of d2l's MXNet edition (gluon.loss.L2Loss, summed):
 *   L = sum_i sum_c (yhat_ic - target_ic)^2 / 2, and
 *   dL/dw = -w sum_i sum_j alpha_ij |xq_i - x_j|^2 (y_j - yhat_i) · (yhat_i - target_i).
 */

/* Forward pass, and optionally the loss and its gradient. yhat (m×dv) and weights (m×n) are
 * optional outputs; loss and grad (optional) need target (m×dv). w must be finite. */
NWATTN_API nwattn_status nwattn_wmodel_evaluate(nwattn_context *ctx, float w,
                                                const nwattn_mask *mask,
                                                size_t m, size_t n, size_t d, size_t dv,
                                                const float *xq, size_t ldq,
                                                const float *x, size_t ldx,
                                                const float *y, size_t ldy,
                                                const float *target, size_t ldt,
                                                float *yhat, size_t ldyhat,
                                                float *weights, size_t ldw,
                                                double *loss, double *grad);

typedef struct nwattn_sgd {
    float learning_rate; /* finite and > 0 */
    size_t epochs;
} nwattn_sgd;

/* d2l's training loop (MXNet edition: lr 0.5 on L above). d2l's PyTorch edition sums
 * nn.MSELoss(reduction='none') without the /2: its losses are 2L, its gradients 2 dL/dw, so
 * its run at learning rate r is this function's run at learning_rate 2r, bit for bit (the
 * factors are powers of two), with loss_per_epoch doubled (docs/regression.md). Each epoch
 * evaluates the leave-one-out loss of the whole training set (queries = x, keys = x, values =
 * targets = y, NWATTN_MASK_LEAVE_ONE_OUT) and takes one step w -= learning_rate · dL/dw. *w is the starting value on entry and the trained value on
 * return. loss_per_epoch (epochs entries, optional) receives the loss each epoch computed,
 * before its step, as d2l prints it. Fails with NWATTN_ERR_BAD_PARAMETER (and leaves *w alone)
 * if w or the loss stops being finite. n must be >= 2. */
NWATTN_API nwattn_status nwattn_wmodel_train(nwattn_context *ctx, const nwattn_sgd *sgd,
                                             size_t n, size_t d, size_t dv,
                                             const float *x, size_t ldx,
                                             const float *y, size_t ldy,
                                             float *w, double *loss_per_epoch);

/* ---- Weight diagnostics ------------------------------------------------------------------- */
/* For each row i of an m×n matrix of non-negative weights (e.g. nwattn_pool's), with
 * p_ij = w_ij / sum_j w_ij:
 *   entropy[i] = -sum_j p_ij ln p_ij   (nats; 0 for one-hot rows, ln n for uniform ones)
 *   n_eff[i]   = (sum_j w_ij)^2 / sum_j w_ij^2 = 1 / sum_j p_ij^2   (effective neighbours)
 * A row near ln n / near n is near-uniform: the kernel hardly distinguishes near from far (the
 * bandwidth is too large). An all-zero row gives 0 and 0. Both outputs are optional. A
 * negative or non-finite weight is NWATTN_ERR_BAD_PARAMETER. */
NWATTN_API nwattn_status nwattn_weights_diagnostics(nwattn_context *ctx, size_t m, size_t n,
                                                    const float *weights, size_t ldw,
                                                    float *entropy, float *n_eff);

/* ---- Random numbers and data sets --------------------------------------------------------- */
/* A small deterministic generator: SplitMix64 (Steele, Lea and Flood 2014; Java's
 * SplittableRandom). The same seed gives the same stream of 64-bit values on every platform.
 * The state is public so that it can be copied and stored; seed it with nwattn_rng_seed. */
typedef struct nwattn_rng {
    uint64_t state;
} nwattn_rng;

/* These never fail; rng must not be NULL (a NULL rng returns 0 and does nothing). */
NWATTN_API void nwattn_rng_seed(nwattn_rng *rng, uint64_t seed);
NWATTN_API uint64_t nwattn_rng_next(nwattn_rng *rng);
/* Uniform on [0, 1): the top 53 bits of one nwattn_rng_next, times 2^-53. */
NWATTN_API double nwattn_rng_uniform(nwattn_rng *rng);
/* Standard normal by Marsaglia's polar form of Box-Muller: u, v = 2·uniform - 1 until
 * 0 < s = u^2 + v^2 < 1, then u · sqrt(-2 ln(s) / s) (the second normal is not kept). The
 * logarithm is the library's own, in plain IEEE-754 arithmetic, so the stream of normals is
 * also the same everywhere (binary64 with FLT_EVAL_METHOD == 0, as on x86-64 and arm64). */
NWATTN_API double nwattn_rng_normal(nwattn_rng *rng);

/* The data sets of the examples (docs/regression.md maps them to the experiments). */
typedef enum nwattn_dataset {
    /* d2l.ai's attention pooling: x = 5 · uniform, then sorted ascending;
     * y = 2 sin x + x^0.8 + 0.5 · normal */
    NWATTN_DATASET_D2L = 0,
    /* the noisy sine: x = 10 · uniform (unsorted); y = sin x + 0.2 · normal */
    NWATTN_DATASET_SINE = 1
} nwattn_dataset;

/* n pairs (x[i], y[i]) of the data set: first all n uniforms for x (rounded to float), then
 * all n normals for the noise, y = f(x) + noise computed in double and rounded to float. The
 * uniforms and normals are bit-identical everywhere; f uses the C library's sin and pow, so a
 * y may differ in its last bit between C libraries in rare cases. x, y and *rng must not
 * overlap (NWATTN_ERR_ALIASING). */
NWATTN_API nwattn_status nwattn_dataset_generate(nwattn_context *ctx, nwattn_dataset dataset,
                                                 nwattn_rng *rng, size_t n, float *x,
                                                 float *y);

/* f[i] = the data set's noise-free function at x[i] (m values; 2 sin x + x^0.8 needs x >= 0:
 * negative x gives NWATTN_ERR_BAD_PARAMETER). */
NWATTN_API nwattn_status nwattn_dataset_truth(nwattn_context *ctx, nwattn_dataset dataset,
                                              size_t m, const float *x, float *f);

#ifdef __cplusplus
}
#endif

#endif /* NWATTN_H */
