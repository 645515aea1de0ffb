/*
 * nwattn.h — attention pooling as Nadaraya-Watson kernel regression.
 *
 * This header is the manual. Everything the library exports is declared here.
 *
 *   O = softmax(score(Q, K) + mask) · V
 *
 * Conventions shared by every function
 * ------------------------------------
 * - float32 data, row-major. A matrix argument is (pointer, leading dimension); the leading
 *   dimension (ld*) counts elements between consecutive rows and must be >= the row length.
 * - Every primitive is batched like torch.bmm: `batch` items, each matrix argument followed by
 *   its batch stride (stride_*, elements between consecutive items). With batch == 1 strides are
 *   ignored. An input stride of 0 broadcasts one matrix to every item. An output stride must
 *   keep the items apart: stride >= (rows - 1) * ld + cols.
 * - Shapes: Q is m×d, K is n×d, V is n×dv, scores and weights are m×n, O is m×dv.
 * - batch == 0, m == 0 or dv == 0 is a valid empty problem: NWATTN_OK, nothing is written.
 *   n == 0 (no keys) is valid: every row is fully masked (see "Masks"). d must be >= 1.
 * - Every function returns an nwattn_status. On any error nothing that the caller passed as an
 *   output has been written, and nwattn_context_last_error() explains what was wrong.
 * - The library never aborts, exits, prints or asserts; it has no mutable global state.
 *
 * Range and non-finite values
 * ---------------------------
 * - Valid parameters and data of any magnitude work: bandwidths from the smallest positive float
 *   to FLT_MAX, any finite scale, any finite data. nwattn_pool and nwattn_average_pool never
 *   round a score to float on its way to the softmax (scores travel as float times a power of
 *   two kept per row), so with h = 1e-30 the nearest key gets its limit weight 1 rather than
 *   every score overflowing to -inf. nwattn_scores returns the float rounding of each score,
 *   which is ±INFINITY beyond ±FLT_MAX; since nwattn_softmax reads a -INFINITY score as masked,
 *   use nwattn_pool (which can also return the weights) for such extreme scales.
 * - Softmax rows (nwattn_softmax, nwattn_pool): a key is live unless its position, keep byte,
 *   valid length, an additive -INFINITY or a score of -INFINITY masks it; the score and additive
 *   value of a masked key are never looked at. The value of a live key is score + additive,
 *   evaluated in double, so it may be +INFINITY or NaN but never overflows. Then per row:
 *     no live key                  -> weights 0, output 0, lse -INFINITY ("fully masked");
 *     some live value is NaN       -> live weights NaN, masked weights 0, output and lse NaN;
 *     c live values are +INFINITY  -> weight 1/c on each of them, 0 elsewhere, lse +INFINITY
 *                                     (the limit of scores growing without bound);
 *     otherwise                    -> the ordinary max-shifted softmax.
 *   lse is the float rounding of the log-sum-exp, so it is also ±INFINITY when the true value
 *   lies beyond ±FLT_MAX (all scores below -1e38, say); the weights tell such rows apart.
 * - NaN and Inf in Q or K give the scores that IEEE arithmetic gives for the definitions,
 *   evaluated in double: for Gaussian and Laplace an infinite coordinate facing a finite one is
 *   an infinite distance, score -INFINITY, so that key is masked for that query; Inf - Inf and
 *   NaN give a NaN score. Dot scores are IEEE sums of products (Inf · 0 = NaN). Both backends
 *   agree on this (the BLAS backend evaluates a block holding a non-finite value by the
 *   reference formulas).
 * - NaN and Inf in V, and in nwattn_bmm operands, follow IEEE arithmetic: a key with a nonzero
 *   weight passes them to its output row. A key with weight 0 (a masked one, say) passes NaN as
 *   well (0 · NaN = NaN, 0 · Inf = NaN) with the reference backend and with OpenBLAS; a BLAS that
 *   skips zero factors may not. Keep the values of padding keys finite.
 *
 * Threads: a context must not be used by two threads at the same time. Distinct contexts are
 * fully independent, and read-only inputs may be shared by any number of concurrent calls.
 * The library never changes the BLAS's own thread settings.
 *
 * Accuracy (measured by the tests, see README "Accuracy"):
 * - NWATTN_BACKEND_REFERENCE evaluates the definitions with double accumulation and computes
 *   (q - k)^2 directly; its results are the float rounding of the exact value up to a few ulp.
 * - NWATTN_BACKEND_BLAS rounds scores like a float32 GEMM: for dot scores the error is about
 *   d · 2^-24 · |scale| · |q| |k|; Gaussian and Laplace scores use |q|^2 + |k|^2 - 2 q·k on data
 *   centred on the mean key and divided by h, so their error is about
 *   d · 2^-24 · (|q'|^2 + |k'|^2) (Gaussian) and the square root of that (Laplace), where
 *   q' = (q - mean key) / h. Weights then carry that absolute score error as relative error.
 */
