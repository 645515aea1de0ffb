/* nwattn_average_pool: the pooling driver with every score zero, so weights are uniform over
 * the keys the mask keeps. */
#include "checks.h"
#include "score/score.h"
#include "pool.h"

nwattn_status nwattn_average_pool(nwattn_context *ctx, const nwattn_mask *mask, size_t batch,
                                  size_t m, size_t n, size_t dv, const float *v, size_t ldv,
                                  size_t stride_v, float *o, size_t ldo, size_t stride_o) {
    NW_TRY(nw_begin(ctx));
    /* No queries: q points at v with zero pitch and d = 0, and is never read. */
    nw_pool_args args = {
        .simd = ctx->simd,
        .tiles = &ctx->tiles,
        .score = {.desc = &nw_score_uniform},
        .batch = batch, .heads = 1, .m = m, .n = n, .d = 0, .dv = dv,
        .q = v, .ldq = 0, .stride_q = 0,
        .k = v, .ldk = 0, .stride_k = 0,
        .v = v, .ldv = ldv, .stride_v = stride_v,
        .o = o, .ldo = ldo, .stride_o = stride_o,
    };
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_input(&call, "v", v, n, dv, ldv, stride_v));
    NW_TRY(nw_output(&call, "o", o, m, dv, ldo, stride_o));
    NW_TRY(nw_check_mask(&call, mask, m, n, &args.mask));
    NW_TRY(nw_check_disjoint(&call));
    nw_pooling pooling;
    NW_TRY(nw_select_pooling(ctx, nw_call_blas_ok(&call), n <= NW_BLAS_INT_MAX, &args,
                                  &pooling));
    return nw_pool_run(ctx, &pooling, &args);
}
