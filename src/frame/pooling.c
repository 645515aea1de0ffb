/* A pooling run: its driver (unfused or tiled) over its provider (nw_pooling). */
#include "frame/tiled.h"
#include "pool.h"

static int tiled(const nw_pooling *p, const nw_pool_args *a) {
    return p->driver == NW_DRIVER_TILED || a->state_max != NULL;
}

size_t nw_pooling_workspace(const nw_pooling *p, const nw_pool_args *a, size_t threads) {
    if (tiled(p, a))
        return nw_tiled_workspace(p->kernels->tiles, a, threads, a->state_max != NULL);
    return nw_pool_unfused_workspace(p->kernels, a);
}

void nw_pooling_exec(const nw_pooling *p, const nw_pool_args *a, void *scratch,
                     nw_workers *workers) {
    if (tiled(p, a))
        nw_tiled_run(p->kernels->tiles, a, scratch, workers, a->state_max != NULL);
    else
        nw_pool_unfused(p->kernels, a, scratch);
}

nwattn_status nw_pool_run(nwattn_context *ctx, const nw_pooling *p, const nw_pool_args *args) {
    if (nw_pool_is_empty(args))
        return NWATTN_OK;
    nw_pool_args run = *args;
    run.simd = ctx->simd; /* whoever built the arguments: the context's vector kernels */
    void *ws;
    NW_TRY(nw_workspace(ctx, nw_pooling_workspace(p, &run, ctx->workers.threads), &ws));
    nw_pooling_exec(p, &run, ws, &ctx->workers);
    return NWATTN_OK;
}
