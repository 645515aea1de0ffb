/* Attention layers: nn.MultiheadAttention's formula (a numpy fixture in PyTorch's parameter
 * layout), multi-head against a per-head loop of the core primitives for cross-attention with
 * every width different, masks and score kinds, the seed's single-head SelfAttention, T = 1,
 * no keys, errors; and the positional encoding against its closed form. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>

#include "attn_testutil.h"
#include "fixtures/mha_fixture.h"

static const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                          NWATTN_BACKEND_FUSED, NWATTN_BACKEND_AUTO};

/* ---- PyTorch's nn.MultiheadAttention --------------------------------------------------- */
static nwattn_attention_params pytorch_params(void) {
    const size_t E = FX_E;
    nwattn_attention_params p = {.heads = FX_H, .d_q_in = E, .d_k_in = E, .d_v_in = E,
                                 .d_qk = E, .d_v = E, .d_out = E};
    p.w_q = fx_in_proj_weight, p.w_k = fx_in_proj_weight + E * E;
    p.w_v = fx_in_proj_weight + 2 * E * E;
    p.b_q = fx_in_proj_bias, p.b_k = fx_in_proj_bias + E, p.b_v = fx_in_proj_bias + 2 * E;
    p.w_o = fx_out_proj_weight, p.b_o = fx_out_proj_bias;
    return p;
}

static void test_pytorch_fixture(void **state) {
    (void)state;
    const nwattn_attention_params p = pytorch_params();
    const size_t E = FX_E, H = FX_H, B = FX_B;
    for (size_t bk = 0; bk < 4; bk++)
        for (size_t threads = 1; threads <= 2; threads++) {
            nwattn_context *ctx = at_context(backends[bk], threads);
            float y[FX_B * 4 * FX_E], w[FX_B * FX_H * 4 * 5];
            /* cross-attention: 3 queries over 5 keys */
            AT_OK(ctx, nwattn_attention(ctx, &p, NULL, NULL, B, 3, 5, fx_cross_xq, E, 3 * E,
                                        fx_cross_xkv, E, 5 * E, fx_cross_xkv, E, 5 * E, y, E,
                                        3 * E, w, 5, H * 3 * 5));
            assert_true(at_close("pytorch cross y", 1, 1, B * 3 * E, y, 0, 0, fx_cross_y, 0, 0,
                                 1e-5, 1e-5));
            assert_true(at_close("pytorch cross weights", 1, 1, B * H * 3 * 5, w, 0, 0,
                                 fx_cross_weights, 0, 0, 1e-6, 1e-5));
            /* causal self-attention, T = 4 */
            nwattn_mask causal = {.flags = NWATTN_MASK_CAUSAL};
            AT_OK(ctx, nwattn_attention(ctx, &p, NULL, &causal, B, 4, 4, fx_self_x, E, 4 * E,
                                        fx_self_x, E, 4 * E, fx_self_x, E, 4 * E, y, E, 4 * E, w,
                                        4, H * 4 * 4));
            assert_true(at_close("pytorch self y", 1, 1, B * 4 * E, y, 0, 0, fx_self_y, 0, 0,
                                 1e-5, 1e-5));
            assert_true(at_close("pytorch self weights", 1, 1, B * H * 4 * 4, w, 0, 0,
                                 fx_self_weights, 0, 0, 1e-6, 1e-5));
            nwattn_context_destroy(ctx);
        }
}

/* ---- Against a per-head loop of the core primitives ------------------------------------ */
/* y (rows × out, pitch ldy) = x·w^T + b in double, x rows of pitch ldx. */
static void linear(size_t rows, size_t out, size_t in, const float *x, size_t ldx,
                   const float *w, const float *b, float *y, size_t ldy) {
    for (size_t i = 0; i < rows; i++)
        for (size_t o = 0; o < out; o++) {
            double sum = b ? b[o] : 0.0;
            for (size_t p = 0; p < in; p++)
                sum += (double)x[i * ldx + p] * (double)w[o * in + p];
            y[i * ldy + o] = (float)sum;
        }
}

typedef struct layer {
    nwattn_attention_params p;
    float *w[4], *b[4];
} layer;

