/* Backend selection: one table of kernels per backend, chosen per call from the context. */
#include "internal.h"

nwattn_status nw_select_kernels(nwattn_context *ctx, int blas_ok, const nw_kernels **out) {
    switch (ctx->backend) {
    case NWATTN_BACKEND_REFERENCE:
        *out = &nw_reference_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_BLAS:
        if (!blas_ok)
            return nw_fail(ctx, NWATTN_ERR_TOO_LARGE,
                           "a leading dimension exceeds the BLAS integer maximum %u; use "
                           "NWATTN_BACKEND_AUTO or _REFERENCE for such layouts",
                           NW_BLAS_INT_MAX);
        *out = &nw_blas_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_AUTO:
        *out = blas_ok ? &nw_blas_kernels : &nw_reference_kernels;
        return NWATTN_OK;
    }
    return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown backend %d", (int)ctx->backend);
}
