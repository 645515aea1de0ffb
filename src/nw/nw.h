/* Internal declarations of the Nadaraya-Watson regression section (src/nw/). Never installed.
 *
 * Pipeline of one query row, shared by prediction and cross-validation:
 *   sums    the row's kernel-weighted moment sums, in double (nw_fast_row / nw_ref_row);
 *   finish  the local constant or local linear estimate from the sums (nw_finish_row);
 *   policy  what an empty row gets (nw_nearest, nwattn_empty).
 * Kernels are written in terms of the scaled squared distance t = sum_k u_k^2,
 * u_k = (x_jk - q_k) / h_k. The gradient with respect to log h_k of a weight K(t) is
 * G(t) · u_k^2 with G = -2 K'(t): all derivatives reduce to sums weighted by G · u_k^2. */
#ifndef NWATTN_NW_H
#define NWATTN_NW_H

#include "internal.h"

/* Local linear rows whose scaled moment matrix has a reciprocal condition number below this
 * fall back to the local constant estimate (about float32 epsilon: the fast path's weights
 * carry that relative error). */
#define NW_LL_RCOND_MIN 1e-7

/* A validated estimator for a problem with d inputs and dv outputs. */
typedef struct nw_model {
    nwattn_kernel kernel;
    nwattn_degree degree;
    nwattn_empty empty;
    size_t d, dv;
    size_t p; /* unknowns per output column: 1 (local constant) or d + 1 (local linear) */
    double tolerance; /* the Gaussian fast sums' relative error bound (the context's) */
} nw_model;

/* The model of a validated nwattn_regression for d inputs and dv outputs. */
static inline nw_model nw_model_of(const nwattn_regression *model, size_t d, size_t dv,
                                   double tolerance) {
    nw_model out = {model->kernel, model->degree, model->empty, d, dv,
                    model->degree == NWATTN_LOCAL_LINEAR ? d + 1 : 1, tolerance};
    return out;
}

/* Whether the kernel is zero beyond t = 1. */
static inline int nw_kernel_compact(nwattn_kernel kernel) {
    return kernel == NWATTN_KERNEL_EPANECHNIKOV || kernel == NWATTN_KERNEL_TRICUBE ||
           kernel == NWATTN_KERNEL_UNIFORM;
}

/* ---- Row sums ------------------------------------------------------------------------------ */
/* With z = (1, u_1, ..., u_d) for local linear (z = (1) for local constant) and the weights
 * K_j of one query:
 *   m  = sum_j K_j z z'     p×p, column-major; only the upper triangle is meaningful
 *   b  = sum_j K_j z y_j'   p×dv, column-major (leading dimension p)
 * and with the gradient, for each k, the same sums with weights G_j u_kj^2 in dm + k·p·p and
 * db + k·p·dv. */
typedef struct nw_sums {
    double *m, *b;
    double *dm, *db; /* NULL without the gradient */
} nw_sums;

/* Doubles one nw_sums needs. */
size_t nw_sums_doubles(const nw_model *model, int grad);
/* Points s into mem (nw_sums_doubles of it) and zeroes it. */
void nw_sums_init(nw_sums *s, double *mem, const nw_model *model, int grad);

/* ---- Finishing a row ----------------------------------------------------------------------- */
/* Doubles of scratch nw_finish_row needs. */
size_t nw_finish_work_doubles(const nw_model *model);

/* The estimate of one row from its sums. Returns 0, NWATTN_ROW_EMPTY (nothing is written:
 * the caller applies the empty policy) or NWATTN_ROW_SINGULAR (local constant used).
 * yhat: dv values. dyhat (optional): d×dv values, dyhat[k·dv + c] = d yhat_c / d log h_k.
 * coef (optional): p values such that the row's weight on point j is
 * K_j · (coef[0] + sum_a coef[a] u_aj); with a singular fallback only coef[0] is non-zero.
 * closed_form: solve 2×2 systems (d == 1) by formula instead of LAPACKE. */
unsigned nw_finish_row(const nw_model *model, const nw_sums *s, int closed_form, double *work,
                       double *yhat, double *dyhat, double *coef);

