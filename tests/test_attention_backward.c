/* nwattn_attention_backward: every gradient (inputs, weights, biases, the score's parameter)
 * against central finite differences of L = sum dY o Y, with Y the layer evaluated in long
 * double by the oracle's scores and softmax rows; FUSED against REFERENCE; self-attention with
 * one buffer for the three inputs; bad inputs. The additive mask's gradient (summed over the
 * heads) likewise. nwattn_attention_save and nwattn_attention_backward_saved: the same bits as
 * the forward and the backward that recomputes it; their bad inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

enum { B = 2, TQ = 3, TKV = 4, H = 2, DQK = 4, DV = 6, DQIN = 3, DKIN = 5, DVIN = 2, DOUT = 3 };
#define DH (DQK / H)
#define DVH (DV / H)

typedef struct layer {
    float xq[B][TQ][DQIN], xk[B][TKV][DKIN], xv[B][TKV][DVIN], dy[B][TQ][DOUT];
    float wq[DQK][DQIN], wk[DQK][DKIN], wv[DV][DVIN], wo[DOUT][DV];
    float bq[DQK], bk[DQK], bv[DV], bo[DOUT];
    float bw[DH];
    nwattn_score score;
    int default_score; /* pass NULL: scaled dot at 1/sqrt(DH) */
    or_mask mk;
} layer;

static nwattn_attention_params params_of(layer *l) {
    nwattn_attention_params p = {H, DQIN, DKIN, DVIN, DQK, DV, DOUT, &l->wq[0][0], &l->wk[0][0],
                                 &l->wv[0][0], &l->wo[0][0], l->bq, l->bk, l->bv, l->bo};
    return p;
}

static void fill(float *x, size_t count, tu_rng *rng) {
    for (size_t i = 0; i < count; i++)
        x[i] = tu_rng_range(rng, -1.0f, 1.0f);
}

static void layer_make(layer *l, tu_rng *rng, int kind, unsigned parts) {
    memset(l, 0, sizeof *l);
    fill(&l->xq[0][0][0], sizeof l->xq / sizeof(float), rng);
    fill(&l->xk[0][0][0], sizeof l->xk / sizeof(float), rng);
    fill(&l->xv[0][0][0], sizeof l->xv / sizeof(float), rng);
    fill(&l->dy[0][0][0], sizeof l->dy / sizeof(float), rng);
    fill(&l->wq[0][0], sizeof l->wq / sizeof(float), rng);
    fill(&l->wk[0][0], sizeof l->wk / sizeof(float), rng);
    fill(&l->wv[0][0], sizeof l->wv / sizeof(float), rng);
    fill(&l->wo[0][0], sizeof l->wo / sizeof(float), rng);
    fill(l->bq, DQK, rng), fill(l->bk, DQK, rng), fill(l->bv, DV, rng), fill(l->bo, DOUT, rng);
    for (size_t i = 0; i < DH; i++)
        l->bw[i] = tu_rng_range(rng, 0.8f, 1.5f);
    l->default_score = kind == 0;
    l->score.kind = kind == 0 ? NWATTN_SCORE_DOT : (nwattn_score_kind)kind;
    l->score.scale = kind == 0 ? (float)(1.0 / sqrt((double)DH)) : 1.7f;
    l->score.bandwidth = 1.2f;
    l->score.bandwidths = kind == NWATTN_SCORE_GAUSSIAN ? l->bw : NULL;
    or_mask_make(&l->mk, parts, B, TQ, TKV, rng);
}

/* X W^T + b in long double: rows × out. */
static void project(size_t rows, size_t out, size_t in, const float *x, const float *w,
                    const float *b, long double *y) {
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            long double s = b[o];
            for (size_t i = 0; i < in; i++)
                s += (long double)x[r * in + i] * (long double)w[o * in + i];
            y[r * out + o] = s;
        }
}

