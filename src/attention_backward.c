/* The attention layer's backward pass (nwattn_attention_backward): the forward again into
 * working memory (Q, K, V head by head as attention.c lays them out, the concatenated heads C
 * and each head's lse), or those activations as nwattn_attention_save kept them; then the
 * output projection's gradients, dense per-head copies of C and dC, each head's pooling
 * backward (backward.h) on dense blocks, and the input projections' gradients with their
 * heads side by side again. */
#include <string.h>

#include "attention_backward.h"
#include "blas/blas_kernels.h"
#include "ref/ref_kernels.h"
#include "score/score_grad.h"

/* Floats of the buffers, in the order they are carved. */
enum { BUF_Q, BUF_K, BUF_V, BUF_C, BUF_LSE, BUF_DC, BUF_DQ, BUF_DK, BUF_DV, BUF_PARAM, BUF_TEMP,
       BUF_CH, BUF_DCH, BUFS };

static int buffer_floats(const nw_attention_bwd_args *a, size_t threads, size_t out[BUFS]) {
    const nwattn_attention_params *p = a->f.params;
    size_t rq, rkv, heads_rows;
    if (!nw_mul(a->f.batch, a->f.t_q, &rq) || !nw_mul(a->f.batch, a->f.t_kv, &rkv) ||
        !nw_mul(rq, p->d_qk, &out[BUF_Q]) || !nw_mul(rkv, p->d_qk, &out[BUF_K]) ||
        !nw_mul(rkv, p->d_v, &out[BUF_V]) || !nw_mul(rq, p->d_v, &out[BUF_C]) ||
        !nw_mul(rq, p->heads, &heads_rows) ||
        !nw_mul(p->heads, nw_grad_params(&a->f.pool.score, a->f.pool.d), &out[BUF_PARAM]))
        return 0;
    out[BUF_LSE] = heads_rows;
    out[BUF_DC] = out[BUF_C];
    out[BUF_DQ] = out[BUF_Q], out[BUF_DK] = out[BUF_K], out[BUF_DV] = out[BUF_V];
    out[BUF_TEMP] = nw_attention_temp_floats(p, a->f.batch, a->f.t_q, a->f.t_kv, threads);
    out[BUF_CH] = out[BUF_DCH] = out[BUF_C];
    return out[BUF_TEMP] != SIZE_MAX;
}

/* Head h's backward arguments over the activations in and the gradient buffers buf (buf NULL:
 * the shapes only, for sizing). */
static nw_backward_args head_args(const nw_attention_bwd_args *a, const nw_saved_view *in,
                                  float *const *buf, size_t h) {
    const nwattn_attention_params *p = a->f.params;
    const nw_pool_args *pool = &a->f.pool;
    const size_t dh = pool->d, dvh = pool->dv, tq = a->f.t_q, tkv = a->f.t_kv;
    nw_backward_args b = {
        .simd = pool->simd, .score = pool->score, .mask = pool->mask,
        .batch = a->f.batch, .m = tq, .n = tkv, .d = dh, .dv = dvh,
        /* Q, K, V and their gradients head by head, dense (attention.c); C and dC heads
         * side by side. */
        .ldq = dh, .stride_q = tq * dh,
        .ldk = dh, .stride_k = tkv * dh,
        .ldv = dvh, .stride_v = tkv * dvh,
        .ldo = dvh, .stride_o = tq * dvh,
        .stride_lse = p->heads * tq,
        .ld_do = dvh, .stride_d_o = tq * dvh,
        .ld_gq = dh, .stride_gq = tq * dh,
        .ld_gk = dh, .stride_gk = tkv * dh,
        .ld_gv = dvh, .stride_gv = tkv * dvh,
    };
    if (buf == NULL)
        return b;
    const size_t rq = a->f.batch * tq, rkv = a->f.batch * tkv; /* rows of a head's block */
    b.q = in->q + h * rq * dh, b.k = in->k + h * rkv * dh, b.v = in->v + h * rkv * dvh;
    b.o = buf[BUF_CH] + h * rq * dvh, b.lse = in->lse + h * tq;
    b.d_o = buf[BUF_DCH] + h * rq * dvh;
    b.gq = buf[BUF_DQ] + h * rq * dh, b.gk = buf[BUF_DK] + h * rkv * dh;
    b.gv = buf[BUF_DV] + h * rkv * dvh;
    b.dparam = buf[BUF_PARAM] + h * nw_grad_params(&b.score, dh);
    const nwattn_attention_grads *g = a->grads;
    if (g->d_additive != NULL) { /* the heads share the mask: each adds its dS after head 0 */
        b.gs = g->d_additive, b.ld_gs = g->ld_d_additive, b.stride_gs = g->stride_d_additive;
        b.gs_shared = a->f.batch > 1 && pool->mask.stride_additive == 0;
        b.gs_adds = h > 0;
    }
    return b;
}

