/* The reference row engine: every training point, every weight in double with libm, the sums
 * accumulated pair by pair straight from the definitions. The oracle for nw_fast_row. */
#include <math.h>

#include "nw.h"

double nw_ref_kernel(nwattn_kernel kernel, double t, double t_near, double *g) {
    double k = 0.0, s;
    *g = 0.0;
    switch (kernel) {
    case NWATTN_KERNEL_GAUSSIAN:
        k = exp(-0.5 * (t - t_near));
        *g = k;
        break;
    case NWATTN_KERNEL_LAPLACE:
        s = sqrt(t);
        k = exp(sqrt(t_near) - s);
        *g = s > 0.0 ? k / s : 0.0;
        break;
    case NWATTN_KERNEL_MATERN32: /* (1 + r) e^-r; G = e^-r */
        s = sqrt(t);
        *g = exp(sqrt(t_near) - s);
        k = (1.0 + s) * *g;
        break;
    case NWATTN_KERNEL_MATERN52: /* (1 + r + r^2/3) e^-r; G = (1 + r) e^-r / 3 */
        s = sqrt(t);
        k = exp(sqrt(t_near) - s);
        *g = (1.0 + s) * k / 3.0;
        k *= 1.0 + s + t / 3.0;
        break;
    case NWATTN_KERNEL_EPANECHNIKOV:
        if (t < 1.0) {
            k = 1.0 - t;
            *g = 2.0;
        }
        break;
    case NWATTN_KERNEL_TRICUBE:
        if (t < 1.0) {
            s = sqrt(t);
            double a = 1.0 - t * s;
            k = a * a * a;
            *g = 9.0 * s * a * a;
        }
        break;
    case NWATTN_KERNEL_UNIFORM:
        k = t <= 1.0 ? 1.0 : 0.0;
        break;
    }
    return k;
}

/* u_k of point j, and z_a = 1 (a == 0) or u_{a-1}. */
static double coordinate(const float *xj, const float *q, const double *inv_h, size_t k) {
    return ((double)xj[k] - (double)q[k]) * inv_h[k];
}

static double z_of(const float *xj, const float *q, const double *inv_h, size_t a) {
    return a == 0 ? 1.0 : coordinate(xj, q, inv_h, a - 1);
}

static double distance(size_t d, const float *xj, const float *q, const double *inv_h) {
    double t = 0.0;
    for (size_t k = 0; k < d; k++) {
        double u = coordinate(xj, q, inv_h, k);
        t += u * u;
    }
    return t;
}

/* Observation weight of point j: obs[j] (1 without), keep for the point left out. */
static double obs_weight(const float *obs, size_t j, size_t skip, double keep) {
    return j == skip ? keep : obs != NULL ? (double)obs[j] : 1.0;
}

double nw_ref_shift(nwattn_kernel kernel, double t_from, double t_to) {
    if (nw_kernel_compact(kernel) || t_from == t_to)
        return 1.0;
    if (kernel == NWATTN_KERNEL_GAUSSIAN)
        return exp(-0.5 * (t_from - t_to));
    return exp(sqrt(t_to) - sqrt(t_from)); /* the Laplace family's e^(r_near - r) */
}

/* The shift of the non-compact weights: the smallest t over the points kept. */
double nw_ref_nearest_t(const nw_model *model, size_t n, const float *x, size_t ldx,
                        const float *q, const double *inv_h, const float *obs, size_t skip,
                        double keep) {
    if (nw_kernel_compact(model->kernel))
        return 0.0;
    double best = INFINITY;
    for (size_t j = 0; j < n; j++)
        if (obs_weight(obs, j, skip, keep) > 0.0)
            best = fmin(best, distance(model->d, x + j * ldx, q, inv_h));
    return best;
}

/* m += w z z', b += w z y' for one point. */
static void add_point(const nw_model *model, double w, const float *xj, const float *yj,
                      const float *q, const double *inv_h, double *m, double *b) {
    const size_t p = model->p, dv = model->dv;
    for (size_t a = 0; a < p; a++) {
        const double wa = w * z_of(xj, q, inv_h, a);
        for (size_t c = a; c < p; c++)
            m[a + c * p] += wa * z_of(xj, q, inv_h, c);
        for (size_t c = 0; c < dv; c++)
            b[a + c * p] += wa * (double)yj[c];
    }
}

void nw_ref_row(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                size_t ldy, const float *q, const double *inv_h, size_t skip, nw_sums *s) {
    nw_ref_row_obs(model, n, x, ldx, y, ldy, q, inv_h, NULL, skip, 0.0, s);
}

void nw_ref_row_obs(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                    size_t ldy, const float *q, const double *inv_h, const float *obs, size_t skip,
                    double keep, nw_sums *s) {
    nw_ref_row_at(model, n, x, ldx, y, ldy, q, inv_h, obs, skip, keep,
                  nw_ref_nearest_t(model, n, x, ldx, q, inv_h, obs, skip, keep), s);
}

