/* Attention layers: X·W^T + b projections written head by head (heads × batch·t × width/heads,
 * so that head h of item b is a dense block: pointer + (h·batch + b)·t·width/heads, pitch
 * width/heads), a block of rows at a time while in cache (nw_heads_out). Dense blocks matter:
 * a head's columns of the (batch·t) × width projection are rows 2 KiB apart at width 512,
 * which fall into a few L1 sets and made the pooling of an 8 × 512 × 512, 8-head layer half
 * as slow again (its backward too); rows padded to an odd number of cache lines instead cost
 * the pooling as much as the rearranging saved (Zen 4). The pooling runs over batch × heads
 * items, writes the concatenated heads (batch·t) × d_v for the output projection. */
#include <string.h>

#include "attention.h"

/* Floats of the buffers: Q and C (t_q rows), K and V (t_kv rows), and the working buffer
 * (nw_attention_temp_floats). */
typedef struct layout {
    size_t q, k, v, c, temp;
} layout;

static int buffer_floats(const nw_attention_args *a, size_t threads, layout *out) {
    const nwattn_attention_params *p = a->params;
    size_t rows_q, rows_kv;
    if (!nw_mul(a->batch, a->t_q, &rows_q) || !nw_mul(a->batch, a->t_kv, &rows_kv) ||
        !nw_mul(rows_q, p->d_qk, &out->q) || !nw_mul(rows_kv, p->d_qk, &out->k) ||
        !nw_mul(rows_kv, p->d_v, &out->v) || !nw_mul(rows_q, p->d_v, &out->c))
        return 0;
    if (p->w_o == NULL)
        out->c = 0; /* the heads go straight into Y */
    out->temp = nw_attention_temp_floats(p, a->batch, a->t_q, a->t_kv, threads);
    return out->temp != SIZE_MAX;
}

size_t nw_attention_temp_floats(const nwattn_attention_params *p, size_t batch, size_t t_q,
                                size_t t_kv, size_t threads) {
    /* The projections' sizes are known to fit (nw_attention_saved_layout). */
    const size_t sizes[4] = {batch * t_q * p->d_qk, batch * t_kv * p->d_qk,
                             batch * t_kv * p->d_v, batch * t_q * p->d_v};
    size_t largest = 0, blocks;
    for (int i = 0; i < 4; i++)
        largest = sizes[i] > largest ? sizes[i] : largest;
    const size_t widest = p->d_qk > p->d_v ? p->d_qk : p->d_v;
    if (!nw_mul(threads, NW_LINEAR_ROWS, &blocks) || !nw_mul(blocks, widest, &blocks))
        return SIZE_MAX;
    return blocks > largest ? blocks : largest;
}

void nw_attention_to_heads(size_t rows, size_t heads, size_t width, const float *src,
                           float *dst) {
    const size_t dh = width / heads;
    for (size_t h = 0; h < heads; h++)
        for (size_t r = 0; r < rows; r++)
            memcpy(dst + (h * rows + r) * dh, src + r * width + h * dh, dh * sizeof(float));
}

void nw_attention_from_heads(size_t rows, size_t heads, size_t width, const float *src,
                             float *dst) {
    const size_t dh = width / heads;
    for (size_t r = 0; r < rows; r++)
        for (size_t h = 0; h < heads; h++)
            memcpy(dst + r * width + h * dh, src + (h * rows + r) * dh, dh * sizeof(float));
}

void nw_attention_aim_pool(const nw_attention_args *a, nw_pool_args *pool, const float *q,
                           const float *k, const float *v, float *o, size_t ldo,
                           size_t stride_o) {
    const nwattn_attention_params *p = a->params;
    const size_t dh = p->d_qk / p->heads, dvh = p->d_v / p->heads;
    const size_t tq = a->t_q, tkv = a->t_kv, items = a->batch;
    pool->q = q, pool->ldq = dh, pool->stride_q = tq * dh, pool->hstride_q = items * tq * dh;
    pool->k = k, pool->ldk = dh, pool->stride_k = tkv * dh, pool->hstride_k = items * tkv * dh;
    pool->v = v, pool->ldv = dvh, pool->stride_v = tkv * dvh, pool->hstride_v = items * tkv * dvh;
    pool->o = o, pool->ldo = ldo, pool->stride_o = stride_o, pool->hstride_o = dvh;
}

