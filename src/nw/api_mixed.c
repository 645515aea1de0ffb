/* nwattn_mixed_predict(_estimator), nwattn_mixed_cv(_estimator), nwattn_mixed_kde: the product
 * kernel of continuous, unordered and ordered categorical columns (statsmodels' gpke), in
 * double; local constant and local linear regression (the local linear rows through the
 * continuous data's nw_finish_row: one singular rule and fallback). */
#include <math.h>

#include "stats.h"

/* The validated problem. */
typedef struct mixed {
    const nwattn_var_type *types;
    size_t d;
    double *levels; /* d: distinct values of each column in x (Aitchison-Aitken's c) */
    /* Regression only (p == 1 for the density): */
    nw_model model;   /* p = 1 + the columns with a slope; dv = 1 */
    size_t *lin;      /* p - 1: those columns */
    double *inv_scale; /* d: 1/h for a continuous column, 1 for a categorical one */
    double *z;        /* p: one point's regressors */
    double *sums_mem; /* nw_sums_doubles */
    double *work;     /* nw_finish_work_doubles */
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

/* Whether a column of the type has a slope under estimator (none for the local constant one
 * and the density). */
static int has_slope(nwattn_var_type type, nwattn_mixed_estimator estimator) {
    return estimator == NWATTN_MIXED_LOCAL_LINEAR_ALL ||
           (estimator == NWATTN_MIXED_LOCAL_LINEAR && type == NWATTN_VAR_CONTINUOUS);
}

_Static_assert(sizeof(size_t) <= sizeof(double), "a size_t fits in a double's slot");

/* Counts each column's distinct values (sorting a copy in the workspace); an Aitchison-Aitken
 * column needs two at least. Lays out the regression rows' memory for estimator. */
static nwattn_status prepare(nwattn_context *ctx, mixed *mx, const nwattn_var_type *types,
                             nwattn_mixed_estimator estimator, size_t n, size_t d,
                             const float *x, size_t ldx) {
    if (d > SIZE_MAX / 64)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for d = %zu overflows", d);
    size_t slopes = 0, pp;
    for (size_t c = 0; c < d; c++)
        slopes += (size_t)has_slope(types[c], estimator);
    const nw_model model = {NWATTN_KERNEL_GAUSSIAN,
                            slopes > 0 ? NWATTN_LOCAL_LINEAR : NWATTN_LOCAL_CONSTANT,
                            NWATTN_EMPTY_NAN,
                            slopes,
                            1,
                            1 + slopes,
                            0.0};
    /* doubles: levels, inv_scale (d each), z (p), sums, finish work; then lin (p size_t) and
     * the sort's 2n floats, each rounded up to whole doubles */
    size_t doubles = 2 * d + model.p, floats, extra;
    if (!nw_mul(model.p, model.p, &pp) || pp > SIZE_MAX / 4 || /* the sums' and solve's p^2 */
        !nw_add(doubles, nw_sums_doubles(&model, 0), &doubles) ||
        !nw_add(doubles, nw_finish_work_doubles(&model), &doubles) ||
        !nw_add(doubles, model.p, &doubles) || /* lin, as size_t (<= 8 bytes each) */
        !nw_mul(n, 2, &floats) || !nw_add(floats, 1, &extra) ||
        !nw_add(doubles, extra / 2 + 1, &doubles) || doubles > SIZE_MAX / sizeof(double))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu, d = %zu overflows",
                       n, d);
    void *mem;
    NW_TRY(nw_workspace(ctx, doubles * sizeof(double), &mem));
    mx->types = types;
    mx->d = d;
    mx->model = model;
    mx->levels = mem;
    mx->inv_scale = mx->levels + d;
    mx->z = mx->inv_scale + d;
    mx->sums_mem = mx->z + model.p;
    mx->work = mx->sums_mem + nw_sums_doubles(&model, 0);
    mx->lin = (size_t *)(void *)(mx->work + nw_finish_work_doubles(&model));
    float *col = (float *)(void *)(mx->work + nw_finish_work_doubles(&model) + model.p),
          *tmp = col + n;
    for (size_t c = 0, a = 0; c < d; c++)
        if (has_slope(types[c], estimator))
            mx->lin[a++] = c;
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

/* The estimate at q from every training point, point skip (SIZE_MAX: none) with one unit of
 * its weight, min(1, w), left out. Sets *yhat (NaN for an empty row) and returns the row's
 * flags. The sums are nw_ref_row's (m = sum K z z', b = sum K z y, z = (1, u) with u the slope
 * columns' differences, continuous ones divided by h: the decision of the singular test does
 * not depend on that scale), the estimate nw_finish_row's: its singular rule and fallback. */
static unsigned regression_row(mixed *mx, const float *h, const float *q, size_t n,
                               const float *x, size_t ldx, const float *y, const float *obs,
                               size_t skip, double *yhat) {
    const size_t p = mx->model.p;
    for (size_t a = 1; a < p; a++) {
        const size_t c = mx->lin[a - 1];
        mx->inv_scale[c] = mx->types[c] == NWATTN_VAR_CONTINUOUS ? 1.0 / (double)h[c] : 1.0;
    }
    nw_sums s;
    nw_sums_init(&s, mx->sums_mem, &mx->model, 0);
    double *z = mx->z;
    z[0] = 1.0;
    for (size_t j = 0; j < n; j++) {
        double w = nw_obs_weight(obs, j);
        if (j == skip)
            w -= fmin(1.0, w); /* one unit of weight left out */
        if (!(w > 0.0))
            continue;
        const float *xj = x + j * ldx;
        const double k = w * kernel(mx, h, q, xj);
        const double yj = (double)y[j];
        for (size_t a = 1; a < p; a++) {
            const size_t c = mx->lin[a - 1];
            z[a] = ((double)xj[c] - (double)q[c]) * mx->inv_scale[c];
        }
        for (size_t a = 0; a < p; a++) {
            const double ka = k * z[a];
            for (size_t e = a; e < p; e++)
                s.m[a + e * p] += ka * z[e];
            s.b[a] += ka * yj;
        }
    }
    const unsigned flags = nw_finish_row(&mx->model, &s, 0, mx->work, yhat, NULL, NULL);
    if (flags & NWATTN_ROW_EMPTY)
        *yhat = (double)NAN;
    return flags;
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

static nwattn_status check_estimator(nwattn_context *ctx, nwattn_mixed_estimator estimator) {
    if ((int)estimator < 0 || (int)estimator > (int)NWATTN_MIXED_LOCAL_LINEAR_ALL)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "estimator = %d is no nwattn_mixed_estimator",
                       (int)estimator);
    return NWATTN_OK;
}

/* ---- Entry points ----------------------------------------------------------------------------- */
nwattn_status nwattn_mixed_predict_estimator(nwattn_context *ctx, const nwattn_var_type *types,
                                             nwattn_mixed_estimator estimator,
                                             const float *bandwidths, size_t m, size_t n,
                                             size_t d, const float *xq, size_t ldq,
                                             const float *x, size_t ldx, const float *y,
                                             const float *obs_weights, double *fit,
                                             unsigned char *row_flags, size_t *n_flagged) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(check_common(&call, types, n, d, x, ldx, obs_weights));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input(&call, "y", y, 1, n, n, 0));
    NW_TRY(nw_output_elems(&call, "fit", fit, sizeof(double), 1, m, m > 0 ? m : 1));
    if (row_flags != NULL)
        NW_TRY(nw_output_elems(&call, "row_flags", row_flags, 1, 1, m, m > 0 ? m : 1));
    if (n_flagged != NULL)
        NW_TRY(nw_output_elems(&call, "n_flagged", n_flagged, sizeof(size_t), 1, 1, 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(check_estimator(ctx, estimator));
    NW_TRY(check_types(ctx, types, d));
    NW_TRY(check_bandwidths(ctx, types, bandwidths, d, 0));
    NW_TRY(check_values(ctx, "x", types, x, n, d, ldx));
    NW_TRY(check_values(ctx, "xq", types, xq, m, d, ldq));
    NW_TRY(nw_check_finite(ctx, "y", y, 1, n, n));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 1));
    mixed mx;
    NW_TRY(prepare(ctx, &mx, types, estimator, n, d, x, ldx));
    size_t flagged = 0;
    for (size_t i = 0; i < m; i++) {
        const unsigned flags = regression_row(&mx, bandwidths, xq + i * ldq, n, x, ldx, y,
                                              obs_weights, SIZE_MAX, &fit[i]);
        flagged += flags != 0;
        if (row_flags != NULL)
            row_flags[i] = (unsigned char)flags;
    }
    if (n_flagged != NULL)
        *n_flagged = flagged;
    return NWATTN_OK;
}

