/* The test oracle: the documented definitions evaluated by the tests themselves in long double,
 * independently of the library (nothing here calls into libnwattn; only its public types are
 * read), and the one module of error bounds the fast paths are held to.
 *
 * Two layers:
 * - the core (oracle.c, raw pointers, no cmocka): scores of every kind, the softmax row
 *   contract, a pooling row, kernel regression (kernels, t, the small linear solver, the
 *   direct local constant / linear estimate), products, masks read from an nwattn_mask, and
 *   the bounds. The robust API table (tests/robust, also linked into the fuzzer) and the
 *   regression tests use it directly;
 * - the tu_mat wrappers (oracle_tu.c, with testutil and cmocka): batched scores, random masks,
 *   softmax, pooling and products over padded matrices. Define OR_CORE_ONLY before including
 *   this header to see the core alone.
 *
 * Tolerance model (u = 2^-24, the float unit roundoff; the derivations of docs/numerics.md):
 * - REFERENCE is exact (double from input to output): "the float rounding of the exact value
 *   up to a few ulp": scores 4u relative; softmax weights (8 + 4R)u relative, where R bounds
 *   |score + additive| over kept keys (a float-stored score or shift of size R carries R·u
 *   absolute, i.e. relative weight error).
 * - BLAS and FUSED scores (or_bound_score_blas, the one formula):
 *   dot: (d + 4)·u·|scale|·sum_l |q_l k_l| (float GEMM accumulation, worst case);
 *   cosine: the same on the normalised rows plus 4u for their rounding:
 *     (d + 8)·u·|scale|·sum_l |q_l k_l| / (|q| |k|);
 *   Gaussian and Laplace are functions of the scaled squared distance D; the fast path loses
 *   e_D on D, and the score loses e_D / 2 (Gaussian, -D/2) or min(sqrt(e_D), e_D / sqrt(D))
 *   (Laplace, -sqrt(D); |sqrt a - sqrt b| <= |a-b| / sqrt b), where
 *     d <= OR_DIRECT_MAX_D (direct: u_l = (q_l - k_l)·(1/h_l) in float, squared, summed):
 *       e_D = (d + 8)·u·D  (one rounding per subtraction, reciprocal, product, square, and
 *       the d-term sum: first order (d + 6)u, two more for slack), i.e. (d + 8)u|score|;
 *     d > OR_DIRECT_MAX_D (the expansion |q'|^2 + |k'|^2 - 2 q'·k' on q' = (q - mean key)/h):
 *       e_D = (4d + 32)·u·(|q'|^2 + |k'|^2) (twice the first-order worst case of the three
 *       GEMM-like sums, for the float centring).
 *   Each kind also gets 4u·|s| for the final rounding. Since |q' - k'|^2 <= 2(|q'|^2 + |k'|^2)
 *   the direct bound is below the expansion's for every d.
 * - BLAS softmax in float: the shift x - max and expf cost u(|x| + |max| + |x - max|) + 2u per
 *   entry, the float sum of n terms n·u: weights (n + 16 + 8R)u relative. Scores off by at most
 *   e_s add exp(2 e_s) - 1 relative. lse: (n + 16 + 8R)u + e_s absolute plus 2u relative
 *   (REFERENCE: (8 + 4R)u absolute plus 2u relative).
 * - Outputs O = W·V: sum_j |dW_j| |v_j| <= rtol_w · max|V|, plus the product's own (n + 4)u ·
 *   max|V| for float accumulation (n·2^-50 for double).
 * - bmm: (k + 4)u · sum_l |a_il b_lj| for float GEMM, 4u|c| + (k + 4)2^-52 · sum for REFERENCE.
 */
#ifndef NWATTN_ORACLE_H
#define NWATTN_ORACLE_H

#include <stddef.h>

#include "nwattn.h"

/* Unit roundoff of float32 (testutil.h's TU_U). */
#define OR_U 0x1p-24

/* ====================================== the core ========================================== */

/* ---- Scores ------------------------------------------------------------------------------ */
/* The exact score of query q against key k (d coordinates) in long double: dot, cosine
 * (0 where a norm is 0), Gaussian, Laplace; NaN for an unknown kind. If abs_dot is not NULL it
 * receives what the bound needs: sum_l |q_l k_l| (dot), that over |q| |k| (cosine), 0 else. */
long double or_score_ex(const nwattn_score *score, size_t d, const float *q, const float *k,
                        double *abs_dot);
/* The same for coordinates in long double (a layer's projections evaluated exactly). */
long double or_score_ld(const nwattn_score *score, size_t d, const long double *q,
                        const long double *k);