#ifndef NWATTN_H
#define NWATTN_H

#include <stddef.h>

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
    NWATTN_ERR_ALIASING = 8,        /* an output overlaps an input or another output */
    NWATTN_ERR_OVERFLOW = 9,        /* a size or byte count does not fit in size_t */
    NWATTN_ERR_TOO_LARGE = 10,      /* a leading dimension or stride exceeds the BLAS integer */
    NWATTN_ERR_ALLOC = 11,          /* the allocator returned NULL */
    NWATTN_ERR_UNSUPPORTED = 12     /* the backend cannot do this here (see the message) */
} nwattn_status;

/* "NWATTN_ERR_NULL_POINTER" etc.; "NWATTN_ERR_UNKNOWN" for values that are no status. */
NWATTN_API const char *nwattn_status_name(nwattn_status status);
/* A one-line English description of the status. Never NULL. */
NWATTN_API const char *nwattn_status_describe(nwattn_status status);

/* ---- Context ----------------------------------------------------------------------------- */
/* The caller-owned handle for settings and reusable working memory. One per thread. */
typedef struct nwattn_context nwattn_context;

typedef enum nwattn_backend {
    NWATTN_BACKEND_AUTO = 0,      /* BLAS where it can express the problem, else reference */
    NWATTN_BACKEND_REFERENCE = 1, /* plain loops, double accumulation: the oracle */
    NWATTN_BACKEND_BLAS = 2       /* cblas_sgemm / sgemv / sgemm_batch, float softmax */
} nwattn_backend;

/* Working memory comes from this allocator; alloc returning NULL makes the call fail with
 * NWATTN_ERR_ALLOC and leaves the outputs untouched. */
typedef struct nwattn_allocator {
    void *(*alloc)(void *user, size_t bytes); /* aligned for any object type, like malloc */
    void (*free)(void *user, void *ptr);      /* never called with NULL */
    void *user;
} nwattn_allocator;

/* Creates a context with NWATTN_BACKEND_AUTO and the C library's malloc/free. */
NWATTN_API nwattn_status nwattn_context_create(nwattn_context **out);
/* The same with a caller's allocator (copied; it is used for the context itself as well). */
NWATTN_API nwattn_status nwattn_context_create_with_allocator(nwattn_context **out,
                                                              const nwattn_allocator *allocator);
/* Frees the context and its working memory. NULL is a no-op. */
NWATTN_API void nwattn_context_destroy(nwattn_context *ctx);

NWATTN_API nwattn_status nwattn_context_set_backend(nwattn_context *ctx, nwattn_backend backend);
NWATTN_API nwattn_backend nwattn_context_get_backend(const nwattn_context *ctx);

/* Working memory: the context keeps the largest block any call needed (scores of a block of
 * query rows, centred copies of Q and K, pointer arrays) and reuses it, so a steady workload
 * allocates only on its first call. These report and release it. */
NWATTN_API size_t nwattn_context_workspace_bytes(const nwattn_context *ctx);
NWATTN_API void nwattn_context_release_workspace(nwattn_context *ctx);

/* The message of the last failed call on this context ("" after a successful call). Valid until
 * the next call on the context. Never NULL, also for ctx == NULL. */
NWATTN_API const char *nwattn_context_last_error(const nwattn_context *ctx);

/* ---- Scores ------------------------------------------------------------------------------ */
typedef enum nwattn_score_kind {
    NWATTN_SCORE_DOT = 0,      /* scale · q·k; scaled dot product: scale = 1/sqrt(d) */
    NWATTN_SCORE_GAUSSIAN = 1, /* -|q - k|^2 / (2 h^2)            (Nadaraya-Watson, Gaussian) */
    NWATTN_SCORE_LAPLACE = 2   /* -|q - k| / h, Euclidean norm     (exponential decay kernel) */
} nwattn_score_kind;

/* How a query is compared with a key. With per-dimension bandwidths h_j the distance is taken
 * on the rescaled coordinates: Gaussian -sum_j (q_j - k_j)^2 / (2 h_j^2), Laplace
 * -sqrt(sum_j ((q_j - k_j) / h_j)^2). d2l's nonparametric pooling is Gaussian with h = 1, its
 * parametric model softmax(-((x - x_i) w)^2 / 2) is Gaussian with h = 1/|w|. */
