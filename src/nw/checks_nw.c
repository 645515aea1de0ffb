/* Argument checks shared by the regression entry points. */
#include <math.h>

#include "nw.h"

nwattn_status nw_check_model(nwattn_context *ctx, const nwattn_regression *model, size_t d,
                             size_t dv, nw_model *out) {
    if (model == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "model is NULL");
    switch (model->kernel) {
    case NWATTN_KERNEL_GAUSSIAN:
    case NWATTN_KERNEL_LAPLACE:
    case NWATTN_KERNEL_EPANECHNIKOV:
    case NWATTN_KERNEL_TRICUBE:
    case NWATTN_KERNEL_UNIFORM:
    case NWATTN_KERNEL_MATERN32:
    case NWATTN_KERNEL_MATERN52:
        break;
    default:
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown kernel %d", (int)model->kernel);
    }
    if (model->degree != NWATTN_LOCAL_CONSTANT && model->degree != NWATTN_LOCAL_LINEAR)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown degree %d", (int)model->degree);
    if (model->empty != NWATTN_EMPTY_NEAREST && model->empty != NWATTN_EMPTY_NAN &&
        model->empty != NWATTN_EMPTY_ZERO)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown empty-row policy %d", (int)model->empty);
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: regression needs inputs");
    if (d > SIZE_MAX / 64 || dv > SIZE_MAX / 64) /* so that d + 1 and 4·p below cannot wrap */
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "d = %zu and dv = %zu are too large", d, dv);
    *out = nw_model_of(model, d, dv,
                       ctx->nw_tolerance > 0.0 ? ctx->nw_tolerance : NWATTN_NW_TOLERANCE_DEFAULT);
    /* The per-row sums hold (1 + d)·(p·p + p·dv) doubles: keep that far from overflow. */
    size_t p2, pdv, one, all, bytes;
    if (!nw_mul(out->p, out->p, &p2) || !nw_mul(out->p, dv, &pdv) || !nw_add(p2, pdv, &one) ||
        !nw_mul(one, d + 1, &all) || !nw_add(all, 4 * out->p + p2 + 2 * pdv, &all) ||
        !nw_mul(all, 2 * sizeof(double), &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "d = %zu and dv = %zu are too large", d, dv);
    return NWATTN_OK;
}

nwattn_status nw_check_finite(nwattn_context *ctx, const char *name, const float *a, size_t rows,
                              size_t cols, size_t ld) {
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            if (!isfinite(a[i * ld + j]))
                return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "%s[%zu][%zu] = %g is not finite",
                               name, i, j, (double)a[i * ld + j]);
    return NWATTN_OK;
}

nwattn_status nw_check_training(nw_call *call, size_t n, size_t d, size_t dv, const float *x,
                                size_t ldx, const float *y, size_t ldy) {
    NW_TRY(nw_input(call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_input(call, "y", y, n, dv, ldy, 0));
    NW_TRY(nw_check_finite(call->ctx, "x", x, n, d, ldx));
    return nw_check_finite(call->ctx, "y", y, n, dv, ldy);
}

nwattn_status nw_check_bandwidths(nwattn_context *ctx, const char *name, const float *h, size_t d) {
    if (h == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "%s is NULL", name);
    for (size_t k = 0; k < d; k++)
        if (!(isfinite(h[k]) && h[k] > 0.0f))
            return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER, "%s[%zu] = %g is not finite and > 0",
                           name, k, (double)h[k]);
    return NWATTN_OK;
}

nwattn_status nw_check_spread(nwattn_context *ctx, size_t n, size_t d, const float *x, size_t ldx,
                              size_t n_min) {
    if (n < n_min)
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                       "n = %zu training points; this needs at least %zu", n, n_min);
    for (size_t k = 0; k < d; k++) {
        size_t j = 1;
        while (j < n && x[j * ldx + k] == x[k])
            j++;
        if (j == n)
            return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                           "every x[.][%zu] equals %g: no spread to choose a bandwidth from", k,
                           (double)x[k]);
    }
    return NWATTN_OK;
}

nwattn_status nw_select_fast(nwattn_context *ctx, int *fast) {
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, 1, &kernels));
    *fast = kernels != &nw_reference_kernels;
    return NWATTN_OK;
}
