/* The smoother weights of one row in double, with observation weights, and the training-set
 * pass (fit, leave-one-out CV, traces, residual variances) every statistic is built from. */
#include <math.h>
#include <string.h>

#include "stats.h"

size_t nw_smoother_doubles(const nw_model *model) {
    size_t pp, total;
    if (!nw_mul(model->p, model->p, &pp) || !nw_add(pp, model->d, &total) ||
        !nw_add(total, nw_sums_doubles(model, 0), &total) ||
        !nw_add(total, nw_finish_work_doubles(model), &total))
        return SIZE_MAX;
    return total;
}

void nw_smoother_init(nw_smoother *sm, const nw_model *model, size_t n, const float *x,
                      size_t ldx, const float *y, const float *obs, const float *h, double *mem) {
    sm->model = *model;
    sm->constant = *model;
    sm->constant.degree = NWATTN_LOCAL_CONSTANT;
    sm->constant.p = 1;
    sm->n = n;
    sm->x = x, sm->ldx = ldx, sm->y = y, sm->obs = obs;
    sm->inv_h = mem;
    sm->sums_mem = sm->inv_h + model->d;
    sm->work = sm->sums_mem + nw_sums_doubles(model, 0);
    sm->coef = sm->work + nw_finish_work_doubles(model);
    for (size_t k = 0; k < model->d; k++)
        sm->inv_h[k] = 1.0 / (double)h[k];
}

unsigned nw_smoother_row(nw_smoother *sm, const float *q, size_t skip, double keep, double *ell,
                         double *dell) {
    const nw_model *mod = &sm->model;
    const size_t n = sm->n, d = mod->d, p = mod->p;
    nw_sums s;
    nw_sums_init(&s, sm->sums_mem, mod, 0);
    nw_ref_row_obs(mod, n, sm->x, sm->ldx, sm->y, 1, q, sm->inv_h, sm->obs, skip, keep, &s);
    double yhat;
    unsigned flags = nw_finish_row(mod, &s, 0, sm->work, &yhat, NULL, sm->coef);
    if (flags & NWATTN_ROW_EMPTY) {
        memset(ell, 0, n * sizeof(double));
        if (dell != NULL)
            memset(dell, 0, n * d * sizeof(double));
        return flags;
    }
    const nw_model *use = flags & NWATTN_ROW_SINGULAR ? &sm->constant : mod;
    if (use->p > 1 && dell != NULL) { /* columns 1..d of M^-1 */
        for (size_t c = 1; c < p; c++)
            for (size_t a = 0; a < p; a++)
                sm->coef[c * p + a] = a == c ? 1.0 : 0.0;
        nw_finish_solve(mod, 0, sm->work, sm->coef + p, p - 1);
    }
    nw_ref_smoother_row(use, n, sm->x, sm->ldx, q, sm->inv_h, sm->obs, skip, keep, sm->coef, ell,
                        dell);
    return flags;
}

double nw_smoother_sq(const nw_smoother *sm, const double *ell) {
    double sum = 0.0;
    for (size_t j = 0; j < sm->n; j++) {
        const double w = nw_obs(sm, j);
        if (w > 0.0)
            sum += ell[j] * ell[j] / w;
    }
    return sum;
}

static double dot_y(const nw_smoother *sm, const double *ell) {
    double sum = 0.0;
    for (size_t j = 0; j < sm->n; j++)
        sum += ell[j] * (double)sm->y[j];
    return sum;
}