/* Points the pooling at the buffers (or at y for the concatenated heads without w_o). */
static void aim_pool(nw_attention_args *a, float *q, float *k, float *v, float *c) {
    if (a->params->w_o != NULL)
        nw_attention_aim_pool(a, &a->pool, q, k, v, c, a->params->d_v, a->t_q * a->params->d_v);
    else
        nw_attention_aim_pool(a, &a->pool, q, k, v, a->y, a->ldy, a->stride_y);
}

size_t nw_attention_workspace(const nw_pooling *pooling, nw_attention_args *a,
                              size_t threads) {
    layout f;
    if (!buffer_floats(a, threads, &f))
        return SIZE_MAX;
    aim_pool(a, NULL, NULL, NULL, NULL); /* the pooling's needs depend on the shapes only */
    size_t pool_bytes = nw_pooling_workspace(pooling, &a->pool, threads), total = 0;
    const size_t pieces[5] = {f.q, f.k, f.v, f.c, f.temp};
    for (int i = 0; i < 5; i++) {
        size_t bytes;
        if (!nw_mul(pieces[i], sizeof(float), &bytes) || !nw_add(total, nw_round_up(bytes), &total))
            return SIZE_MAX;
    }
    if (pool_bytes == SIZE_MAX || !nw_add(total, pool_bytes, &total))
        return SIZE_MAX;
    return total;
}

/* out (batch items of t rows, pitch ld_out, item pitch stride_out) = x·w^T + bias: one BLAS
 * call for all items when both sides are evenly spaced rows, else one per item. With heads,
 * out is head by head (nw_heads_out over all batch·t rows; ld_out, stride_out unused). */
static void project(const nw_kernels *kernels, nw_workers *workers, size_t batch, size_t t,
                    size_t out_w, size_t in_w, nw_seq x, const float *w, const float *bias,
                    float *out, size_t ld_out, size_t stride_out, nw_heads_out *heads) {
    if (batch == 0 || t == 0)
        return;
    const int even = x.stride == t * x.ld && (heads != NULL || stride_out == t * ld_out);
    if (batch == 1 || even) {
        kernels->linear(workers, batch * t, out_w, in_w, x.x, x.ld, w, bias, out, ld_out, heads);
        return;
    }
    for (size_t b = 0; b < batch; b++) {
        if (heads != NULL)
            heads->row0 = b * t;
        kernels->linear(workers, t, out_w, in_w, x.x + b * x.stride, x.ld, w, bias,
                        out + b * stride_out, ld_out, heads);
    }
}

void nw_attention_project_inputs(const nw_kernels *kernels, nw_workers *workers,
                                 const nw_attention_args *a, float *q, float *k, float *v,
                                 float *temp) {
    const nwattn_attention_params *p = a->params;
    nw_heads_out hq = {p->heads, a->batch * a->t_q, 0, temp};
    nw_heads_out hkv = {p->heads, a->batch * a->t_kv, 0, temp};
    project(kernels, workers, a->batch, a->t_q, p->d_qk, p->d_q_in, a->x_q, p->w_q, p->b_q, q,
            0, 0, &hq);
    project(kernels, workers, a->batch, a->t_kv, p->d_qk, p->d_k_in, a->x_k, p->w_k, p->b_k, k,
            0, 0, &hkv);
    hkv.row0 = 0;
    project(kernels, workers, a->batch, a->t_kv, p->d_v, p->d_v_in, a->x_v, p->w_v, p->b_v, v,
            0, 0, &hkv);
}

int nw_attention_saved_layout(const nwattn_attention_params *p, size_t batch, size_t t_q,
                              size_t t_kv, nw_saved_layout *out) {
    size_t rows_q, rows_kv, total;
    if (!nw_mul(batch, t_q, &rows_q) || !nw_mul(batch, t_kv, &rows_kv) ||
        !nw_mul(rows_q, p->d_qk, &out->q) || !nw_mul(rows_kv, p->d_qk, &out->k) ||
        !nw_mul(rows_kv, p->d_v, &out->v) || !nw_mul(rows_q, p->d_v, &out->c) ||
        !nw_mul(rows_q, p->heads, &out->lse) || !nw_add(out->q, out->k, &total) ||
        !nw_add(total, out->v, &total) || !nw_add(total, out->c, &total) ||
        !nw_add(total, out->lse, &out->total))
        return 0;
    return 1;
}

nw_saved_view nw_attention_saved_view(const nw_saved_layout *l, const float *saved) {
    nw_saved_view v = {saved, saved + l->q, saved + l->q + l->k, saved + l->q + l->k + l->v,
                       saved + l->q + l->k + l->v + l->c};
    return v;
}

