/* nwattn_nw_select_bandwidth: a grid of common scales of the start bandwidths, then a
 * derivative-driven refinement (d == 1) or BFGS on log h (d > 1). All searching is done on
 * x = log(scale) or log h, where a relative tolerance is an absolute one. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cv_search.h"
#include "nw.h"
#include "stats.h"

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

/* ---- The entry point ----------------------------------------------------------------------- */
/* CV at h through the plan (the search's evaluator). */
static double plan_cv(void *arg, const double *h, double *grad, size_t *flagged) {
    double cv;
    *flagged = nw_cv_evaluate(arg, h, &cv, grad);
    return cv;
}

static nwattn_status check_options(nwattn_context *ctx, const nwattn_cv_options *given,
                                   nwattn_cv_options *out) {
    char message[256];
    const nwattn_status status = nw_search_options(given, out, message, sizeof message);
    return status == NWATTN_OK ? NWATTN_OK : nw_fail(ctx, status, "%s", message);
}

/* The normal-reference rule with frequency weights (1.06 s_w N^(-1/(d+4)), N = sum w, s_w
 * the weighted standard deviation with N - 1 in the denominator: the rule on the repeated
 * rows) into start (d doubles; NULL: only the checks). Fails unless N > 1 and every s_w > 0. */
static nwattn_status weighted_normal_reference(nwattn_context *ctx, size_t n, size_t d,
                                               const float *x, size_t ldx, const float *obs,
                                               double *start) {
    const double total = nw_obs_weight_total(obs, n);
    if (!(total > 1.0))
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "the observation weights sum to %g; the rule of thumb needs more than 1",
                       total);
    const double rate = pow(total, -1.0 / (double)(d + 4));
    for (size_t k = 0; k < d; k++) {
        double mean = 0.0, ss = 0.0;
        for (size_t i = 0; i < n; i++)
            mean += (double)obs[i] * (double)x[i * ldx + k];
        mean /= total;
        for (size_t i = 0; i < n; i++) {
            const double r = (double)x[i * ldx + k] - mean;
            ss += (double)obs[i] * r * r;
        }
        const double sd = sqrt(ss / (total - 1.0));
        if (!(sd > 0.0))
            return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                           "coordinate %zu of the points of positive weight takes one value", k);
        if (start != NULL)
            start[k] = 1.06 * sd * rate;
    }
    return NWATTN_OK;
}

/* Both entry points: obs NULL (unweighted, every row engine) or observation weights (the
 * reference engine). */
static nwattn_status select_bandwidth(nwattn_context *ctx, const nwattn_regression *model,
                                      size_t n, size_t d, size_t dv, const float *x, size_t ldx,
                                      const float *y, size_t ldy, const float *obs,
                                      const nwattn_cv_options *options, float *bandwidths,
                                      nwattn_cv_report *report, float *curve_scales,
                                      double *curve_cv) {
    NW_TRY(nw_begin(ctx));
    nw_model mod;
    NW_TRY(nw_check_model(ctx, model, d, dv, &mod));
    if (dv == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "dv is 0: no targets to cross-validate");
    nwattn_cv_options opt;
    NW_TRY(check_options(ctx, options, &opt));
    const size_t grid = opt.grid_points;
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_check_training(&call, n, d, dv, x, ldx, y, ldy));
    if (obs != NULL)
        NW_TRY(nw_input_array(&call, "obs_weights", obs, sizeof(float), n));
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
    if (obs != NULL) {
        NW_TRY(nw_check_obs_weights(ctx, obs, n, 3));
        int ones = 1;
        for (size_t j = 0; j < n && ones; j++)
            ones = obs[j] == 1.0f;
        if (ones)
            obs = NULL; /* unit weights: the unweighted search, bit for bit */
    }
    if (obs != NULL && opt.start == NULL) /* fail before any allocation */
        NW_TRY(weighted_normal_reference(ctx, n, d, x, ldx, obs, NULL));
    int fast = NW_PATH_REFERENCE;
    if (obs == NULL)
        NW_TRY(nw_select_path(ctx, &mod, n, n, x, ldx,
                              opt.start != NULL ? (double)opt.start[0] : 0.0, 0, 0, &fast));

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
    else if (obs != NULL)
        (void)weighted_normal_reference(ctx, n, d, x, ldx, obs, start); /* checked above */
    else
        nw_rule_of_thumb(NWATTN_RULE_NORMAL_REFERENCE, n, d, x, ldx, start, rule_scratch);

    nw_plan plan;
    nw_plan_init(&plan, &mod, fast, n, x, ldx, y, ldy, threads, nw_units(n), mem);
    plan.team = &ctx->workers;
    if (obs != NULL)
        nw_plan_obs_weights(&plan, obs);
    nw_search s = {plan_cv, &plan, mod.kernel == NWATTN_KERNEL_UNIFORM, d, start, h, grad, 0,
                   opt.max_evaluations, INFINITY, best_h, 0};

    /* The grid, its lower end raised to the smallest admissible scale of a compact kernel. */
    double lo = log((double)opt.scale_min), hi = log((double)opt.scale_max);
    nw_search_raise_grid(nw_cv_largest_nearest_t(&plan, start), grid, &lo, &hi);
    size_t best;
    int converged = 0;
    if (!nw_search_run(&s, lo, hi, grid, opt.tolerance, xs, fs, gs, vec, &best, &converged))
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "the CV score is not finite anywhere on the grid (scales %g to %g)", exp(lo),
                       exp(hi));

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

nwattn_status nwattn_nw_select_bandwidth(nwattn_context *ctx, const nwattn_regression *model,
                                         size_t n, size_t d, size_t dv, const float *x, size_t ldx,
                                         const float *y, size_t ldy,
                                         const nwattn_cv_options *options, float *bandwidths,
                                         nwattn_cv_report *report, float *curve_scales,
                                         double *curve_cv) {
    return select_bandwidth(ctx, model, n, d, dv, x, ldx, y, ldy, NULL, options, bandwidths,
                            report, curve_scales, curve_cv);
}

nwattn_status nwattn_nw_select_bandwidth_weighted(nwattn_context *ctx,
                                                  const nwattn_regression *model, size_t n,
                                                  size_t d, size_t dv, const float *x, size_t ldx,
                                                  const float *y, size_t ldy,
                                                  const float *obs_weights,
                                                  const nwattn_cv_options *options,
                                                  float *bandwidths, nwattn_cv_report *report,
                                                  float *curve_scales, double *curve_cv) {
    return select_bandwidth(ctx, model, n, d, dv, x, ldx, y, ldy, obs_weights, options,
                            bandwidths, report, curve_scales, curve_cv);
}