nwattn_status nwattn_mixed_predict(nwattn_context *ctx, const nwattn_var_type *types,
                                   const float *bandwidths, size_t m, size_t n, size_t d,
                                   const float *xq, size_t ldq, const float *x, size_t ldx,
                                   const float *y, const float *obs_weights, double *fit) {
    return nwattn_mixed_predict_estimator(ctx, types, NWATTN_MIXED_LOCAL_CONSTANT, bandwidths, m,
                                          n, d, xq, ldq, x, ldx, y, obs_weights, fit, NULL, NULL);
}

nwattn_status nwattn_mixed_cv_estimator(nwattn_context *ctx, const nwattn_var_type *types,
                                        nwattn_mixed_estimator estimator, size_t n_bw,
                                        const float *bandwidths, size_t ldb, size_t n, size_t d,
                                        const float *x, size_t ldx, const float *y,
                                        const float *obs_weights, double *cv, size_t *flagged) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(check_common(&call, types, n, d, x, ldx, obs_weights));
    NW_TRY(nw_input(&call, "bandwidths", bandwidths, n_bw, d, ldb, 0));
    NW_TRY(nw_input(&call, "y", y, 1, n, n, 0));
    NW_TRY(nw_output_elems(&call, "cv", cv, sizeof(double), 1, n_bw, n_bw > 0 ? n_bw : 1));
    if (flagged != NULL)
        NW_TRY(nw_output_elems(&call, "flagged", flagged, sizeof(size_t), 1, n_bw,
                               n_bw > 0 ? n_bw : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(check_estimator(ctx, estimator));
    NW_TRY(check_types(ctx, types, d));
    for (size_t g = 0; g < n_bw; g++)
        NW_TRY(check_bandwidths(ctx, types, bandwidths + g * ldb, d, g));
    NW_TRY(check_values(ctx, "x", types, x, n, d, ldx));
    NW_TRY(nw_check_finite(ctx, "y", y, 1, n, n));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 2));
    mixed mx;
    NW_TRY(prepare(ctx, &mx, types, estimator, n, d, x, ldx));
    for (size_t g = 0; g < n_bw; g++) {
        const float *h = bandwidths + g * ldb;
        double sum = 0.0, total = 0.0;
        size_t rows = 0;
        for (size_t i = 0; i < n; i++) {
            const double wi = nw_obs_weight(obs_weights, i);
            if (!(wi > 0.0))
                continue;
            double yhat;
            const unsigned flags =
                regression_row(&mx, h, x + i * ldx, n, x, ldx, y, obs_weights, i, &yhat);
            rows += flags != 0;
            const double e =
                flags & NWATTN_ROW_EMPTY ? (double)INFINITY : (double)y[i] - yhat;
            sum += wi * e * e;
            total += wi;
        }
        cv[g] = sum / total;
        if (flagged != NULL)
            flagged[g] = rows;
    }
    return NWATTN_OK;
}

nwattn_status nwattn_mixed_cv(nwattn_context *ctx, const nwattn_var_type *types, size_t n_bw,
                              const float *bandwidths, size_t ldb, size_t n, size_t d,
                              const float *x, size_t ldx, const float *y,
                              const float *obs_weights, double *cv) {
    return nwattn_mixed_cv_estimator(ctx, types, NWATTN_MIXED_LOCAL_CONSTANT, n_bw, bandwidths,
                                     ldb, n, d, x, ldx, y, obs_weights, cv, NULL);
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
    NW_TRY(prepare(ctx, &mx, types, NWATTN_MIXED_LOCAL_CONSTANT, n, d, x, ldx));
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
