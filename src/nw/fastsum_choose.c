/* The choice between the reference, direct and fast-sum rows (nw_select_path): the backend,
 * then the context's method, then for AUTO the predicted cost of each (nwattn.h). */
#include <math.h>

#include "fastsum.h"

/* Relative costs, measured (docs/regression.md: fastsum_bench and a crossover sweep on the
 * Intel Xeon), per vector (1 + dv): one window point of the direct rows (about 0.2 ns), one
 * (query, point) pair of the dense pool that local constant Gaussian and Laplace predictions
 * take off the fast sums, one flop of a recursion step; the Gaussian's moments per point, a
 * dense cluster's row (its share of the expansion and its Taylor sums), and a window point a
 * row sums directly where the clusters are small (a scalar exp each). */
#define NW_COST_DIRECT_POINT 1.0
#define NW_COST_POOLED_PAIR 0.5
#define NW_COST_FASTSUM_FLOP 0.5
#define NW_COST_GAUSS_MOMENTS 20.0
#define NW_COST_GAUSS_ROW 150.0
#define NW_COST_GAUSS_WALK 8.0

static double range_of(size_t n, const float *x, size_t ldx) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        lo = fmin(lo, (double)x[j * ldx]);
        hi = fmax(hi, (double)x[j * ldx]);
    }
    return hi - lo;
}

/* Whether the fast sums are predicted to be cheaper than the direct rows (pooled: than the
 * dense pool, which sees every point). */
static int fastsum_cheaper(const nw_model *model, size_t n, size_t m, const float *x, size_t ldx,
                           double h, int pooled) {
    const double dn = (double)n, t = 17.0 + log(dn);
    /* the direct window's half-width in h (fast_rows_impl.h's window_1d) */
    const double tail = model->kernel == NWATTN_KERNEL_GAUSSIAN ? sqrt(2.0 * t)
                        : model->kernel == NWATTN_KERNEL_LAPLACE ? t
                                                                 : t + 8.0;
    const double range = range_of(n, x, ldx);
    if (!(h > 0.0)) /* unknown yet: the normal-reference rule with the range as 4 sd */
        h = 1.06 * range / 4.0 * pow(dn, -0.2);
    double window = range > 0.0 ? 1.0 + dn * fmin(1.0, 2.0 * (tail + 1.0) * h / range) : dn;
    window = fmin(window, dn);
    const double k1 = (double)nw_fs_moments_needed(model, 1), v = 1.0 + (double)model->dv;
    const double direct = pooled ? (double)m * dn * v * NW_COST_POOLED_PAIR
                                 : (double)m * window * v * NW_COST_DIRECT_POINT;
    double fastsum = (3.0 * dn + (double)m) * v * k1 * (k1 + 1.0) * NW_COST_FASTSUM_FLOP +
                     (double)m * log2(dn + 1.0);
    if (model->kernel == NWATTN_KERNEL_GAUSSIAN) {
        /* points per cluster of width NW_FG_WIDTH h, were they spread evenly */
        const double per_cluster = range > 0.0 ? dn * NW_FG_WIDTH * h / range : dn;
        fastsum = per_cluster >= NW_FG_MIN_POINTS
                      ? (dn * NW_COST_GAUSS_MOMENTS + (double)m * NW_COST_GAUSS_ROW) * v
                      : (double)m * window * v * NW_COST_GAUSS_WALK;
    }
    return fastsum < direct;
}

nwattn_status nw_select_path(nwattn_context *ctx, const nw_model *model, size_t n, size_t m,
                             const float *x, size_t ldx, double h, int weights, int pooled,
                             int *path) {
    int fast;
    NW_TRY(nw_select_fast(ctx, &fast));
    const int can = model->d == 1 && nw_fs_kernel_supported(model->kernel) && !weights;
    if (!fast) {
        *path = NW_PATH_REFERENCE;
        return NWATTN_OK;
    }
    switch (ctx->nw_method) {
    case NWATTN_NW_METHOD_FASTSUM:
        if (!can)
            return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                           "NWATTN_NW_METHOD_FASTSUM needs d == 1, the Gaussian or a "
                           "Laplace-family kernel and no weights output (d = %zu, kernel %d)",
                           model->d, (int)model->kernel);
        *path = NW_PATH_FASTSUM;
        return NWATTN_OK;
    case NWATTN_NW_METHOD_DIRECT:
        *path = NW_PATH_DIRECT;
        return NWATTN_OK;
    default:
        *path = can && fastsum_cheaper(model, n, m, x, ldx, h, pooled) ? NW_PATH_FASTSUM
                                                                        : NW_PATH_DIRECT;
        return NWATTN_OK;
    }
}
