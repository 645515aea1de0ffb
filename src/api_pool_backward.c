/* nwattn_pool_backward: checks every operand, then runs the fused tiles or the reference. */
#include <math.h>

#include "backward.h"
#include "checks.h"
#include "pool.h"
#include "score/score_grad.h"

/* The parameter gradient the score has, and the one field of grads meant for it. */
static nwattn_status check_param_outputs(nw_call *call, const nwattn_pool_grads *g,
                                         const nw_score *score, size_t d, float **out) {
    nwattn_context *ctx = call->ctx;
    const int scaled = score->kind == NWATTN_SCORE_DOT || score->kind == NWATTN_SCORE_COSINE;
    const int per_dim = !scaled && score->bandwidths != NULL;
    const char *kind = score->desc->name;
    if (g->d_scale != NULL && !scaled)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "grads.d_scale is set but a %s score has no scale", kind);
    if (g->d_bandwidth != NULL && (scaled || per_dim))
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "grads.d_bandwidth is set but the %s score has %s", kind,
                       scaled ? "no bandwidth" : "per-dimension bandwidths (use d_bandwidths)");
    if (g->d_bandwidths != NULL && !per_dim)
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "grads.d_bandwidths is set but the %s score has %s", kind,
                       scaled ? "no bandwidth" : "one bandwidth (use d_bandwidth)");
    *out = scaled ? g->d_scale : per_dim ? g->d_bandwidths : g->d_bandwidth;
    if (*out != NULL)
        NW_TRY(nw_output_elems(call, per_dim ? "grads.d_bandwidths" : scaled ? "grads.d_scale"
                                                                         : "grads.d_bandwidth",
                               *out, sizeof(float), 1, per_dim ? d : 1, per_dim ? d : 1));
    return NWATTN_OK;
}

nwattn_status nw_backward_check_gs(nw_call *call, const char *name, float *gs, size_t ld,
                                   size_t stride, nw_backward_args *a) {
    if (gs == NULL)
        return NWATTN_OK;
    if (a->mask.additive == NULL)
        return nw_fail(call->ctx, NWATTN_ERR_BAD_PARAMETER,
                       "%s is set but the mask has no additive part", name);
    a->gs = gs;
    a->ld_gs = ld;
    a->stride_gs = stride;
    a->gs_shared = a->batch > 1 && a->mask.stride_additive == 0;
    if (a->gs_shared)
        return nw_output_elems(call, name, gs, sizeof(float), a->m, a->n, ld);
    return nw_output(call, name, gs, a->m, a->n, ld, stride);
}

nwattn_status nwattn_pool_backward(nwattn_context *ctx, const nwattn_score *score,
                                   const nwattn_mask *mask, size_t batch, size_t m, size_t n,
                                   size_t d, size_t dv, const float *q, size_t ldq,
                                   size_t stride_q, const float *k, size_t ldk,
                                   size_t stride_k, const float *v, size_t ldv,
                                   size_t stride_v, const nwattn_pool_upstream *up,
                                   const nwattn_pool_grads *grads) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    if (up == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "upstream (O, lse, dO) is NULL");
    if (grads == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "grads is NULL");
    nw_pool_args f = {
        .batch = batch, .heads = 1, .m = m, .n = n, .d = d, .dv = dv,
        .q = q, .ldq = ldq, .stride_q = stride_q,
        .k = k, .ldk = ldk, .stride_k = stride_k,
        .v = v, .ldv = ldv, .stride_v = stride_v,
    };
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_check_pool_inputs(&call, &f));
    NW_TRY(nw_input(&call, "upstream.o", up->o, m, dv, up->ldo, up->stride_o));
    NW_TRY(nw_input(&call, "upstream.lse", up->lse, 1, m, m > 0 ? m : 1, up->stride_lse));
    NW_TRY(nw_input(&call, "upstream.d_o", up->d_o, m, dv, up->ld_do, up->stride_do));
    nw_backward_args a = {
        .simd = ctx->simd,
        .batch = batch, .m = m, .n = n, .d = d, .dv = dv,
        .q = q, .ldq = ldq, .stride_q = stride_q,
        .k = k, .ldk = ldk, .stride_k = stride_k,
        .v = v, .ldv = ldv, .stride_v = stride_v,
        .o = up->o, .ldo = up->ldo, .stride_o = up->stride_o,
        .lse = up->lse, .stride_lse = up->stride_lse,
        .d_o = up->d_o, .ld_do = up->ld_do, .stride_d_o = up->stride_do,
        .gq = grads->d_q, .ld_gq = grads->ld_dq, .stride_gq = grads->stride_dq,
        .gk = grads->d_k, .ld_gk = grads->ld_dk, .stride_gk = grads->stride_dk,
        .gv = grads->d_v, .ld_gv = grads->ld_dv, .stride_gv = grads->stride_dv,
    };
    NW_TRY(nw_check_score(&call, score, d, &a.score));
    NW_TRY(nw_output(&call, "grads.d_q", a.gq, m, d, a.ld_gq, a.stride_gq));
    NW_TRY(nw_output(&call, "grads.d_k", a.gk, n, d, a.ld_gk, a.stride_gk));
    NW_TRY(nw_output(&call, "grads.d_v", a.gv, n, dv, a.ld_gv, a.stride_gv));
    NW_TRY(check_param_outputs(&call, grads, &a.score, d, &a.dparam));
    NW_TRY(nw_check_mask(&call, mask, m, n, &a.mask));
    NW_TRY(nw_backward_check_gs(&call, "grads.d_additive", grads->d_additive,
                                grads->ld_d_additive, grads->stride_d_additive, &a));
    NW_TRY(nw_check_disjoint(&call));
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, nw_call_blas_ok(&call), &kernels));
    if (batch == 0)
        return NWATTN_OK;
    if (m == 0 || n == 0) {
        nw_backward_zero(&a);
        return NWATTN_OK;
    }
    void *scratch;
    if (kernels == &nw_reference_kernels || !nw_backward_fusable(&a)) {
        NW_TRY(nw_workspace(ctx, nw_ref_backward_workspace(&a), &scratch));
        nw_ref_backward(&a, scratch);
        return NWATTN_OK;
    }
    NW_TRY(nw_workspace(ctx, nw_fused_backward_workspace(&a, ctx->workers.threads), &scratch));
    nw_fused_backward(&a, scratch, &ctx->workers);
    return NWATTN_OK;
}