static double loss(const layer *l) {
    long double q[B * TQ * DQK], k[B * TKV * DQK], v[B * TKV * DV], c[B * TQ * DV];
    project(B * TQ, DQK, DQIN, &l->xq[0][0][0], &l->wq[0][0], l->bq, q);
    project(B * TKV, DQK, DKIN, &l->xk[0][0][0], &l->wk[0][0], l->bk, k);
    project(B * TKV, DV, DVIN, &l->xv[0][0][0], &l->wv[0][0], l->bv, v);
    const nwattn_mask *mask = or_mask_get(&l->mk);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < TQ; i++) {
                long double x[TKV], w[TKV];
                unsigned char live[TKV];
                double range;
                for (size_t j = 0; j < TKV; j++) {
                    live[j] = !or_masked(mask, b, TQ, TKV, i, j);
                    x[j] = or_score_ld(&l->score, DH, q + (b * TQ + i) * DQK + h * DH,
                                       k + (b * TKV + j) * DQK + h * DH) +
                           (long double)or_additive(mask, b, i, j);
                }
                or_softmax_values(TKV, x, live, w, &range);
                for (size_t cc = 0; cc < DVH; cc++) {
                    long double o = 0.0L;
                    for (size_t j = 0; j < TKV; j++)
                        o += w[j] == 0.0L ? 0.0L : w[j] * v[(b * TKV + j) * DV + h * DVH + cc];
                    c[(b * TQ + i) * DV + h * DVH + cc] = o;
                }
            }
    long double total = 0.0L;
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < TQ; i++)
            for (size_t o = 0; o < DOUT; o++) {
                long double y = l->bo[o];
                for (size_t cc = 0; cc < DV; cc++)
                    y += c[(b * TQ + i) * DV + cc] * (long double)l->wo[o][cc];
                total += y * (long double)l->dy[b][i][o];
            }
    return (double)total;
}

static double fd(layer *l, float *x) {
    const float x0 = *x, step = 0x1p-9f * fmaxf(1.0f, fabsf(x0));
    const float hi = x0 + step, lo = x0 - step;
    *x = hi;
    const double l_hi = loss(l);
    *x = lo;
    const double l_lo = loss(l);
    *x = x0;
    return (l_hi - l_lo) / ((double)hi - (double)lo);
}

typedef struct grads {
    float dxq[B][TQ][DQIN], dxk[B][TKV][DKIN], dxv[B][TKV][DVIN];
    float dwq[DQK][DQIN], dwk[DQK][DKIN], dwv[DV][DVIN], dwo[DOUT][DV];
    float dbq[DQK], dbk[DQK], dbv[DV], dbo[DOUT], dscore[DH];
    float dadd[B][TQ][TKV]; /* one item only for a broadcast mask */
} grads;

static nwattn_attention_grads grads_struct(grads *g) {
    nwattn_attention_grads s = {&g->dxq[0][0][0], DQIN, TQ * DQIN, &g->dxk[0][0][0], DKIN,
                                TKV * DKIN, &g->dxv[0][0][0], DVIN, TKV * DVIN, &g->dwq[0][0],
                                &g->dwk[0][0], &g->dwv[0][0], &g->dwo[0][0], g->dbq, g->dbk,
                                g->dbv, g->dbo, g->dscore, NULL, 0, 0};
    return s;
}

static nwattn_status backward(nwattn_context *ctx, layer *l, grads *g) {
    const nwattn_attention_params p = params_of(l);
    nwattn_attention_grads gs = grads_struct(g);
    if (l->mk.parts & OR_ADDITIVE)
        gs.d_additive = &g->dadd[0][0][0], gs.ld_d_additive = TKV, gs.stride_d_additive = TQ * TKV;
    return nwattn_attention_backward(ctx, &p, l->default_score ? NULL : &l->score,
                                     or_mask_get(&l->mk), B, TQ, TKV, &l->xq[0][0][0], DQIN,
                                     TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN,
                                     &l->xv[0][0][0], DVIN, TKV * DVIN, &l->dy[0][0][0], DOUT,
                                     TQ * DOUT, &gs);
}

