/* Attention layers: X·W^T + b projections, the pooling of every head (batch × heads items),
 * the output projection of the concatenated heads (batch·t) × d_v.
 *
 * Two layouts of the projections. nwattn_attention keeps them as the projections write them,
 * heads side by side in padded rows (row_pitch), and the pooling reads each head as a column
 * slice. nwattn_attention_save keeps them head by head (heads × batch·t × width/heads: head h of
 * item b is a dense block at (h·batch + b)·t·width/heads, pitch width/heads), the layout its
 * backward reads them in and nwattn.h documents; they pass through one working buffer to be
 * rearranged. Either way a head's rows never sit a power of two apart: at width 512 they would
 * be 2 KiB apart, fall into a few L1 sets and make the pooling of an 8 × 512 × 512, 8-head
 * layer half as slow again (its backward too). The two give the same bits (the same products
 * on the same numbers; test_attention_backward's saved_same_bits). */
#include <string.h>

#include "attention.h"

/* Row pitch of nwattn_attention's Q, K, V and C: rows of a whole even number of 64-byte lines
 * get one more (width 512: 528 floats), an odd number of lines, so that consecutive rows start
 * in different L1 sets (64 rows of a tile: 64 sets). Narrow or unaligned rows stay as they are.
 * Saves the rearranging of nwattn_attention_save: 1.7 % of the 8 × 512 × 512, 8-head layer
 * (one thread, Zen 4; the copies alone were 7 %, the column slices cost some of it back). */
#define LINE_FLOATS ((size_t)16)

static size_t row_pitch(size_t width) {
    if (width < 4 * LINE_FLOATS || width % LINE_FLOATS != 0 || (width / LINE_FLOATS) % 2 != 0 ||
        width > NW_BLAS_INT_MAX - LINE_FLOATS)
        return width;
    return width + LINE_FLOATS;
}

/* Floats of the buffers Q and C (t_q rows), K and V (t_kv rows) at their row pitches. */
typedef struct layout {
    size_t q, k, v, c;
} layout;

static int buffer_floats(const nw_attention_args *a, layout *out) {
    const nwattn_attention_params *p = a->params;
    size_t rows_q, rows_kv;
    if (!nw_mul(a->batch, a->t_q, &rows_q) || !nw_mul(a->batch, a->t_kv, &rows_kv) ||
        !nw_mul(rows_q, row_pitch(p->d_qk), &out->q) ||
        !nw_mul(rows_kv, row_pitch(p->d_qk), &out->k) ||
        !nw_mul(rows_kv, row_pitch(p->d_v), &out->v) ||
        !nw_mul(rows_q, row_pitch(p->d_v), &out->c))
        return 0;
    if (p->w_o == NULL)
        out->c = 0; /* the heads go straight into Y */
    return 1;
}

size_t nw_attention_projection_floats(const nwattn_attention_params *p, size_t batch, size_t t_q,
                                      size_t t_kv) {
    /* Only called once these products are known to fit (nw_attention_saved_layout). */
    const size_t sizes[4] = {batch * t_q * p->d_qk, batch * t_kv * p->d_qk,
                             batch * t_kv * p->d_v, batch * t_q * p->d_v};
    size_t largest = 0;
    for (int i = 0; i < 4; i++)
        largest = sizes[i] > largest ? sizes[i] : largest;
    return largest;
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

/* Points the pooling at Q, K, V with heads side by side (row pitches as row_pitch), the
 * output at C or, without w_o, at y. */
static void aim_pool(nw_attention_args *a, const float *q, const float *k, const float *v,
                     float *c) {
    const nwattn_attention_params *p = a->params;
    const size_t pq = row_pitch(p->d_qk), pv = row_pitch(p->d_v);
    nw_pool_args *pool = &a->pool;
    pool->q = q, pool->ldq = pq, pool->stride_q = a->t_q * pq, pool->hstride_q = p->d_qk / p->heads;
    pool->k = k, pool->ldk = pq, pool->stride_k = a->t_kv * pq, pool->hstride_k = pool->hstride_q;
    pool->v = v, pool->ldv = pv, pool->stride_v = a->t_kv * pv, pool->hstride_v = p->d_v / p->heads;
    pool->hstride_o = pool->hstride_v;
    if (p->w_o != NULL)
        pool->o = c, pool->ldo = pv, pool->stride_o = a->t_q * pv;
    else
        pool->o = a->y, pool->ldo = a->ldy, pool->stride_o = a->stride_y;
}

size_t nw_attention_workspace(const nw_pooling *pooling, nw_attention_args *a,
                              size_t threads) {
    layout f;
    if (!buffer_floats(a, &f))
        return SIZE_MAX;
    aim_pool(a, NULL, NULL, NULL, NULL); /* the pooling's needs depend on the shapes only */
    size_t pool_bytes = nw_pooling_workspace(pooling, &a->pool, threads), total = 0;
    const size_t pieces[4] = {f.q, f.k, f.v, f.c};
    for (int i = 0; i < 4; i++) {
        size_t bytes;
        if (!nw_mul(pieces[i], sizeof(float), &bytes) || !nw_add(total, nw_round_up(bytes), &total))
            return SIZE_MAX;
    }
    if (pool_bytes == SIZE_MAX || !nw_add(total, pool_bytes, &total))
        return SIZE_MAX;
    return total;
}

/* out (batch items of t rows, pitch ld_out, item pitch stride_out) = x·w^T + bias: one BLAS
 * call for all items when both sides are evenly spaced rows, else one per item. */
static void project(const nw_kernels *kernels, nw_workers *workers, size_t batch, size_t t,
                    size_t out_w, size_t in_w, nw_seq x, const float *w, const float *bias,
                    float *out, size_t ld_out, size_t stride_out) {
    if (batch == 0 || t == 0)
        return;
    if (batch == 1 || (x.stride == t * x.ld && stride_out == t * ld_out)) {
        kernels->linear(workers, batch * t, out_w, in_w, x.x, x.ld, w, bias, out, ld_out);
        return;
    }
    for (size_t b = 0; b < batch; b++)
        kernels->linear(workers, t, out_w, in_w, x.x + b * x.stride, x.ld, w, bias,
                        out + b * stride_out, ld_out);
}

void nw_attention_project_inputs(const nw_kernels *kernels, nw_workers *workers,
                                 const nw_attention_args *a, float *q, float *k, float *v,
                                 float *temp) {
    const nwattn_attention_params *p = a->params;
    const size_t rq = a->batch * a->t_q, rkv = a->batch * a->t_kv;
    project(kernels, workers, a->batch, a->t_q, p->d_qk, p->d_q_in, a->x_q, p->w_q, p->b_q,
            temp, p->d_qk, a->t_q * p->d_qk);
    nw_attention_to_heads(rq, p->heads, p->d_qk, temp, q);
    project(kernels, workers, a->batch, a->t_kv, p->d_qk, p->d_k_in, a->x_k, p->w_k, p->b_k,
            temp, p->d_qk, a->t_kv * p->d_qk);
    nw_attention_to_heads(rkv, p->heads, p->d_qk, temp, k);
    project(kernels, workers, a->batch, a->t_kv, p->d_v, p->d_v_in, a->x_v, p->w_v, p->b_v,
            temp, p->d_v, a->t_kv * p->d_v);
    nw_attention_to_heads(rkv, p->heads, p->d_v, temp, v);
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
        !nw_mul(nw_attention_projection_floats(a->params, a->batch, a->t_q, a->t_kv),
                sizeof(float), &temp) ||
        !nw_add(nw_round_up(temp), pool_bytes, &total))
        return SIZE_MAX;
    return total;
}