/* ---- The closed forms for d == 1, inline ---------------------------------------------------
 * nw_finish_row's arithmetic for 1-D rows (it calls these itself), inline for the callers that
 * finish millions of rows per evaluation (the fast sums' CV): one implementation. */
/* The local constant estimate b / D and its derivative (db - yhat dm) / D. */
static inline double nw_lc_yhat(double b, double D) { return b / D; }
static inline double nw_lc_dyhat(double db, double yhat, double dm, double D) {
    return (db - yhat * dm) / D;
}

/* factor = (a, b, c, det) of M = [a b; b c] unless M is singular (returns 1). The test is
 * taken on the equilibrated matrix D M D, D = diag(M)^(-1/2) = [1 r; r 1] with
 * r = |b| / sqrt(ac): its 1-norm reciprocal condition number is (1 - r^2) / (1 + r)^2 =
 * (1 - r) / (1 + r), at least NW_LL_RCOND_MIN exactly when r <= (1 - R) / (1 + R), i.e.
 * b^2 <= ac ((1 - R) / (1 + R))^2: no square root or division (a row's longest latencies),
 * and no cancellation. In the coordinates divided by h, M itself has rcond ~ (spread / h)^2
 * and would fail for every large h, although the fit tends to the well-posed global
 * least-squares line there. */
static inline int nw_factor_2x2(double a, double b, double c, double *factor) {
    const double q = (1.0 - NW_LL_RCOND_MIN) / (1.0 + NW_LL_RCOND_MIN);
    const double ac = a * c, bb = b * b, det = ac - bb;
    if (!(a > 0.0) || !(c > 0.0) || !(det > 0.0) || !(bb <= ac * (q * q)))
        return 1;
    factor[0] = a;
    factor[1] = b;
    factor[2] = c;
    factor[3] = det;
    return 0;
}

/* The first and second components of M^-1 (r0, r1) from nw_factor_2x2's factor. */
static inline double nw_solve_2x2_0(const double *f, double r0, double r1) {
    return (f[2] * r0 - f[1] * r1) / f[3];
}
static inline double nw_solve_2x2_1(const double *f, double r0, double r1) {
    return (f[0] * r1 - f[1] * r0) / f[3];
}

/* nw_finish_row for d == 1, one y column and no coefficients (closed form): m, b, dm, db as in
 * nw_sums (p = 2: m[0], m[2], m[3] and b[0], b[1]; p = 1: m[0], b[0]); dm NULL without the
 * gradient. Returns its flags; *yhat and *dyhat as it writes them. */
static inline unsigned nw_finish_one(int ll, const double *m, const double *b, const double *dm,
                                     const double *db, double *yhat, double *dyhat) {
    if (!(m[0] > 0.0))
        return NWATTN_ROW_EMPTY;
    unsigned flags = 0;
    if (ll) {
        double f[4];
        if (!nw_factor_2x2(m[0], m[2], m[3], f)) {
            const double beta0 = nw_solve_2x2_0(f, b[0], b[1]);
            const double beta1 = nw_solve_2x2_1(f, b[0], b[1]);
            *yhat = beta0;
            if (dm != NULL) { /* M^-1 (db - dm beta), first component */
                double r0 = db[0], r1 = db[1];
                r0 -= dm[0] * beta0;
                r0 -= dm[2] * beta1;
                r1 -= dm[2] * beta0;
                r1 -= dm[3] * beta1;
                *dyhat = nw_solve_2x2_0(f, r0, r1);
            }
            return 0;
        }
        flags = NWATTN_ROW_SINGULAR;
    }
    *yhat = nw_lc_yhat(b[0], m[0]);
    if (dm != NULL)
        *dyhat = nw_lc_dyhat(db[0], *yhat, dm[0], m[0]);
    return flags;
}

/* After nw_finish_row returned 0 for a local linear row (closed_form as given to it), solves
 * M x = rhs (p×nrhs, column-major) in place with the factor it left in work. */