/* got[i] against the finite differences of x[i], within 2e-3 of the largest. */
static int check(const char *what, layer *l, float *x, const float *got, size_t count) {
    double *want = malloc(count * sizeof *want), big = 0.0, worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        want[i] = fd(l, x + i);
        big = fmax(big, fabs(want[i]));
    }
    size_t at = 0;
    for (size_t i = 0; i < count; i++)
        if (fabs((double)got[i] - want[i]) > worst)
            worst = fabs((double)got[i] - want[i]), at = i;
    const int ok = worst <= 2e-3 * big + 1e-6;
    if (!ok)
        print_error("%s[%zu]: %.9g vs finite difference %.9g (largest %.3g)\n", what, at,
                    (double)got[at], want[at], big);
    free(want);
    return ok;
}

#define N_OF(x) (sizeof(x) / sizeof(float))

/* d_additive (summed over the heads, and over the items for a broadcast mask) against the
 * finite differences of the additive entries; masked ones, -INFINITY among them, exactly 0. */
static int check_additive(layer *l, const grads *g) {
    if (!(l->mk.parts & OR_ADDITIVE))
        return 1;
    const nwattn_mask *mask = or_mask_get(&l->mk);
    const int shared = l->mk.additive.stride == 0;
    double big = 0.0, worst = 0.0;
    for (size_t b = 0; b < (shared ? 1 : B); b++)
        for (size_t i = 0; i < TQ; i++)
            for (size_t j = 0; j < TKV; j++) {
                float *x = tu_at(&l->mk.additive, b, i, j);
                int masked = 1;
                for (size_t c = shared ? 0 : b; c < (shared ? B : b + 1); c++)
                    masked = masked && (or_masked(mask, c, TQ, TKV, i, j) || *x == -INFINITY);
                const double want = masked ? 0.0 : fd(l, x), got = g->dadd[b][i][j];
                if (masked && got != 0.0) {
                    print_error("d_additive[%zu][%zu][%zu] = %g, masked: not 0\n", b, i, j, got);
                    return 0;
                }
                big = fmax(big, fabs(want));
                worst = fmax(worst, fabs(got - want));
            }
    if (worst > 2e-3 * big + 1e-6) {
        print_error("d_additive: error %.3g (largest %.3g)\n", worst, big);
        return 0;
    }
    return 1;
}

static int check_all(layer *l, grads *g) {
    float *param = l->default_score || l->score.kind == NWATTN_SCORE_COSINE ? &l->score.scale
                   : l->score.bandwidths                                    ? l->bw
                                                                            : &l->score.bandwidth;
    const size_t n_param = l->score.bandwidths ? DH : 1;
    return check("dx_q", l, &l->xq[0][0][0], &g->dxq[0][0][0], N_OF(l->xq)) &&
           check("dx_k", l, &l->xk[0][0][0], &g->dxk[0][0][0], N_OF(l->xk)) &&
           check("dx_v", l, &l->xv[0][0][0], &g->dxv[0][0][0], N_OF(l->xv)) &&
           check("dw_q", l, &l->wq[0][0], &g->dwq[0][0], N_OF(l->wq)) &&
           check("dw_k", l, &l->wk[0][0], &g->dwk[0][0], N_OF(l->wk)) &&
           check("dw_v", l, &l->wv[0][0], &g->dwv[0][0], N_OF(l->wv)) &&
           check("dw_o", l, &l->wo[0][0], &g->dwo[0][0], N_OF(l->wo)) &&
           check("db_q", l, l->bq, g->dbq, DQK) && check("db_k", l, l->bk, g->dbk, DQK) &&
           check("db_v", l, l->bv, g->dbv, DV) && check("db_o", l, l->bo, g->dbo, DOUT) &&
           check("d_score", l, param, g->dscore, n_param) && check_additive(l, g);
}