typedef struct nwattn_score {
    nwattn_score_kind kind;
    float scale;             /* DOT only: finite */
    float bandwidth;         /* GAUSSIAN, LAPLACE: finite and > 0; unused if bandwidths is set */
    const float *bandwidths; /* NULL, or d per-dimension bandwidths, each finite and > 0 */
} nwattn_score;

/* S_b = score(Q_b, K_b): m×n raw scores, no mask. Each is the float rounding of the score, so
 * scores beyond ±FLT_MAX come out as ±INFINITY (see "Range and non-finite values"). */
NWATTN_API nwattn_status nwattn_scores(nwattn_context *ctx, const nwattn_score *score,
                                       size_t batch, size_t m, size_t n, size_t d,
                                       const float *q, size_t ldq, size_t stride_q,
                                       const float *k, size_t ldk, size_t stride_k,
                                       float *s, size_t lds, size_t stride_s);

/* ---- Masks ------------------------------------------------------------------------------- */
/* Key j is masked for query i of item b when any part of the mask says so. A masked key gets
 * exactly zero weight (not the tiny weight of d2l's -1e6 trick). A row whose keys are all masked
 * gets zero weights, a zero output and log-sum-exp -INFINITY: never NaN.
 * A score of -INFINITY, or an additive value of -INFINITY, masks its key too (see "Range and
 * non-finite values" above for NaN and +INFINITY). */
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

/* ---- Softmax ----------------------------------------------------------------------------- */
/* W_b = softmax over each row of (S_b + mask), max-shifted. W may be S itself (same pointer, ld
 * and stride) for an in-place softmax. lse, if not NULL, receives each row's log-sum-exp of the
 * unmasked (S + additive) entries, lse[b·stride_lse + i]; -INFINITY for fully masked rows. */
NWATTN_API nwattn_status nwattn_softmax(nwattn_context *ctx, const nwattn_mask *mask,
                                        size_t batch, size_t m, size_t n,
                                        const float *s, size_t lds, size_t stride_s,
                                        float *w, size_t ldw, size_t stride_w,
                                        float *lse, size_t stride_lse);

/* ---- Batched product (weighted averages) ------------------------------------------------- */
/* C_b = A_b · B_b with A_b m×k, B_b k×n, C_b m×n: torch.bmm. With A = weights and B = values
 * this is the weighted average O = W·V. Goes through cblas_sgemm_batch where the BLAS has it;
 * single-column and single-row products go through sgemv/sdot, which is much faster for them. */
NWATTN_API nwattn_status nwattn_bmm(nwattn_context *ctx, size_t batch,
                                    size_t m, size_t n, size_t k,
                                    const float *a, size_t lda, size_t stride_a,
                                    const float *b, size_t ldb, size_t stride_b,
                                    float *c, size_t ldc, size_t stride_c);

/* ---- Attention pooling ------------------------------------------------------------------- */
/* O_b = softmax(score(Q_b, K_b) + mask) · V_b in one call.
 * weights (m×n) and lse are optional outputs (NULL to skip): pass weights to draw heatmaps.
 * Without them the m×n weights are formed a block of query rows at a time in the context's
 * working memory. */
NWATTN_API nwattn_status nwattn_pool(nwattn_context *ctx, const nwattn_score *score,
                                     const nwattn_mask *mask,
                                     size_t batch, size_t m, size_t n, size_t d, size_t dv,
                                     const float *q, size_t ldq, size_t stride_q,
                                     const float *k, size_t ldk, size_t stride_k,
                                     const float *v, size_t ldv, size_t stride_v,
                                     float *o, size_t ldo, size_t stride_o,
                                     float *weights, size_t ldw, size_t stride_w,
                                     float *lse, size_t stride_lse);

/* Average pooling, the seeds' baseline: every unmasked key gets the same weight, so each row of
 * O_b is the mean of the V_b rows its mask keeps (all of them without a mask). Additive mask
 * values act on a zero score, so they reweight keys. Fully masked rows give zeros. */
NWATTN_API nwattn_status nwattn_average_pool(nwattn_context *ctx, const nwattn_mask *mask,
                                             size_t batch, size_t m, size_t n, size_t dv,
                                             const float *v, size_t ldv, size_t stride_v,
                                             float *o, size_t ldo, size_t stride_o);

#ifdef __cplusplus
}
#endif

#endif /* NWATTN_H */
