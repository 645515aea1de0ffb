/*
 * nwattn_mpi.h — libnwattn over MPI ranks (libnwattn_mpi.so.0, on top of libnwattn.so.0).
 *
 * This header is the manual of the optional MPI library; docs/mpi.md is the long form (the
 * accuracy argument, the rank-count dependence, the performance model). Every function takes
 * an MPI communicator and is collective over it: every rank of `comm` must make the same call
 * with the replicated arguments equal (the docs of each function say which are replicated and
 * which are a rank's own shard). The core library (nwattn.h) stays MPI-free; this library
 * computes nothing of its own but the reduction of partial states: each rank calls the core's
 * nwattn_pool_partial on its keys, and the states are merged with nwattn_pool_state_merge (or
 * with the same rule for p states at once, max-then-sum) and finished with
 * nwattn_pool_state_finish.
 *
 * Conventions (beyond nwattn.h's, which hold for every matrix argument):
 * - The nwattn_context is the rank's own (one per rank and thread, as always); its backend and
 *   threads are used for the rank's local work. Different ranks may use different backends.
 *   The core's working memory comes from the context's allocator; this library's own buffers
 *   (partial states, ring blocks, all-to-all rows) from malloc, freed before each call
 *   returns. Call it from one thread per communicator (any MPI thread level will do).
 * - Shards are in rank order: rank r's keys (rows of its K, V, or training points) are the
 *   global keys offset_r .. offset_r + n_r - 1 with offset_r = n_0 + ... + n_{r-1}. A rank may
 *   hold zero keys (n_r == 0; its pointers may then be NULL).
 * - Errors are collective: every rank returns the same status, and the optional `error`
 *   receives the same message on every rank, naming the lowest rank that failed ("rank 2:
 *   q is NULL"). A rank's outputs are untouched on error (on every rank). Replicated arguments
 *   that disagree between ranks fail with NWATTN_ERR_BAD_DIMENSION (shapes) or
 *   NWATTN_ERR_BAD_PARAMETER (scores, masks, options) on every rank, before any result exists.
 *   Nothing here calls MPI_Abort, abort or exit, or prints.
 * - Each call works on a private duplicate of `comm` (MPI_Comm_dup, freed before it returns)
 *   whose error handler is MPI_ERRORS_RETURN, so its messages never meet the caller's and an
 *   MPI failure is returned as NWATTN_MPI_ERR_COMM. The caller's communicator keeps its own
 *   error handler. MPI must be initialised (MPI_Init or MPI_Init_thread, any thread level: the
 *   library calls MPI from the calling thread only) and not finalised. comm must be an
 *   intracommunicator (an intercommunicator is NWATTN_ERR_UNSUPPORTED on every rank).
 * - A broken communicator (a rank that died, a network that failed): Open MPI without the
 *   fault-tolerance extension (ULFM) cannot report this to the survivors reliably; they may
 *   get NWATTN_MPI_ERR_COMM, or the runtime (mpirun) ends the job. The library never waits on
 *   a rank that has returned: every rank makes the same sequence of MPI calls, failures
 *   included, so one rank's bad argument cannot leave the others hanging.
 */
#ifndef NWATTN_MPI_H
#define NWATTN_MPI_H

#include <mpi.h>
#include <stddef.h>

#include <nwattn.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NWATTN_MPI_BUILDING_LIBRARY) && defined(__GNUC__)
#  define NWATTN_MPI_API __attribute__((visibility("default")))
#else
#  define NWATTN_MPI_API
#endif

/* The release version equals libnwattn's (NWATTN_VERSION_NUMBER); the ABI is versioned by
 * the SONAME libnwattn_mpi.so.0. */
NWATTN_MPI_API unsigned nwattn_mpi_version_number(void);

/* ---- Errors ------------------------------------------------------------------------------ */
/* Functions return nwattn_status: the core's codes, plus this one for a failed MPI call (the
 * message then holds MPI_Error_string's text). Its value is fixed. */
#define NWATTN_MPI_ERR_COMM ((nwattn_status)64)

