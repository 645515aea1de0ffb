/* nwattn_kde and nwattn_kde_cv: the Gaussian product-kernel density, its least-squares and
 * likelihood cross-validation objectives, in double. */
#include <math.h>

#include "stats.h"

/* prod_k phi((a_k - b_k) / h_k) / h_k for bandwidths scaled by `scale` (1, or sqrt 2 for the
 * convolution of two kernels). */
static double product_kernel(size_t d, const float *a, const float *b, const float *h,
                             double scale) {
    double k = 1.0;
    for (size_t c = 0; c < d; c++)
        k *= nw_gauss_density((double)a[c] - (double)b[c], scale * (double)h[c]);
    return k;
}

nwattn_status nwattn_kde(nwattn_context *ctx, const float *bandwidths, size_t m, size_t n,
                         size_t d, const float *xq, size_t ldq, const float *x, size_t ldx,
                         const float *obs_weights, double *density) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a density needs coordinates");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    if (obs_weights != NULL)
        NW_TRY(nw_input_array(&call, "obs_weights", obs_weights, sizeof(float), n));
    NW_TRY(nw_output_elems(&call, "density", density, sizeof(double), 1, m, m > 0 ? m : 1));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths, d));
    NW_TRY(nw_check_finite(ctx, "x", x, n, d, ldx));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 1));
    const double total = nw_obs_weight_total(obs_weights, n);
    for (size_t i = 0; i < m; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            const double w = nw_obs_weight(obs_weights, j);
            if (w > 0.0)
                sum += w * product_kernel(d, xq + i * ldq, x + j * ldx, bandwidths, 1.0);
        }
        density[i] = sum / total;
    }
    return NWATTN_OK;
}

nwattn_status nwattn_kde_cv(nwattn_context *ctx, size_t n_bw, const float *bandwidths, size_t ldb,
                            size_t n, size_t d, const float *x, size_t ldx,
                            const float *obs_weights, double *lscv, double *loglik) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a density needs coordinates");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_input(&call, "bandwidths", bandwidths, n_bw, d, ldb, 0));
    if (obs_weights != NULL)
        NW_TRY(nw_input_array(&call, "obs_weights", obs_weights, sizeof(float), n));
    const size_t len = n_bw > 0 ? n_bw : 1;
    if (lscv != NULL)
        NW_TRY(nw_output_elems(&call, "lscv", lscv, sizeof(double), 1, n_bw, len));
    if (loglik != NULL)
        NW_TRY(nw_output_elems(&call, "loglik", loglik, sizeof(double), 1, n_bw, len));
    NW_TRY(nw_check_disjoint(&call));
    for (size_t g = 0; g < n_bw; g++)
        NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths + g * ldb, d));
    NW_TRY(nw_check_finite(ctx, "x", x, n, d, ldx));
    NW_TRY(nw_check_obs_weights(ctx, obs_weights, n, 2));
    const double total = nw_obs_weight_total(obs_weights, n);
    for (size_t g = 0; g < n_bw; g++) {
        const float *h = bandwidths + g * ldb;
        double integral = 0.0, loo = 0.0, ll = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double wi = nw_obs_weight(obs_weights, i);
            if (!(wi > 0.0))
                continue;
            const float *xi = x + i * ldx;
            double conv = 0.0, sum = 0.0;
            for (size_t j = 0; j < n; j++) {
                const double wj = nw_obs_weight(obs_weights, j);
                if (!(wj > 0.0))
                    continue;
                conv += wj * product_kernel(d, xi, x + j * ldx, h, sqrt(2.0));
                sum += wj * product_kernel(d, xi, x + j * ldx, h, 1.0);
            }
            /* one unit of weight of point i left out */
            const double out = fmin(1.0, wi), self = product_kernel(d, xi, xi, h, 1.0);
            const double f_loo = (sum - out * self) / (total - out);
            integral += wi * conv;
            loo += wi * f_loo;
            ll += wi * log(f_loo);
        }
        if (lscv != NULL)
            lscv[g] = integral / (total * total) - 2.0 * loo / total;
        if (loglik != NULL)
            loglik[g] = ll / total;
    }
    return NWATTN_OK;
}