static layer make_layer(at_rng *r, size_t heads, size_t dqi, size_t dki, size_t dvi, size_t dh,
                        size_t dvh, size_t dout, int biases, int out_proj) {
    layer l;
    memset(&l, 0, sizeof l);
    nwattn_attention_params *p = &l.p;
    *p = (nwattn_attention_params){heads, dqi, dki, dvi, heads * dh, heads * dvh, dout,
                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    const size_t rows[4] = {p->d_qk, p->d_qk, p->d_v, dout}, cols[4] = {dqi, dki, dvi, p->d_v};
    for (int i = 0; i < 4; i++) {
        l.w[i] = at_random(r, rows[i] * cols[i], -0.5f, 0.5f);
        l.b[i] = biases ? at_random(r, rows[i], -0.3f, 0.3f) : NULL;
    }
    p->w_q = l.w[0], p->w_k = l.w[1], p->w_v = l.w[2], p->w_o = out_proj ? l.w[3] : NULL;
    p->b_q = l.b[0], p->b_k = l.b[1], p->b_v = l.b[2], p->b_o = l.b[3];
    return l;
}

static void free_layer(layer *l) {
    for (int i = 0; i < 4; i++)
        free(l->w[i]), free(l->b[i]);
}

/* The expected layer output: projections in double, then nwattn_pool (REFERENCE) per batch
 * item and head on column slices, then the output projection. Weights as (B, H, t_q, t_kv). */
static void per_head_loop(const layer *l, const nwattn_score *score, const nwattn_mask *mask,
                          size_t batch, size_t tq, size_t tkv, const float *xq, size_t ldxq,
                          size_t sxq, const float *xkv, size_t ldxkv, size_t sxkv, float *y,
                          size_t ldy, size_t sy, float *weights) {
    const nwattn_attention_params *p = &l->p;
    const size_t H = p->heads, dh = p->d_qk / H, dvh = p->d_v / H;
    float *q = at_filled(batch * tq * p->d_qk + 1, 0.0f), *k = at_filled(batch * tkv * p->d_qk + 1, 0.0f);
    float *v = at_filled(batch * tkv * p->d_v + 1, 0.0f), *c = at_filled(batch * tq * p->d_v + 1, 0.0f);
    nwattn_context *ctx = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_score dot = {NWATTN_SCORE_DOT, (float)(1.0 / sqrt((double)dh)), 0.0f, NULL};
    for (size_t b = 0; b < batch; b++) {
        linear(tq, p->d_qk, p->d_q_in, xq + b * sxq, ldxq, p->w_q, p->b_q, q + b * tq * p->d_qk, p->d_qk);
        linear(tkv, p->d_qk, p->d_k_in, xkv + b * sxkv, ldxkv, p->w_k, p->b_k, k + b * tkv * p->d_qk, p->d_qk);
        linear(tkv, p->d_v, p->d_v_in, xkv + b * sxkv, ldxkv, p->w_v, p->b_v, v + b * tkv * p->d_v, p->d_v);
        /* the item's own mask: one batch item of the caller's */
        nwattn_mask item = mask ? *mask : (nwattn_mask){0};
        if (item.valid_lens)
            item.valid_lens += (item.flags & NWATTN_MASK_LENS_PER_ROW) ? b * tq : b;
        if (item.additive)
            item.additive += b * item.stride_additive;
        if (item.keep)
            item.keep += b * item.stride_keep;
        for (size_t h = 0; h < H; h++)
            AT_OK(ctx, nwattn_pool(ctx, score ? score : &dot, &item, 1, tq, tkv, dh, dvh,
                                   q + b * tq * p->d_qk + h * dh, p->d_qk, 0,
                                   k + b * tkv * p->d_qk + h * dh, p->d_qk, 0,
                                   v + b * tkv * p->d_v + h * dvh, p->d_v, 0,
                                   c + b * tq * p->d_v + h * dvh, p->d_v, 0,
                                   weights ? weights + (b * H + h) * tq * tkv : NULL, tkv, 0,
                                   NULL, 0));
        if (p->w_o)
            linear(tq, p->d_out, p->d_v, c + b * tq * p->d_v, p->d_v, p->w_o, p->b_o, y + b * sy, ldy);
        else
            for (size_t i = 0; i < tq; i++)
                memcpy(y + b * sy + i * ldy, c + (b * tq + i) * p->d_v, p->d_v * sizeof(float));
    }
    nwattn_context_destroy(ctx);
    free(q), free(k), free(v), free(c);
}

static void check_layer(at_rng *r, const layer *l, const nwattn_score *score,
                        const nwattn_mask *mask, size_t batch, size_t tq, size_t tkv) {
    const nwattn_attention_params *p = &l->p;
    const size_t width_in = p->d_q_in > p->d_k_in ? p->d_q_in : p->d_k_in;
    const size_t in_w = width_in > p->d_v_in ? width_in : p->d_v_in;
    /* Keys and values come from one padded sequence (the first d_k_in / d_v_in columns). */
    const size_t ldxq = p->d_q_in + 2, sxq = tq * ldxq + 3, ldkv = in_w + 1, skv = tkv * ldkv + 1;
    float *xq = at_random(r, batch * sxq + 1, -1.0f, 1.0f);
    float *xkv = at_random(r, batch * skv + 1, -1.0f, 1.0f);
    const size_t out_w = p->w_o ? p->d_out : p->d_v, ldy = out_w + 1, sy = tq * ldy + 2;
    float *want = at_filled(batch * sy + 1, 0.0f), *got = at_filled(batch * sy + 1, 0.0f);
    const size_t wcount = batch * p->heads * tq * tkv + 1;
    float *want_w = at_filled(wcount, 0.0f), *got_w = at_filled(wcount, 0.0f);
    per_head_loop(l, score, mask, batch, tq, tkv, xq, ldxq, sxq, xkv, ldkv, skv, want, ldy, sy,
                  want_w);
    for (size_t bk = 0; bk < 4; bk++) {
        nwattn_context *ctx = at_context(backends[bk], bk == 2 ? 3 : 1);
        AT_OK(ctx, nwattn_attention(ctx, p, score, mask, batch, tq, tkv, xq, ldxq, sxq, xkv, ldkv,
                                    skv, xkv, ldkv, skv, got, ldy, sy, got_w, tkv,
                                    p->heads * tq * tkv));
        char what[64];
        snprintf(what, sizeof what, "layer y, backend %d", (int)backends[bk]);
        assert_true(at_close(what, batch, tq, out_w, got, ldy, sy, want, ldy, sy, 1e-4, 1e-4));
        snprintf(what, sizeof what, "layer weights, backend %d", (int)backends[bk]);
        assert_true(at_close(what, 1, 1, wcount - 1, got_w, 0, 0, want_w, 0, 0, 1e-5, 1e-4));
        /* without weights: the same output */
        float *again = at_filled(batch * sy + 1, 0.0f);
        AT_OK(ctx, nwattn_attention(ctx, p, score, mask, batch, tq, tkv, xq, ldxq, sxq, xkv, ldkv,
                                    skv, xkv, ldkv, skv, again, ldy, sy, NULL, 0, 0));
        assert_true(at_close(what, batch, tq, out_w, again, ldy, sy, want, ldy, sy, 1e-4, 1e-4));
        free(again);
        nwattn_context_destroy(ctx);
    }
    free(xq), free(xkv), free(want), free(got), free(want_w), free(got_w);
}

/* Sets OpenBLAS's thread count through its own API, looked up in the process (the library
 * loads it; the tests do not link it); returns the count before, or -1 where it is not
 * OpenBLAS. */
static int set_blas_threads(int threads) {
    void *set_symbol = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
    void *get_symbol = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    void (*set)(int) = NULL;
    int (*get)(void) = NULL;
    memcpy(&set, &set_symbol, sizeof set);
    memcpy(&get, &get_symbol, sizeof get);
    if (set == NULL || get == NULL)
        return -1;
    const int before = get();
    set(threads);
    return before;
}

/* Projections of more rows than one block (blas_gemm.c LINEAR_ROWS): with the BLAS at one
 * thread, blocks spread over the context's workers, the same fixed blocks whatever their
 * number; with the BLAS's own threads, one product. Either way every context thread count gives
 * the very same bits, and the layer matches the per-head loop. */
static void test_projection_blocks(void **state) {
    (void)state;
    at_rng r = {53};
    layer l = make_layer(&r, 2, 24, 20, 12, 6, 5, 17, 1, 1);
    const size_t batch = 3, tq = 300, tkv = 130;
    const size_t sq = tq * 24, skv = tkv * 24, sy = tq * 17;
    float *xq = at_random(&r, batch * sq, -1.0f, 1.0f), *xkv = at_random(&r, batch * skv, -1.0f, 1.0f);
    float *want = at_filled(batch * sy, 0.0f), *got[3];
    per_head_loop(&l, NULL, NULL, batch, tq, tkv, xq, 24, sq, xkv, 24, skv, want, 17, sy, NULL);
    const int blas_before = set_blas_threads(1);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && blas_before > 0)
            set_blas_threads(blas_before > 1 ? blas_before : 2);
        for (size_t t = 0; t < 3; t++) {
            nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, t + 1);
            got[t] = at_filled(batch * sy, 0.0f);
            AT_OK(ctx, nwattn_attention(ctx, &l.p, NULL, NULL, batch, tq, tkv, xq, 24, sq, xkv,
                                        24, skv, xkv, 24, skv, got[t], 17, sy, NULL, 0, 0));
            nwattn_context_destroy(ctx);
            assert_true(at_close("projections", batch, tq, 17, got[t], 17, sy, want, 17, sy,
                                 1e-4, 1e-4));
            assert_true(at_same_bits(got[t], got[0], batch * sy));
        }
        for (size_t t = 0; t < 3; t++)
            free(got[t]);
    }
    if (blas_before > 0)
        set_blas_threads(blas_before);
    free(xq), free(xkv), free(want);
    free_layer(&l);
}