/* "NWATTN_MPI_ERR_COMM" or the core's nwattn_status_name. Never NULL. */
NWATTN_MPI_API const char *nwattn_mpi_status_name(nwattn_status status);

#define NWATTN_MPI_MESSAGE_BYTES 256

/* What a call reports, the same on every rank. */
typedef struct nwattn_mpi_error {
    nwattn_status status; /* as returned */
    int rank;             /* the lowest rank that failed, -1 on success; the number of
                           * ranks when replicated arguments disagree (no one rank is wrong) */
    char message[NWATTN_MPI_MESSAGE_BYTES]; /* "" on success, else "rank R: ..." */
} nwattn_mpi_error;

/* ---- 1. Keys sharded, queries replicated ------------------------------------------------ */
/* How the ranks' partial states become one (docs/mpi.md, "Reductions", has the measurements).
 * - USER_OP: one MPI_Allreduce over (max, sum, acc) rows with a user-defined operation that
 *   is nwattn_pool_state_merge: p - 1 merges, each rounded to float.
 * - MAX_THEN_SUM: MPI_Allreduce(MPI_MAX) of the row maxima, each rank rescales its state to the
 *   global maximum in double, then one MPI_Allreduce(MPI_SUM) in double of (sum, acc): one
 *   rounding to float in the end.
 * - AUTO: USER_OP: one collective moving float rows, half MAX_THEN_SUM's bytes; as fast or
 *   faster in 10 of 11 measurements here (m = 1 .. 16384 rows, 2 and 4 ranks: docs/mpi.md).
 *   Choose MAX_THEN_SUM for the single rounding when the rank count is large. */
typedef enum nwattn_mpi_reduction {
    NWATTN_MPI_REDUCTION_AUTO = 0,
    NWATTN_MPI_REDUCTION_USER_OP = 1,
    NWATTN_MPI_REDUCTION_MAX_THEN_SUM = 2
} nwattn_mpi_reduction;

/* O_b = softmax(score(Q_b, K_b) + mask) · V_b where the keys K_b, V_b are the concatenation of
 * every rank's shard (rank order; n_local keys on this rank, possibly 0) and Q_b is the same on
 * every rank (replicated). Every rank receives the whole O (batch × m × dv) and, if lse is not
 * NULL, the log-sum-exp of every row.
 * Replicated: score, mask flags and valid lengths, batch, m, d, dv, reduction, Q's values
 * (all compared across ranks, Q by a hash of its values).
 * The rank's own: n_local, k, v (n_local rows each) and the pointers and leading dimensions.
 * Masks see global key positions: causal (key j > query i), leave-one-out (key i for query
 * i) and valid lengths (each <= the global n) count global keys; mask.additive and mask.keep
 * point at the rank's own columns (the whole m × n mask's pointer + offset_r, with its leading
 * dimension and stride), as for nwattn_pool_partial.
 * Accuracy: each rank's state is nwattn_pool_partial's; merging is not bit-associative, so the
 * result depends on the rank count and the shard sizes (and the reduction's order inside
 * MPI). Bound (docs/mpi.md): the one-process error of the backend plus one float rounding per
 * merge level, |O_mpi - O| <= (2 (p - 1) + 1) · 2^-24 · max|V| beyond it for USER_OP,
 * 3 · 2^-24 · max|V| for MAX_THEN_SUM. Tested for 1 .. 4 ranks against nwattn_pool under REFERENCE: within
 * 1e-6 (MPI call on REFERENCE; largest seen 1.2e-7) and 2e-5 (on the default backend; largest
 * seen 3e-6), also for lse. Every rank receives the same bits (tested). */
NWATTN_MPI_API nwattn_status nwattn_mpi_pool_sharded_keys(
    nwattn_context *ctx, MPI_Comm comm, nwattn_mpi_reduction reduction,
    const nwattn_score *score, const nwattn_mask *mask,
    size_t batch, size_t m, size_t n_local, size_t d, size_t dv,
    const float *q, size_t ldq, size_t stride_q,
    const float *k, size_t ldk, size_t stride_k,
    const float *v, size_t ldv, size_t stride_v,
    float *o, size_t ldo, size_t stride_o,
    float *lse, size_t stride_lse,
    nwattn_mpi_error *error);