/* The pooling of every head into temp, head by head (dense blocks), then the heads side by side
 * into c (row pitch d_v): the concatenation the output projection reads. */
static void pool_heads(const nw_pooling *pooling, nw_attention_args *a, const float *q,
                       const float *k, const float *v, float *c, float *temp,
                       void *pool_scratch, nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    const size_t dvh = p->d_v / p->heads, rows = a->batch * a->t_q;
    nw_attention_aim_pool(a, &a->pool, q, k, v, temp, dvh, a->t_q * dvh);
    a->pool.hstride_o = rows * dvh;
    nw_pooling_exec(pooling, &a->pool, pool_scratch, workers);
    nw_attention_from_heads(rows, p->heads, p->d_v, temp, c);
}

/* Y from the concatenated heads: the output projection, or C itself. */
static void output(const nw_pooling *pooling, const nw_attention_args *a, const float *c,
                   nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    if (p->w_o != NULL) {
        const nw_seq concat = {c, p->d_v, a->t_q * p->d_v};
        project(pooling->kernels, workers, a->batch, a->t_q, p->d_out, p->d_v, concat, p->w_o,
                p->b_o, a->y, a->ldy, a->stride_y);
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
        temp + nw_round_up(nw_attention_projection_floats(p, a->batch, a->t_q, a->t_kv) *
                           sizeof(float)) / sizeof(float);
    nw_attention_project_inputs(pooling->kernels, workers, a, q, k, v, temp);
    /* lse as (batch, heads, t_q), nwattn_pool's layout */
    a->pool.lse = lse, a->pool.stride_lse = p->heads * a->t_q, a->pool.hstride_lse = a->t_q;
    pool_heads(pooling, a, q, k, v, c, temp, pool_scratch, workers);
    output(pooling, a, c, workers);
}

void nw_attention_run(const nw_pooling *pooling, nw_attention_args *a, void *workspace,
                      nw_workers *workers) {
    const nwattn_attention_params *p = a->params;
    layout f = {0, 0, 0, 0};
    buffer_floats(a, &f); /* cannot fail: the workspace was sized with it */
    float *q = workspace;
    float *k = q + nw_round_up(f.q * sizeof(float)) / sizeof(float);
    float *v = k + nw_round_up(f.k * sizeof(float)) / sizeof(float);
    float *c = v + nw_round_up(f.v * sizeof(float)) / sizeof(float);
    void *pool_scratch = c + nw_round_up(f.c * sizeof(float)) / sizeof(float);
    const size_t pq = row_pitch(p->d_qk), pv = row_pitch(p->d_v);
    project(pooling->kernels, workers, a->batch, a->t_q, p->d_qk, p->d_q_in, a->x_q, p->w_q,
            p->b_q, q, pq, a->t_q * pq);
    project(pooling->kernels, workers, a->batch, a->t_kv, p->d_qk, p->d_k_in, a->x_k, p->w_k,
            p->b_k, k, pq, a->t_kv * pq);
    project(pooling->kernels, workers, a->batch, a->t_kv, p->d_v, p->d_v_in, a->x_v, p->w_v,
            p->b_v, v, pv, a->t_kv * pv);
    aim_pool(a, q, k, v, c);
    nw_pooling_exec(pooling, &a->pool, pool_scratch, workers);
    if (p->w_o != NULL) {
        const nw_seq concat = {c, pv, a->t_q * pv};
        project(pooling->kernels, workers, a->batch, a->t_q, p->d_out, p->d_v, concat, p->w_o,
                p->b_o, a->y, a->ldy, a->stride_y);
    }
}