static void test_multi_head_cross(void **state) {
    (void)state;
    at_rng r = {1};
    /* every width different: d_q_in 7, d_k_in 5, d_v_in 9, 3 heads of d 4 and dv 2, out 6 */
    layer l = make_layer(&r, 3, 7, 5, 9, 4, 2, 6, 1, 1);
    check_layer(&r, &l, NULL, NULL, 2, 5, 11);
    check_layer(&r, &l, NULL, NULL, 3, 1, 70); /* T = 1 */
    check_layer(&r, &l, NULL, NULL, 1, 70, 130); /* past one tile */
    free_layer(&l);
}

static void test_multi_head_masks(void **state) {
    (void)state;
    at_rng r = {2};
    layer l = make_layer(&r, 2, 8, 8, 8, 4, 4, 8, 0, 1); /* no biases */
    size_t lens[3] = {4, 0, 9};
    nwattn_mask m1 = {.flags = NWATTN_MASK_CAUSAL, .valid_lens = lens};
    check_layer(&r, &l, NULL, &m1, 3, 9, 9);
    float *add = at_random(&r, 9 * 9, -1.0f, 1.0f);
    add[3] = -INFINITY;
    unsigned char keep[3 * 9 * 9];
    for (size_t i = 0; i < sizeof keep; i++)
        keep[i] = at_below(&r, 4) != 0;
    nwattn_mask m2 = {.additive = add, .ld_additive = 9, .stride_additive = 0, .keep = keep,
                      .ld_keep = 9, .stride_keep = 81};
    check_layer(&r, &l, NULL, &m2, 3, 9, 9);
    free(add);
    free_layer(&l);
}