/* The same, rounded to double. */
double or_score(const nwattn_score *score, size_t d, const float *q, const float *k);

/* ---- The softmax row contract (docs/numerics.md) ------------------------------------------ */
/* x: the n values score + additive; live: NULL (all keys live) or n flags (0 = masked). A key
 * is live if its flag is set and its value is not -INFINITY; masked values are never read.
 * Writes the n weights into w and returns lse:
 * - no live key: weights 0, lse -INFINITY;
 * - a live NaN: NaN on live keys, 0 on masked ones, lse NaN;
 * - c live values +INFINITY: 1/c on each of them, 0 elsewhere, lse +INFINITY;
 * - else the max-shifted softmax and its log-sum-exp.
 * range (may be NULL) receives the largest |x| over live keys (0 if none). */
long double or_softmax_values(size_t n, const long double *x, const unsigned char *live,
                              long double *w, double *range);

/* ---- One pooling row ---------------------------------------------------------------------- */
/* Query q against the n keys (rows of k, pitch ldk) and values (dv columns, pitch ldv):
 * O = softmax(score + additive) · V by the contract above. score NULL: average pooling (all
 * scores 0; q and k unused). additive (NULL: none) and live (NULL: all live) have n entries.
 * w (n) and o (dv) may be NULL; range as above. Returns lse. */
double or_pool_row(const nwattn_score *score, size_t d, size_t dv, size_t n, const float *q,
                   const float *k, size_t ldk, const float *v, size_t ldv,
                   const double *additive, const unsigned char *live, double *w, double *o,
                   double *range);

/* ---- Masks (read from the public struct) -------------------------------------------------- */
/* The structural part of the mask for item b, query row i, key j (everything except -INFINITY
 * values): 1 if masked. */
int or_masked(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i, size_t j);
/* The additive value for (b, i, j) (0 without one). */
double or_additive(const nwattn_mask *mask, size_t b, size_t i, size_t j);
/* One row of the contract over double scores s under a mask: returns lse, w in double. */
double or_softmax_row(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i,
                      const double *s, double *w, double *range);

/* ---- Kernel regression -------------------------------------------------------------------- */
/* The kernel profile K(t) of t = sum_l ((q_l - x_l) / h_l)^2. */
long double or_kernel(nwattn_kernel kernel, long double t);
/* t for query q and point x (d coordinates, bandwidths h). */
long double or_kernel_t(size_t d, const float *q, const float *x, const float *h);
/* Solves the p×p system a·x = b (row-major, destroyed; x overwrites b) by Gaussian elimination
 * with partial pivoting; returns 0 when a pivot vanishes. */
int or_solve(size_t p, long double *a, long double *b);
/* The estimate at q from the n training points (rows of x, pitch ldx; targets y, dv columns,
 * pitch ldy; skip: the left-out point, or SIZE_MAX): local constant sum K y / sum K, or local
 * linear by solving the weighted normal equations in coordinates relative to q. Gaussian and
 * Laplace weights are shifted by the nearest point's (the estimate is a ratio), so they cannot
 * underflow far from the data. Returns 0 for an empty support or a singular system. */
int or_nw_direct(nwattn_kernel kernel, nwattn_degree degree, size_t n, size_t d, size_t dv,
                 const float *x, size_t ldx, const float *y, size_t ldy, const float *h,
                 const float *q, size_t skip, double *out);

/* ---- Products ----------------------------------------------------------------------------- */
/* sum_l a[l·inc_a] b[l·inc_b] over k terms; abs_sum (may be NULL) gets sum |a_l b_l|. */
long double or_dot(size_t k, const float *a, size_t inc_a, const float *b, size_t inc_b,
                   double *abs_sum);

/* ---- Bounds: the fast paths' score errors ------------------------------------------------- */
/* Widest rows the library scores directly under BLAS and FUSED (docs/numerics.md, "Scores, per
 * kind"); wider Gaussian and Laplace rows go through the centred expansion. */
#define OR_DIRECT_MAX_D ((size_t)8)
/* The mean key of n rows (pitch ldk) into mean (d doubles): the expansion's centre. */
void or_key_mean(size_t n, size_t d, const float *k, size_t ldk, double *mean);
/* |x'|^2 with x' = (x - mean) / h. */
double or_centred_norm2(const nwattn_score *score, size_t d, const float *x, const double *mean);
/* The BLAS/FUSED bound on |fast score - exact score s|, for s and abs_dot from or_score_ex and
 * qn, kn the centred squared norms of the pair (used only for Gaussian/Laplace with
 * d > OR_DIRECT_MAX_D). */
