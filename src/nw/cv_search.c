/* The bandwidth search of nwattn_nw_select_bandwidth (cv_search.h), on any CV evaluator:
 * the one-process plan and libnwattn_mpi's sharded CV both run this file. All searching is
 * done on x = log(scale) or log h, where a relative tolerance is an absolute one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cv_search.h"

/* ---- The search state ---------------------------------------------------------------------- */

/* CV at h (d values), remembering the best; with want_grad the gradient is left in s->grad
 * and, if grad_log is given, dCV/dlog h_k in it. */
static double evaluate(nw_search *s, const double *h, int want_grad, double *grad_log) {
    size_t flagged = 0;
    const double cv = s->eval(s->arg, h, want_grad ? s->grad : NULL, &flagged);
    s->evals++;
    if (grad_log != NULL)
        for (size_t k = 0; k < s->d; k++)
            grad_log[k] = s->grad[k] * h[k];
    if (cv < s->best_cv || (cv == s->best_cv && h[0] > s->best_h[0])) {
        s->best_cv = cv;
        s->best_flagged = flagged;
        memcpy(s->best_h, h, s->d * sizeof(double));
    }
    return cv;
}

/* CV at scale e^x of the start; *slope = dCV/dx unless slope is NULL (then the gradient, about
 * a third of the work, is not computed). */
static double at_scale(nw_search *s, double x, double *slope) {
    for (size_t k = 0; k < s->d; k++) /* float bandwidths: the answer is one of them */
        s->h[k] = (double)(float)(s->start[k] * exp(x));
    double cv = evaluate(s, s->h, slope != NULL, NULL);
    if (slope == NULL)
        return cv;
    double g = 0.0;
    for (size_t k = 0; k < s->d; k++)
        g += s->grad[k] * s->h[k];
    *slope = g;
    return cv;
}

/* ---- d == 1: refinement between grid points ------------------------------------------------ */
/* Minimiser of the cubic with values and slopes (fa, ga) at a and (fb, gb) at b. */
static double cubic_min(double a, double fa, double ga, double b, double fb, double gb) {
    double d1 = ga + gb - 3.0 * (fa - fb) / (a - b);
    double disc = d1 * d1 - ga * gb;
    if (!(disc >= 0.0))
        return NAN;
    double d2 = sqrt(disc);
    return b - (b - a) * (gb + d2 - d1) / (gb - ga + 2.0 * d2);
}

/* Narrows [a, b] with ga < 0 < gb (a local minimum inside) to width tol. Returns 1 if it
 * converged. */
static int bracketed(nw_search *s, double a, double fa, double ga, double b, double fb, double gb,
                     double tol) {
    double width_before = INFINITY, width_before2 = INFINITY;
    while (b - a > tol) {
        if (s->evals >= s->max_evals)
            return 0;
        const double w = b - a;
        double x = cubic_min(a, fa, ga, b, fb, gb);
        if (!(x > a + 0.01 * w && x < b - 0.01 * w))
            x = a - ga * w / (gb - ga); /* secant on the slope: inside, as ga < 0 < gb */
        if (!(x > a + 0.01 * w && x < b - 0.01 * w))
            x = fmin(fmax(x, a + 0.01 * w), b - 0.01 * w);
        if (w > 0.5 * width_before2) /* two steps did not halve the bracket: bisect */
            x = 0.5 * (a + b);
        width_before2 = width_before;
        width_before = w;
        double gx, fx = at_scale(s, x, &gx);
        if (!isfinite(fx) || gx > 0.0) {
            b = x, fb = fx, gb = gx;
            if (!isfinite(fx)) /* not admissible: treat as rising */
                gb = 1.0;
        } else if (gx < 0.0) {
            a = x, fa = fx, ga = gx;
        } else {
            return 1; /* a stationary point */
        }
    }
    return 1;
}