static void finite_differences(void **state) {
    (void)state;
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_FUSED};
    const int kinds[] = {0, NWATTN_SCORE_GAUSSIAN, NWATTN_SCORE_LAPLACE, NWATTN_SCORE_COSINE};
    const unsigned parts[] = {0, OR_CAUSAL | OR_LENS_ITEM | OR_ADDITIVE,
                              OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_BROADCAST | OR_LENS_ROW};
    tu_rng rng;
    tu_rng_seed(&rng, 4);
    for (size_t bi = 0; bi < 2; bi++) {
        nwattn_context *ctx = tu_context(backends[bi]);
        for (size_t ki = 0; ki < 4; ki++)
            for (size_t pi = 0; pi < 3; pi++) {
                layer *l = malloc(sizeof *l);
                grads *g = malloc(sizeof *g);
                layer_make(l, &rng, kinds[ki], parts[pi]);
                TU_ASSERT_OK(ctx, backward(ctx, l, g));
                const int ok = check_all(l, g);
                if (!ok)
                    print_error("backend %d, score %d, mask %u\n", (int)backends[bi], kinds[ki],
                                parts[pi]);
                assert_true(ok);
                or_mask_free(&l->mk);
                free(l);
                free(g);
            }
        nwattn_context_destroy(ctx);
    }
}

/* Self-attention: one buffer passed three times; its gradient is the three summed. The same
 * gradients as with three copies, bit for bit. */
static void self_attention_one_buffer(void **state) {
    (void)state;
    enum { T = 5, E = 4 };
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_FUSED);
    tu_rng rng;
    tu_rng_seed(&rng, 9);
    float x[2 * T * E], copy[3][2 * T * E], w[3][E * E], dy[2 * T * E];
    fill(x, 2 * T * E, &rng), fill(&w[0][0], 3 * E * E, &rng), fill(dy, 2 * T * E, &rng);
    for (int i = 0; i < 3; i++)
        memcpy(copy[i], x, sizeof x);
    const nwattn_attention_params p = {2, E, E, E, E, E, 0, w[0], w[1], w[2], NULL,
                                       NULL, NULL, NULL, NULL};
    float d1[3][2 * T * E], d2[3][2 * T * E], dw1[E * E], dw2[E * E];
    nwattn_attention_grads g1 = {0};
    g1.dx_q = d1[0], g1.dx_k = d1[1], g1.dx_v = d1[2], g1.dw_q = dw1;
    g1.ld_dx_q = g1.ld_dx_k = g1.ld_dx_v = E;
    g1.stride_dx_q = g1.stride_dx_k = g1.stride_dx_v = T * E;
    nwattn_attention_grads g2 = {0};
    g2.dx_q = d2[0], g2.dx_k = d2[1], g2.dx_v = d2[2], g2.dw_q = dw2;
    g2.ld_dx_q = g2.ld_dx_k = g2.ld_dx_v = E;
    g2.stride_dx_q = g2.stride_dx_k = g2.stride_dx_v = T * E;
    TU_ASSERT_OK(ctx, nwattn_attention_backward(ctx, &p, NULL, NULL, 2, T, T, x, E, T * E, x, E,
                                                T * E, x, E, T * E, dy, E, T * E, &g1));
    TU_ASSERT_OK(ctx, nwattn_attention_backward(ctx, &p, NULL, NULL, 2, T, T, copy[0], E, T * E,
                                                copy[1], E, T * E, copy[2], E, T * E, dy, E,
                                                T * E, &g2));
    assert_memory_equal(d1, d2, sizeof d1);
    assert_memory_equal(dw1, dw2, sizeof dw1);
    nwattn_context_destroy(ctx);
}

