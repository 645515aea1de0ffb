/* nwattn_attention_backward: the forward's checks, dY and each requested gradient, then the
 * backward driver. */
#include "attention_backward.h"
#include "score/score_grad.h"

/* A dense rows×cols gradient of a weight or bias, if asked for. */
static nwattn_status check_dense(nw_call *call, const char *name, const float *g, size_t rows,
                                 size_t cols) {
    return g == NULL ? NWATTN_OK : nw_output_elems(call, name, g, sizeof(float), rows, cols, cols);
}

static nwattn_status check_grads(nw_call *call, const nw_attention_args *a,
                                 const nwattn_attention_grads *g) {
    const nwattn_attention_params *p = a->params;
    if (p->w_o == NULL && (g->dw_o != NULL || g->db_o != NULL))
        return nw_fail(call->ctx, NWATTN_ERR_BAD_PARAMETER,
                       "grads.%s is set but the layer has no output projection (params.w_o is "
                       "NULL)", g->dw_o != NULL ? "dw_o" : "db_o");
    if (g->dx_q != NULL)
        NW_TRY(nw_output(call, "grads.dx_q", g->dx_q, a->t_q, p->d_q_in, g->ld_dx_q,
                         g->stride_dx_q));
    if (g->dx_k != NULL)
        NW_TRY(nw_output(call, "grads.dx_k", g->dx_k, a->t_kv, p->d_k_in, g->ld_dx_k,
                         g->stride_dx_k));
    if (g->dx_v != NULL)
        NW_TRY(nw_output(call, "grads.dx_v", g->dx_v, a->t_kv, p->d_v_in, g->ld_dx_v,
                         g->stride_dx_v));
    NW_TRY(check_dense(call, "grads.dw_q", g->dw_q, p->d_qk, p->d_q_in));
    NW_TRY(check_dense(call, "grads.dw_k", g->dw_k, p->d_qk, p->d_k_in));
    NW_TRY(check_dense(call, "grads.dw_v", g->dw_v, p->d_v, p->d_v_in));
    NW_TRY(check_dense(call, "grads.dw_o", g->dw_o, p->d_out, p->d_v));
    NW_TRY(check_dense(call, "grads.db_q", g->db_q, 1, p->d_qk));
    NW_TRY(check_dense(call, "grads.db_k", g->db_k, 1, p->d_qk));
    NW_TRY(check_dense(call, "grads.db_v", g->db_v, 1, p->d_v));
    NW_TRY(check_dense(call, "grads.db_o", g->db_o, 1, p->d_out));
    return check_dense(call, "grads.d_score", g->d_score, 1,
                       nw_grad_params(&a->pool.score, a->pool.d));
}

/* Both backwards: with_saved 0 recomputes the forward (nwattn_attention_backward), 1 reads
 * nwattn_attention_save's activations. */
static nwattn_status backward(nwattn_context *ctx, const nwattn_attention_params *params,
                              const nwattn_score *score, const nwattn_mask *mask, size_t batch,
                              size_t t_q, size_t t_kv, nw_seq x_q, nw_seq x_k, nw_seq x_v,
                              const float *dy, size_t ldy, size_t stride_dy, int with_saved,
                              const float *saved, size_t saved_floats,
                              const nwattn_attention_grads *grads) {
    NW_TRY(nw_begin(ctx));
    if (grads == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "grads is NULL");
    nw_attention_bwd_args a = {
        .f = {.params = params, .batch = batch, .t_q = t_q, .t_kv = t_kv, .x_q = x_q,
              .x_k = x_k, .x_v = x_v},
        .dy = dy, .ldy = ldy, .stride_dy = stride_dy, .grads = grads,
    };
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_attention_check_inputs(&call, params, score, &a.f));
    const nwattn_attention_params *p = params;
    a.f.pool = (nw_pool_args){.simd = ctx->simd, .tiles = &ctx->tiles, .score = a.f.pool.score,
                              .batch = batch, .heads = p->heads, .m = t_q, .n = t_kv,
                              .d = p->d_qk / p->heads, .dv = p->d_v / p->heads};
    NW_TRY(nw_input(&call, "dy", dy, t_q, p->w_o ? p->d_out : p->d_v, ldy, stride_dy));
    if (with_saved) {
        NW_TRY(nw_attention_check_saved(&call, &a.f, saved, saved_floats, 0));
        nw_saved_layout layout;
        nw_attention_saved_layout(p, batch, t_q, t_kv, &layout); /* checked just now */
        a.saved = layout.total > 0 ? saved : NULL; /* nothing to read: nothing to recompute */
    }
    NW_TRY(check_grads(&call, &a.f, grads));
    NW_TRY(nw_check_mask(&call, mask, t_q, t_kv, &a.f.pool.mask));
    nw_backward_args gs = {.batch = batch, .m = t_q, .n = t_kv, .mask = a.f.pool.mask};
    NW_TRY(nw_backward_check_gs(&call, "grads.d_additive", grads->d_additive,
                                grads->ld_d_additive, grads->stride_d_additive, &gs));
    NW_TRY(nw_check_disjoint(&call));
    nw_pooling pooling;
    NW_TRY(nw_select_pooling(ctx, nw_attention_blas_ok(&call, p), t_kv <= NW_BLAS_INT_MAX,
                             &a.f.pool, &pooling));
    if (batch == 0)
        return NWATTN_OK;
    void *ws;
    NW_TRY(nw_workspace(ctx, nw_attention_backward_workspace(&pooling, &a, ctx->workers.threads),
                        &ws));
    nw_attention_backward_run(&pooling, &a, ws, &ctx->workers);
    return NWATTN_OK;
}

nwattn_status nwattn_attention_backward(nwattn_context *ctx,
                                        const nwattn_attention_params *params,
                                        const nwattn_score *score, const nwattn_mask *mask,
                                        size_t batch, size_t t_q, size_t t_kv, const float *x_q,
                                        size_t ldx_q, size_t stride_x_q, const float *x_k,
                                        size_t ldx_k, size_t stride_x_k, const float *x_v,
                                        size_t ldx_v, size_t stride_x_v, const float *dy,
                                        size_t ldy, size_t stride_dy,
                                        const nwattn_attention_grads *grads) {
    return backward(ctx, params, score, mask, batch, t_q, t_kv, (nw_seq){x_q, ldx_q, stride_x_q},
                    (nw_seq){x_k, ldx_k, stride_x_k}, (nw_seq){x_v, ldx_v, stride_x_v}, dy, ldy,
                    stride_dy, 0, NULL, 0, grads);
}

nwattn_status nwattn_attention_backward_saved(
    nwattn_context *ctx, const nwattn_attention_params *params, const nwattn_score *score,
    const nwattn_mask *mask, size_t batch, size_t t_q, size_t t_kv, const float *x_q,
    size_t ldx_q, size_t stride_x_q, const float *x_k, size_t ldx_k, size_t stride_x_k,
    const float *x_v, size_t ldx_v, size_t stride_x_v, const float *dy, size_t ldy,
    size_t stride_dy, const float *saved, size_t saved_floats,
    const nwattn_attention_grads *grads) {
    return backward(ctx, params, score, mask, batch, t_q, t_kv, (nw_seq){x_q, ldx_q, stride_x_q},
                    (nw_seq){x_k, ldx_k, stride_x_k}, (nw_seq){x_v, ldx_v, stride_x_v}, dy, ldy,
                    stride_dy, 1, saved, saved_floats, grads);
}