size_t nw_attention_backward_workspace(const nw_pooling *pooling, nw_attention_bwd_args *a,
                                       size_t threads) {
    size_t floats[BUFS], total = 0;
    if (!buffer_floats(a, threads, floats))
        return SIZE_MAX;
    for (int i = a->saved != NULL ? BUF_DC : 0; i < BUFS; i++) {
        size_t bytes;
        if (!nw_mul(floats[i], sizeof(float), &bytes) ||
            !nw_add(total, nw_round_up(bytes), &total))
            return SIZE_MAX;
    }
    const nw_backward_args head = head_args(a, NULL, NULL, 0);
    size_t scratch = a->saved != NULL ? 0 : nw_pooling_workspace(pooling, &a->f.pool, threads);
    const size_t ref = nw_ref_backward_workspace(&head);
    const size_t fused = nw_fused_backward_workspace(&head, threads);
    scratch = ref > scratch ? ref : scratch;
    scratch = fused > scratch ? fused : scratch;
    if (scratch == SIZE_MAX || !nw_add(total, scratch, &total))
        return SIZE_MAX;
    return total;
}

/* ---- Products of the projections' gradients ------------------------------------------- */
/* dw (out_w × in_w, dense) = sum over items b of G_b^T X_b, G_b t × out_w (pitch ldg, item
 * pitch stride_g): in double (reference) or through sgemm. */
static void weight_grad(int reference, size_t batch, size_t t, size_t out_w, size_t in_w,
                        const float *g, size_t ldg, size_t stride_g, nw_seq x, float *dw) {
    if (dw == NULL)
        return;
    if (reference || t == 0) {
        for (size_t o = 0; o < out_w; o++)
            for (size_t i = 0; i < in_w; i++) {
                double sum = 0.0;
                for (size_t b = 0; b < batch; b++)
                    for (size_t r = 0; r < t; r++)
                        sum += (double)g[b * stride_g + r * ldg + o] *
                               (double)x.x[b * x.stride + r * x.ld + i];
                dw[o * in_w + i] = (float)sum;
            }
        return;
    }
    for (size_t b = 0; b < batch; b++)
        nw_blas_sgemm_tn(out_w, in_w, t, 1.0f, g + b * stride_g, ldg, x.x + b * x.stride, x.ld,
                         b == 0 ? 0.0f : 1.0f, dw, in_w);
}

/* db (out_w) = the column sums of every G_b, in double, over items and rows in order. Columns
 * a block at a time, each row's block read whole: a column at a time walked G with a stride of
 * ldg floats (6 % of an MHA layer's backward, 8×512×512). */
#define BIAS_BLOCK 256
static void bias_grad(size_t batch, size_t t, size_t out_w, const float *g, size_t ldg,
                      size_t stride_g, float *db) {
    for (size_t o0 = 0; db != NULL && o0 < out_w; o0 += BIAS_BLOCK) {
        const size_t cols = out_w - o0 < BIAS_BLOCK ? out_w - o0 : BIAS_BLOCK;
        double sum[BIAS_BLOCK] = {0.0};
        for (size_t b = 0; b < batch; b++)
            for (size_t r = 0; r < t; r++) {
                const float *row = g + b * stride_g + r * ldg + o0;
                for (size_t o = 0; o < cols; o++)
                    sum[o] += (double)row[o];
            }
        for (size_t o = 0; o < cols; o++)
            db[o0 + o] = (float)sum[o];
    }
}

/* dX_b = G_b W (t × in_w, pitch ld_dx, item pitch stride_dx). */
static void input_grad(const nw_kernels *kernels, size_t batch, size_t t, size_t out_w,
                       size_t in_w, const float *g, size_t ldg, size_t stride_g, const float *w,
                       float *dx, size_t ld_dx, size_t stride_dx) {
    for (size_t b = 0; dx != NULL && b < batch && t > 0; b++)
        kernels->gemm(t, in_w, out_w, g + b * stride_g, ldg, w, in_w, dx + b * stride_dx,
                      ld_dx);
}

/* The gradients of one input projection X' = X W^T + b from dX' (the buffer g). */
static void projection_grads(const nw_kernels *kernels, size_t batch, size_t t, size_t out_w,
                             size_t in_w, const float *g, nw_seq x, const float *w, float *dw,
                             float *db, float *dx, size_t ld_dx, size_t stride_dx) {
    const int reference = kernels == &nw_reference_kernels;
    weight_grad(reference, batch, t, out_w, in_w, g, out_w, t * out_w, x, dw);
    bias_grad(batch, t, out_w, g, out_w, t * out_w, db);
    input_grad(kernels, batch, t, out_w, in_w, g, out_w, t * out_w, w, dx, ld_dx, stride_dx);
}

static float *next(float *at, size_t floats) {
    return at + nw_round_up(floats * sizeof(float)) / sizeof(float);
}

