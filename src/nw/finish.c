/* From a row's moment sums to its estimate: the local constant ratio, or the local linear
 * weighted least-squares solve (Cholesky through LAPACKE, or the 2×2 closed form), with the
 * derivatives with respect to log h and the coefficients of the row's weights. */
#include <lapacke.h>
#include <math.h>
#include <string.h>

#include "nw.h"

size_t nw_sums_doubles(const nw_model *model, int grad) {
    const size_t p = model->p, dv = model->dv;
    size_t one = p * p + p * dv; /* p <= d + 1 and dv are checked by the callers' sizes */
    return grad ? one * (1 + model->d) : one;
}

void nw_sums_init(nw_sums *s, double *mem, const nw_model *model, int grad) {
    const size_t p = model->p, dv = model->dv;
    memset(mem, 0, nw_sums_doubles(model, grad) * sizeof(double));
    s->m = mem;
    s->b = s->m + p * p;
    s->dm = grad ? s->b + p * dv : NULL;
    s->db = grad ? s->dm + model->d * p * p : NULL;
}

/* Cholesky factor (p×p), its diagonal scaling (p), solution (p×dv), right-hand side (p×dv),
 * dpocon's work (3p) and iwork (p ints, given p doubles). */
size_t nw_finish_work_doubles(const nw_model *model) {
    const size_t p = model->p, dv = model->dv;
    return p * p + 2 * p * (dv > 0 ? dv : 1) + 5 * p;
}

/* Symmetric element (a, b) of a column-major matrix holding its upper triangle. */
static double sym(const double *m, size_t p, size_t a, size_t b) {
    return a <= b ? m[a + b * p] : m[b + a * p];
}

static void local_constant(const nw_model *model, const nw_sums *s, double *yhat, double *dyhat,
                           double *coef) {
    const size_t p = model->p, dv = model->dv, d = model->d;
    const double D = s->m[0];
    for (size_t c = 0; c < dv; c++)
        yhat[c] = s->b[c * p] / D;
    if (dyhat != NULL && s->dm != NULL)
        for (size_t k = 0; k < d; k++)
            for (size_t c = 0; c < dv; c++)
                dyhat[k * dv + c] = (s->db[k * p * dv + c * p] - yhat[c] * s->dm[k * p * p]) / D;
    if (coef != NULL) {
        coef[0] = 1.0 / D;
        for (size_t a = 1; a < p; a++)
            coef[a] = 0.0;
    }
}

/* rhs = db_k - dm_k · beta for every k, solved in place by solve(); dyhat from row 0. */
typedef int (*solve_fn)(const nw_model *model, const double *factor, double *rhs, size_t nrhs);

static void local_linear_gradient(const nw_model *model, const nw_sums *s, const double *beta,
                                  const double *factor, solve_fn solve, double *rhs,
                                  double *dyhat) {
    const size_t p = model->p, dv = model->dv, d = model->d;
    for (size_t k = 0; k < d; k++) {
        const double *dm = s->dm + k * p * p, *db = s->db + k * p * dv;
        for (size_t c = 0; c < dv; c++)
            for (size_t a = 0; a < p; a++) {
                double v = db[a + c * p];
                for (size_t e = 0; e < p; e++)
                    v -= sym(dm, p, a, e) * beta[e + c * p];
                rhs[a + c * p] = v;
            }
        solve(model, factor, rhs, dv);
        for (size_t c = 0; c < dv; c++)
            dyhat[k * dv + c] = rhs[c * p];
    }
}

/* ---- 2×2 closed form (d == 1): factor holds (a, b, c, det) of M = [a b; b c] ------------- */
static int solve_2x2(const nw_model *model, const double *f, double *rhs, size_t nrhs) {
    (void)model;
    for (size_t c = 0; c < nrhs; c++) {
        double r0 = rhs[2 * c], r1 = rhs[2 * c + 1];
        rhs[2 * c] = (f[2] * r0 - f[1] * r1) / f[3];
        rhs[2 * c + 1] = (f[0] * r1 - f[1] * r0) / f[3];
    }
    return 0;
}