/* ---- 2. Queries and keys sharded: ring attention ----------------------------------------- */
/* How a sequence of n_total positions is laid out over the p ranks.
 * - CONTIGUOUS: rank r holds positions offset_r .. offset_r + n_r - 1 (any n_r, 0 allowed).
 * - ZIGZAG: the sequence is cut into 2p chunks (nwattn_mpi_zigzag_chunks says which); rank r
 *   holds chunk r followed by chunk 2p-1-r, so that under a causal mask every rank has the
 *   same work (the first chunks have few keys to look at, the last ones many). */
typedef enum nwattn_mpi_layout {
    NWATTN_MPI_LAYOUT_CONTIGUOUS = 0,
    NWATTN_MPI_LAYOUT_ZIGZAG = 1
} nwattn_mpi_layout;

/* For ZIGZAG: the two chunks of `rank` among `ranks` for a sequence of n_total positions:
 * chunk c (0 .. 2·ranks-1) has n_total / (2·ranks) positions, plus one for c < n_total mod
 * 2·ranks. offsets[0], counts[0] is chunk `rank`, offsets[1], counts[1] chunk 2·ranks-1-rank.
 * Local row i < counts[0] is position offsets[0] + i, the rest offsets[1] + (i - counts[0]).
 * Pure arithmetic, no MPI. NWATTN_ERR_BAD_DIMENSION unless 0 <= rank < ranks; NULL outputs
 * are NWATTN_ERR_NULL_POINTER. */
NWATTN_MPI_API nwattn_status nwattn_mpi_zigzag_chunks(size_t n_total, int ranks, int rank,
                                                      size_t offsets[2], size_t counts[2]);

/* Self-attention over a sequence sharded by positions: each rank holds n_local rows of Q, K
 * and V (the same positions, laid out by `layout`) and receives its n_local rows of O (and of
 * lse, optional). The K/V blocks travel around the ring of ranks (rank r sends to r+1 and
 * receives from r-1) in p - 1 steps; each step posts the next block's MPI_Irecv and the
 * current block's MPI_Isend into a second buffer before computing on the current block in
 * tiles of up to 512 keys, calling MPI_Test between tiles so that the transfer progresses
 * while the rank computes (double buffering: two blocks of max_r n_r · (d + dv) floats).
 * mask_flags: 0, NWATTN_MASK_CAUSAL and/or NWATTN_MASK_LEAVE_ONE_OUT, on global positions.
 * Under CAUSAL, key blocks entirely after a rank's queries are skipped (received and passed
 * on, not computed), which is what ZIGZAG balances. Any score; no additive, keep or valid-
 * length mask here (use nwattn_mpi_pool_sharded_keys for those).
 * Replicated: score, mask_flags, layout, d, dv. The rank's own: n_local and the buffers.
 * With ZIGZAG each rank's n_local must be its two chunks' counts (checked collectively).
 * Accuracy as nwattn_mpi_pool_sharded_keys (merges of tile states, in double per merge). */
NWATTN_MPI_API nwattn_status nwattn_mpi_ring_attention(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_score *score, unsigned mask_flags,
    nwattn_mpi_layout layout, size_t n_local, size_t d, size_t dv,
    const float *q, size_t ldq, const float *k, size_t ldk, const float *v, size_t ldv,
    float *o, size_t ldo, float *lse,
    nwattn_mpi_error *error);

