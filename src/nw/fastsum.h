/* Exact O(n log n) 1-D kernel sums for the Laplace family (Hofmeyr's FKSUM recursions, in the
 * translated form that never expands around an absolute origin). Never installed.
 *
 * For sorted points x_0 <= ... <= x_{n-1}, V coefficient vectors c_v (any per-point numbers:
 * 1, y, w, w·y, ...) and r = |x - x_i| / h, the engine gives at any query the one-sided moments
 *   A_v^left[k]  = sum_{x_i <= q} c_vi r_i^k e^{-r_i},   A_v^right[k] = the same over x_i > q,
 * k = 0 .. k1-1, all multiplied by one common factor e^{r_near} (r_near: the nearest point's
 * r) so that nothing underflows at tiny bandwidths. Every kernel poly(r) e^{-r}, its local
 * linear moments and its derivative in h are combinations of these (fastsum_rows.c).
 *
 * The running sums are anchored at the points themselves: L_j[k] = sum_{i<=j} c_i
 * ((x_j - x_i)/h)^k e^{-(x_j - x_i)/h} and L_{j+1} = e^{-δ} T_δ(L_j) + c_{j+1} e_0 with
 * δ = (x_{j+1} - x_j)/h and T_δ the binomial translation (δ + r)^k, whose terms are all >= 0
 * for c >= 0: no cancellation, whatever |x| / h is. Moments are stored divided by k!, so T_δ is
 * the convolution with δ^m / m!. The points are cut into blocks of NW_FS_BLOCK; one forward
 * and one backward pass store the sums at the block edges (checkpoints, O(n / B) memory), then
 * blocks are independent: each recomputes its own sums from its checkpoints (threads).
 *
 * The vectors run in pairs (two doubles side by side: 1 and y for one y column), each pair's
 * K moments in registers through a whole pass; an odd count is padded with a zero vector.
 * A block stores for each point j the exclusive sums, the step without c_j:
 * X_j = e^{-δ_j} T_{δ_j}(L_{j-1}) = sum_{i<j} c_i r^k e^{-r} / k! (r = (x_j - x_i) / h) and
 * likewise Y_j over i > j: exactly the leave-one-out moments of j at scale 1, no translation
 * or exponential per row. Only when j's nearest neighbour is more than NW_FS_NEAR_MAX
 * bandwidths away (where e^{-δ} would take the row's sums towards underflow) is the row
 * computed as before, scaled by e^{r_near}. */
#ifndef NWATTN_NW_FASTSUM_H
#define NWATTN_NW_FASTSUM_H

#include "nw.h"

#define NW_FS_BLOCK ((size_t)(8 * NW_UNIT_ROWS)) /* a block is whole units of rows */
#define NW_FS_KMAX 8                             /* moments per vector, at most */
/* Rows whose nearest neighbour is farther (in bandwidths) are rescaled by e^{r_near}: below
 * it a row's sums are at least e^{-128} ~ 1e-56 of their rescaled size, their products
 * (local linear's determinant) 1e-112, far from double's underflow. */
#define NW_FS_NEAR_MAX 128.0

typedef struct nw_fastsum {
    size_t n, v, vp, k1, blocks; /* vp: v rounded up to even */
    size_t k;        /* moments of the current sums (k <= k1; fewer without the gradient) */
    const float *x;  /* n sorted positions (the plan's sorted training copy) */
    const float *y;  /* v - 1 columns y[c·n + j]: vector 0's coefficients are 1, vector 1 + c's
                      * are y column c, the padding vector's 0 (read as floats: half the
                      * memory traffic of double copies, the same values) */
    double inv_h;    /* 1 / h of the current sums */
    double *decay;   /* n: e^{-(x_j - x_{j-1}) / h} (decay[0] = 0) */
    double *left_ck;  /* blocks × k·vp: L_{s-1} of block b (s its first point; 0 for b = 0) */
    double *right_ck; /* blocks × k·vp: R_e of block b (e one past its last; 0 for the last) */
} nw_fastsum;
/* Sums are stored moment-major: element (moment k, vector a) at k·vp + a, scaled by 1/k!. */

/* One worker's block: the exclusive sums X_j and Y_j for j = s .. e-1, k·vp each. */
typedef struct nw_fs_block {
    size_t b, s, e;
    double *left, *right; /* NW_FS_BLOCK × k1·vp each */
} nw_fs_block;

/* Bytes of nw_fs_init's memory (SIZE_MAX on overflow). */
size_t nw_fs_bytes(size_t n, size_t v, size_t k1);
void nw_fs_init(nw_fastsum *fs, void *mem, size_t n, size_t v, size_t k1, const float *x,
                const float *y);
/* Doubles of one worker's block buffers. */
size_t nw_fs_block_doubles(size_t v, size_t k1);
void nw_fs_block_init(nw_fs_block *blk, double *mem);

