/* nwattn_nw_cv: the leave-one-out CV score (and gradient) on a grid of bandwidth vectors. */
#include <math.h>

#include "nw.h"

nwattn_status nwattn_nw_cv(nwattn_context *ctx, const nwattn_regression *model, size_t n, size_t d,
                           size_t dv, const float *x, size_t ldx, const float *y, size_t ldy,
                           size_t n_bw, const float *bandwidths, size_t ldb, double *cv,
                           double *gradient, size_t ldg, size_t *flagged) {
    NW_TRY(nw_begin(ctx));
    nw_model mod;
    NW_TRY(nw_check_model(ctx, model, d, dv, &mod));
    if (dv == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "dv is 0: no targets to cross-validate");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_check_training(&call, n, d, dv, x, ldx, y, ldy));
    NW_TRY(nw_input(&call, "bandwidths", bandwidths, n_bw, d, ldb, 0));
    NW_TRY(nw_output_elems(&call, "cv", cv, sizeof(double), 1, n_bw, n_bw > 0 ? n_bw : 1));
    if (gradient != NULL)
        NW_TRY(nw_output_elems(&call, "gradient", gradient, sizeof(double), n_bw, d, ldg));
    if (flagged != NULL)
        NW_TRY(nw_output_elems(&call, "flagged", flagged, sizeof(size_t), 1, n_bw,
                               n_bw > 0 ? n_bw : 1));
    NW_TRY(nw_check_disjoint(&call));
    for (size_t g = 0; g < n_bw; g++)
        NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths + g * ldb, d));
    NW_TRY(nw_check_spread(ctx, n, d, x, ldx, 3));
    if (n_bw == 0)
        return NWATTN_OK;
    double widest = 0.0; /* the direct rows cost most there */
    for (size_t g = 0; g < n_bw; g++)
        widest = fmax(widest, (double)bandwidths[g * ldb]);
    int fast;
    NW_TRY(nw_select_path(ctx, &mod, n, n, x, ldx, widest, 0, 0, &fast));

    const size_t threads = fast ? ctx->workers.threads : 1;
    size_t plan_bytes = nw_plan_bytes(&mod, fast, n, threads, nw_units(n)), bytes;
    if (plan_bytes == SIZE_MAX || !nw_add(plan_bytes, sizeof(double) - 1, &plan_bytes) ||
        !nw_add(plan_bytes / sizeof(double) * sizeof(double), 2 * d * sizeof(double), &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    plan_bytes = plan_bytes / sizeof(double) * sizeof(double);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    double *h = (double *)(void *)((char *)mem + plan_bytes), *grad = h + d;
    nw_plan plan;
    nw_plan_init(&plan, &mod, fast, n, x, ldx, y, ldy, threads, nw_units(n), mem);
    plan.team = &ctx->workers;
    for (size_t g = 0; g < n_bw; g++) {
        for (size_t k = 0; k < d; k++)
            h[k] = (double)bandwidths[g * ldb + k];
        size_t count = nw_cv_evaluate(&plan, h, &cv[g], gradient != NULL ? grad : NULL);
        if (gradient != NULL)
            for (size_t k = 0; k < d; k++)
                gradient[g * ldg + k] = grad[k];
        if (flagged != NULL)
            flagged[g] = count;
    }
    return NWATTN_OK;
}