void nw_attention_backward_run(const nw_pooling *pooling, nw_attention_bwd_args *a,
                               void *workspace, nw_workers *workers) {
    const nwattn_attention_params *p = a->f.params;
    const nwattn_attention_grads *g = a->grads;
    const nw_kernels *kernels = pooling->kernels;
    const size_t batch = a->f.batch, tq = a->f.t_q, tkv = a->f.t_kv;
    size_t floats[BUFS] = {0};
    buffer_floats(a, workers->threads, floats); /* cannot fail: the workspace was sized with it */
    float *buf[BUFS] = {NULL};
    const int first = a->saved != NULL ? BUF_DC : 0; /* the buffers in working memory */
    buf[first] = workspace;
    for (int i = first + 1; i < BUFS; i++)
        buf[i] = next(buf[i - 1], floats[i - 1]);
    void *scratch = next(buf[BUFS - 1], floats[BUFS - 1]);

    nw_saved_view in;
    if (a->saved != NULL) {
        nw_saved_layout layout;
        nw_attention_saved_layout(p, batch, tq, tkv, &layout); /* checked by the caller */
        in = nw_attention_saved_view(&layout, a->saved);
    } else { /* the forward, keeping C and lse */
        nw_attention_project_inputs(kernels, workers, &a->f, buf[BUF_Q], buf[BUF_K],
                                    buf[BUF_V], buf[BUF_TEMP]);
        nw_pool_args pool = a->f.pool;
        nw_attention_aim_pool(&a->f, &pool, buf[BUF_Q], buf[BUF_K], buf[BUF_V], buf[BUF_C],
                              p->d_v, tq * p->d_v);
        pool.lse = buf[BUF_LSE], pool.stride_lse = p->heads * tq, pool.hstride_lse = tq;
        pool.w = NULL;
        nw_pooling_exec(pooling, &pool, scratch, workers);
        in = (nw_saved_view){buf[BUF_Q], buf[BUF_K], buf[BUF_V], buf[BUF_C], buf[BUF_LSE]};
    }

    /* Output projection: dC = dY W_o, or dY itself. */
    const nw_seq concat = {in.c, p->d_v, tq * p->d_v};
    if (p->w_o != NULL) {
        weight_grad(kernels == &nw_reference_kernels, batch, tq, p->d_out, p->d_v, a->dy,
                    a->ldy, a->stride_dy, concat, g->dw_o);
        bias_grad(batch, tq, p->d_out, a->dy, a->ldy, a->stride_dy, g->db_o);
        input_grad(kernels, batch, tq, p->d_out, p->d_v, a->dy, a->ldy, a->stride_dy, p->w_o,
                   buf[BUF_DC], p->d_v, tq * p->d_v);
    } else {
        for (size_t b = 0; b < batch; b++)
            for (size_t r = 0; r < tq; r++)
                memcpy(buf[BUF_DC] + (b * tq + r) * p->d_v, a->dy + b * a->stride_dy + r * a->ldy,
                       p->d_v * sizeof(float));
    }

    nw_attention_to_heads(batch * tq, p->heads, p->d_v, in.c, buf[BUF_CH]);
    nw_attention_to_heads(batch * tq, p->heads, p->d_v, buf[BUF_DC], buf[BUF_DCH]);
    /* Each head's pooling backward, one after the other (each spreads over the workers). */
    for (size_t h = 0; h < p->heads; h++) {
        const nw_backward_args head = head_args(a, &in, buf, h);
        if (tq == 0 || tkv == 0)
            nw_backward_zero(&head);
        else if (kernels == &nw_reference_kernels || !nw_backward_fusable(&head))
            nw_ref_backward(&head, scratch);
        else
            nw_fused_backward(&head, scratch, workers);
    }
    const size_t params = nw_grad_params(&a->f.pool.score, a->f.pool.d);
    for (size_t l = 0; g->d_score != NULL && l < params; l++) {
        double sum = 0.0;
        for (size_t h = 0; h < p->heads; h++)
            sum += (double)buf[BUF_PARAM][h * params + l];
        g->d_score[l] = (float)sum;
    }

    /* Each projection's gradient with its heads side by side again, then its products. */
    float *t = buf[BUF_TEMP];
    nw_attention_from_heads(batch * tq, p->heads, p->d_qk, buf[BUF_DQ], t);
    projection_grads(kernels, batch, tq, p->d_qk, p->d_q_in, t, a->f.x_q, p->w_q, g->dw_q,
                     g->db_q, g->dx_q, g->ld_dx_q, g->stride_dx_q);
    nw_attention_from_heads(batch * tkv, p->heads, p->d_qk, buf[BUF_DK], t);
    projection_grads(kernels, batch, tkv, p->d_qk, p->d_k_in, t, a->f.x_k, p->w_k, g->dw_k,
                     g->db_k, g->dx_k, g->ld_dx_k, g->stride_dx_k);
    nw_attention_from_heads(batch * tkv, p->heads, p->d_v, buf[BUF_DV], t);
    projection_grads(kernels, batch, tkv, p->d_v, p->d_v_in, t, a->f.x_v, p->w_v, g->dw_v,
                     g->db_v, g->dx_v, g->ld_dx_v, g->stride_dx_v);
}