/* Golden-section search on [a, b] using values only (the uniform kernel). */
static int golden(nw_search *s, double a, double b, double tol) {
    const double r = 0.6180339887498949;
    double c = b - r * (b - a), e = a + r * (b - a);
    double fc = at_scale(s, c, NULL), fe = at_scale(s, e, NULL);
    while (b - a > tol) {
        if (s->evals >= s->max_evals)
            return 0;
        if (fc <= fe) {
            b = e, e = c, fe = fc;
            c = b - r * (b - a);
            fc = at_scale(s, c, NULL);
        } else {
            a = c, c = e, fc = fe;
            e = a + r * (b - a);
            fe = at_scale(s, e, NULL);
        }
    }
    return 1;
}

/* The slope at grid point g, evaluated on first use (the grid itself is scored without it). */
static double grid_slope(nw_search *s, const double *xs, double *gs, size_t g) {
    if (isnan(gs[g]))
        at_scale(s, xs[g], &gs[g]);
    return gs[g];
}

/* From the best grid point p: find a bracket with a slope sign change and narrow it. */
static int refine_1d(nw_search *s, const double *xs, const double *fs, double *gs, size_t grid,
                     size_t p, double tol) {
    if (s->values_only)
        return golden(s, xs[p > 0 ? p - 1 : 0], xs[p + 1 < grid ? p + 1 : p], tol);
    if (s->evals + 2 > s->max_evals)
        return 0;
    const double gp = grid_slope(s, xs, gs, p);
    if (gp == 0.0)
        return 1;
    double a, fa, ga, b, fb, gb;
    if (gp < 0.0) { /* minimum to the right of p */
        if (p + 1 == grid)
            return 0;
        a = xs[p], fa = fs[p], ga = gp;
        b = xs[p + 1], fb = fs[p + 1], gb = grid_slope(s, xs, gs, p + 1);
        /* No sign change yet (a maximum and a minimum inside): halve towards one. */
        while (!(gb > 0.0) && b - a > tol) {
            if (s->evals >= s->max_evals)
                return 0;
            double m = 0.5 * (a + b), gm, fm = at_scale(s, m, &gm);
            if (gm > 0.0)
                b = m, fb = fm, gb = gm;
            else if (fm >= fa)
                b = m, fb = fm, gb = gm;
            else
                a = m, fa = fm, ga = gm;
        }
    } else { /* minimum to the left of p */
        if (p == 0)
            return 0;
        a = xs[p - 1], fa = fs[p - 1], ga = grid_slope(s, xs, gs, p - 1);
        b = xs[p], fb = fs[p], gb = gp;
        while (!(ga < 0.0) && b - a > tol) {
            if (s->evals >= s->max_evals)
                return 0;
            double m = 0.5 * (a + b), gm, fm = at_scale(s, m, &gm);
            if (gm < 0.0)
                a = m, fa = fm, ga = gm;
            else if (fm >= fb)
                a = m, fa = fm, ga = gm;
            else
                b = m, fb = fm, gb = gm;
        }
    }
    if (!(ga < 0.0 && gb > 0.0))
        return b - a <= tol;
    return bracketed(s, a, fa, ga, b, fb, gb, tol);
}

/* ---- d > 1: BFGS on log h ------------------------------------------------------------------ */
/* The search is free (statsmodels' is too): the grid only picks its start. It is bounded to
 * start · e^(±27.6) = start · [1e-12, 1e12] only to keep h and 1/h finite floats: beyond that
 * every float32 weight is already that of h = 0 (nearest points) or h = infinity. */
#define BFGS_LOG_RANGE 27.631021115928547
typedef struct bfgs_mem {
    double *theta, *grad, *trial, *trial_grad, *dir, *step, *dgrad, *hinv, *lo, *hi, *hbuf;
} bfgs_mem;

static double max_abs(size_t d, const double *v) {
    double m = 0.0;
    for (size_t k = 0; k < d; k++)
        m = fmax(m, fabs(v[k]));
    return m;
}

static double dot(size_t d, const double *a, const double *b) {
    double sum = 0.0;
    for (size_t k = 0; k < d; k++)
        sum += a[k] * b[k];
    return sum;
}

