/* nwattn_nw_bootstrap_bands: wild bootstrap (Rademacher) pointwise and simultaneous bands of
 * the fit, from the smoother rows of the queries (the smoother is linear: no refits). */
#include <math.h>
#include <string.h>

#include "stats.h"

/* In-place ascending heap sort (no qsort: it may allocate behind the context's back). */
static void sift(double *a, size_t root, size_t n) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1] > a[child])
            child++;
        if (!(a[child] > a[root]))
            return;
        double t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void heap_sort(double *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;)
        sift(a, i, n);
    for (size_t end = n; end-- > 1;) {
        double t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift(a, 0, end);
    }
}

/* Quantile p of sorted a[0..n) by linear interpolation between order statistics (numpy's
 * default, R type 7). */
static double quantile(const double *a, size_t n, double p) {
    const double pos = p * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return a[n - 1];
    const double frac = pos - (double)lo;
    return a[lo] + frac * (a[lo + 1] - a[lo]);
}

nwattn_status nwattn_nw_bootstrap_bands(nwattn_context *ctx, const nwattn_regression *model,
                                        const float *bandwidths, size_t n, size_t d,
                                        const float *x, size_t ldx, const float *y,
                                        const float *obs_weights, size_t m, const float *xq,
                                        size_t ldq, size_t replicates, uint64_t seed,
                                        double level, double *lower, double *upper,
                                        double *sim_lower, double *sim_upper) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    nw_model mod;
    NW_TRY(nw_check_stats_inputs(&call, model, bandwidths, n, d, x, ldx, y, obs_weights, &mod));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    double *outs[4] = {lower, upper, sim_lower, sim_upper};
    static const char *const names[4] = {"lower", "upper", "sim_lower", "sim_upper"};
    for (int o = 0; o < 4; o++)
        if (outs[o] != NULL)
            NW_TRY(nw_output_elems(&call, names[o], outs[o], sizeof(double), 1, m, m > 0 ? m : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_stats_values(ctx, bandwidths, n, d, x, ldx, obs_weights));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    if (replicates < 2)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "replicates is %zu; it must be >= 2",
                       replicates);
    if (!(level > 0.0 && level < 1.0))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "level = %g is not in (0, 1)", level);
    /* smoother; the training pass (4n); A = L · diag(e) (m×n); fit (m); deltas (replicates×m);
     * sd (m); the max statistics (replicates); one column (replicates); v (n) */
    size_t mn, bm, doubles, bytes;
    const size_t base_doubles = nw_smoother_doubles(&mod);
    if (base_doubles == SIZE_MAX || !nw_mul(m, n, &mn) || !nw_mul(replicates, m, &bm) ||
        !nw_add(base_doubles, mn, &doubles) || !nw_add(doubles, bm, &doubles) ||
        n > SIZE_MAX / 16 || m > SIZE_MAX / 16 || replicates > SIZE_MAX / 16 ||
        !nw_add(doubles, 5 * n + 2 * m + 2 * replicates, &doubles) ||
        !nw_mul(doubles, sizeof(double), &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW,
                       "working memory for m = %zu, n = %zu, replicates = %zu overflows", m, n,
                       replicates);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_smoother sm;
    double *base = mem;
    nw_smoother_init(&sm, &mod, n, x, ldx, y, obs_weights, bandwidths, base);
    double *ell = base + base_doubles;
    nw_training_pass pass;
    pass.fitted = ell + n;
    pass.leverage = pass.fitted + n;
    pass.resid2 = pass.leverage + n;
    double *v = pass.resid2 + n, *a = v + n, *fit = a + mn, *delta = fit + m, *sd = delta + bm,
           *tmax = sd + m, *column = tmax + replicates;
    nw_training_run(&sm, &pass, ell, 0);
    /* e_j: the HC3 residual r_j / (1 - L_jj), sign included */
    for (size_t j = 0; j < n; j++) {
        const double r = (double)y[j] - pass.fitted[j];
        v[j] = r < 0.0 ? -sqrt(pass.resid2[j]) : sqrt(pass.resid2[j]);
    }
    for (size_t i = 0; i < m; i++) {
        double *row = a + i * n;
        unsigned flags = nw_smoother_row(&sm, xq + i * ldq, SIZE_MAX, 0.0, row, NULL);
        fit[i] = (flags & NWATTN_ROW_EMPTY) ? (double)NAN : 0.0;
        for (size_t j = 0; j < n; j++) {
            fit[i] += row[j] * (double)y[j];
            row[j] *= v[j];
        }
    }
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    for (size_t b = 0; b < replicates; b++) {
        for (size_t j = 0; j < n; j++) /* Rademacher: the top bit of one draw */
            v[j] = (nwattn_rng_next(&rng) >> 63) ? 1.0 : -1.0;
        for (size_t i = 0; i < m; i++) {
            const double *row = a + i * n;
            double sum = 0.0;
            for (size_t j = 0; j < n; j++)
                sum += row[j] * v[j];
            delta[b * m + i] = sum;
        }
    }
    const double alpha = 1.0 - level;
    for (size_t i = 0; i < m; i++) {
        double mean = 0.0, var = 0.0;
        for (size_t b = 0; b < replicates; b++)
            mean += delta[b * m + i];
        mean /= (double)replicates;
        for (size_t b = 0; b < replicates; b++) {
            const double e = delta[b * m + i] - mean;
            var += e * e;
        }
        sd[i] = sqrt(var / (double)(replicates - 1));
    }
    for (size_t b = 0; b < replicates; b++) {
        double t = 0.0;
        for (size_t i = 0; i < m; i++)
            if (sd[i] > 0.0)
                t = fmax(t, fabs(delta[b * m + i]) / sd[i]);
        tmax[b] = t;
    }
    heap_sort(tmax, replicates);
    const double c = quantile(tmax, replicates, level);
    for (size_t i = 0; i < m; i++) {
        for (size_t b = 0; b < replicates; b++)
            column[b] = delta[b * m + i];
        heap_sort(column, replicates);
        if (lower != NULL)
            lower[i] = fit[i] + quantile(column, replicates, 0.5 * alpha);
        if (upper != NULL)
            upper[i] = fit[i] + quantile(column, replicates, 1.0 - 0.5 * alpha);
        if (sim_lower != NULL)
            sim_lower[i] = fit[i] - c * sd[i];
        if (sim_upper != NULL)
            sim_upper[i] = fit[i] + c * sd[i];
    }
    return NWATTN_OK;
}

