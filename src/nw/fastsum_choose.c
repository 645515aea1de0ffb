/* The choice between the reference, direct and fast-sum rows (nw_select_path): the backend,
 * then the context's method, then for AUTO the predicted cost of each (nwattn.h). */
#include <math.h>

#include "fastsum.h"

/* Relative cost of one window point of the direct path and of one flop of a recursion step,
 * measured (docs/regression.md: benchmarks/fastsum_bench.c on the development machine). */
#define NW_COST_DIRECT_POINT 1.0
#define NW_COST_FASTSUM_FLOP 0.5

static double range_of(size_t n, const float *x, size_t ldx) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        lo = fmin(lo, (double)x[j * ldx]);
        hi = fmax(hi, (double)x[j * ldx]);
    }
    return hi - lo;
}

/* Whether the fast sums are predicted to be cheaper than the direct rows. */
static int fastsum_cheaper(const nw_model *model, size_t n, size_t m, const float *x, size_t ldx,
                           double h) {
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
    const double direct = (double)m * window * v * NW_COST_DIRECT_POINT;
    double fastsum = (3.0 * dn + (double)m) * v * k1 * (k1 + 1.0) * NW_COST_FASTSUM_FLOP +
                     (double)m * log2(dn + 1.0);
    if (model->kernel == NWATTN_KERNEL_GAUSSIAN) /* moments; ~16 clusters of 24 terms, 3 sums */
        fastsum = (dn * 29.0 + (double)m * 16.0 * 24.0 * 3.0) * v * NW_COST_FASTSUM_FLOP;
    return fastsum < direct;
}

nwattn_status nw_select_path(nwattn_context *ctx, const nw_model *model, size_t n, size_t m,
                             const float *x, size_t ldx, double h, int weights, int *path) {
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
                           "NWATTN_NW_METHOD_FASTSUM needs d == 1, a Laplace-family kernel and "
                           "no weights output (d = %zu, kernel %d)",
                           model->d, (int)model->kernel);
        *path = NW_PATH_FASTSUM;
        return NWATTN_OK;
    case NWATTN_NW_METHOD_DIRECT:
        *path = NW_PATH_DIRECT;
        return NWATTN_OK;
    default:
        *path = can && fastsum_cheaper(model, n, m, x, ldx, h) ? NW_PATH_FASTSUM : NW_PATH_DIRECT;
        return NWATTN_OK;
    }
}
