/* nwattn_mixed_predict, nwattn_mixed_cv, nwattn_mixed_kde: the product kernel of continuous,
 * unordered and ordered categorical columns (statsmodels' gpke), in double. */
#include <math.h>

#include "stats.h"

/* The validated problem. */
typedef struct mixed {
    const nwattn_var_type *types;
    size_t d;
    double *levels; /* d: distinct values of each column in x (Aitchison-Aitken's c) */
} mixed;

/* One column's kernel between values a (query) and b (training point) at bandwidth h. */
static double column_kernel(nwattn_var_type type, double h, double levels, double a, double b) {
    const double dist = fabs(a - b);
    switch (type) {
    case NWATTN_VAR_CONTINUOUS:
        return nw_gauss_density(a - b, h);
    case NWATTN_VAR_UNORDERED:
        return dist == 0.0 ? 1.0 - h : h / (levels - 1.0);
    case NWATTN_VAR_ORDERED:
        return dist == 0.0 ? 1.0 - h : 0.5 * (1.0 - h) * pow(h, dist);
    case NWATTN_VAR_UNORDERED_LI_RACINE:
        return dist == 0.0 ? 1.0 : h;
    case NWATTN_VAR_ORDERED_LI_RACINE:
        return pow(h, dist);
    }
    return 0.0;
}

static double kernel(const mixed *mx, const float *h, const float *q, const float *xj) {
    double k = 1.0;
    for (size_t c = 0; c < mx->d && k != 0.0; c++)
        k *= column_kernel(mx->types[c], (double)h[c], mx->levels[c], (double)q[c],
                           (double)xj[c]);
    return k;
}

/* ---- Checks ---------------------------------------------------------------------------------- */
static nwattn_status check_types(nwattn_context *ctx, const nwattn_var_type *types, size_t d) {
    for (size_t c = 0; c < d; c++)
        if ((int)types[c] < 0 || (int)types[c] > (int)NWATTN_VAR_ORDERED_LI_RACINE)
            return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "types[%zu] = %d is no nwattn_var_type", c,
                           (int)types[c]);
    return NWATTN_OK;
}

static nwattn_status check_bandwidths(nwattn_context *ctx, const nwattn_var_type *types,
                                      const float *h, size_t d, size_t row) {
    for (size_t c = 0; c < d; c++) {
        const int continuous = types[c] == NWATTN_VAR_CONTINUOUS;
        if (continuous ? !(isfinite(h[c]) && h[c] > 0.0f) : !(h[c] >= 0.0f && h[c] <= 1.0f))
            return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                           "bandwidths[%zu][%zu] = %g: %s", row, c, (double)h[c],
                           continuous ? "a continuous column needs a finite h > 0"
                                      : "a categorical column needs lambda in [0, 1]");
    }
    return NWATTN_OK;
}

/* Finite values; integral ones in categorical columns. */
static nwattn_status check_values(nwattn_context *ctx, const char *name,
                                  const nwattn_var_type *types, const float *a, size_t rows,
                                  size_t d, size_t ld) {
    NW_TRY(nw_check_finite(ctx, name, a, rows, d, ld));
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < d; c++)
            if (types[c] != NWATTN_VAR_CONTINUOUS && floorf(a[i * ld + c]) != a[i * ld + c])
                return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                               "%s[%zu][%zu] = %g is in a categorical column but not an integer "
                               "code",
                               name, i, c, (double)a[i * ld + c]);
    return NWATTN_OK;
}

/* Counts each column's distinct values (sorting a copy in the workspace); an Aitchison-Aitken
 * column needs two at least. */
static nwattn_status prepare(nwattn_context *ctx, mixed *mx, const nwattn_var_type *types,
                             size_t n, size_t d, const float *x, size_t ldx) {
    size_t floats, bytes;
    if (!nw_mul(n, 2, &floats) || !nw_mul(floats, sizeof(float), &bytes) ||
        !nw_add(bytes, sizeof(double) - 1, &bytes) ||
        !nw_add(bytes / sizeof(double) * sizeof(double), d * sizeof(double), &bytes) ||
        d > SIZE_MAX / 64)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    mx->types = types;
    mx->d = d;
    mx->levels = mem;
    float *col = (float *)(void *)(mx->levels + d), *tmp = col + n;
    for (size_t c = 0; c < d; c++) {
        for (size_t j = 0; j < n; j++)
            col[j] = x[j * ldx + c];
        nw_sort_floats(n, col, tmp);
        size_t distinct = n > 0;
        for (size_t j = 1; j < n; j++)
            distinct += col[j] != col[j - 1];
        mx->levels[c] = (double)distinct;
        if (types[c] == NWATTN_VAR_UNORDERED && distinct < 2)
            return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                           "column %zu (unordered, Aitchison-Aitken) takes %zu value(s) in x; "
                           "it needs 2",
                           c, distinct);
    }
    return NWATTN_OK;
}

