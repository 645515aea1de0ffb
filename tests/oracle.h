/* Independent oracles: the documented definitions evaluated in double precision by the tests
 * themselves, plus the error bounds the Accuracy model of nwattn.h allows each backend.
 *
 * Tolerance model (u = 2^-24, the float unit roundoff):
 * - REFERENCE is "the float rounding of the exact value up to a few ulp": scores 4u relative;
 *   softmax weights (8 + 4R)u relative, where R bounds |score + additive| over kept keys (a
 *   float-stored score or shift of size R carries R·u absolute, i.e. relative weight error).
 * - BLAS scores: dot (d + 4)·u·|scale|·sum_l |q_l k_l| (float GEMM accumulation, worst case);
 *   Gaussian: the expansion |q'|^2 + |k'|^2 - 2 q'·k' on q' = (q - mean key)/h loses
 *   e_D = (4d + 32)·u·(|q'|^2 + |k'|^2) on the squared distance D (twice the first-order worst
 *   case of the three GEMM-like sums, for the float centring), so the score loses e_D / 2;
 *   Laplace -sqrt(D) loses min(sqrt(e_D), e_D / sqrt(D)) (|sqrt a - sqrt b| <= |a-b|/sqrt b).
 *   Each also gets 4u·|s| for the final rounding.
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

#include "testutil.h"

/* ---- Scores ------------------------------------------------------------------------------ */
/* The exact score of one query row against one key row (d coordinates). */
double or_score(const nwattn_score *score, size_t d, const float *q, const float *k);

/* Exact scores S_b = score(Q_b, K_b) rounded to float into s (batch×m×n). If not NULL,
 * tol_blas and tol_ref (same shape as s) receive the per-entry absolute bounds above. Returns
 * the largest BLAS bound. q is batch×m×d, k is batch×n×d (stride 0 allowed). */
double or_scores(const nwattn_score *score, const tu_mat *q, const tu_mat *k, tu_mat *s,
                 tu_mat *tol_blas, tu_mat *tol_ref);

/* ---- Masks ------------------------------------------------------------------------------- */
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
/* The structural part of the mask (everything except -INFINITY values). */
int or_masked(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i, size_t j);
/* The additive value for (b, i, j) (0 without one). */
double or_additive(const nwattn_mask *mask, size_t b, size_t i, size_t j);

/* ---- Softmax ----------------------------------------------------------------------------- */
/* One row: x = s + additive, masked softmax in double. Returns lse (-INFINITY if fully
 * masked) and the largest |x| over kept keys in *range. */
double or_softmax_row(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i,
                      const double *s, double *w, double *range);

/* Softmax of float scores s (batch×m×n) into w (same shape, may be NULL) and lse (batch×1×m,
 * may be NULL), rounded to float. Returns R, the largest |s + additive| over kept keys. */
double or_softmax(const nwattn_mask *mask, const tu_mat *s, tu_mat *w, tu_mat *lse);

/* ---- Pooling ----------------------------------------------------------------------------- */
typedef struct or_pool_info {
    double score_err_blas; /* largest BLAS score bound */
    double range;          /* R: largest |score + additive| over kept keys */
    double vmax;           /* largest |V| */
} or_pool_info;

/* O = softmax(score(Q, K) + mask) · V in double; w and lse may be NULL. score == NULL gives
 * average pooling (all scores 0). q/k are ignored then and may be NULL. */
void or_pool(const nwattn_score *score, const nwattn_mask *mask, const tu_mat *q,
             const tu_mat *k, const tu_mat *v, tu_mat *o, tu_mat *w, tu_mat *lse,
             or_pool_info *info);

/* ---- Batched product --------------------------------------------------------------------- */
/* c = a·b per item (a: batch×m×k, b: batch×k×n), exact in double; tolerances as above. */
void or_bmm(const tu_mat *a, const tu_mat *b, tu_mat *c, tu_mat *tol_blas, tu_mat *tol_ref);

/* ---- Tolerances -------------------------------------------------------------------------- */
double or_rtol_weights_ref(double range);
double or_rtol_weights_blas(size_t n, double range, double score_err);
double or_atol_lse_ref(double range);
double or_atol_lse_blas(size_t n, double range, double score_err);
/* Absolute output bound from the weights' relative bound. */
double or_atol_out_blas(size_t n, double rtol_w, double vmax);
double or_atol_out_ref(size_t n, double rtol_w, double vmax);
/* Smallest weight that is compared relatively; below it underflow differences are allowed. */
#define OR_ATOL_WEIGHT 1e-35

#endif /* NWATTN_ORACLE_H */