/* The decays and checkpoints of k <= k1 moments at bandwidth 1 / inv_h (the pairs' forward
 * and backward passes as units on the team). */
void nw_fs_prepare(nw_fastsum *fs, double inv_h, size_t k, nw_workers *team, size_t threads);
/* Recomputes block b's exclusive sums from its checkpoints. */
void nw_fs_fill(const nw_fastsum *fs, size_t b, nw_fs_block *blk);

/* Training point j of the filled block (s <= j < e) needs its sums rescaled: its nearest
 * neighbour is more than NW_FS_NEAR_MAX bandwidths away on both sides. */
static inline int nw_fs_far(const nw_fastsum *fs, size_t j) {
    const double reach = NW_FS_NEAR_MAX / fs->inv_h;
    return (j == 0 || (double)fs->x[j] - (double)fs->x[j - 1] > reach) &&
           (j + 1 == fs->n || (double)fs->x[j + 1] - (double)fs->x[j] > reach);
}
/* The leave-one-out moments (k·vp each, scaled by 1/k!) of training point j (s <= j < e of
 * the filled block), j itself left out (its duplicates stay in), at scale 1: the block's
 * exclusive sums of j. */
static inline const double *nw_fs_loo_left(const nw_fastsum *fs, const nw_fs_block *blk,
                                           size_t j) {
    return blk->left + (j - blk->s) * fs->k * fs->vp;
}
static inline const double *nw_fs_loo_right(const nw_fastsum *fs, const nw_fs_block *blk,
                                            size_t j) {
    return blk->right + (j - blk->s) * fs->k * fs->vp;
}
/* The same for a far point (nw_fs_far), into lbuf and rbuf (k·vp each), scaled by
 * e^{r_near}. */
void nw_fs_moments_far(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double *lbuf,
                       double *rbuf);
/* The same (into left and right) at query q, where j is the last point with x_j <= q
 * (SIZE_MAX: q < x_0), in the filled block (j in [s, e), or j == SIZE_MAX with block 0),
 * scaled by e^{r_near}. */
void nw_fs_moments_at(const nw_fastsum *fs, const nw_fs_block *blk, size_t j, double q,
                      double *left, double *right);

/* Index of the last x_j <= q (SIZE_MAX if none). */
size_t nw_fs_locate(const nw_fastsum *fs, double q);

/* ---- Kernels and rows (fastsum_rows.c) ----------------------------------------------------- */
/* Whether the engine sums this kernel (d == 1): the Laplace family exactly, the Gaussian within
 * its bound (fastsum_gauss.c). */
int nw_fs_kernel_supported(nwattn_kernel kernel);
/* Moments per vector the model needs (with or without the h-derivative). */
size_t nw_fs_moments_needed(const nw_model *model, int grad);
/* The row's nw_sums from its one-sided moments (vp vectors, the engine's layout); vectors: 0
 * the weights, 1 + c the y columns. Assigns every entry it sets (no zeroing needed between
 * rows). */
void nw_fs_row_sums(const nw_model *model, size_t vp, const double *left, const double *right,
                    nw_sums *s);

/* The leave-one-out CV rows of the filled block added to partial (3 + d per unit of
 * NW_UNIT_ROWS rows, as cv.c's rows; zeroed by the caller): y the sorted targets (column c at
 * c·n), wk the worker's row scratch, lbuf and rbuf k1·vp doubles each. */
void nw_fs_cv_rows(const nw_model *model, const nw_fastsum *fs, const nw_fs_block *blk,
                   int want_grad, const float *y, nw_worker *wk, double *lbuf, double *rbuf,
                   double *partial);

/* ---- The Gaussian (fastsum_gauss.c): a 1-D fast Gauss transform with a stated bound ------ */
#define NW_FG_AMAX 4 /* powers of u summed: local linear's u^2 times the derivative's u^2 */
#define NW_FG_PMAX 24 /* Taylor terms at most */
#define NW_FG_MIN_POINTS 24 /* smaller clusters are always summed directly */
/* Cluster width in h (radius rho <= width / 2): at 1/2, z = rho |dy| <= 2.3 within the
 * e^-(17 + ln n) reach, where 24 terms give 1e-12. */
#define NW_FG_WIDTH 0.5

typedef struct nw_fs_gauss {
    size_t n, v, clusters;
    const double *x, *c; /* the engine's sorted points and coefficients */
    double inv_h, eps;
    size_t *start;  /* clusters + 1: first point of each cluster */
    size_t *offset; /* per cluster: its moments' index, SIZE_MAX when summed directly */
    size_t moments; /* source moments per vector and cluster (nw_fg_prepare: what pays) */
    size_t terms;   /* target moments per vector a translation makes */
    double *mu;     /* moments: per cluster v × moments */
} nw_fs_gauss;

