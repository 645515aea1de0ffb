/* nwattn_nw_select_bandwidth: a grid of common scales of the start bandwidths, then a
 * derivative-driven refinement (d == 1) or BFGS on log h (d > 1). All searching is done on
 * x = log(scale) or log h, where a relative tolerance is an absolute one. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "nw.h"

#define DEFAULT_GRID_POINTS 16
#define DEFAULT_SCALE_MIN 0.05f
#define DEFAULT_SCALE_MAX 20.0f
#define DEFAULT_MAX_EVALUATIONS 100
#define DEFAULT_TOLERANCE 1e-4

void nwattn_cv_options_default(nwattn_cv_options *options) {
    if (options == NULL)
        return;
    memset(options, 0, sizeof *options);
    options->grid_points = DEFAULT_GRID_POINTS;
    options->scale_min = DEFAULT_SCALE_MIN;
    options->scale_max = DEFAULT_SCALE_MAX;
    options->start = NULL;
    options->max_evaluations = DEFAULT_MAX_EVALUATIONS;
    options->tolerance = DEFAULT_TOLERANCE;
}

/* ---- The search state ---------------------------------------------------------------------- */
typedef struct search {
    nw_plan *plan;
    size_t d;
    double *start;    /* d */
    double *h, *grad; /* d: the last evaluation's bandwidths and dCV/dh */
    size_t evals, max_evals;
    /* best point so far */
    double best_cv;
    double *best_h; /* d */
    size_t best_flagged;
} search;

/* CV at h (d values), remembering the best; with want_grad the gradient is left in s->grad
 * and, if grad_log is given, dCV/dlog h_k in it. */