/* Wide heads (d_qk 64, d_v 96: the widths of whole cache lines attention.c's comment is
 * about), with and without w_o: against the per-head loop, and nwattn_attention_save's output
 * bit for bit nwattn_attention's on every backend. */
static void test_wide_heads(void **state) {
    (void)state;
    at_rng r = {6};
    const size_t batch = 2, tq = 37, tkv = 70, din = 40, dout = 24;
    for (int out_proj = 0; out_proj < 2; out_proj++) {
        layer l = make_layer(&r, 2, din, din, din, 32, 48, dout, 1, out_proj);
        if (!out_proj)
            l.p.b_o = NULL;
        check_layer(&r, &l, NULL, NULL, batch, tq, tkv);
        const size_t w = out_proj ? dout : l.p.d_v, sx = tq * din;
        float *x = at_random(&r, batch * sx, -1.0f, 1.0f);
        float *y1 = at_filled(batch * tq * w, 0.0f), *y2 = at_filled(batch * tq * w, 0.0f);
        for (size_t bk = 0; bk < 4; bk++) {
            nwattn_context *ctx = at_context(backends[bk], bk == 2 ? 3 : 1);
            size_t floats = 0;
            AT_OK(ctx, nwattn_attention_saved_floats(ctx, &l.p, batch, tq, tq, &floats));
            float *saved = at_filled(floats, 0.0f);
            AT_OK(ctx, nwattn_attention(ctx, &l.p, NULL, NULL, batch, tq, tq, x, din, sx, x, din,
                                        sx, x, din, sx, y1, w, tq * w, NULL, 0, 0));
            AT_OK(ctx, nwattn_attention_save(ctx, &l.p, NULL, NULL, batch, tq, tq, x, din, sx, x,
                                             din, sx, x, din, sx, y2, w, tq * w, saved, floats));
            assert_true(at_same_bits(y1, y2, batch * tq * w));
            free(saved);
            nwattn_context_destroy(ctx);
        }
        free(x), free(y1), free(y2);
        free_layer(&l);
    }
}