static double eval_log(nw_search *s, const double *theta, double *grad_log, double *hbuf) {
    for (size_t k = 0; k < s->d; k++)
        hbuf[k] = (double)(float)exp(theta[k]);
    return evaluate(s, hbuf, 1, grad_log);
}

static void identity(size_t d, double *m) {
    for (size_t a = 0; a < d; a++)
        for (size_t b = 0; b < d; b++)
            m[a * d + b] = a == b ? 1.0 : 0.0;
}

/* H <- (I - r s y') H (I - r y s') + r s s', r = 1 / (s'y). */
static void bfgs_update(size_t d, double *hinv, const double *s, const double *y, double *tmp) {
    const double r = 1.0 / dot(d, s, y);
    /* tmp = H y; yHy = y' H y */
    for (size_t a = 0; a < d; a++)
        tmp[a] = dot(d, hinv + a * d, y);
    const double yhy = dot(d, y, tmp);
    for (size_t a = 0; a < d; a++)
        for (size_t b = 0; b < d; b++)
            hinv[a * d + b] +=
                -r * (tmp[a] * s[b] + s[a] * tmp[b]) + (r * r * yhy + r) * s[a] * s[b];
}

/* Two accepted BFGS steps in a row that lower CV by at most tol^2 relative (the decrease a
 * step of tol makes near a minimum of unit relative curvature) stop the search as converged.
 * Along a bandwidth that y hardly depends on, CV keeps falling towards its h_k -> infinity
 * limit by ever smaller amounts (local linear: about h_k^-2), and without this rule the search
 * spent all max_evaluations walking h_k up a plateau whose values differ in the last digits
 * (how far depended on the exponential's last bits, i.e. on the CPU). */
static int bfgs(nw_search *s, bfgs_mem *m, double f, double tol) {
    const size_t d = s->d;
    int flat = 0;
    identity(d, m->hinv);
    for (;;) {
        for (size_t a = 0; a < d; a++)
            m->dir[a] = -dot(d, m->hinv + a * d, m->grad);
        if (!(dot(d, m->dir, m->grad) < 0.0)) { /* not a descent direction: restart */
            identity(d, m->hinv);
            for (size_t a = 0; a < d; a++)
                m->dir[a] = -m->grad[a];
        }
        const double longest = max_abs(d, m->dir);
        if (longest == 0.0)
            return 1;
        if (longest > 1.0) /* at most a factor e per step and coordinate */
            for (size_t a = 0; a < d; a++)
                m->dir[a] /= longest;
        double alpha = 1.0, ft = INFINITY;
        int accepted = 0;
        for (int halvings = 0; halvings < 40; halvings++) {
            for (size_t a = 0; a < d; a++) {
                double t = m->theta[a] + alpha * m->dir[a];
                m->trial[a] = fmin(fmax(t, m->lo[a]), m->hi[a]);
                m->step[a] = m->trial[a] - m->theta[a];
            }
            if (max_abs(d, m->step) < 0.01 * tol)
                return 1; /* no room left to move: a (box) minimum to the tolerance */
            if (s->evals >= s->max_evals)
                return 0;
            ft = eval_log(s, m->trial, m->trial_grad, m->hbuf);
            if (isfinite(ft) && ft <= f + 1e-4 * dot(d, m->grad, m->step)) {
                accepted = 1;
                break;
            }
            alpha *= 0.5;
        }
        if (!accepted)
            return 1;
        for (size_t a = 0; a < d; a++)
            m->dgrad[a] = m->trial_grad[a] - m->grad[a];
        const double sy = dot(d, m->step, m->dgrad);
        if (sy > 1e-12 * sqrt(dot(d, m->step, m->step) * dot(d, m->dgrad, m->dgrad)))
            bfgs_update(d, m->hinv, m->step, m->dgrad, m->dir);
        memcpy(m->theta, m->trial, d * sizeof(double));
        memcpy(m->grad, m->trial_grad, d * sizeof(double));
        flat = f - ft <= tol * tol * fabs(f) ? flat + 1 : 0;
        f = ft;
        if (max_abs(d, m->step) < tol || flat >= 2)
            return 1;
    }
}

