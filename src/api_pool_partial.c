/* nwattn_pool_partial: checks, then the backend's partial-state kernels over one key shard. */
#include "checks.h"
#include "pool.h"

static const char *const state_names[4] = {"state.acc", "state.max", "state.sum", "state"};

nwattn_status nwattn_pool_partial(nwattn_context *ctx, const nwattn_score *score,
                                  const nwattn_mask *mask, size_t batch, size_t m, size_t n,
                                  size_t d, size_t dv, size_t key_offset, const float *q,
                                  size_t ldq, size_t stride_q, const float *k, size_t ldk,
                                  size_t stride_k, const float *v, size_t ldv, size_t stride_v,
                                  const nwattn_pool_state *state) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    size_t end;
    if (!nw_add(key_offset, n, &end))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "key_offset + n overflows size_t");
    nw_pool_args args = {
        .simd = ctx->simd,
        .tiles = &ctx->tiles,
        .batch = batch, .heads = 1, .m = m, .n = n, .d = d, .dv = dv,
        .q = q, .ldq = ldq, .stride_q = stride_q,
        .k = k, .ldk = ldk, .stride_k = stride_k,
        .v = v, .ldv = ldv, .stride_v = stride_v,
    };
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_check_pool_inputs(&call, &args));
    NW_TRY(nw_check_score(&call, score, d, &args.score));
    NW_TRY(nw_check_state(&call, state_names, state, m, dv, 1));
    NW_TRY(nw_check_shard_mask(&call, mask, m, n, key_offset, &args.mask));
    NW_TRY(nw_check_disjoint(&call));
    args.o = state->acc;
    args.ldo = state->ld_acc;
    args.stride_o = state->stride_acc;
    args.state_max = state->max;
    args.state_sum = state->sum;
    args.stride_stats = state->stride_stats;
    nw_pooling pooling = {NULL, NW_DRIVER_TILED}; /* states exist tile by tile */
    NW_TRY(nw_select_kernels(ctx, nw_call_blas_ok(&call), &pooling.kernels));
    return nw_pool_run(ctx, &pooling, &args);
}