/* Returns 0 when M is well enough conditioned (factor filled), 1 when singular. The test is
 * taken on the equilibrated matrix D M D, D = diag(M)^(-1/2) = [1 r; r 1] with
 * r = |b| / sqrt(ac): its 1-norm reciprocal condition number is (1 - r^2) / (1 + r)^2 =
 * (1 - r) / (1 + r), at least NW_LL_RCOND_MIN exactly when r <= (1 - R) / (1 + R), i.e.
 * b^2 <= ac ((1 - R) / (1 + R))^2: no square root or division (a row's longest latencies),
 * and no cancellation. In the coordinates divided by h, M itself has rcond ~ (spread / h)^2
 * and would fail for every large h, although the fit tends to the well-posed global
 * least-squares line there. */
static int factor_2x2(const double *m, double *factor) {
    static const double q = (1.0 - NW_LL_RCOND_MIN) / (1.0 + NW_LL_RCOND_MIN);
    const double a = m[0], b = m[2], c = m[3];
    const double ac = a * c, bb = b * b, det = ac - bb;
    if (!(a > 0.0) || !(c > 0.0) || !(det > 0.0) || !(bb <= ac * (q * q)))
        return 1;
    factor[0] = a;
    factor[1] = b;
    factor[2] = c;
    factor[3] = det;
    return 0;
}

/* ---- LAPACKE (any p): column-major, so that no LAPACKE call allocates -------------------- */
/* The factor is that of the equilibrated D M D, D = diag(M)^(-1/2) (stored in the p doubles
 * after it): M^-1 r = D (D M D)^-1 D r. The condition test is thereby invariant to the scale
 * of each coordinate, in particular to h (see factor_2x2). */
static int solve_chol(const nw_model *model, const double *factor, double *rhs, size_t nrhs) {
    const size_t p = model->p;
    const double *scale = factor + p * p;
    for (size_t c = 0; c < nrhs; c++)
        for (size_t a = 0; a < p; a++)
            rhs[a + c * p] *= scale[a];
    const lapack_int pi = (lapack_int)p;
    int info =
        (int)LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'U', pi, (lapack_int)nrhs, factor, pi, rhs, pi);
    for (size_t c = 0; c < nrhs; c++)
        for (size_t a = 0; a < p; a++)
            rhs[a + c * p] *= scale[a];
    return info;
}

static int factor_chol(const nw_model *model, const double *m, double *factor, double *work) {
    const size_t p = model->p;
    double *scale = factor + p * p;
    for (size_t a = 0; a < p; a++) {
        const double diag = m[a + a * p];
        if (!(diag > 0.0))
            return 1;
        scale[a] = 1.0 / sqrt(diag);
    }
    for (size_t b = 0; b < p; b++)
        for (size_t a = 0; a <= b; a++)
            factor[a + b * p] = m[a + b * p] * scale[a] * scale[b];
    double norm = 0.0; /* 1-norm of the symmetric D M D */
    for (size_t b = 0; b < p; b++) {
        double column = 0.0;
        for (size_t a = 0; a < p; a++)
            column += fabs(sym(factor, p, a, b));
        norm = fmax(norm, column);
    }
    const lapack_int pi = (lapack_int)p;
    if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', pi, factor, pi) != 0)
        return 1;
    double rcond = 0.0;
    lapack_int *iwork = (lapack_int *)(void *)(work + 3 * p);
    if (LAPACKE_dpocon_work(LAPACK_COL_MAJOR, 'U', pi, factor, pi, norm, &rcond, work, iwork) !=
            0 ||
        !(rcond >= NW_LL_RCOND_MIN))
        return 1;
    return 0;
}