static void bad_inputs(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    tu_rng rng;
    tu_rng_seed(&rng, 2);
    layer *l = malloc(sizeof *l);
    grads *g = malloc(sizeof *g);
    layer_make(l, &rng, 0, 0);
    memset(g, 0x7f, sizeof *g);
    grads untouched;
    memcpy(&untouched, g, sizeof untouched);
    nwattn_attention_params p = params_of(l);
    nwattn_attention_grads gs = grads_struct(g);
#define CALL(p_, dy_, gs_)                                                                      \
    nwattn_attention_backward(ctx, p_, NULL, NULL, B, TQ, TKV, &l->xq[0][0][0], DQIN,          \
                              TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN, &l->xv[0][0][0],   \
                              DVIN, TKV * DVIN, dy_, DOUT, TQ * DOUT, gs_)
    assert_int_equal(CALL(&p, &l->dy[0][0][0], NULL), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(CALL(NULL, &l->dy[0][0][0], &gs), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(CALL(&p, NULL, &gs), NWATTN_ERR_NULL_POINTER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "dy"));
    nwattn_attention_params no_wo = p;
    no_wo.w_o = NULL, no_wo.b_o = NULL;
    float dy_concat[B * TQ * DV] = {0}; /* without w_o dY is d_v wide */
    assert_int_equal(nwattn_attention_backward(ctx, &no_wo, NULL, NULL, B, TQ, TKV,
                                               &l->xq[0][0][0], DQIN, TQ * DQIN,
                                               &l->xk[0][0][0], DKIN, TKV * DKIN,
                                               &l->xv[0][0][0], DVIN, TKV * DVIN, dy_concat, DV,
                                               TQ * DV, &gs),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "dw_o"));
    nwattn_attention_grads bad = gs;
    bad.dw_q = &l->wq[0][0]; /* over an input */
    assert_int_equal(CALL(&p, &l->dy[0][0][0], &bad), NWATTN_ERR_ALIASING);
    bad = gs;
    bad.db_k = g->dbq + 1; /* overlaps db_q */
    assert_int_equal(CALL(&p, &l->dy[0][0][0], &bad), NWATTN_ERR_ALIASING);
    bad = gs;
    bad.ld_dx_k = DKIN - 1;
    assert_int_equal(CALL(&p, &l->dy[0][0][0], &bad), NWATTN_ERR_BAD_LEADING_DIM);
    nwattn_attention_params odd = p;
    odd.heads = 3;
    assert_int_equal(CALL(&odd, &l->dy[0][0][0], &gs), NWATTN_ERR_BAD_DIMENSION);
    bad = gs;
    bad.d_additive = &g->dadd[0][0][0], bad.ld_d_additive = TKV, bad.stride_d_additive = TQ * TKV;
    assert_int_equal(CALL(&p, &l->dy[0][0][0], &bad), NWATTN_ERR_BAD_PARAMETER); /* no mask */
    assert_non_null(strstr(nwattn_context_last_error(ctx), "d_additive"));
    assert_memory_equal(g, &untouched, sizeof untouched);
#undef CALL
    or_mask_free(&l->mk);
    free(l);
    free(g);
    nwattn_context_destroy(ctx);
}

/* ---- Saved activations ----------------------------------------------------------------- */
enum { SAVED = B * TQ * DQK + B * TKV * DQK + B * TKV * DV + B * TQ * DV + B * H * TQ };

static nwattn_status forward_saved(nwattn_context *ctx, layer *l, const nwattn_attention_params *p,
                                   float *y, float *saved, size_t floats) {
    const size_t w = p->w_o ? DOUT : DV;
    return nwattn_attention_save(ctx, p, l->default_score ? NULL : &l->score,
                                 or_mask_get(&l->mk), B, TQ, TKV, &l->xq[0][0][0], DQIN,
                                 TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN, &l->xv[0][0][0],
                                 DVIN, TKV * DVIN, y, w, TQ * w, saved, floats);
}

static nwattn_status backward_saved(nwattn_context *ctx, layer *l,
                                    const nwattn_attention_params *p, const float *dy,
                                    const float *saved, size_t floats, grads *g) {
    nwattn_attention_grads gs = grads_struct(g);
    if (p->w_o == NULL)
        gs.dw_o = NULL, gs.db_o = NULL;
    if (l->mk.parts & OR_ADDITIVE)
        gs.d_additive = &g->dadd[0][0][0], gs.ld_d_additive = TKV, gs.stride_d_additive = TQ * TKV;
    const size_t w = p->w_o ? DOUT : DV;
    return nwattn_attention_backward_saved(
        ctx, p, l->default_score ? NULL : &l->score, or_mask_get(&l->mk), B, TQ, TKV,
        &l->xq[0][0][0], DQIN, TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN, &l->xv[0][0][0],
        DVIN, TKV * DVIN, dy, w, TQ * w, saved, floats, gs.dx_q != NULL ? &gs : NULL);
}

