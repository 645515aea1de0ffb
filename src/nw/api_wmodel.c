/* nwattn_wmodel_evaluate and nwattn_wmodel_train: d2l's parametric attention pooling. */
#include <math.h>
#include <string.h>

#include "nw.h"

/* Checks everything but the data and picks the kernels; fills a (mask included). */
static nwattn_status prepare(nwattn_context *ctx, nw_call *call, const nwattn_mask *mask,
                             nw_wmodel_args *a, const nw_kernels **kernels) {
    if (!isfinite(a->w))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "w = %g is not finite", (double)a->w);
    if (a->d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a distance needs features");
    NW_TRY(nw_check_mask(call, mask, a->m, a->n, &a->mask));
    NW_TRY(nw_check_disjoint(call));
    const int blas_ok = nw_call_blas_ok(call) && a->n <= NW_BLAS_INT_MAX;
    return nw_select_kernels(ctx, blas_ok, kernels);
}

nwattn_status nwattn_wmodel_evaluate(nwattn_context *ctx, float w, const nwattn_mask *mask,
                                     size_t m, size_t n, size_t d, size_t dv, const float *xq,
                                     size_t ldq, const float *x, size_t ldx, const float *y,
                                     size_t ldy, const float *target, size_t ldt, float *yhat,
                                     size_t ldyhat, float *weights, size_t ldw, double *loss,
                                     double *grad) {
    NW_TRY(nw_begin(ctx));
    nw_wmodel_args a;
    memset(&a, 0, sizeof a);
    a.simd = ctx->simd;
    a.w = w, a.m = m, a.n = n, a.d = d, a.dv = dv;
    a.q = xq, a.ldq = ldq, a.k = x, a.ldk = ldx, a.v = y, a.ldv = ldy;
    a.yhat = yhat, a.ldyhat = ldyhat, a.weights = weights, a.ldw = ldw;
    if ((loss != NULL || grad != NULL) && target == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "loss and grad need target, which is NULL");
    if (loss != NULL || grad != NULL)
        a.target = target, a.ldt = ldt;
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input(&call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_input(&call, "y", y, n, dv, ldy, 0));
    if (a.target != NULL)
        NW_TRY(nw_input(&call, "target", target, m, dv, ldt, 0));
    if (yhat != NULL)
        NW_TRY(nw_output(&call, "yhat", yhat, m, dv, ldyhat, 0));
    if (weights != NULL)
        NW_TRY(nw_output(&call, "weights", weights, m, n, ldw, 0));
    if (loss != NULL)
        NW_TRY(nw_output_elems(&call, "loss", loss, sizeof(double), 1, 1, 1));
    if (grad != NULL)
        NW_TRY(nw_output_elems(&call, "grad", grad, sizeof(double), 1, 1, 1));
    const nw_kernels *kernels;
    NW_TRY(prepare(ctx, &call, mask, &a, &kernels));
    size_t bytes = nw_wmodel_bytes(kernels, &a);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_wmodel_run(kernels, &a, mem, loss, grad);
    return NWATTN_OK;
}

nwattn_status nwattn_wmodel_train(nwattn_context *ctx, const nwattn_sgd *sgd, size_t n, size_t d,
                                  size_t dv, const float *x, size_t ldx, const float *y, size_t ldy,
                                  float *w, double *loss_per_epoch) {
    NW_TRY(nw_begin(ctx));
    if (sgd == NULL || w == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "%s is NULL", sgd == NULL ? "sgd" : "w");
    if (!(isfinite(sgd->learning_rate) && sgd->learning_rate > 0.0f))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "sgd.learning_rate = %g is not finite and > 0", (double)sgd->learning_rate);
    const size_t epochs = sgd->epochs;
    nw_wmodel_args a;
    memset(&a, 0, sizeof a);
    a.simd = ctx->simd;
    a.w = *w, a.m = n, a.n = n, a.d = d, a.dv = dv;
    a.q = x, a.ldq = ldx, a.k = x, a.ldk = ldx, a.v = y, a.ldv = ldy, a.target = y, a.ldt = ldy;
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_input(&call, "y", y, n, dv, ldy, 0));
    NW_TRY(nw_output_elems(&call, "w", w, sizeof(float), 1, 1, 1));
    if (loss_per_epoch != NULL)
        NW_TRY(nw_output_elems(&call, "loss_per_epoch", loss_per_epoch, sizeof(double), 1, epochs,
                               epochs > 0 ? epochs : 1));
    const nwattn_mask loo = {NWATTN_MASK_LEAVE_ONE_OUT, NULL, NULL, 0, 0, NULL, 0, 0};
    const nw_kernels *kernels;
    NW_TRY(prepare(ctx, &call, &loo, &a, &kernels));
    if (n < 2)
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "n = %zu: leave-one-out training needs two points at least", n);
    /* The model's memory, then the losses (kept until the end: outputs untouched on error). */
    size_t bytes = nw_wmodel_bytes(kernels, &a), losses;
    if (bytes == SIZE_MAX || !nw_add(bytes, sizeof(double) - 1, &bytes) ||
        !nw_mul(epochs, sizeof(double), &losses) ||
        !nw_add(bytes / sizeof(double) * sizeof(double), losses, &losses))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    bytes = bytes / sizeof(double) * sizeof(double);
    void *mem;
    NW_TRY(nw_workspace(ctx, losses, &mem));
    double *history = (double *)(void *)((char *)mem + bytes);
    double wd = (double)*w;
    for (size_t e = 0; e < epochs; e++) {
        double loss, grad;
        a.w = (float)wd;
        nw_wmodel_run(kernels, &a, mem, &loss, &grad);
        const double next = wd - (double)sgd->learning_rate * grad;
        if (!isfinite(loss) || !isfinite(grad) || !isfinite((float)next))
            return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                           "training diverged in epoch %zu (w = %g, loss = %g, gradient = %g): "
                           "lower the learning rate",
                           e + 1, wd, loss, grad);
        history[e] = loss;
        wd = (double)(float)next;
    }
    *w = (float)wd;
    if (loss_per_epoch != NULL)
        memcpy(loss_per_epoch, history, epochs * sizeof(double));
    return NWATTN_OK;
}