size_t nw_attention_save_workspace(const nw_pooling *pooling, nw_attention_args *a,
                                   size_t threads) {
    nw_attention_aim_pool(a, &a->pool, NULL, NULL, NULL, NULL, a->params->d_v,
                          a->t_q * a->params->d_v); /* the needs depend on the shapes only */
    const size_t pool_bytes = nw_pooling_workspace(pooling, &a->pool, threads);
    size_t temp, total;
    if (pool_bytes == SIZE_MAX ||
        !nw_mul(nw_attention_temp_floats(a->params, a->batch, a->t_q, a->t_kv, threads),
                sizeof(float), &temp) ||
        !nw_add(nw_round_up(temp), pool_bytes, &total))
        return SIZE_MAX;
    return total;
}

/* The pooling of every head straight into c, heads side by side (row pitch d_v): the
 * concatenation the output projection reads. Only the reads of the pooling need dense blocks;
 * its writes, a tile's rows once at its end, do not (through a dense copy and back: 2.4 %
 * slower, Zen 4). */
static void pool_heads(const nw_pooling *pooling, nw_attention_args *a, const float *q,
                       const float *k, const float *v, float *c, void *pool_scratch,
                       nw_workers *workers) {
    nw_attention_aim_pool(a, &a->pool, q, k, v, c, a->params->d_v, a->t_q * a->params->d_v);
    nw_pooling_exec(pooling, &a->pool, pool_scratch, workers);
}

/* Y from the concatenated heads: the output projection, or C itself. */
static void output(const nw_pooling *pooling, const nw_attention_args *a, const float *c,
                   nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    if (p->w_o != NULL) {
        const nw_seq concat = {c, p->d_v, a->t_q * p->d_v};
        project(pooling->kernels, workers, a->batch, a->t_q, p->d_out, p->d_v, concat, p->w_o,
                p->b_o, a->y, a->ldy, a->stride_y, NULL);
        return;
    }
    for (size_t b = 0; b < a->batch; b++)
        for (size_t r = 0; r < a->t_q; r++)
            memcpy(a->y + b * a->stride_y + r * a->ldy, c + (b * a->t_q + r) * p->d_v,
                   p->d_v * sizeof(float));
}

void nw_attention_run_saved(const nw_pooling *pooling, nw_attention_args *a, float *saved,
                            void *workspace, nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    nw_saved_layout l;
    nw_attention_saved_layout(p, a->batch, a->t_q, a->t_kv, &l); /* checked by the caller */
    float *q = saved, *k = q + l.q, *v = k + l.k, *c = v + l.v, *lse = c + l.c;
    float *temp = workspace;
    void *pool_scratch =
        temp + nw_round_up(nw_attention_temp_floats(p, a->batch, a->t_q, a->t_kv, workers->threads) *
                           sizeof(float)) / sizeof(float);
    nw_attention_project_inputs(pooling->kernels, workers, a, q, k, v, temp);
    /* lse as (batch, heads, t_q), nwattn_pool's layout */
    a->pool.lse = lse, a->pool.stride_lse = p->heads * a->t_q, a->pool.hstride_lse = a->t_q;
    pool_heads(pooling, a, q, k, v, c, pool_scratch, workers);
    output(pooling, a, c, workers);
}

void nw_attention_run(const nw_pooling *pooling, nw_attention_args *a, void *workspace,
                      nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    layout f = {0, 0, 0, 0, 0};
    buffer_floats(a, workers->threads, &f); /* cannot fail: the workspace was sized with it */
    float *q = workspace;
    float *k = q + nw_round_up(f.q * sizeof(float)) / sizeof(float);
    float *v = k + nw_round_up(f.k * sizeof(float)) / sizeof(float);
    float *c = v + nw_round_up(f.v * sizeof(float)) / sizeof(float);
    float *temp = c + nw_round_up(f.c * sizeof(float)) / sizeof(float);
    void *pool_scratch = temp + nw_round_up(f.temp * sizeof(float)) / sizeof(float);

    nw_attention_project_inputs(pooling->kernels, workers, a, q, k, v, temp);
    if (p->w_o == NULL) { /* the heads straight into Y, the caller's layout */
        aim_pool(a, q, k, v, c);
        nw_pooling_exec(pooling, &a->pool, pool_scratch, workers);
        return;
    }
    pool_heads(pooling, a, q, k, v, c, pool_scratch, workers);
    output(pooling, a, c, workers);
}