static double evaluate(search *s, const double *h, int want_grad, double *grad_log) {
    double cv;
    size_t flagged = nw_cv_evaluate(s->plan, h, &cv, want_grad ? s->grad : NULL);
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
static double at_scale(search *s, double x, double *slope) {
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
static int bracketed(search *s, double a, double fa, double ga, double b, double fb, double gb,
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
static int golden(search *s, double a, double b, double tol) {
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
static double grid_slope(search *s, const double *xs, double *gs, size_t g) {
    if (isnan(gs[g]))
        at_scale(s, xs[g], &gs[g]);
    return gs[g];
}

/* From the best grid point p: find a bracket with a slope sign change and narrow it. */
static int refine_1d(search *s, const double *xs, const double *fs, double *gs, size_t grid,
                     size_t p, double tol) {
    if (s->plan->model.kernel == NWATTN_KERNEL_UNIFORM)
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

static double eval_log(search *s, const double *theta, double *grad_log, double *hbuf) {
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

static int bfgs(search *s, bfgs_mem *m, double f, double tol) {
    const size_t d = s->d;
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
        f = ft;
        if (max_abs(d, m->step) < tol)
            return 1;
    }
}

/* ---- The entry point ----------------------------------------------------------------------- */
static nwattn_status check_options(nwattn_context *ctx, const nwattn_cv_options *given, size_t d,
                                   nwattn_cv_options *out) {
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
    if (out->grid_points < 2)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "options.grid_points is %zu; it must be >= 2",
                       out->grid_points);
    if (!(isfinite(out->scale_min) && out->scale_min > 0.0f && isfinite(out->scale_max) &&
          out->scale_max > out->scale_min))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "options.scale_min = %g and scale_max = %g must be finite with "
                       "0 < scale_min < scale_max",
                       (double)out->scale_min, (double)out->scale_max);
    if (out->max_evaluations < out->grid_points)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "options.max_evaluations = %zu is less than grid_points = %zu",
                       out->max_evaluations, out->grid_points);
    if (!(isfinite(out->tolerance) && out->tolerance > 0.0))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "options.tolerance = %g is not finite and > 0", out->tolerance);
    (void)d; /* options.start is read only once its d entries are known to be addressable */
    return NWATTN_OK;
}

nwattn_status nwattn_nw_select_bandwidth(nwattn_context *ctx, const nwattn_regression *model,
                                         size_t n, size_t d, size_t dv, const float *x, size_t ldx,
                                         const float *y, size_t ldy,
                                         const nwattn_cv_options *options, float *bandwidths,
                                         nwattn_cv_report *report, float *curve_scales,
                                         double *curve_cv) {
    NW_TRY(nw_begin(ctx));
    nw_model mod;
    NW_TRY(nw_check_model(ctx, model, d, dv, &mod));
    if (dv == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "dv is 0: no targets to cross-validate");
    nwattn_cv_options opt;
    NW_TRY(check_options(ctx, options, d, &opt));
    const size_t grid = opt.grid_points;
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_check_training(&call, n, d, dv, x, ldx, y, ldy));
    if (opt.start != NULL)
        NW_TRY(nw_input_array(&call, "options.start", opt.start, sizeof(float), d));
    NW_TRY(nw_output(&call, "bandwidths", bandwidths, 1, d, d, 0));
    if (report != NULL)
        NW_TRY(nw_output_elems(&call, "report", report, sizeof *report, 1, 1, 1));
    if (curve_scales != NULL)
        NW_TRY(nw_output(&call, "curve_scales", curve_scales, 1, grid, grid, 0));
    if (curve_cv != NULL)
        NW_TRY(nw_output_elems(&call, "curve_cv", curve_cv, sizeof(double), 1, grid, grid));
    NW_TRY(nw_check_disjoint(&call));
    if (opt.start != NULL)
        NW_TRY(nw_check_bandwidths(ctx, "options.start", opt.start, d));
    NW_TRY(nw_check_spread(ctx, n, d, x, ldx, 3));
    int fast;
    NW_TRY(nw_select_path(ctx, &mod, n, n, x, ldx, opt.start != NULL ? (double)opt.start[0] : 0.0,
                          0, &fast));

    /* Working memory: the plan; then doubles: 3 grid arrays, start, h, grad, best_h, 11 BFGS
     * vectors of d and the d×d inverse Hessian; then 2n floats for the rule of thumb. */
    const size_t threads = fast ? ctx->workers.threads : 1;
    size_t plan_bytes = nw_plan_bytes(&mod, fast, n, threads, nw_units(n)), doubles, bytes, dd,
           floats;
    if (plan_bytes == SIZE_MAX || !nw_add(plan_bytes, sizeof(double) - 1, &plan_bytes) ||
        !nw_mul(d, d, &dd) || !nw_mul(d, 15, &doubles) || !nw_add(doubles, dd, &doubles) ||
        !nw_add(doubles, 3 * grid, &doubles) || !nw_mul(doubles, sizeof(double), &bytes) ||
        !nw_add(bytes, plan_bytes, &bytes) || !nw_mul(n, 2 * sizeof(float), &floats) ||
        !nw_add(bytes, floats, &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu, d = %zu overflows", n,
                       d);
    plan_bytes = plan_bytes / sizeof(double) * sizeof(double);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    double *xs = (double *)(void *)((char *)mem + plan_bytes), *fs = xs + grid, *gs = fs + grid,
           *start = gs + grid, *h = start + d, *grad = h + d, *best_h = grad + d, *vec = best_h + d;
    float *rule_scratch = (float *)(void *)(vec + 11 * d + dd);
    for (size_t k = 0; k < d; k++)
        best_h[k] = 0.0;

    if (opt.start != NULL)
        for (size_t k = 0; k < d; k++)
            start[k] = (double)opt.start[k];
    else
        nw_rule_of_thumb(NWATTN_RULE_NORMAL_REFERENCE, n, d, x, ldx, start, rule_scratch);

    nw_plan plan;
    nw_plan_init(&plan, &mod, fast, n, x, ldx, y, ldy, threads, nw_units(n), mem);
    plan.team = &ctx->workers;
    search s = {&plan, d, start, h, grad, 0, opt.max_evaluations, INFINITY, best_h, 0};

    /* The grid, its lower end raised to the smallest admissible scale of a compact kernel. */
    double lo = log((double)opt.scale_min), hi = log((double)opt.scale_max);
    const double admissible = nw_cv_admissible_scale(&plan, start);
    if (admissible > 0.0 && log(admissible) > lo) {
        const double width = hi - lo;
        lo = log(admissible);
        hi = fmax(hi, lo + width / (double)(grid - 1)); /* keep at least one step above it */
    }
    size_t best = 0;
    for (size_t g = 0; g < grid; g++) {
        xs[g] = lo + (hi - lo) * (double)g / (double)(grid - 1);
        fs[g] = at_scale(&s, xs[g], NULL);
        gs[g] = NAN; /* computed where the refinement needs it */
        if (fs[g] <= fs[best])
            best = g;
    }
    if (!isfinite(fs[best]))
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "the CV score is not finite anywhere on the grid (scales %g to %g)", exp(lo),
                       exp(hi));

    int converged;
    if (d == 1) {
        converged = refine_1d(&s, xs, fs, gs, grid, best, opt.tolerance);
    } else {
        bfgs_mem m = {vec,         vec + d,      vec + 2 * d, vec + 3 * d, vec + 4 * d, vec + 5 * d,
                      vec + 6 * d, vec + 11 * d, vec + 7 * d, vec + 8 * d, vec + 9 * d};
        for (size_t k = 0; k < d; k++) { /* no box: only where float weights stop changing */
            m.theta[k] = log(start[k]) + xs[best];
            m.lo[k] = log(start[k]) - BFGS_LOG_RANGE;
            m.hi[k] = log(start[k]) + BFGS_LOG_RANGE;
        }
        double f = eval_log(&s, m.theta, m.grad, m.hbuf);
        converged = isfinite(f) ? bfgs(&s, &m, f, opt.tolerance) : 0;
    }

    /* The best point evaluated; clamp into float's range (the grid stays far inside it). */
    for (size_t k = 0; k < d; k++)
        bandwidths[k] = (float)fmin(fmax(s.best_h[k], (double)FLT_MIN), (double)FLT_MAX);
    if (report != NULL) {
        report->cv = s.best_cv;
        report->evaluations = s.evals;
        report->flagged_rows = s.best_flagged;
        report->at_grid_edge = best == 0 ? -1 : best + 1 == grid ? 1 : 0;
        report->converged = converged;
    }
    for (size_t g = 0; g < grid; g++) {
        if (curve_scales != NULL)
            curve_scales[g] = (float)exp(xs[g]);
        if (curve_cv != NULL)
            curve_cv[g] = fs[g];
    }
    return NWATTN_OK;
}