void nw_finish_solve(const nw_model *model, int closed_form, const double *work, double *rhs,
                     size_t nrhs);

/* ---- The nearest training points (empty-row policy) ---------------------------------------- */
/* The mean y (dv doubles) of the training points at the smallest scaled distance from q
 * (excluding index skip; SIZE_MAX for none), ties sharing equally; returns their count (0 when
 * no point is left). With weights != NULL also writes the weights row (n floats, original
 * order): 1/count on those points, 0 elsewhere. x, y in the caller's layout. */
size_t nw_nearest(size_t n, size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                  size_t ldy, const float *q, const double *inv_h, size_t skip, double *mean,
                  float *weights);
/* Its pieces: the smallest t (*best, +INFINITY when no point is left), the sum (not the mean)
 * of y over the points at it (sum: dv doubles) and their count; and the weights row of points
 * at t == best, 1/count each (count: of all the parts' points, for the MPI library's shards). */
size_t nw_nearest_scan(size_t n, size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                       size_t ldy, const float *q, const double *inv_h, size_t skip, double *best,
                       double *sum);
void nw_nearest_weights(size_t n, size_t d, const float *x, size_t ldx, const float *q,
                        const double *inv_h, size_t skip, double best, size_t count,
                        float *weights);

/* ---- Training data for the fast path ------------------------------------------------------- */
/* The fast path's copy of the training set: dimension-major floats, sorted by x when d == 1.
 * When d == 2 the copy is binned into strips (cells of a grid of equal-count rows): the
 * points ordered by the second coordinate and cut into nw_strips(n) runs of equal count,
 * each strip's points contiguous and sorted by the first coordinate, so that a query's
 * window meets each strip in one run of positions (fast_rows_impl.h). */
typedef struct nw_train {
    size_t n, d, dv;
    float *x;     /* d×n: x[k·n + j] */
    float *y;     /* dv×n: y[c·n + j] */
    size_t *perm; /* sorted position -> caller's index (identity when d > 2) */
    size_t strips;      /* d == 2: the number of strips (0 otherwise) */
    size_t *strip;      /* strips + 1 positions: strip s holds [strip[s], strip[s + 1]) */
    float *strip_y;     /* 2 per strip: the least and largest second coordinate in it */
} nw_train;

/* The strips of a d == 2 training copy of n points: about sqrt(n) (at least 1). */
size_t nw_strips(size_t n);

/* Bytes nw_train_fill needs at mem (a multiple of sizeof(double)); SIZE_MAX on overflow. */
size_t nw_train_bytes(size_t n, size_t d, size_t dv);
/* Copies the caller's (x, y) into mem, sorting by x when d == 1. */
void nw_train_fill(nw_train *t, void *mem, size_t n, size_t d, size_t dv, const float *x,
                   size_t ldx, const float *y, size_t ldy);
/* idx[0..n) = the indices of x[j·ldx] in the order (value, index); tmp: n more size_t. */
void nw_sort_order(size_t n, const float *x, size_t ldx, size_t *idx, size_t *tmp);

/* ---- The fast row engine (float weights, double sums) -------------------------------------- */
typedef struct nw_fast nw_fast;
typedef void (*nw_fast_row_fn)(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                               nw_sums *s);
typedef void (*nw_fast_weights_fn)(const nw_fast *f, const float *q, const float *inv_h,
                                   size_t skip, const double *coef, float *weights);
struct nw_fast {
    const nw_model *model;
    const nw_train *train;
    float tail; /* T: weights below e^-T of the largest are left out (Gaussian, Laplace) */
    float *buf; /* nw_fast_buffer_floats */
    /* the copy for this machine's instruction set (chosen by nw_fast_init) */
    nw_fast_row_fn row;
    nw_fast_weights_fn row_weights;
};

size_t nw_fast_buffer_floats(const nw_model *model, size_t n);
void nw_fast_init(nw_fast *f, const nw_model *model, const nw_train *train, float *buf);

/* Accumulates (into zeroed sums) the row of query q (d floats) with inverse bandwidths inv_h,
 * leaving out training point skip (a sorted position; SIZE_MAX for none). */