double or_bound_score_blas(const nwattn_score *score, size_t d, double s, double abs_dot,
                           double qn, double kn);
/* The same for one pair from its rows; mean is the key mean (needed only when the expansion
 * applies, may be NULL otherwise). */
double or_bound_score_blas_pair(const nwattn_score *score, size_t d, const float *q,
                                const float *k, const double *mean);
/* The REFERENCE bound: 4u|s| (plus the double accumulation of a dot product). */
double or_bound_score_ref(const nwattn_score *score, size_t d, double s, double abs_dot);

/* ---- Tolerances of the weights, lse and outputs ------------------------------------------- */
double or_rtol_weights_ref(double range);
double or_rtol_weights_blas(size_t n, double range, double score_err);
double or_atol_lse_ref(double range);
double or_atol_lse_blas(size_t n, double range, double score_err);
/* Absolute output bound from the weights' relative bound. */
double or_atol_out_blas(size_t n, double rtol_w, double vmax);
double or_atol_out_ref(size_t n, double rtol_w, double vmax);
/* Smallest weight that is compared relatively; below it underflow differences are allowed. */
#define OR_ATOL_WEIGHT 1e-35

/* ================================= the tu_mat wrappers ==================================== */
#ifndef OR_CORE_ONLY
#include "testutil.h"

/* Exact scores S_b = score(Q_b, K_b) rounded to float into s (batch×m×n). If not NULL,
 * tol_blas and tol_ref (same shape as s) receive the per-entry absolute bounds above. Returns
 * the largest BLAS bound. q is batch×m×d, k is batch×n×d (stride 0 allowed). */
double or_scores(const nwattn_score *score, const tu_mat *q, const tu_mat *k, tu_mat *s,
                 tu_mat *tol_blas, tu_mat *tol_ref);

/* ---- Random masks ------------------------------------------------------------------------ */
enum {
    OR_LOO = 1u << 0,
    OR_CAUSAL = 1u << 1,
    OR_LENS_ITEM = 1u << 2,
    OR_LENS_ROW = 1u << 3,
    OR_ADDITIVE = 1u << 4,        /* finite values in [-2, 2] */
    OR_ADDITIVE_NEGINF = 1u << 5, /* with OR_ADDITIVE: about 20 % -INFINITY */
    OR_KEEP = 1u << 6,            /* bytes 0 (30 %), 1, 7 or 255 */
    OR_BROADCAST = 1u << 7        /* additive and keep with stride 0 */
};

/* A random mask and the buffers it points into. Padding of the keep bytes is 0 and of the
 * additive floats NaN, so a mask read outside its rows changes the result. */
typedef struct or_mask {
    nwattn_mask mask;
    unsigned parts;
    tu_mat additive;
    unsigned char *keep;
    size_t *lens;
} or_mask;

void or_mask_make(or_mask *mk, unsigned parts, size_t batch, size_t m, size_t n, tu_rng *rng);
void or_mask_free(or_mask *mk);
/* NULL when parts == 0 (no mask), else &mk->mask. */
const nwattn_mask *or_mask_get(const or_mask *mk);

/* Softmax of float scores s (batch×m×n) into w (same shape, may be NULL) and lse (batch×1×m,
 * may be NULL), rounded to float. Returns R, the largest |s + additive| over kept keys. */
double or_softmax(const nwattn_mask *mask, const tu_mat *s, tu_mat *w, tu_mat *lse);

typedef struct or_pool_info {
    double score_err_blas; /* largest BLAS score bound */
    double range;          /* R: largest |score + additive| over kept keys */
    double vmax;           /* largest |V| */
} or_pool_info;

/* O = softmax(score(Q, K) + mask) · V; w and lse may be NULL. score == NULL gives average
 * pooling (all scores 0). q/k are ignored then and may be NULL. */
void or_pool(const nwattn_score *score, const nwattn_mask *mask, const tu_mat *q,
             const tu_mat *k, const tu_mat *v, tu_mat *o, tu_mat *w, tu_mat *lse,
             or_pool_info *info);

/* c = a·b per item (a: batch×m×k, b: batch×k×n), exact; tolerances as above. */
void or_bmm(const tu_mat *a, const tu_mat *b, tu_mat *c, tu_mat *tol_blas, tu_mat *tol_ref);
#endif /* OR_CORE_ONLY */

#endif /* NWATTN_ORACLE_H */
