/* nwattn_nw_summary and nwattn_nw_inference: fit summaries, standard errors and derivatives
 * from the smoother weights (stats_rows.c). */
#include <math.h>
#include <string.h>

#include "stats.h"

/* The smoother's memory, then `extra` doubles (SIZE_MAX on overflow). */
static size_t smoother_bytes(const nw_model *mod, size_t extra) {
    size_t doubles = nw_smoother_doubles(mod), bytes;
    if (doubles == SIZE_MAX || !nw_add(doubles, extra, &doubles) ||
        !nw_mul(doubles, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

nwattn_status nwattn_nw_summary(nwattn_context *ctx, const nwattn_regression *model,
                                const float *bandwidths, size_t n, size_t d, const float *x,
                                size_t ldx, const float *y, const float *obs_weights,
                                nwattn_fit_summary *summary, float *fitted, double *leverage) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    nw_model mod;
    NW_TRY(nw_check_stats_inputs(&call, model, bandwidths, n, d, x, ldx, y, obs_weights, &mod));
    NW_TRY(nw_output_elems(&call, "summary", summary, sizeof *summary, 1, 1, 1));
    if (fitted != NULL)
        NW_TRY(nw_output(&call, "fitted", fitted, 1, n, n, 0));
    if (leverage != NULL)
        NW_TRY(nw_output_elems(&call, "leverage", leverage, sizeof(double), 1, n, n));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_stats_values(ctx, bandwidths, n, d, x, ldx, obs_weights));
    size_t four_n, bytes;
    if (!nw_mul(n, 4, &four_n) || (bytes = smoother_bytes(&mod, four_n)) == SIZE_MAX)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_smoother sm;
    double *base = mem;
    nw_smoother_init(&sm, &mod, n, x, ldx, y, obs_weights, bandwidths, base);
    double *ell = base + nw_smoother_doubles(&mod);
    nw_training_pass pass;
    pass.fitted = ell + n;
    pass.leverage = pass.fitted + n;
    pass.resid2 = pass.leverage + n;
    nw_training_run(&sm, &pass, ell, 1);
    *summary = pass.summary;
    for (size_t i = 0; i < n; i++) {
        if (fitted != NULL)
            fitted[i] = (float)pass.fitted[i];
        if (leverage != NULL)
            leverage[i] = pass.leverage[i];
    }
    return NWATTN_OK;
}

/* sqrt(sum_j l_j^2 / w_j · v_j) with v_j = sigma2 (resid2 == NULL) or resid2[j]. */
static double standard_error(const nw_smoother *sm, const double *ell, double sigma2,
                             const double *resid2) {
    if (resid2 == NULL)
        return sqrt(sigma2 * nw_smoother_sq(sm, ell));
    double sum = 0.0;
    for (size_t j = 0; j < sm->n; j++) {
        const double w = nw_obs(sm, j);
        if (w > 0.0)
            sum += ell[j] * ell[j] / w * resid2[j];
    }
    return sqrt(sum);
}

static double weighted_y(const nw_smoother *sm, const double *ell) {
    double sum = 0.0;
    for (size_t j = 0; j < sm->n; j++)
        sum += ell[j] * (double)sm->y[j];
    return sum;
}

nwattn_status nwattn_nw_inference(nwattn_context *ctx, const nwattn_regression *model,
                                  const float *bandwidths, size_t n, size_t d, const float *x,
                                  size_t ldx, const float *y, const float *obs_weights,
                                  nwattn_variance variance, size_t m, const float *xq, size_t ldq,
                                  double *fit, double *se, double *deriv, size_t ldd,
                                  double *deriv_se, size_t ldds, unsigned char *row_flags) {
    NW_TRY(nw_begin(ctx));
    if (variance != NWATTN_VARIANCE_HOMOSCEDASTIC && variance != NWATTN_VARIANCE_HETEROSCEDASTIC)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown variance %d", (int)variance);
    nw_call call;
    nw_call_init(&call, ctx, 1);
    nw_model mod;
    NW_TRY(nw_check_stats_inputs(&call, model, bandwidths, n, d, x, ldx, y, obs_weights, &mod));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    if (fit != NULL)
        NW_TRY(nw_output_elems(&call, "fit", fit, sizeof(double), 1, m, m > 0 ? m : 1));
    if (se != NULL)
        NW_TRY(nw_output_elems(&call, "se", se, sizeof(double), 1, m, m > 0 ? m : 1));
    if (deriv != NULL)
        NW_TRY(nw_output_elems(&call, "deriv", deriv, sizeof(double), m, d, ldd));
    if (deriv_se != NULL)
        NW_TRY(nw_output_elems(&call, "deriv_se", deriv_se, sizeof(double), m, d, ldds));
    if (row_flags != NULL)
        NW_TRY(nw_output_elems(&call, "row_flags", row_flags, 1, 1, m, m > 0 ? m : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_stats_values(ctx, bandwidths, n, d, x, ldx, obs_weights));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    const int want_d = deriv != NULL || deriv_se != NULL;
    const int want_se = se != NULL || deriv_se != NULL;
    if (want_d && d > NW_SMOOTHER_MAX_D)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "derivatives need d <= %d, d is %zu",
                       NW_SMOOTHER_MAX_D, d);
    /* ell (n), dell (d·n), and for the variances the training pass's 3 n-arrays */
    size_t extra, dn, four_n;
    if (!nw_mul(d, n, &dn) || !nw_mul(n, 4, &four_n) || !nw_add(dn, four_n, &extra))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    size_t bytes = smoother_bytes(&mod, extra);
    if (bytes == SIZE_MAX)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_smoother sm;
    double *base = mem;
    nw_smoother_init(&sm, &mod, n, x, ldx, y, obs_weights, bandwidths, base);
    double *ell = base + nw_smoother_doubles(&mod), *dell = ell + n;
    nw_training_pass pass;
    pass.fitted = dell + dn;
    pass.leverage = pass.fitted + n;
    pass.resid2 = pass.leverage + n;
    if (want_se)
        nw_training_run(&sm, &pass, ell, 0);
    const double sigma2 = want_se ? pass.summary.sigma2 : 0.0;
    const double *resid2 = variance == NWATTN_VARIANCE_HETEROSCEDASTIC ? pass.resid2 : NULL;
    for (size_t i = 0; i < m; i++) {
        unsigned flags = nw_smoother_row(&sm, xq + i * ldq, SIZE_MAX, 0.0, ell,
                                         want_d ? dell : NULL);
        const int empty = (flags & NWATTN_ROW_EMPTY) != 0;
        if (fit != NULL)
            fit[i] = empty ? (double)NAN : weighted_y(&sm, ell);
        if (se != NULL)
            se[i] = empty ? (double)NAN : standard_error(&sm, ell, sigma2, resid2);
        for (size_t k = 0; want_d && k < d; k++) {
            const double *lk = dell + k * n;
            if (deriv != NULL)
                deriv[i * ldd + k] = empty ? (double)NAN : weighted_y(&sm, lk);
            if (deriv_se != NULL)
                deriv_se[i * ldds + k] =
                    empty ? (double)NAN : standard_error(&sm, lk, sigma2, resid2);
        }
        if (row_flags != NULL)
            row_flags[i] = (unsigned char)flags;
    }
    return NWATTN_OK;
}
