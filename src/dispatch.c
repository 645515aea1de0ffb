/* Backend selection: one table of kernels per backend, chosen per call from the context. */
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
        *out = &nw_fused_kernels;
        return NWATTN_OK;
    case NWATTN_BACKEND_AUTO:
        *out = blas_ok ? &nw_blas_kernels : &nw_reference_kernels;
        return NWATTN_OK;
    }
    return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown backend %d", (int)ctx->backend);
}

/* AUTO's choice between the unfused and the fused pooling (see NWATTN_BACKEND_AUTO in
 * nwattn.h for the measurements behind it). The unfused path wins while a block of scores
 * stays in cache-friendly sizes and the caller wants the weights anyway; the fused path wins
 * for many keys, and whenever the context has worker threads to spread its units over. */
static int prefer_fused(const nwattn_context *ctx, const nw_pool_args *a) {
    if (a->w != NULL)
        return 0; /* the weights are materialised anyway */
    if (ctx->threads > 1 && a->batch * a->heads * a->m >= 2 * 64)
        return 1; /* at least two query blocks to spread */
    return a->n >= NW_AUTO_FUSED_MIN_KEYS;
}

nwattn_status nw_select_pool_kernels(nwattn_context *ctx, int blas_ok, int n_ok,
                                     const nw_pool_args *args, const nw_kernels **out) {
    if (ctx->backend == NWATTN_BACKEND_BLAS && !n_ok)
        return too_large(ctx, "BLAS");
    if (ctx->backend != NWATTN_BACKEND_AUTO)
        return nw_select_kernels(ctx, blas_ok, out);
    if (!blas_ok)
        *out = &nw_reference_kernels;
    else if (!n_ok || prefer_fused(ctx, args))
        *out = &nw_fused_kernels;
    else
        *out = &nw_blas_kernels;
    return NWATTN_OK;
}