size_t nw_fg_bytes(size_t n, size_t v);
void nw_fg_init(nw_fs_gauss *g, void *mem, size_t n, size_t v, const double *x, const double *c);
/* Clusters and moments at bandwidth 1 / inv_h for relative error eps (the moments on the team). */
void nw_fg_prepare(nw_fs_gauss *g, double inv_h, double eps, nw_workers *team, size_t threads);
/* out (v × (amax + 1)) = sum_i c_i u_i^a e^{-u_i^2/2} e^{r_near^2/2} at query q over all points
 * but skip (SIZE_MAX: none); j: the last point with x_j <= q (SIZE_MAX if none). */
void nw_fg_moments(const nw_fs_gauss *g, double q, size_t j, size_t skip, size_t amax,
                   double *out);
/* A dense cluster's target expansion, shared by the leave-one-out rows of its points. */
#define NW_FG_SLOTS 8
typedef struct nw_fg_local {
    size_t k;          /* the cluster (SIZE_MAX: none yet) */
    double b, rho;     /* centre, radius in h */
    double *N;         /* v × (NW_FG_PMAX + NW_FG_AMAX + 1) target moments */
    size_t order[NW_FG_SLOTS]; /* Taylor order for |t| <= rho (q + 1) / NW_FG_SLOTS */
} nw_fg_local;
#define NW_FG_LOCAL_DOUBLES(v) ((v) * (NW_FG_PMAX + NW_FG_AMAX + 1))
/* Builds cluster k's target expansion; 0 when k is small or its order would be too high (then
 * its rows take nw_fg_moments). */
int nw_fg_target(const nw_fs_gauss *g, size_t k, nw_fg_local *loc);
/* nw_fg_moments' out for training point j of loc's cluster, j left out, up to a factor common
 * to the row (e^{t^2/2} instead of e^{r_near^2/2}, |t| <= rho: both within e^{1/8}). */
void nw_fg_moments_local(const nw_fs_gauss *g, const nw_fg_local *loc, size_t j, size_t amax,
                         double *out);
/* The same for rows j0 and j1 side by side (each row's sums as nw_fg_moments_local's). */
void nw_fg_moments_local2(const nw_fs_gauss *g, const nw_fg_local *loc, size_t j0, size_t j1,
                          size_t amax, double *out0, double *out1);
/* nw_fg_moments' out (up to a factor common to the row) at a query q inside loc's cluster
 * span (nw_fg_inside), nothing left out. */
void nw_fg_moments_at_local(const nw_fs_gauss *g, const nw_fg_local *loc, double q, size_t amax,
                            double *out);
/* Whether q lies within cluster k's span [x_first, x_last]. */
int nw_fg_inside(const nw_fs_gauss *g, size_t k, double q);
/* Index of the cluster holding point j. */
size_t nw_fg_cluster_of(const nw_fs_gauss *g, size_t j);

/* Powers of u a model needs, and its nw_sums from nw_fg_moments' out. */
size_t nw_fg_amax(const nw_model *model, int grad);
void nw_fg_row_sums(const nw_model *model, size_t amax, const double *mom, nw_sums *s);

/* ---- Drivers over a plan (fastsum_plan.c) -------------------------------------------------- */
/* The plan's fast-sum part: the engine over the vectors (1, y_1 .. y_dv) and each worker's
 * block and row moments. */
struct nw_fs_plan {
    nw_fastsum fs;     /* Laplace family; for the Gaussian only its x */
    double *gx, *gc;   /* the Gaussian's double copies of x and the coefficients (v·n) */
    int gauss;         /* the Gaussian: g below */
    nw_fs_gauss g;
    double eps;        /* the Gaussian's relative error bound */
    double *worker_mem; /* threads × worker_doubles */
    size_t worker_doubles;
};

/* Bytes of the fast-sum part of a plan (SIZE_MAX on overflow). */
size_t nw_fs_plan_bytes(const nw_model *model, size_t n, size_t threads);
/* Points plan->fastsum into mem and fills positions and coefficients from the plan's sorted
 * training copy; eps: the Gaussian's bound. */
void nw_fs_plan_init(nw_plan *plan, void *mem, double eps);
/* The CV rows of every unit into plan->partial (as cv.c's rows do), at plan->inv_h. */
void nw_fs_cv_units(nw_plan *plan, int want_grad);
/* size_t of scratch nw_fs_predict needs for m queries and n points into *count; 0 on
 * overflow. */
int nw_fs_predict_scratch(size_t n, size_t m, size_t *count);
/* Predictions at m queries (xq, ldq; any order, anywhere) into yq at plan->inv_h; row flags
 * optional; returns the flagged count. */
size_t nw_fs_predict(nw_plan *plan, size_t m, const float *xq, size_t ldq, float *yq, size_t ldyq,
                     unsigned char *row_flags, size_t *scratch);

#endif /* NWATTN_NW_FASTSUM_H */
