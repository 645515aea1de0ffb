/* nwattn_attention: checks the layer's weights and sequences, then runs the attention driver. */
#include <math.h>

#include "attention.h"
#include "score/score.h"

static nwattn_status check_params(nwattn_context *ctx, const nwattn_attention_params *p) {
    if (p == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "params is NULL");
    if (p->heads == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "params.heads is 0");
    const struct {
        const char *name;
        size_t value;
    } widths[] = {{"d_q_in", p->d_q_in}, {"d_k_in", p->d_k_in}, {"d_v_in", p->d_v_in},
                  {"d_qk", p->d_qk},     {"d_v", p->d_v},       {"d_out", p->w_o ? p->d_out : 1}};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        if (widths[i].value == 0)
            return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "params.%s is 0", widths[i].name);
    if (p->d_qk % p->heads != 0 || p->d_v % p->heads != 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION,
                       "params.heads = %zu does not divide d_qk = %zu and d_v = %zu", p->heads,
                       p->d_qk, p->d_v);
    return NWATTN_OK;
}

/* A dense rows×cols weight matrix, or a bias (rows = 1); NULL is allowed for biases. */
static nwattn_status check_weight(nw_call *call, const char *name, const float *w, size_t rows,
                                  size_t cols, int optional) {
    if (w == NULL && optional)
        return NWATTN_OK;
    size_t count;
    if (!nw_mul(rows, cols, &count))
        return nw_fail(call->ctx, NWATTN_ERR_OVERFLOW, "%s has more elements than size_t holds",
                       name);
    return nw_input_array(call, name, w, sizeof(float), count);
}

nwattn_status nw_attention_check_inputs(nw_call *call, const nwattn_attention_params *params,
                                        const nwattn_score *score, nw_attention_args *a) {
    nwattn_context *ctx = call->ctx;
    NW_TRY(check_params(ctx, params));
    const nwattn_attention_params *p = params;
    const size_t dh = p->d_qk / p->heads;
    NW_TRY(nw_input(call, "x_q", a->x_q.x, a->t_q, p->d_q_in, a->x_q.ld, a->x_q.stride));
    NW_TRY(nw_input(call, "x_k", a->x_k.x, a->t_kv, p->d_k_in, a->x_k.ld, a->x_k.stride));
    NW_TRY(nw_input(call, "x_v", a->x_v.x, a->t_kv, p->d_v_in, a->x_v.ld, a->x_v.stride));
    NW_TRY(check_weight(call, "params.w_q", p->w_q, p->d_qk, p->d_q_in, 0));
    NW_TRY(check_weight(call, "params.w_k", p->w_k, p->d_qk, p->d_k_in, 0));
    NW_TRY(check_weight(call, "params.w_v", p->w_v, p->d_v, p->d_v_in, 0));
    NW_TRY(check_weight(call, "params.w_o", p->w_o, p->d_out, p->d_v, 1));
    NW_TRY(check_weight(call, "params.b_q", p->b_q, 1, p->d_qk, 1));
    NW_TRY(check_weight(call, "params.b_k", p->b_k, 1, p->d_qk, 1));
    NW_TRY(check_weight(call, "params.b_v", p->b_v, 1, p->d_v, 1));
    if (p->w_o != NULL)
        NW_TRY(check_weight(call, "params.b_o", p->b_o, 1, p->d_out, 1));
    else if (p->b_o != NULL) /* a bias the layer would ignore: the caller meant something */
        return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                       "params.b_o is set but the layer has no output projection (params.w_o "
                       "is NULL)");
    if (score == NULL)
        a->pool.score = (nw_score){&nw_score_dot, NWATTN_SCORE_DOT,
                                   (float)(1.0 / sqrt((double)dh)), 0.0f, NULL};
    else
        NW_TRY(nw_check_score(call, score, dh, &a->pool.score));
    return NWATTN_OK;
}

int nw_attention_blas_ok(const nw_call *call, const nwattn_attention_params *p) {
    /* Every width is also a leading dimension of a BLAS call on the working memory. */
    const size_t out_w = p->w_o ? p->d_out : p->d_v;
    const size_t widest = p->d_q_in > p->d_k_in ? p->d_q_in : p->d_k_in;
    return nw_call_blas_ok(call) && widest <= NW_BLAS_INT_MAX && p->d_v_in <= NW_BLAS_INT_MAX &&
           p->d_qk <= NW_BLAS_INT_MAX && p->d_v <= NW_BLAS_INT_MAX && out_w <= NW_BLAS_INT_MAX;
}

/* The first checks of nwattn_attention and nwattn_attention_save: the layer, the sequences,
 * the score and Y, into a (no weights output) and call. */
static nwattn_status begin_forward(nwattn_context *ctx, const nwattn_attention_params *p,
                                   const nwattn_score *score, size_t batch, size_t t_q,
                                   size_t t_kv, nw_seq x_q, nw_seq x_k, nw_seq x_v, float *y,
                                   size_t ldy, size_t stride_y, nw_attention_args *a,
                                   nw_call *call) {
    NW_TRY(nw_begin(ctx));
    NW_TRY(check_params(ctx, p));
    *a = (nw_attention_args){
        .params = p, .batch = batch, .t_q = t_q, .t_kv = t_kv, .x_q = x_q, .x_k = x_k,
        .x_v = x_v, .y = y, .ldy = ldy, .stride_y = stride_y,
        .pool = {.simd = ctx->simd, .tiles = &ctx->tiles, .batch = batch, .heads = p->heads,
                 .m = t_q, .n = t_kv, .d = p->d_qk / p->heads, .dv = p->d_v / p->heads},
    };
    nw_call_init(call, ctx, batch);
    NW_TRY(nw_attention_check_inputs(call, p, score, a));
    return nw_output(call, "y", y, t_q, p->w_o ? p->d_out : p->d_v, ldy, stride_y);
}