/* ---- 3. Multi-head attention over ranks: heads split (DeepSpeed-Ulysses) ----------------- */
/* Self-attention of `heads` heads over a sequence sharded by positions (contiguous layout:
 * rank r holds n_local consecutive positions, in rank order, 0 allowed). A row of q and k is
 * heads × dh floats, a row of v and o heads × dvh (head h in columns h·dh .. h·dh + dh - 1,
 * as nwattn_attention's concatenated heads). One MPI_Alltoallv hands every rank heads / p
 * whole heads (all positions), each is pooled over the whole sequence by nwattn_pool (the
 * context's backend and threads; masks on global positions), and a second MPI_Alltoallv
 * returns each rank its rows of every head. heads must be a multiple of the rank count
 * (NWATTN_ERR_BAD_DIMENSION). mask_flags: 0, NWATTN_MASK_CAUSAL, NWATTN_MASK_LEAVE_ONE_OUT.
 * Results: each head is one nwattn_pool call on the whole sequence, the call one process
 * would make, so they do not depend on the rank count (tested against per-head nwattn_pool:
 * the same bits here, though a BLAS may round differently at another row pitch). Memory
 * per rank: the whole sequence of its heads, n · (heads / p) · (2 dh + 2 dvh) floats, plus
 * its own rows twice. Replicated: score, mask_flags, heads, dh, dvh. */
NWATTN_MPI_API nwattn_status nwattn_mpi_ulysses_attention(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_score *score, unsigned mask_flags,
    size_t heads, size_t n_local, size_t dh, size_t dvh,
    const float *q, size_t ldq, const float *k, size_t ldk, const float *v, size_t ldv,
    float *o, size_t ldo, nwattn_mpi_error *error);

/* ---- 4. Nadaraya-Watson regression over a sharded training set --------------------------- */
/* The training pairs (x, y) are sharded (n_local rows on this rank, rank order); queries xq
 * (m × d) are replicated, and every rank receives all m predictions yq (m × dv): the estimate
 * of nwattn_nw_predict on the concatenated training set, every model it accepts (all seven
 * kernels, local constant and local linear, the three empty-row policies), per-dimension
 * bandwidths (d values), within docs/mpi.md's bound.
 * - Local constant Gaussian and Laplace without weights: max-shifted poolings, through
 *   nwattn_mpi_pool_sharded_keys (the context's backend; never flagged).
 * - Everything else: the core's REFERENCE rows (double weights with libm's exp) on each
 *   rank's points: per query the moment sums (Σw, Σw·u, Σw·u u', Σw·y, Σw·u y': u the scaled
 *   offsets; Σw and Σw·y for local constant), each rank's shifted by its own nearest t, are
 *   gathered once per block of queries (one MPI_Allgather of doubles), rescaled to the
 *   smallest shift and added in rank order on every rank, then finished by the core's rule
 *   (the Cholesky solve, its singular test and local constant fallback; the empty-row
 *   policy, whose nearest points are searched over every rank): every rank computes the
 *   same bits. Cost O(m · n_local · d · p²) per rank (p = 1, or d + 1 for local linear),
 *   in double; the context's backend, threads and nw_method are not used.
 * weights (optional, NULL on every rank or on none): this rank's columns of the m × n
 *   weights, m × n_local (ldw >= n_local), as nwattn_nw_predict's for its points.
 * row_flags (m bytes) and n_flagged, optional: as nwattn_nw_predict's, the same on every rank.
 * Replicated: model, bandwidths, m, d, dv, xq (compared by a hash). The global n must be >= 1.
 * Accuracy (tested against nwattn_nw_predict under REFERENCE on 1-4 ranks, random shards
 * with empty ones): the second path differs from the one-process reference only by the order
 * of double additions (rank by rank) and one rescaling per rank, so predictions agree to
 * float rounding (bound 1e-6 · max|y|, rows whose local linear system is far from the
 * singular threshold); they depend on the rank count only in those double roundings. */
NWATTN_MPI_API nwattn_status nwattn_mpi_nw_predict(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_regression *model,
    const float *bandwidths, size_t m, size_t n_local, size_t d, size_t dv,
    const float *xq, size_t ldq, const float *x, size_t ldx, const float *y, size_t ldy,
    float *yq, size_t ldyq, float *weights, size_t ldw, unsigned char *row_flags,
    size_t *n_flagged, nwattn_mpi_error *error);