void nw_fast_row(const nw_fast *f, const float *q, const float *inv_h, size_t skip, nw_sums *s);
/* The row's weights K_j (coef[0] + sum_a coef[a] u_aj) in the caller's order (n floats; zero
 * where left out). */
void nw_fast_row_weights(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                         const double *coef, float *weights);

/* ---- The reference row engine (double, all points) ----------------------------------------- */
/* The same sums from the caller's layout, every weight in double with libm. */
void nw_ref_row(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                size_t ldy, const float *q, const double *inv_h, size_t skip, nw_sums *s);
void nw_ref_row_weights(const nw_model *model, size_t n, const float *x, size_t ldx, const float *q,
                        const double *inv_h, size_t skip, const double *coef, float *weights);
/* nw_ref_row with observation weights obs (n floats >= 0; NULL: all 1): each point's kernel
 * weight is multiplied by its obs weight, except point skip, which weighs keep instead (0:
 * left out; SIZE_MAX: none). */
void nw_ref_row_obs(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                    size_t ldy, const float *q, const double *inv_h, const float *obs, size_t skip,
                    double keep, nw_sums *s);
/* The smoother weights of one row, in double (obs, skip, keep as nw_ref_row_obs): ell[j] the
 * weight of y_j in yhat(q); dell[k·n + j] (optional) its weight in d yhat / d q_k. coef is
 * p×p, column-major: column c = M^-1 e_c from nw_finish_solve (local linear), or coef[0] =
 * 1 / sum of the weights (local constant). d <= NW_SMOOTHER_MAX_D when dell is given. */
#define NW_SMOOTHER_MAX_D 64
void nw_ref_smoother_row(const nw_model *model, size_t n, const float *x, size_t ldx,
                         const float *q, const double *inv_h, const float *obs, size_t skip,
                         double keep, const double *coef, double *ell, double *dell);

/* The pieces of nw_ref_row_obs, for callers that hold the training points in parts (the MPI
 * library's shards): the shift t_near (the smallest t over the points kept: +INFINITY when
 * none is left; 0 for the compact kernels, which are not shifted), the sums at a given shift,
 * X
 * that turns sums shifted by t_from into sums shifted by t_to (1 for compact kernels). */
double nw_ref_nearest_t(const nw_model *model, size_t n, const float *x, size_t ldx,
                        const float *q, const double *inv_h, const float *obs, size_t skip,
                        double keep);
void nw_ref_row_at(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                   size_t ldy, const float *q, const double *inv_h, const float *obs, size_t skip,
                   double keep, double t_near, nw_sums *s);
double nw_ref_shift(nwattn_kernel kernel, double t_from, double t_to);
/* nw_ref_row_weights at a given shift t_near. */
void nw_ref_row_weights_at(const nw_model *model, size_t n, const float *x, size_t ldx,
                           const float *q, const double *inv_h, size_t skip, const double *coef,
                           double t_near, float *weights);

/* Kernel weight and G = -2 K'(t) in double, shifted for the Gaussian and Laplace kernels:
 * the weight returned is K(t) / K(t_near). */
double nw_ref_kernel(nwattn_kernel kernel, double t, double t_near, double *g);

/* ---- Plans: prediction and cross-validation ------------------------------------------------ */
/* Rows are processed in units of NW_UNIT_ROWS, spread over the context's threads; each unit
 * keeps its own partial results, reduced in unit order, so that the results do not depend on
 * the number of threads. */
#define NW_UNIT_ROWS ((size_t)32)

/* One worker's scratch. */
typedef struct nw_worker {
    nw_fast engine; /* fast path: the worker's own chunk buffers */
    double *sums_mem, *work, *yhat, *dyhat, *coef;
    float *q; /* a query's coordinates (d floats) */
} nw_worker;

/* Which engine a plan's rows use (nw_select_path; `fast` of the plan functions). The direct
 * and fast-sum paths share the sorted training copy. */
enum { NW_PATH_REFERENCE = 0, NW_PATH_DIRECT = 1, NW_PATH_FASTSUM = 2 };