/* The checks both forwards share after their own outputs: the mask, the operands' overlaps,
 * and the pooling's choice. */
static nwattn_status check_rest(nw_call *call, nw_attention_args *a, const nwattn_mask *mask,
                                nw_pooling *pooling) {
    NW_TRY(nw_check_mask(call, mask, a->t_q, a->t_kv, &a->pool.mask));
    NW_TRY(nw_check_disjoint(call));
    return nw_select_pooling(call->ctx, nw_attention_blas_ok(call, a->params),
                             a->t_kv <= NW_BLAS_INT_MAX, &a->pool, pooling);
}

nwattn_status nwattn_attention(nwattn_context *ctx, const nwattn_attention_params *params,
                               const nwattn_score *score, const nwattn_mask *mask, size_t batch,
                               size_t t_q, size_t t_kv, const float *x_q, size_t ldx_q,
                               size_t stride_x_q, const float *x_k, size_t ldx_k,
                               size_t stride_x_k, const float *x_v, size_t ldx_v,
                               size_t stride_x_v, float *y, size_t ldy, size_t stride_y,
                               float *weights, size_t ldw, size_t stride_w) {
    nw_attention_args a;
    nw_call call;
    NW_TRY(begin_forward(ctx, params, score, batch, t_q, t_kv, (nw_seq){x_q, ldx_q, stride_x_q},
                         (nw_seq){x_k, ldx_k, stride_x_k}, (nw_seq){x_v, ldx_v, stride_x_v}, y,
                         ldy, stride_y, &a, &call));
    const nwattn_attention_params *p = params;
    a.pool.w = weights, a.pool.ldw = ldw, a.pool.stride_w = stride_w, a.pool.hstride_w = t_q * ldw;
    if (weights != NULL) {
        size_t rows;
        if (!nw_mul(p->heads, t_q, &rows))
            return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "heads·t_q overflows size_t");
        NW_TRY(nw_output(&call, "weights", weights, rows, t_kv, ldw, stride_w));
    }
    nw_pooling pooling;
    NW_TRY(check_rest(&call, &a, mask, &pooling));
    if (batch == 0 || t_q == 0)
        return NWATTN_OK;
    void *ws;
    NW_TRY(nw_workspace(ctx, nw_attention_workspace(&pooling, &a, ctx->workers.threads), &ws));
    nw_attention_run(&pooling, &a, ws, &ctx->workers);
    return NWATTN_OK;
}

nwattn_status nw_attention_check_saved(nw_call *call, const nw_attention_args *a,
                                       const float *saved, size_t saved_floats, int output) {
    nw_saved_layout l;
    if (!nw_attention_saved_layout(a->params, a->batch, a->t_q, a->t_kv, &l))
        return nw_fail(call->ctx, NWATTN_ERR_OVERFLOW,
                       "the saved activations have more floats than size_t holds");
    if (saved_floats < l.total)
        return nw_fail(call->ctx, NWATTN_ERR_BAD_DIMENSION,
                       "saved_floats = %zu is less than the %zu floats the activations take "
                       "(nwattn_attention_saved_floats)", saved_floats, l.total);
    if (l.total == 0)
        return NWATTN_OK;
    return output ? nw_output_elems(call, "saved", saved, sizeof(float), 1, l.total, l.total)
                  : nw_input_array(call, "saved", saved, sizeof(float), l.total);
}

nwattn_status nwattn_attention_saved_floats(nwattn_context *ctx,
                                            const nwattn_attention_params *params,
                                            size_t batch, size_t t_q, size_t t_kv,
                                            size_t *floats) {
    NW_TRY(nw_begin(ctx));
    if (floats == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "floats is NULL");
    NW_TRY(check_params(ctx, params));
    nw_saved_layout l;
    if (!nw_attention_saved_layout(params, batch, t_q, t_kv, &l))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW,
                       "the saved activations have more floats than size_t holds");
    *floats = l.total;
    return NWATTN_OK;
}

nwattn_status nwattn_attention_save(nwattn_context *ctx, const nwattn_attention_params *params,
                                    const nwattn_score *score, const nwattn_mask *mask,
                                    size_t batch, size_t t_q, size_t t_kv, const float *x_q,
                                    size_t ldx_q, size_t stride_x_q, const float *x_k,
                                    size_t ldx_k, size_t stride_x_k, const float *x_v,
                                    size_t ldx_v, size_t stride_x_v, float *y, size_t ldy,
                                    size_t stride_y, float *saved, size_t saved_floats) {
    nw_attention_args a;
    nw_call call;
    NW_TRY(begin_forward(ctx, params, score, batch, t_q, t_kv, (nw_seq){x_q, ldx_q, stride_x_q},
                         (nw_seq){x_k, ldx_k, stride_x_k}, (nw_seq){x_v, ldx_v, stride_x_v}, y,
                         ldy, stride_y, &a, &call));
    NW_TRY(nw_attention_check_saved(&call, &a, saved, saved_floats, 1));
    nw_pooling pooling;
    NW_TRY(check_rest(&call, &a, mask, &pooling));
    if (batch == 0 || t_q == 0)
        return NWATTN_OK;
    void *ws;
    NW_TRY(nw_workspace(ctx, nw_attention_save_workspace(&pooling, &a, ctx->workers.threads),
                        &ws));
    nw_attention_run_saved(&pooling, &a, saved, ws, &ctx->workers);
    return NWATTN_OK;
}