/* ---- The studentised (bootstrap-t) bands --------------------------------------------------- */
/* e2[j] = the HC3 square of residual r of training point j: (r / (1 - L_jj))^2, or r^2 where
 * the point is alone in its window (the rule of nw_training_run). */
static double hc3_square(double r, double leverage) {
    const double keep_share = 1.0 - leverage;
    return keep_share > 0.0 ? r * r / (keep_share * keep_share) : r * r;
}

nwattn_status nwattn_nw_bootstrap_t_bands(nwattn_context *ctx, const nwattn_regression *model,
                                          const float *bandwidths, size_t n, size_t d,
                                          const float *x, size_t ldx, const float *y,
                                          const float *obs_weights, size_t m, const float *xq,
                                          size_t ldq, size_t replicates, uint64_t seed,
                                          double level, double *lower, double *upper,
                                          double *sim_lower, double *sim_upper, double *crit,
                                          double *sim_crit) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    nw_model mod;
    NW_TRY(nw_check_stats_inputs(&call, model, bandwidths, n, d, x, ldx, y, obs_weights, &mod));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    double *outs[5] = {lower, upper, sim_lower, sim_upper, crit};
    static const char *const names[5] = {"lower", "upper", "sim_lower", "sim_upper", "crit"};
    for (int o = 0; o < 5; o++)
        if (outs[o] != NULL)
            NW_TRY(nw_output_elems(&call, names[o], outs[o], sizeof(double), 1, m, m > 0 ? m : 1));
    if (sim_crit != NULL)
        NW_TRY(nw_output_elems(&call, "sim_crit", sim_crit, sizeof(double), 1, 1, 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_stats_values(ctx, bandwidths, n, d, x, ldx, obs_weights));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    if (replicates < 2)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "replicates is %zu; it must be >= 2",
                       replicates);
    if (!(level > 0.0 && level < 1.0))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "level = %g is not in (0, 1)", level);
    if (m == 0)
        return NWATTN_OK; /* no query: nothing written, sim_crit included */
    /* smoother; the training pass (4n); u = e v and the bootstrap's HC3 squares e*^2
     * (replicates×n each); |t*| (replicates×m); fit, se (m); l^2 / w of one query row (n); the
     * max statistics and one column (replicates each) */
    size_t bn, bm, doubles, bytes;
    const size_t base_doubles = nw_smoother_doubles(&mod);
    if (base_doubles == SIZE_MAX || !nw_mul(replicates, n, &bn) || bn > SIZE_MAX / 2 ||
        !nw_mul(replicates, m, &bm) || !nw_add(base_doubles, 2 * bn, &doubles) ||
        !nw_add(doubles, bm, &doubles) || n > SIZE_MAX / 16 || m > SIZE_MAX / 16 ||
        replicates > SIZE_MAX / 16 ||
        !nw_add(doubles, 5 * n + 2 * m + 2 * replicates, &doubles) ||
        !nw_mul(doubles, sizeof(double), &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW,
                       "working memory for m = %zu, n = %zu, replicates = %zu overflows", m, n,
                       replicates);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_smoother sm;
    double *base = mem;
    nw_smoother_init(&sm, &mod, n, x, ldx, y, obs_weights, bandwidths, base);
    double *ell = base + base_doubles;
    nw_training_pass pass;
    pass.fitted = ell + n;
    pass.leverage = pass.fitted + n;
    pass.resid2 = pass.leverage + n;
    double *lw = pass.resid2 + n, *u = lw + n, *e2 = u + bn, *tabs = e2 + bn, *fit = tabs + bm,
           *se = fit + m, *tmax = se + m, *column = tmax + replicates;
    nw_training_run(&sm, &pass, ell, 0);
    /* u_bj = e_j v_bj: the HC3 residual, sign included, times the Rademacher draw (the draws
     * of nwattn_nw_bootstrap_bands: same seed, same v) */
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    for (size_t b = 0; b < replicates; b++)
        for (size_t j = 0; j < n; j++) {
            const double r = (double)y[j] - pass.fitted[j], e = sqrt(pass.resid2[j]);
            const double v = (nwattn_rng_next(&rng) >> 63) ? 1.0 : -1.0;
            u[b * n + j] = (r < 0.0 ? -e : e) * v;
        }
    /* The bootstrap fit's training residuals: y* = yhat + u refitted (the smoother is linear)
     * leaves r*_bj = g_j + u_bj - sum_k L_jk u_bk, g_j = yhat_j - sum_k L_jk yhat_k the
     * residual of smoothing the fit; their HC3 squares. */
    for (size_t j = 0; j < n; j++) {
        nw_smoother_row(&sm, x + j * ldx, SIZE_MAX, 0.0, ell, NULL);
        double g = pass.fitted[j];
        for (size_t k = 0; k < n; k++)
            g -= ell[k] * pass.fitted[k];
        for (size_t b = 0; b < replicates; b++) {
            const double *ub = u + b * n;
            double lu = 0.0;
            for (size_t k = 0; k < n; k++)
                lu += ell[k] * ub[k];
            e2[b * n + j] = hc3_square(g + ub[j] - lu, pass.leverage[j]);
        }
    }
    /* t*_b(q) = (yhat*_b(q) - yhat(q)) / se*_b(q), each replicate's own HC3 standard error */
    for (size_t i = 0; i < m; i++) {
        unsigned flags = nw_smoother_row(&sm, xq + i * ldq, SIZE_MAX, 0.0, ell, NULL);
        double f = 0.0, var = 0.0;
        for (size_t j = 0; j < n; j++) {
            const double w = nw_obs(&sm, j);
            lw[j] = w > 0.0 ? ell[j] * ell[j] / w : 0.0;
            f += ell[j] * (double)y[j];
            var += lw[j] * pass.resid2[j];
        }
        fit[i] = (flags & NWATTN_ROW_EMPTY) ? (double)NAN : f;
        se[i] = sqrt(var);
        for (size_t b = 0; b < replicates; b++) {
            const double *ub = u + b * n, *eb = e2 + b * n;
            double delta = 0.0, vb = 0.0;
            for (size_t j = 0; j < n; j++) {
                delta += ell[j] * ub[j];
                vb += lw[j] * eb[j];
            }
            tabs[b * m + i] = vb > 0.0 ? fabs(delta) / sqrt(vb) : 0.0;
        }
    }
    for (size_t b = 0; b < replicates; b++) {
        double t = 0.0;
        for (size_t i = 0; i < m; i++)
            t = fmax(t, tabs[b * m + i]);
        tmax[b] = t;
    }
    heap_sort(tmax, replicates);
    const double c = quantile(tmax, replicates, level);
    if (sim_crit != NULL)
        *sim_crit = c;
    for (size_t i = 0; i < m; i++) {
        for (size_t b = 0; b < replicates; b++)
            column[b] = tabs[b * m + i];
        heap_sort(column, replicates);
        const double ci = quantile(column, replicates, level);
        if (crit != NULL)
            crit[i] = ci;
        if (lower != NULL)
            lower[i] = fit[i] - ci * se[i];
        if (upper != NULL)
            upper[i] = fit[i] + ci * se[i];
        if (sim_lower != NULL)
            sim_lower[i] = fit[i] - c * se[i];
        if (sim_upper != NULL)
            sim_upper[i] = fit[i] + c * se[i];
    }
    return NWATTN_OK;
}