/* Everything the rows of one data set need, prepared once (the fast path's sorted copy) for
 * many queries or bandwidths. */
typedef struct nw_plan {
    nw_model model;
    int fast; /* NW_PATH_* */
    size_t n, threads, units;
    /* caller's layout (reference path, nearest points) */
    const float *x, *y;
    size_t ldx, ldy;
    nw_train train;     /* fast path */
    nw_worker *workers; /* threads of them */
    nw_workers *team;   /* the context's threads the rows run on; NULL: the calling thread */
    double *inv_h;      /* d: the current bandwidths' inverses */
    float *inv_hf;      /* the same in float */
    double *partial;    /* units × (3 + d): per-unit results */
    /* observation weights of the CV (nw_plan_obs_weights; NULL: unit weights): reference path */
    const float *obs;
    double obs_total; /* their sum */
    struct nw_fs_plan *fastsum; /* NW_PATH_FASTSUM: the fast-sum engine (fastsum.h) */
} nw_plan;

/* Working memory of a plan with `threads` workers and `units` units of rows (SIZE_MAX on
 * overflow). */
size_t nw_plan_bytes(const nw_model *model, int fast, size_t n, size_t threads, size_t units);
void nw_plan_init(nw_plan *plan, const nw_model *model, int fast, size_t n, const float *x,
                  size_t ldx, const float *y, size_t ldy, size_t threads, size_t units, void *mem);
/* Sets the bandwidths of the next rows (d values, all > 0). */
void nw_plan_bandwidths(nw_plan *plan, const double *h);
/* The units needed for rows rows. */
static inline size_t nw_units(size_t rows) { return (rows + NW_UNIT_ROWS - 1) / NW_UNIT_ROWS; }

/* A plan for m query rows of nwattn_nw_predict and its backward: the row engine the context's
 * backend asks for, its working memory from ctx, the bandwidths set. */
nwattn_status nw_query_plan(nwattn_context *ctx, const nw_model *mod, size_t m, size_t n,
                            const float *x, size_t ldx, const float *y, size_t ldy,
                            const float *bandwidths, nw_plan *plan);

/* CV at bandwidths h (d values, all > 0); grad (optional, d values) receives dCV/dh_k.
 * Returns the number of flagged leave-one-out rows; *cv is +INFINITY if one is empty. The
 * plan has nw_units(n) units. */
size_t nw_cv_evaluate(nw_plan *plan, const double *h, double *cv, double *grad);

/* Adds one leave-one-out row (its finish flags, yhat, dyhat and target column, stride apart)
 * to a unit's results out (3 + d: squared errors, flagged, empty, gradient per log h_k), its
 * squared errors and gradient terms times the row's observation weight w (1: unweighted). */
static inline void nw_cv_add_row(const nw_model *model, unsigned flags, const double *yhat,
                                 const double *dyhat, const float *target, size_t stride,
                                 int want_grad, double w, double *out) {
    const size_t d = model->d, dv = model->dv;
    if (flags != 0)
        out[1] += 1.0;
    if (flags & NWATTN_ROW_EMPTY) {
        out[2] += 1.0;
        return;
    }
    for (size_t c = 0; c < dv; c++) {
        const double r = yhat[c] - (double)target[c * stride];
        out[0] += w * r * r;
        if (want_grad)
            for (size_t k = 0; k < d; k++)
                out[3 + k] += w * 2.0 * r * dyhat[k * dv + c];
    }
}

/* Makes the plan's CV the weighted one, sum_i w_i |y_i - yhat_-i(x_i)|^2 / sum w, one unit of
 * weight min(1, w_i) left out (nwattn_nw_summary's): obs (n floats >= 0, sum > 0). Reference
 * path plans only (fast == NW_PATH_REFERENCE). */
void nw_plan_obs_weights(nw_plan *plan, const float *obs);

/* The largest over points of the smallest t to another point at bandwidths h, for a compact
 * kernel (0 for non-compact kernels): nw_search_raise_grid's argument. */