/* The shared checks of the three entry points, on call. */
static nwattn_status check_common(nw_call *call, const nwattn_var_type *types, size_t n,
                                  size_t d, const float *x, size_t ldx, const float *obs) {
    if (d == 0)
        return nw_fail(call->ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: no columns");
    NW_TRY(nw_input_array(call, "types", types, sizeof *types, d));
    NW_TRY(nw_input(call, "x", x, n, d, ldx, 0));
    if (obs != NULL)
        NW_TRY(nw_input_array(call, "obs_weights", obs, sizeof(float), n));
    return NWATTN_OK;
}

/* ---- Entry points ----------------------------------------------------------------------------- */
nwattn_status nwattn_mixed_predict(nwattn_context *ctx, const nwattn_var_type *types,
                                   const float *bandwidths, size_t m, size_t n, size_t d,
                                   const float *xq, size_t ldq, const float *x, size_t ldx,
                                   const float *y, const float *obs_weights, double *fit) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(check_common(&call, types, n, d, x, ldx, obs_weights));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input(&call, "y", y, 1, n, n, 0));
    NW_TRY(nw_output_elems(&call, "fit", fit, sizeof(double), 1, m, m > 0 ? m : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(check_types(ctx, types, d));
    NW_TRY(check_bandwidths(ctx, types, bandwidths, d, 0));
    NW_TRY(check_values(ctx, "x", types, x, n, d, ldx));
    NW_TRY(check_values(ctx, "xq", types, xq, m, d, ldq));
    NW_TRY(nw_check_finite(ctx, "y", y, 1, n, n));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 1));
    mixed mx;
    NW_TRY(prepare(ctx, &mx, types, n, d, x, ldx));
    for (size_t i = 0; i < m; i++) {
        double num = 0.0, den = 0.0;
        for (size_t j = 0; j < n; j++) {
            const double w = nw_obs_weight(obs_weights, j);
            if (!(w > 0.0))
                continue;
            const double k = w * kernel(&mx, bandwidths, xq + i * ldq, x + j * ldx);
            num += k * (double)y[j];
            den += k;
        }
        fit[i] = den > 0.0 ? num / den : (double)NAN;
    }
    return NWATTN_OK;
}

nwattn_status nwattn_mixed_cv(nwattn_context *ctx, const nwattn_var_type *types, size_t n_bw,
                              const float *bandwidths, size_t ldb, size_t n, size_t d,
                              const float *x, size_t ldx, const float *y,
                              const float *obs_weights, double *cv) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(check_common(&call, types, n, d, x, ldx, obs_weights));
    NW_TRY(nw_input(&call, "bandwidths", bandwidths, n_bw, d, ldb, 0));
    NW_TRY(nw_input(&call, "y", y, 1, n, n, 0));
    NW_TRY(nw_output_elems(&call, "cv", cv, sizeof(double), 1, n_bw, n_bw > 0 ? n_bw : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(check_types(ctx, types, d));
    for (size_t g = 0; g < n_bw; g++)
        NW_TRY(check_bandwidths(ctx, types, bandwidths + g * ldb, d, g));
    NW_TRY(check_values(ctx, "x", types, x, n, d, ldx));
    NW_TRY(nw_check_finite(ctx, "y", y, 1, n, n));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 2));
    mixed mx;
    NW_TRY(prepare(ctx, &mx, types, n, d, x, ldx));
    for (size_t g = 0; g < n_bw; g++) {
        const float *h = bandwidths + g * ldb;
        double sum = 0.0, total = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double wi = nw_obs_weight(obs_weights, i);
            if (!(wi > 0.0))
                continue;
            double num = 0.0, den = 0.0;
            for (size_t j = 0; j < n; j++) {
                double w = nw_obs_weight(obs_weights, j);
                if (j == i)
                    w -= fmin(1.0, wi); /* one unit of weight left out */
                if (!(w > 0.0))
                    continue;
                const double k = w * kernel(&mx, h, x + i * ldx, x + j * ldx);
                num += k * (double)y[j];
                den += k;
            }
            const double e = den > 0.0 ? (double)y[i] - num / den : (double)INFINITY;
            sum += wi * e * e;
            total += wi;
        }
        cv[g] = sum / total;
    }
    return NWATTN_OK;
}

nwattn_status nwattn_mixed_kde(nwattn_context *ctx, const nwattn_var_type *types,
                               const float *bandwidths, size_t m, size_t n, size_t d,
                               const float *xq, size_t ldq, const float *x, size_t ldx,
                               const float *obs_weights, double *density, double *loglik) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(check_common(&call, types, n, d, x, ldx, obs_weights));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_output_elems(&call, "density", density, sizeof(double), 1, m, m > 0 ? m : 1));
    if (loglik != NULL)
        NW_TRY(nw_output_elems(&call, "loglik", loglik, sizeof(double), 1, 1, 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(check_types(ctx, types, d));
    NW_TRY(check_bandwidths(ctx, types, bandwidths, d, 0));
    NW_TRY(check_values(ctx, "x", types, x, n, d, ldx));
    NW_TRY(check_values(ctx, "xq", types, xq, m, d, ldq));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, loglik != NULL ? 2 : 1));
    mixed mx;
    NW_TRY(prepare(ctx, &mx, types, n, d, x, ldx));
    const double total = nw_obs_weight_total(obs_weights, n);
    for (size_t i = 0; i < m; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            const double w = nw_obs_weight(obs_weights, j);
            if (w > 0.0)
                sum += w * kernel(&mx, bandwidths, xq + i * ldq, x + j * ldx);
        }
        density[i] = sum / total;
    }
    if (loglik != NULL) {
        double ll = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double wi = nw_obs_weight(obs_weights, i);
            if (!(wi > 0.0))
                continue;
            double sum = 0.0;
            for (size_t j = 0; j < n; j++) {
                const double w = nw_obs_weight(obs_weights, j);
                if (w > 0.0)
                    sum += w * kernel(&mx, bandwidths, x + i * ldx, x + j * ldx);
            }
            const double out = fmin(1.0, wi);
            sum -= out * kernel(&mx, bandwidths, x + i * ldx, x + i * ldx);
            ll += wi * log(fmax(sum, 0.0) / (total - out));
        }
        *loglik = ll / total;
    }
    return NWATTN_OK;
}