static void test_gaussian_heads(void **state) {
    (void)state;
    at_rng r = {3};
    layer l = make_layer(&r, 2, 6, 6, 6, 3, 3, 6, 1, 1);
    nwattn_score gaussian = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.8f, NULL};
    check_layer(&r, &l, &gaussian, NULL, 2, 7, 9);
    float bandwidths[3] = {0.5f, 1.0f, 2.0f};
    nwattn_score laplace = {NWATTN_SCORE_LAPLACE, 0.0f, 0.0f, bandwidths};
    check_layer(&r, &l, &laplace, NULL, 2, 7, 9);
    nwattn_score hot = {NWATTN_SCORE_DOT, 2.0f, 0.0f, NULL};
    check_layer(&r, &l, &hot, NULL, 2, 7, 9);
    free_layer(&l);
}

/* The seed's SelfAttention(d_model, d_k, d_v): one head, no biases, no output projection:
 * out = softmax(Q K^T / sqrt(d_k)) V, written out by hand. */
static void test_seed_self_attention(void **state) {
    (void)state;
    at_rng r = {4};
    const size_t T = 6, dm = 5, dk = 3, dv = 4;
    layer l = make_layer(&r, 1, dm, dm, dm, dk, dv, 1, 0, 0);
    float *x = at_random(&r, T * dm, -1.0f, 1.0f);
    double q[6][3], k[6][3], v[6][4];
    for (size_t t = 0; t < T; t++) {
        for (size_t c = 0; c < dk; c++) {
            q[t][c] = k[t][c] = 0.0;
            for (size_t p = 0; p < dm; p++) {
                q[t][c] += (double)x[t * dm + p] * l.w[0][c * dm + p];
                k[t][c] += (double)x[t * dm + p] * l.w[1][c * dm + p];
            }
        }
        for (size_t c = 0; c < dv; c++) {
            v[t][c] = 0.0;
            for (size_t p = 0; p < dm; p++)
                v[t][c] += (double)x[t * dm + p] * l.w[2][c * dm + p];
        }
    }
    float want[6 * 4], want_w[36];
    for (size_t i = 0; i < T; i++) {
        double s[6], max = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < T; j++) {
            s[j] = 0.0;
            for (size_t c = 0; c < dk; c++)
                s[j] += q[i][c] * k[j][c];
            s[j] /= sqrt((double)dk);
            max = s[j] > max ? s[j] : max;
        }
        for (size_t j = 0; j < T; j++)
            sum += exp(s[j] - max);
        for (size_t c = 0; c < dv; c++) {
            double o = 0.0;
            for (size_t j = 0; j < T; j++)
                o += exp(s[j] - max) / sum * v[j][c];
            want[i * dv + c] = (float)o;
        }
        for (size_t j = 0; j < T; j++)
            want_w[i * T + j] = (float)(exp(s[j] - max) / sum);
    }
    for (size_t bk = 0; bk < 4; bk++) {
        nwattn_context *ctx = at_context(backends[bk], 1);
        float got[6 * 4], got_w[36];
        AT_OK(ctx, nwattn_attention(ctx, &l.p, NULL, NULL, 1, T, T, x, dm, 0, x, dm, 0, x, dm, 0,
                                    got, dv, 0, got_w, T, 0));
        assert_true(at_close("seed self-attention", 1, T, dv, got, dv, 0, want, dv, 0, 1e-5, 1e-5));
        assert_true(at_close("seed weights", 1, T, T, got_w, T, 0, want_w, T, 0, 1e-6, 1e-5));
        nwattn_context_destroy(ctx);
    }
    free(x);
    free_layer(&l);
}

