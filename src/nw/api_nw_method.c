/* nwattn_context_set_nw_method / _get_nw_method: how the regression rows are computed;
 * nwattn_context_set_nw_tolerance / _get_nw_tolerance: the Gaussian fast sums' bound. */
#include "nw.h"

nwattn_status nwattn_context_set_nw_method(nwattn_context *ctx, nwattn_nw_method method) {
    NW_TRY(nw_begin(ctx));
    switch (method) {
    case NWATTN_NW_METHOD_AUTO:
    case NWATTN_NW_METHOD_DIRECT:
    case NWATTN_NW_METHOD_FASTSUM:
        ctx->nw_method = method;
        return NWATTN_OK;
    }
    return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown regression method %d", (int)method);
}

nwattn_nw_method nwattn_context_get_nw_method(const nwattn_context *ctx) {
    return ctx ? ctx->nw_method : NWATTN_NW_METHOD_AUTO;
}

nwattn_status nwattn_context_set_nw_tolerance(nwattn_context *ctx, double tolerance) {
    NW_TRY(nw_begin(ctx));
    if (!(tolerance >= 1e-15 && tolerance <= 1e-2))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "tolerance %g is not within [1e-15, 1e-2]", tolerance);
    ctx->nw_tolerance = tolerance;
    return NWATTN_OK;
}

double nwattn_context_get_nw_tolerance(const nwattn_context *ctx) {
    return ctx && ctx->nw_tolerance > 0.0 ? ctx->nw_tolerance : NWATTN_NW_TOLERANCE_DEFAULT;
}