/* The 2×2 closed form for one y column and d == 1 without coefficients (the 1-D rows of CV,
 * millions per evaluation): the same arithmetic as the general path below (factor_2x2,
 * solve_2x2, local_linear_gradient), with the sizes known and without the copies; only the
 * solutions' first components are formed. */
static unsigned local_linear_one(const nw_model *model, const nw_sums *s, double *yhat,
                                 double *dyhat) {
    double f[4];
    if (factor_2x2(s->m, f)) {
        local_constant(model, s, yhat, dyhat, NULL);
        return NWATTN_ROW_SINGULAR;
    }
    const double b0 = s->b[0], b1 = s->b[1];
    const double beta0 = (f[2] * b0 - f[1] * b1) / f[3], beta1 = (f[0] * b1 - f[1] * b0) / f[3];
    yhat[0] = beta0;
    if (dyhat != NULL && s->dm != NULL) {
        const double *dm = s->dm, *db = s->db;
        double r0 = db[0], r1 = db[1];
        r0 -= dm[0] * beta0;
        r0 -= dm[2] * beta1;
        r1 -= dm[2] * beta0;
        r1 -= dm[3] * beta1;
        dyhat[0] = (f[2] * r0 - f[1] * r1) / f[3];
    }
    return 0;
}

unsigned nw_finish_row(const nw_model *model, const nw_sums *s, int closed_form, double *work,
                       double *yhat, double *dyhat, double *coef) {
    const size_t p = model->p, dv = model->dv;
    if (!(s->m[0] > 0.0))
        return NWATTN_ROW_EMPTY;
    if (p == 1) {
        local_constant(model, s, yhat, dyhat, coef);
        return 0;
    }
    if (closed_form && p == 2 && dv == 1 && model->d == 1 && coef == NULL)
        return local_linear_one(model, s, yhat, dyhat);
    double *factor = work, *beta = factor + p * p + p, *rhs = beta + p * dv,
           *scratch = rhs + p * dv;
    const int two = closed_form && p == 2;
    const solve_fn solve = two ? solve_2x2 : solve_chol;
    const int singular = two ? factor_2x2(s->m, factor) : factor_chol(model, s->m, factor, scratch);
    if (singular) {
        local_constant(model, s, yhat, dyhat, coef);
        return NWATTN_ROW_SINGULAR;
    }
    memcpy(beta, s->b, p * dv * sizeof(double));
    solve(model, factor, beta, dv);
    for (size_t c = 0; c < dv; c++)
        yhat[c] = beta[c * p];
    if (dyhat != NULL && s->dm != NULL)
        local_linear_gradient(model, s, beta, factor, solve, rhs, dyhat);
    if (coef != NULL) { /* M^-1 e_0: the weight of point j is K_j z_j' M^-1 e_0 */
        for (size_t a = 0; a < p; a++)
            coef[a] = a == 0 ? 1.0 : 0.0;
        solve(model, factor, coef, 1);
    }
    return 0;
}

void nw_finish_solve(const nw_model *model, int closed_form, const double *work, double *rhs,
                     size_t nrhs) {
    if (closed_form && model->p == 2)
        solve_2x2(model, work, rhs, nrhs);
    else
        solve_chol(model, work, rhs, nrhs);
}

/* ---- Leave-one-out rows -------------------------------------------------------------------- */
void nw_cv_add_row(const nw_model *model, unsigned flags, const double *yhat, const double *dyhat,
                   const float *target, size_t stride, int want_grad, double w, double *out) {
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

void nw_cv_result(const nw_model *model, double count, const double *h, const double *total,
                  int want_grad, double *cv, double *grad) {
    const int empty = total[2] > 0.0;
    *cv = empty ? INFINITY : total[0] / count;
    for (size_t k = 0; grad != NULL && k < model->d; k++) /* d/dlog h_k -> d/dh_k */
        grad[k] = empty || !want_grad ? 0.0 : total[3 + k] / count / h[k];
}
