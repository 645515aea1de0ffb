/* Backend selection: each public backend is a provider (ref/, blas/) and, for poolings, a
 * driver (frame/), chosen per call from the context. */
#include "pool.h"

static nwattn_status too_large(nwattn_context *ctx, const char *backend) {
    return nw_fail(ctx, NWATTN_ERR_TOO_LARGE,
                   "a leading dimension exceeds the BLAS integer maximum %u; use "
                   "NWATTN_BACKEND_AUTO or _REFERENCE for such layouts (backend %s)",
                   NW_BLAS_INT_MAX, backend);
}

nwattn_status nw_select_kernels(nwattn_context *ctx, int blas_ok, const nw_kernels **out) {
    switch (ctx->backend) {
    case NWATTN_BACKEND_REFERENCE:
        *out = &nw_reference_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_BLAS:
        if (!blas_ok)
            return too_large(ctx, "BLAS");
        *out = &nw_blas_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_FUSED: /* nothing to fuse outside a pooling: the BLAS kernels */
        if (!blas_ok)
            return too_large(ctx, "FUSED");
        *out = &nw_blas_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_AUTO:
        *out = blas_ok ? &nw_blas_kernels : &nw_reference_kernels;
        return NWATTN_OK;
    }
    return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown backend %d", (int)ctx->backend);
}

/* AUTO's choice between the unfused and the fused pooling (the measurements are quoted at
 * NWATTN_BACKEND_AUTO in nwattn.h): fused for rows up to 128 wide and 32 keys or more, where
 * it was faster at every size measured; unfused for wider rows, where both are GEMM-bound and
 * the unfused path's two large products use the BLAS better. The choice depends on the shape
 * only, never on which optional outputs are requested, so asking for the weights or lse does
 * not change the output by a single bit. */
static int prefer_fused(const nw_pool_args *a) {
    return a->n >= NW_AUTO_FUSED_MIN_KEYS && a->d <= NW_AUTO_FUSED_MAX_WIDTH &&
           a->dv <= NW_AUTO_FUSED_MAX_WIDTH;
}

nwattn_status nw_select_pooling(nwattn_context *ctx, int blas_ok, int n_ok,
                                const nw_pool_args *args, nw_pooling *out) {
    if (ctx->backend == NWATTN_BACKEND_BLAS && !n_ok)
        return too_large(ctx, "BLAS");
    NW_TRY(nw_select_kernels(ctx, blas_ok, &out->kernels));
    switch (ctx->backend) {
    case NWATTN_BACKEND_BLAS:
        out->driver = NW_DRIVER_UNFUSED;
        break;
    case NWATTN_BACKEND_AUTO:
        out->driver = out->kernels == &nw_blas_kernels && n_ok && !prefer_fused(args)
                          ? NW_DRIVER_UNFUSED
                          : NW_DRIVER_TILED;
        break;
    default: /* REFERENCE and FUSED */
        out->driver = NW_DRIVER_TILED;
        break;
    }
    return NWATTN_OK;
}