double nw_cv_largest_nearest_t(const nw_plan *plan, const double *h);

/* CV and dCV/dh_k (grad, optional) at h from the sum over every row of nw_cv_add_row's
 * results (3 + d doubles), divided by count (the rows, or their total observation weight). */
void nw_cv_result(const nw_model *model, double count, const double *h, const double *total,
                  int want_grad, double *cv, double *grad);

/* ---- The learnable-w model ----------------------------------------------------------------- */
/* Validated arguments of nwattn_wmodel_evaluate (batch 1). */
typedef struct nw_wmodel_args {
    const nw_simd *simd; /* the context's vector kernels */
    float w;
    nw_mask mask;
    size_t m, n, d, dv;
    const float *q;
    size_t ldq;
    const float *k;
    size_t ldk;
    const float *v;
    size_t ldv;
    const float *target; /* NULL: no loss, no gradient */
    size_t ldt;
    float *yhat; /* optional */
    size_t ldyhat;
    float *weights; /* optional */
    size_t ldw;
} nw_wmodel_args;

/* Working memory of nw_wmodel_run with these kernels (SIZE_MAX on overflow). */
size_t nw_wmodel_bytes(const nw_kernels *kernels, const nw_wmodel_args *a);
/* Forward pass; with a->target also the loss and dloss/dw (both written, in double). The
 * reference kernel table selects the all-double reference path. */
void nw_wmodel_run(const nw_kernels *kernels, const nw_wmodel_args *a, void *mem, double *loss,
                   double *grad);

/* ---- Rules of thumb ------------------------------------------------------------------------ */
/* Rule-of-thumb bandwidths h (d doubles) of x (n >= 2 points, every coordinate with spread:
 * checked by the caller); scratch holds 2n floats. */
void nw_rule_of_thumb(nwattn_bandwidth_rule rule, size_t n, size_t d, const float *x, size_t ldx,
                      double *h, float *scratch);
/* Stable ascending merge sort of a[0..n), tmp[0..n) as scratch. */
void nw_sort_floats(size_t n, float *a, float *tmp);

/* ---- Argument checks shared by the API files ----------------------------------------------- */
#include "checks.h"

nwattn_status nw_check_model(nwattn_context *ctx, const nwattn_regression *model, size_t d,
                             size_t dv, nw_model *out);
/* Registers x (n×d) and y (n×dv) and checks that every value is finite. */
nwattn_status nw_check_training(nw_call *call, size_t n, size_t d, size_t dv, const float *x,
                                size_t ldx, const float *y, size_t ldy);
/* d bandwidths, each finite and > 0. */
nwattn_status nw_check_bandwidths(nwattn_context *ctx, const char *name, const float *h, size_t d);
/* Every value of the rows×cols matrix is finite. */
nwattn_status nw_check_finite(nwattn_context *ctx, const char *name, const float *a, size_t rows,
                              size_t cols, size_t ld);
/* n >= n_min and every coordinate of x takes two values at least. */
nwattn_status nw_check_spread(nwattn_context *ctx, size_t n, size_t d, const float *x, size_t ldx,
                              size_t n_min);
/* Whether ctx's backend asks for the fast path of an engine that needs no BLAS. */
nwattn_status nw_select_fast(nwattn_context *ctx, int *fast);
/* The path (NW_PATH_*) of m rows over n training points at bandwidth h (d == 1: h[0]), by the
 * context's backend and method and, for NWATTN_NW_METHOD_AUTO, by predicted cost
 * (fastsum_choose.c); weights: the caller wants the m×n weights; pooled: off the fast sums
 * the rows would take the dense pool (local constant Gaussian and Laplace predictions).
 * x: the caller's training inputs (their range enters the cost); h <= 0: not known yet, a
 * rule of thumb. Fails when a forced method cannot run this model. */
nwattn_status nw_select_path(nwattn_context *ctx, const nw_model *model, size_t n, size_t m,
                             const float *x, size_t ldx, double h, int weights, int pooled,
                             int *path);

#endif /* NWATTN_NW_H */