/* No keys: every row fully masked, the heads are zeros and y = b_o. */
static void test_no_keys(void **state) {
    (void)state;
    at_rng r = {5};
    layer l = make_layer(&r, 2, 4, 4, 4, 2, 2, 3, 1, 1);
    float x[2 * 4], y[2 * 3], dummy[1] = {0};
    for (int i = 0; i < 8; i++)
        x[i] = 0.5f;
    for (size_t bk = 0; bk < 4; bk++) {
        nwattn_context *ctx = at_context(backends[bk], 2);
        AT_OK(ctx, nwattn_attention(ctx, &l.p, NULL, NULL, 1, 2, 0, x, 4, 0, dummy, 4, 0, dummy, 4,
                                    0, y, 3, 0, NULL, 0, 0));
        for (size_t i = 0; i < 2; i++)
            for (size_t c = 0; c < 3; c++)
                assert_true(y[i * 3 + c] == l.b[3][c]);
        nwattn_context_destroy(ctx);
    }
    free_layer(&l);
}

static void test_attention_errors(void **state) {
    (void)state;
    at_rng r = {6};
    layer l = make_layer(&r, 2, 4, 4, 4, 2, 2, 3, 1, 1);
    float *x = at_random(&r, 3 * 4, -1.0f, 1.0f);
    float y[3 * 3], w[2 * 3 * 3];
    for (int i = 0; i < 9; i++)
        y[i] = 42.0f;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
#define CALL(params, yy, ldy_, ww, ldw_)                                                      \
    nwattn_attention(ctx, params, NULL, NULL, 1, 3, 3, x, 4, 0, x, 4, 0, x, 4, 0, yy, ldy_, 0, \
                     ww, ldw_, 0)
    assert_int_equal(CALL(NULL, y, 3, NULL, 0), NWATTN_ERR_NULL_POINTER);
    nwattn_attention_params p = l.p;
    p.heads = 0;
    assert_int_equal(CALL(&p, y, 3, NULL, 0), NWATTN_ERR_BAD_DIMENSION);
    p = l.p, p.heads = 3; /* does not divide d_qk = 4 */
    assert_int_equal(CALL(&p, y, 3, NULL, 0), NWATTN_ERR_BAD_DIMENSION);
    assert_true(strstr(nwattn_context_last_error(ctx), "heads") != NULL);
    p = l.p, p.d_k_in = 0;
    assert_int_equal(CALL(&p, y, 3, NULL, 0), NWATTN_ERR_BAD_DIMENSION);
    p = l.p, p.w_k = NULL;
    assert_int_equal(CALL(&p, y, 3, NULL, 0), NWATTN_ERR_NULL_POINTER);
    assert_true(strstr(nwattn_context_last_error(ctx), "w_k") != NULL);
    assert_int_equal(CALL(&l.p, y, 2, NULL, 0), NWATTN_ERR_BAD_LEADING_DIM);
    assert_int_equal(CALL(&l.p, y, 3, w, 2), NWATTN_ERR_BAD_LEADING_DIM);
    assert_int_equal(CALL(&l.p, x, 3, NULL, 0), NWATTN_ERR_ALIASING); /* y overlaps x */
    assert_int_equal(CALL(&l.p, y, 3, y, 3), NWATTN_ERR_ALIASING);   /* weights overlap y */
    p = l.p, p.w_o = x; /* a weight that overlaps the output is refused too */
    assert_int_equal(nwattn_attention(ctx, &p, NULL, NULL, 1, 3, 3, x, 4, 0, x, 4, 0, x, 4, 0,
                                      (float *)(uintptr_t)x, 3, 0, NULL, 0, 0),
                     NWATTN_ERR_ALIASING);
    nwattn_score bad = {NWATTN_SCORE_GAUSSIAN, 0.0f, -1.0f, NULL};
    assert_int_equal(nwattn_attention(ctx, &l.p, &bad, NULL, 1, 3, 3, x, 4, 0, x, 4, 0, x, 4, 0,
                                      y, 3, 0, NULL, 0, 0),
                     NWATTN_ERR_BAD_PARAMETER);
    size_t lens[1] = {4};
    nwattn_mask mask = {.valid_lens = lens};
    assert_int_equal(nwattn_attention(ctx, &l.p, NULL, &mask, 1, 3, 3, x, 4, 0, x, 4, 0, x, 4, 0,
                                      y, 3, 0, NULL, 0, 0),
                     NWATTN_ERR_BAD_MASK);
    /* A bias of the output projection without one: refused, not silently ignored (a fuzzed
     * y over such an ignored b_o was written where the caller's bias lay). */
    float b_o[3] = {0.0f, 0.0f, 0.0f}, y_concat[3 * 4];
    p = l.p, p.w_o = NULL, p.b_o = b_o;
    assert_int_equal(nwattn_attention(ctx, &p, NULL, NULL, 1, 3, 3, x, 4, 0, x, 4, 0, x, 4, 0,
                                      y_concat, 4, 0, NULL, 0, 0),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(strstr(nwattn_context_last_error(ctx), "b_o") != NULL);
    for (int i = 0; i < 9; i++)
        assert_true(y[i] == 42.0f); /* untouched */
#undef CALL
    nwattn_context_destroy(ctx);
    free(x);
    free_layer(&l);
}

/* ---- Positional encoding --------------------------------------------------------------- */
static void test_positional_encoding(void **state) {
    (void)state;
    const size_t cases[][3] = {{1, 1, 0}, {7, 6, 0}, {50, 33, 0}, {5, 16, 1000}, {3, 2, 7}};
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t t = cases[c][0], d = cases[c][1], first = cases[c][2], ldp = d + 2;
        float *p = at_filled(t * ldp, 99.0f);
        AT_OK(ctx, nwattn_positional_encoding(ctx, t, d, first, p, ldp));
        for (size_t i = 0; i < t; i++)
            for (size_t j = 0; j < ldp; j++) {
                float got = p[i * ldp + j];
                if (j >= d) {
                    assert_true(got == 99.0f); /* padding untouched */
                    continue;
                }
                double angle = (double)(first + i) / pow(10000.0, (double)(j - j % 2) / (double)d);
                double want = j % 2 == 0 ? sin(angle) : cos(angle);
                if (fabs(got - want) > 1e-6) {
                    fprintf(stderr, "P[%zu, %zu] (t %zu d %zu first %zu) = %g, want %g\n", i, j,
                            t, d, first, (double)got, want);
                    fail();
                }
            }
        free(p);
    }
    /* position 0: sin 0 = 0, cos 0 = 1 */
    float p0[4];
    AT_OK(ctx, nwattn_positional_encoding(ctx, 1, 4, 0, p0, 4));
    assert_true(p0[0] == 0.0f && p0[1] == 1.0f && p0[2] == 0.0f && p0[3] == 1.0f);

    float keep[4] = {5, 5, 5, 5};
    assert_int_equal(nwattn_positional_encoding(ctx, 1, 0, 0, keep, 4), NWATTN_ERR_BAD_DIMENSION);
    assert_int_equal(nwattn_positional_encoding(ctx, 1, 4, 0, NULL, 4), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_positional_encoding(ctx, 2, 4, 0, keep, 3), NWATTN_ERR_BAD_LEADING_DIM);
    assert_int_equal(nwattn_positional_encoding(ctx, 2, 2, SIZE_MAX, keep, 2), NWATTN_ERR_OVERFLOW);
    assert_int_equal(nwattn_positional_encoding(NULL, 1, 4, 0, keep, 4), NWATTN_ERR_NULL_POINTER);
    for (int i = 0; i < 4; i++)
        assert_true(keep[i] == 5.0f);
    AT_OK(ctx, nwattn_positional_encoding(ctx, 0, 4, 0, keep, 4)); /* empty */
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch_fixture),   cmocka_unit_test(test_multi_head_cross),
        cmocka_unit_test(test_projection_blocks), cmocka_unit_test(test_wide_heads),
        cmocka_unit_test(test_multi_head_masks),  cmocka_unit_test(test_gaussian_heads),
        cmocka_unit_test(test_seed_self_attention), cmocka_unit_test(test_no_keys),
        cmocka_unit_test(test_attention_errors),  cmocka_unit_test(test_positional_encoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