/* The layer with and without w_o, every score kind, three mask sets, each backend (FUSED at
 * 1 and 3 threads): Y of nwattn_attention_save bit for bit nwattn_attention's, and every
 * gradient of nwattn_attention_backward_saved nwattn_attention_backward's (sentinels in what
 * neither writes). */
static void saved_same_bits(void **state) {
    (void)state;
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                       NWATTN_BACKEND_FUSED, NWATTN_BACKEND_FUSED};
    const int kinds[] = {0, NWATTN_SCORE_GAUSSIAN, NWATTN_SCORE_LAPLACE, NWATTN_SCORE_COSINE};
    const unsigned parts[] = {0, OR_CAUSAL | OR_LENS_ITEM | OR_ADDITIVE,
                              OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_BROADCAST | OR_LENS_ROW};
    tu_rng rng;
    tu_rng_seed(&rng, 12);
    size_t floats = 0;
    layer *l = malloc(sizeof *l);
    grads *g1 = malloc(sizeof *g1), *g2 = malloc(sizeof *g2);
    float *saved = malloc(SAVED * sizeof(float));
    for (size_t bi = 0; bi < 4; bi++) {
        nwattn_context *ctx = tu_context(backends[bi]);
        TU_ASSERT_OK(ctx, nwattn_context_set_threads(ctx, bi == 3 ? 3 : 1));
        for (size_t ki = 0; ki < 4; ki++)
            for (size_t pi = 0; pi < 3; pi++)
                for (int with_wo = 0; with_wo < 2; with_wo++) {
                    layer_make(l, &rng, kinds[ki], parts[pi]);
                    nwattn_attention_params p = params_of(l);
                    if (!with_wo)
                        p.w_o = NULL, p.b_o = NULL;
                    const size_t w = with_wo ? DOUT : DV;
                    TU_ASSERT_OK(ctx, nwattn_attention_saved_floats(ctx, &p, B, TQ, TKV, &floats));
                    assert_int_equal(floats, SAVED);
                    float y1[B * TQ * DV], y2[B * TQ * DV], dy[B * TQ * DV];
                    fill(dy, B * TQ * w, &rng);
                    TU_ASSERT_OK(ctx, nwattn_attention(ctx, &p, l->default_score ? NULL : &l->score,
                                                       or_mask_get(&l->mk), B, TQ, TKV,
                                                       &l->xq[0][0][0], DQIN, TQ * DQIN,
                                                       &l->xk[0][0][0], DKIN, TKV * DKIN,
                                                       &l->xv[0][0][0], DVIN, TKV * DVIN, y1, w,
                                                       TQ * w, NULL, 0, 0));
                    TU_ASSERT_OK(ctx, forward_saved(ctx, l, &p, y2, saved, floats));
                    assert_memory_equal(y1, y2, B * TQ * w * sizeof(float));
                    memset(g1, 0x55, sizeof *g1), memset(g2, 0x55, sizeof *g2);
                    nwattn_attention_grads gs = grads_struct(g1);
                    if (!with_wo)
                        gs.dw_o = NULL, gs.db_o = NULL;
                    if (l->mk.parts & OR_ADDITIVE)
                        gs.d_additive = &g1->dadd[0][0][0], gs.ld_d_additive = TKV,
                        gs.stride_d_additive = TQ * TKV;
                    TU_ASSERT_OK(ctx, nwattn_attention_backward(
                                          ctx, &p, l->default_score ? NULL : &l->score,
                                          or_mask_get(&l->mk), B, TQ, TKV, &l->xq[0][0][0],
                                          DQIN, TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN,
                                          &l->xv[0][0][0], DVIN, TKV * DVIN, dy, w, TQ * w,
                                          &gs));
                    TU_ASSERT_OK(ctx, backward_saved(ctx, l, &p, dy, saved, floats, g2));
                    if (memcmp(g1, g2, sizeof *g1) != 0)
                        print_error("backend %zu, score %d, mask %u, w_o %d: gradients differ\n",
                                    bi, kinds[ki], parts[pi], with_wo);
                    assert_memory_equal(g1, g2, sizeof *g1);
                    or_mask_free(&l->mk);
                }
        nwattn_context_destroy(ctx);
    }
    free(saved), free(g1), free(g2), free(l);
}