void nw_ref_row_at(const nw_model *model, size_t n, const float *x, size_t ldx, const float *y,
                   size_t ldy, const float *q, const double *inv_h, const float *obs, size_t skip,
                   double keep, double t_near, nw_sums *s) {
    const size_t d = model->d, p = model->p, dv = model->dv;
    if (!(t_near < INFINITY))
        return; /* no point left: the sums stay zero, the row is empty */
    for (size_t j = 0; j < n; j++) {
        const double wj = obs_weight(obs, j, skip, keep);
        if (!(wj > 0.0))
            continue;
        const float *xj = x + j * ldx, *yj = y + j * ldy;
        double g;
        const double k =
            wj * nw_ref_kernel(model->kernel, distance(d, xj, q, inv_h), t_near, &g);
        g *= wj;
        add_point(model, k, xj, yj, q, inv_h, s->m, s->b);
        if (s->dm == NULL)
            continue;
        for (size_t e = 0; e < d; e++) {
            const double u = coordinate(xj, q, inv_h, e);
            add_point(model, g * u * u, xj, yj, q, inv_h, s->dm + e * p * p, s->db + e * p * dv);
        }
    }
}

void nw_ref_row_weights(const nw_model *model, size_t n, const float *x, size_t ldx, const float *q,
                        const double *inv_h, size_t skip, const double *coef, float *weights) {
    nw_ref_row_weights_at(model, n, x, ldx, q, inv_h, skip, coef,
                          nw_ref_nearest_t(model, n, x, ldx, q, inv_h, NULL, skip, 0.0), weights);
}

void nw_ref_row_weights_at(const nw_model *model, size_t n, const float *x, size_t ldx,
                           const float *q, const double *inv_h, size_t skip, const double *coef,
                           double t_near, float *weights) {
    for (size_t j = 0; j < n; j++) {
        weights[j] = 0.0f;
        if (j == skip || !(t_near < INFINITY))
            continue;
        const float *xj = x + j * ldx;
        double g;
        const double k = nw_ref_kernel(model->kernel, distance(model->d, xj, q, inv_h), t_near, &g);
        double factor = 0.0;
        for (size_t a = 0; a < model->p; a++)
            factor += coef[a] * z_of(xj, q, inv_h, a);
        weights[j] = (float)(k * factor);
    }
}

void nw_ref_smoother_row(const nw_model *model, size_t n, const float *x, size_t ldx,
                         const float *q, const double *inv_h, const float *obs, size_t skip,
                         double keep, const double *coef, double *ell, double *dell) {
    const size_t d = model->d, p = model->p;
    const double t_near = nw_ref_nearest_t(model, n, x, ldx, q, inv_h, obs, skip, keep);
    /* local constant derivative: sum_j w_j G_j u_kj / sum_j w_j K_j, subtracted below */
    double centre[NW_SMOOTHER_MAX_D];
    for (size_t k = 0; k < d && dell != NULL && p == 1; k++) {
        centre[k] = 0.0;
        for (size_t j = 0; j < n; j++) {
            const double wj = obs_weight(obs, j, skip, keep);
            if (!(wj > 0.0) || !(t_near < INFINITY))
                continue;
            const float *xj = x + j * ldx;
            double g;
            (void)nw_ref_kernel(model->kernel, distance(d, xj, q, inv_h), t_near, &g);
            centre[k] += wj * g * coordinate(xj, q, inv_h, k) * coef[0];
        }
    }
    for (size_t j = 0; j < n; j++) {
        const double wj = obs_weight(obs, j, skip, keep);
        ell[j] = 0.0;
        for (size_t k = 0; dell != NULL && k < d; k++)
            dell[k * n + j] = 0.0;
        if (!(wj > 0.0) || !(t_near < INFINITY))
            continue;
        const float *xj = x + j * ldx;
        double g;
        const double kw =
            wj * nw_ref_kernel(model->kernel, distance(d, xj, q, inv_h), t_near, &g);
        /* column c of coef is M^-1 e_c (p×p, column-major); local constant: coef[0] = 1/sum */
        double factor = 0.0;
        for (size_t a = 0; a < p; a++)
            factor += coef[a] * z_of(xj, q, inv_h, a);
        ell[j] = kw * factor;
        for (size_t k = 0; dell != NULL && k < d; k++) {
            if (p == 1) {
                dell[k * n + j] = (wj * g * coordinate(xj, q, inv_h, k) * coef[0] -
                                   kw * coef[0] * centre[k]) *
                                  inv_h[k];
            } else {
                double slope = 0.0;
                for (size_t a = 0; a < p; a++)
                    slope += coef[(k + 1) * p + a] * z_of(xj, q, inv_h, a);
                dell[k * n + j] = kw * slope * inv_h[k];
            }
        }
    }
}