/* ---- The search from a grid -------------------------------------------------------------- */
int nw_search_run(nw_search *s, double lo, double hi, size_t grid, double tol, double *xs,
                  double *fs, double *gs, double *vec, size_t *best_out, int *converged) {
    const size_t d = s->d;
    size_t best = 0;
    for (size_t g = 0; g < grid; g++) {
        xs[g] = lo + (hi - lo) * (double)g / (double)(grid - 1);
        fs[g] = at_scale(s, xs[g], NULL);
        gs[g] = NAN; /* computed where the refinement needs it */
        if (fs[g] <= fs[best])
            best = g;
    }
    *best_out = best;
    if (!isfinite(fs[best]))
        return 0;
    if (d == 1) {
        *converged = refine_1d(s, xs, fs, gs, grid, best, tol);
    } else {
        bfgs_mem m = {vec,         vec + d,      vec + 2 * d, vec + 3 * d, vec + 4 * d, vec + 5 * d,
                      vec + 6 * d, vec + 11 * d, vec + 7 * d, vec + 8 * d, vec + 9 * d};
        for (size_t k = 0; k < d; k++) { /* no box: only where float weights stop changing */
            m.theta[k] = log(s->start[k]) + xs[best];
            m.lo[k] = log(s->start[k]) - BFGS_LOG_RANGE;
            m.hi[k] = log(s->start[k]) + BFGS_LOG_RANGE;
        }
        double f = eval_log(s, m.theta, m.grad, m.hbuf);
        *converged = isfinite(f) ? bfgs(s, &m, f, tol) : 0;
    }
    return 1;
}

nwattn_status nw_search_options(const nwattn_cv_options *given, nwattn_cv_options *out,
                                char *message, size_t bytes) {
    nwattn_cv_options_default(out);
    if (given == NULL)
        return NWATTN_OK;
    if (given->grid_points != 0)
        out->grid_points = given->grid_points;
    if (given->scale_min != 0.0f)
        out->scale_min = given->scale_min;
    if (given->scale_max != 0.0f)
        out->scale_max = given->scale_max;
    if (given->max_evaluations != 0)
        out->max_evaluations = given->max_evaluations;
    if (given->tolerance != 0.0)
        out->tolerance = given->tolerance;
    out->start = given->start;
    if (out->grid_points < 2) {
        snprintf(message, bytes, "options.grid_points is %zu; it must be >= 2",
                 out->grid_points);
        return NWATTN_ERR_BAD_PARAMETER;
    }
    if (!(isfinite(out->scale_min) && out->scale_min > 0.0f && isfinite(out->scale_max) &&
          out->scale_max > out->scale_min)) {
        snprintf(message, bytes,
                 "options.scale_min = %g and scale_max = %g must be finite with "
                 "0 < scale_min < scale_max",
                 (double)out->scale_min, (double)out->scale_max);
        return NWATTN_ERR_BAD_PARAMETER;
    }
    if (out->max_evaluations < out->grid_points) {
        snprintf(message, bytes, "options.max_evaluations = %zu is less than grid_points = %zu",
                 out->max_evaluations, out->grid_points);
        return NWATTN_ERR_BAD_PARAMETER;
    }
    if (!(isfinite(out->tolerance) && out->tolerance > 0.0)) {
        snprintf(message, bytes, "options.tolerance = %g is not finite and > 0",
                 out->tolerance);
        return NWATTN_ERR_BAD_PARAMETER;
    }
    return NWATTN_OK;
}

void nw_search_raise_grid(double largest_t, size_t grid, double *lo, double *hi) {
    if (!(largest_t > 0.0))
        return;
    /* t scales as 1/s^2; the margin keeps t strictly inside the support after float rounding */
    const double admissible = sqrt(largest_t) * (1.0 + 1e-5);
    if (log(admissible) > *lo) {
        const double width = *hi - *lo;
        *lo = log(admissible);
        *hi = fmax(*hi, *lo + width / (double)(grid - 1)); /* keep at least one step above it */
    }
}