/* saved too small, NULL, over an input or the output: refused, outputs untouched. */
static void saved_bad_inputs(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    tu_rng rng;
    tu_rng_seed(&rng, 3);
    layer *l = malloc(sizeof *l);
    grads *g = malloc(sizeof *g), *untouched = malloc(sizeof *untouched);
    layer_make(l, &rng, 0, 0);
    const nwattn_attention_params p = params_of(l);
    float y[B * TQ * DOUT], y0[B * TQ * DOUT], *saved = malloc((SAVED + 8) * sizeof(float));
    memset(y, 0x33, sizeof y), memcpy(y0, y, sizeof y);
    memset(saved, 0x44, (SAVED + 8) * sizeof(float));
    size_t floats = 0;
    assert_int_equal(nwattn_attention_saved_floats(ctx, &p, B, TQ, TKV, NULL),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_attention_saved_floats(ctx, NULL, B, TQ, TKV, &floats),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_attention_saved_floats(ctx, &p, SIZE_MAX / 2, TQ, TKV, &floats),
                     NWATTN_ERR_OVERFLOW);
    assert_int_equal(floats, 0);
    assert_int_equal(forward_saved(ctx, l, &p, y, saved, SAVED - 1), NWATTN_ERR_BAD_DIMENSION);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "saved_floats"));
    assert_int_equal(forward_saved(ctx, l, &p, y, NULL, SAVED), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(forward_saved(ctx, l, &p, y, y, SAVED), NWATTN_ERR_ALIASING);
    assert_int_equal(forward_saved(ctx, l, &p, y, &l->xq[0][0][0], SAVED), NWATTN_ERR_ALIASING);
    assert_memory_equal(y, y0, sizeof y);
    memset(g, 0x7f, sizeof *g), memcpy(untouched, g, sizeof *g);
    assert_int_equal(backward_saved(ctx, l, &p, &l->dy[0][0][0], saved, SAVED - 1, g),
                     NWATTN_ERR_BAD_DIMENSION);
    assert_int_equal(backward_saved(ctx, l, &p, &l->dy[0][0][0], NULL, SAVED, g),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(backward_saved(ctx, l, &p, &l->dy[0][0][0], &g->dxq[0][0][0], SAVED, g),
                     NWATTN_ERR_ALIASING); /* saved under an output */
    assert_memory_equal(g, untouched, sizeof *g);
    /* An empty batch: nothing saved, NULL accepted. */
    TU_ASSERT_OK(ctx, nwattn_attention_saved_floats(ctx, &p, 0, TQ, TKV, &floats));
    assert_int_equal(floats, 0);
    TU_ASSERT_OK(ctx, nwattn_attention_save(ctx, &p, NULL, NULL, 0, TQ, TKV, &l->xq[0][0][0],
                                            DQIN, TQ * DQIN, &l->xk[0][0][0], DKIN, TKV * DKIN,
                                            &l->xv[0][0][0], DVIN, TKV * DVIN, y, DOUT,
                                            TQ * DOUT, NULL, 0));
    or_mask_free(&l->mk);
    free(saved), free(untouched), free(g), free(l);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_inputs),
        cmocka_unit_test(self_attention_one_buffer),
        cmocka_unit_test(finite_differences),
        cmocka_unit_test(saved_same_bits),
        cmocka_unit_test(saved_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