/* The exact leave-one-out CV score of nwattn_nw_cv (every model nwattn_mpi_nw_predict takes)
 * for n_bw bandwidth vectors, with the training set sharded; each rank's points are the
 * queries of a ring pass over every rank's points (leave-one-out on global positions), so no
 * rank ever holds more than two shards. cv[g] is the same double on every rank, bit for bit:
 * each rank sums its own rows in row order, the per-rank sums are gathered and added in rank
 * order. flagged (n_bw, optional): leave-one-out rows on the local linear fallback (or empty:
 * then cv is +INFINITY and the gradient 0), as nwattn_nw_cv's.
 * gradient (n_bw × d, ldg), optional (NULL on every rank or on none): dCV/dh_k, analytic.
 * - Local constant Gaussian and Laplace: the pooling ring (nwattn_mpi_ring_attention's
 *   schedule, float fit) for the CV; with the gradient a second ring pass (blocking
 *   MPI_Sendrecv of the (x, y) blocks) carries per query, in double, the normaliser and the
 *   d sums d yhat_i / dlog h_k = sum_j p_ij g_ijk (y_j - yhat_i), g = u_k^2 (Gaussian) or
 *   u_k^2 / sqrt(t) (Laplace), from the first pass's fit. CV within 1e-5 relative,
 *   gradient within 1e-4 of the largest component, of nwattn_nw_cv's (tested).
 * - Every other model: one ring pass (blocking MPI_Sendrecv) per bandwidth of the core's
 *   REFERENCE rows with the gradient sums, each visiting block's sums rescaled to the
 *   smaller shift and added to the row's (block order: this rank's, then r-1, r-2, ...),
 *   finished by the core's rule: in double throughout, CV within 1e-9 relative and the
 *   gradient within 1e-6 of the largest component of nwattn_nw_cv under REFERENCE (tested;
 *   both grow like 2^-53 / rcond near the local linear systems' singular threshold).
 *   The uniform kernel's gradient is 0, as the core's.
 * The global n must be >= 3 (NWATTN_ERR_DEGENERATE_DATA). */
NWATTN_MPI_API nwattn_status nwattn_mpi_nw_cv(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_regression *model,
    size_t n_local, size_t d, size_t dv,
    const float *x, size_t ldx, const float *y, size_t ldy,
    size_t n_bw, const float *bandwidths, size_t ldb, double *cv,
    double *gradient, size_t ldg, size_t *flagged, nwattn_mpi_error *error);

/* nwattn_nw_select_bandwidth over a sharded training set: the same search (grid of scales of
 * the start, then the d == 1 bracketing refinement or BFGS on log h; one implementation,
 * compiled into both libraries) on nwattn_mpi_nw_cv and its analytic gradient. The start
 * (options->start, else the normal-reference rule from every rank's points, the moments
 * added in rank order) and every CV value and gradient are the same double on every rank,
 * so every rank takes the same steps and returns the same bandwidths, bit for bit (tested on
 * 1-4 ranks). Against the one-process selection the CV values differ by rounding (docs/
 * mpi.md's bound), so the chosen bandwidths agree to about the tolerance, not bit for bit.
 * Replicated: model, d, dv, options (and options->start's d values). Every model of
 * nwattn_mpi_nw_cv: for a compact kernel the grid's lower end is raised to the smallest
 * admissible scale as the core does (the largest nearest-neighbour distance from a ring
 * pass, combined by MPI_MAX: exact); the uniform kernel uses the golden-section search.
 * Outputs as nwattn_nw_select_bandwidth's (report->flagged_rows included), on every rank. */
NWATTN_MPI_API nwattn_status nwattn_mpi_nw_select_bandwidth(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_regression *model,
    size_t n_local, size_t d, size_t dv,
    const float *x, size_t ldx, const float *y, size_t ldy,
    const nwattn_cv_options *options, float *bandwidths, nwattn_cv_report *report,
    float *curve_scales, double *curve_cv, nwattn_mpi_error *error);

#ifdef __cplusplus
}
#endif

#endif /* NWATTN_MPI_H */