void nw_training_run(nw_smoother *sm, nw_training_pass *pass, double *ell, int with_cv) {
    const size_t n = sm->n, d = sm->model.d;
    nwattn_fit_summary *sum = &pass->summary;
    double total_w = 0.0, trace = 0.0, trace2 = 0.0, rss = 0.0, cv = 0.0, wy = 0.0;
    size_t flagged = 0;
    for (size_t i = 0; i < n; i++) {
        const double w = nw_obs(sm, i);
        const float *xi = sm->x + i * sm->ldx;
        flagged += nw_smoother_row(sm, xi, SIZE_MAX, 0.0, ell, NULL) != 0;
        const double fit = dot_y(sm, ell), sq = nw_smoother_sq(sm, ell);
        pass->fitted[i] = fit;
        pass->leverage[i] = w > 0.0 ? ell[i] / w : 0.0;
        const double r = (double)sm->y[i] - fit;
        /* HC3: the jackknife residual r / (1 - L_ii) (the leave-one-out residual of a local
         * polynomial fit); the raw residual where L_ii >= 1 (a point alone in its window) */
        const double keep_share = 1.0 - pass->leverage[i];
        pass->resid2[i] = keep_share > 0.0 ? r * r / (keep_share * keep_share) : r * r;
        if (!(w > 0.0))
            continue;
        total_w += w;
        wy += w * (double)sm->y[i];
        trace += ell[i];
        trace2 += w * sq;
        rss += w * r * r;
        if (!with_cv)
            continue;
        /* leave one unit of weight out */
        unsigned f = nw_smoother_row(sm, xi, i, w - fmin(1.0, w), ell, NULL);
        flagged += f != 0;
        if (f & NWATTN_ROW_EMPTY) {
            cv = INFINITY;
        } else {
            const double e = (double)sm->y[i] - dot_y(sm, ell);
            cv += w * e * e;
        }
    }
    const double ybar = wy / total_w;
    double tss = 0.0, fbar = 0.0, sw = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double w = nw_obs(sm, i), dy = (double)sm->y[i] - ybar;
        tss += w * dy * dy;
        fbar += w * pass->fitted[i];
        sw += w;
    }
    fbar /= sw;
    double sxy = 0.0, sxx = 0.0, syy = 0.0; /* centred at the mean fit, as statsmodels */
    for (size_t i = 0; i < n; i++) {
        const double w = nw_obs(sm, i), a = (double)sm->y[i] - fbar, b = pass->fitted[i] - fbar;
        sxy += w * a * b;
        sxx += w * a * a;
        syy += w * b * b;
    }
    (void)d;
    sum->r2 = 1.0 - rss / tss;
    sum->r2_corr = sxy * sxy / (sxx * syy);
    sum->dof = trace;
    sum->dof_resid = total_w - 2.0 * trace + trace2;
    sum->sigma2 = sum->dof_resid > 0.0 ? rss / sum->dof_resid : (double)NAN;
    sum->rss = rss;
    sum->cv = with_cv ? cv / total_w : (double)NAN;
    sum->flagged_rows = flagged;
}

/* ---- Shared checks -------------------------------------------------------------------------- */
nwattn_status nw_check_stats_inputs(nw_call *call, const nwattn_regression *model,
                                    const float *bandwidths, size_t n, size_t d, const float *x,
                                    size_t ldx, const float *y, const float *obs, nw_model *mod) {
    NW_TRY(nw_check_model(call->ctx, model, d, 1, mod));
    NW_TRY(nw_check_training(call, n, d, 1, x, ldx, y, 1));
    NW_TRY(nw_input_array(call, "bandwidths", bandwidths, sizeof(float), d));
    if (obs != NULL)
        NW_TRY(nw_input_array(call, "obs_weights", obs, sizeof(float), n));
    return NWATTN_OK;
}

nwattn_status nw_check_stats_values(nwattn_context *ctx, const float *bandwidths, size_t n,
                                    size_t d, const float *x, size_t ldx, const float *obs) {
    NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths, d));
    NW_TRY(nw_check_obs_weights(ctx, obs, n, 3));
    return nw_check_spread(ctx, n, d, x, ldx, 3);
}

nwattn_status nw_check_obs_weights(nwattn_context *ctx, const float *obs, size_t n, size_t need) {
    size_t positive = n;
    if (obs != NULL) {
        positive = 0;
        for (size_t j = 0; j < n; j++) {
            if (!(isfinite(obs[j]) && obs[j] >= 0.0f))
                return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                               "obs_weights[%zu] = %g is not finite and >= 0", j, (double)obs[j]);
            positive += obs[j] > 0.0f;
        }
    }
    if (positive < need)
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "%zu points have a positive weight; %zu are needed", positive, need);
    return NWATTN_OK;
}
