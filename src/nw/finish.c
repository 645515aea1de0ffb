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
        yhat[c] = nw_lc_yhat(s->b[c * p], D);
    if (dyhat != NULL && s->dm != NULL)
        for (size_t k = 0; k < d; k++)
            for (size_t c = 0; c < dv; c++)
                dyhat[k * dv + c] =
                    nw_lc_dyhat(s->db[k * p * dv + c * p], yhat[c], s->dm[k * p * p], D);
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
        rhs[2 * c] = nw_solve_2x2_0(f, r0, r1);
        rhs[2 * c + 1] = nw_solve_2x2_1(f, r0, r1);
    }
    return 0;
}

/* Returns 0 when M is well enough conditioned (factor filled), 1 when singular (nw.h). */
static int factor_2x2(const double *m, double *factor) {
    return nw_factor_2x2(m[0], m[2], m[3], factor);
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
        return nw_finish_one(1, s->m, s->b, dyhat != NULL ? s->dm : NULL, s->db, yhat, dyhat);
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

void nw_cv_result(const nw_model *model, double count, const double *h, const double *total,
                  int want_grad, double *cv, double *grad) {
    const int empty = total[2] > 0.0;
    *cv = empty ? INFINITY : total[0] / count;
    for (size_t k = 0; grad != NULL && k < model->d; k++) /* d/dlog h_k -> d/dh_k */
        grad[k] = empty || !want_grad ? 0.0 : total[3 + k] / count / h[k];
}
