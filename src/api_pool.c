/* nwattn_pool: checks every operand, then runs the pooling driver. */
#include "checks.h"
#include "pool.h"

nwattn_status nwattn_pool(nwattn_context *ctx, const nwattn_score *score,
                          const nwattn_mask *mask, size_t batch, size_t m, size_t n, size_t d,
                          size_t dv, const float *q, size_t ldq, size_t stride_q,
                          const float *k, size_t ldk, size_t stride_k, const float *v,
                          size_t ldv, size_t stride_v, float *o, size_t ldo, size_t stride_o,
                          float *weights, size_t ldw, size_t stride_w, float *lse,
                          size_t stride_lse) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    nw_pool_args args = {
        .simd = ctx->simd,
        .tiles = &ctx->tiles,
        .batch = batch, .heads = 1, .m = m, .n = n, .d = d, .dv = dv,
        .q = q, .ldq = ldq, .stride_q = stride_q,
        .k = k, .ldk = ldk, .stride_k = stride_k,
        .v = v, .ldv = ldv, .stride_v = stride_v,
        .o = o, .ldo = ldo, .stride_o = stride_o,
        .w = weights, .ldw = ldw, .stride_w = stride_w,
        .lse = lse, .stride_lse = stride_lse,
    };
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_check_pool_inputs(&call, &args));
    NW_TRY(nw_check_score(&call, score, d, &args.score));
    NW_TRY(nw_output(&call, "o", o, m, dv, ldo, stride_o));
    if (weights != NULL)
        NW_TRY(nw_output(&call, "weights", weights, m, n, ldw, stride_w));
    if (lse != NULL)
        NW_TRY(nw_output(&call, "lse", lse, 1, m, m > 0 ? m : 1, stride_lse));
    NW_TRY(nw_check_mask(&call, mask, m, n, &args.mask));
    NW_TRY(nw_check_disjoint(&call));
    /* The unfused path's block of scores has leading dimension n. */
    nw_pooling pooling;
    NW_TRY(nw_select_pooling(ctx, nw_call_blas_ok(&call), n <= NW_BLAS_INT_MAX, &args,
                                  &pooling));
    return nw_pool_run(ctx, &pooling, &args);
}
