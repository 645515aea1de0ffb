/* nwattn_pool_backward: REFERENCE and FUSED against central finite differences of the loss
 * L = sum dO o O evaluated by the oracle in double (every score kind and mask), FUSED against
 * REFERENCE on random awkward shapes, exact zeros for masked keys and rows, bit-identical
 * results for any thread count, and the bad-input matrix with outputs left untouched; the same
 * for dS, the gradient of an additive mask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

typedef struct problem {
    size_t batch, m, n, d, dv;
    nwattn_score score;
    float bw[64]; /* d <= 64 */
    or_mask mk;
    tu_mat q, k, v, d_o, o, lse;
} problem;

/* Score kinds under test: 0 dot, 1 cosine, 2/3 gaussian scalar/per-dimension, 4/5 laplace. */
#define KINDS 6

static void make_score(problem *p, int kind, tu_rng *rng) {
    memset(&p->score, 0, sizeof p->score);
    for (size_t l = 0; l < p->d; l++)
        p->bw[l] = tu_rng_range(rng, 0.6f, 1.6f);
    switch (kind) {
    case 0: p->score.kind = NWATTN_SCORE_DOT; p->score.scale = 0.7f; break;
    case 1: p->score.kind = NWATTN_SCORE_COSINE; p->score.scale = 2.5f; break;
    case 2: p->score.kind = NWATTN_SCORE_GAUSSIAN; p->score.bandwidth = 0.9f; break;
    case 3: p->score.kind = NWATTN_SCORE_GAUSSIAN; p->score.bandwidths = p->bw; break;
    case 4: p->score.kind = NWATTN_SCORE_LAPLACE; p->score.bandwidth = 1.3f; break;
    default: p->score.kind = NWATTN_SCORE_LAPLACE; p->score.bandwidths = p->bw; break;
    }
}

static int per_dim(const problem *p) { return p->score.bandwidths != NULL; }
static size_t n_params(const problem *p) { return per_dim(p) ? p->d : 1; }

static void problem_make(problem *p, tu_rng *rng, size_t batch, size_t m, size_t n, size_t d,
                         size_t dv, int kind, unsigned parts, size_t pad) {
    memset(p, 0, sizeof *p);
    p->batch = batch, p->m = m, p->n = n, p->d = d, p->dv = dv;
    make_score(p, kind, rng);
    or_mask_make(&p->mk, parts, batch, m, n, rng);
    p->q = tu_mat_new(batch, m, d, pad, pad);
    p->k = tu_mat_new(batch, n, d, pad, 0);
    p->v = tu_mat_new(batch, n, dv, pad, pad);
    p->d_o = tu_mat_new(batch, m, dv, pad, 1);
    p->o = tu_mat_new(batch, m, dv, pad, 0);
    p->lse = tu_mat_new(batch, 1, m, 0, pad);
    tu_mat_fill_uniform(&p->q, rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&p->k, rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&p->v, rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&p->d_o, rng, -1.0f, 1.0f);
}

static void problem_free(problem *p) {
    tu_mat *mats[] = {&p->q, &p->k, &p->v, &p->d_o, &p->o, &p->lse};
    for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
        tu_mat_free(mats[i]);
    or_mask_free(&p->mk);
}

static const nwattn_mask *mask_of(const problem *p) { return or_mask_get(&p->mk); }

/* The forward on ctx (O and lse for the backward). */
static void forward(nwattn_context *ctx, problem *p) {
    TU_ASSERT_OK(ctx, nwattn_pool(ctx, &p->score, mask_of(p), p->batch, p->m, p->n, p->d, p->dv,
                                  p->q.data, p->q.ld, p->q.stride, p->k.data, p->k.ld,
                                  p->k.stride, p->v.data, p->v.ld, p->v.stride, p->o.data,
                                  p->o.ld, p->o.stride, NULL, 0, 0, p->lse.data,
                                  p->lse.stride));
}

typedef struct grads {
    tu_mat dq, dk, dv;
    float dparam[65];
} grads;

static void grads_make(grads *g, const problem *p, size_t pad) {
    g->dq = tu_mat_new(p->batch, p->m, p->d, pad, 1);
    g->dk = tu_mat_new(p->batch, p->n, p->d, pad, 2);
    g->dv = tu_mat_new(p->batch, p->n, p->dv, pad, 0);
    for (size_t l = 0; l < 65; l++)
        g->dparam[l] = tu_sentinel();
}

static void grads_free(grads *g) {
    tu_mat_free(&g->dq);
    tu_mat_free(&g->dk);
    tu_mat_free(&g->dv);
}

static nwattn_pool_grads grads_struct(const problem *p, grads *g) {
    nwattn_pool_grads s = {g->dq.data, g->dq.ld, g->dq.stride, g->dk.data, g->dk.ld,
                           g->dk.stride, g->dv.data, g->dv.ld, g->dv.stride, NULL, NULL, NULL,
                           NULL, 0, 0};
    if (p->score.kind == NWATTN_SCORE_DOT || p->score.kind == NWATTN_SCORE_COSINE)
        s.d_scale = g->dparam;
    else if (per_dim(p))
        s.d_bandwidths = g->dparam;
    else
        s.d_bandwidth = g->dparam;
    return s;
}

static nwattn_pool_upstream upstream_of(const problem *p) {
    nwattn_pool_upstream u = {p->o.data, p->o.ld, p->o.stride, p->lse.data, p->lse.stride,
                              p->d_o.data, p->d_o.ld, p->d_o.stride};
    return u;
}

static nwattn_status backward(nwattn_context *ctx, const problem *p, grads *g) {
    const nwattn_pool_upstream up = upstream_of(p);
    const nwattn_pool_grads gs = grads_struct(p, g);
    return nwattn_pool_backward(ctx, &p->score, mask_of(p), p->batch, p->m, p->n, p->d, p->dv,
                                p->q.data, p->q.ld, p->q.stride, p->k.data, p->k.ld,
                                p->k.stride, p->v.data, p->v.ld, p->v.stride, &up, &gs);
}

/* L = sum dO o O with O from the oracle's scores and softmax rows in double. */
static double loss(const problem *p) {
    const size_t n = p->n;
    double *s = calloc(n + 1, sizeof *s), *w = calloc(n + 1, sizeof *w), total = 0.0, range;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t i = 0; i < p->m; i++) {
            for (size_t j = 0; j < n; j++)
                s[j] = or_score(&p->score, p->d, tu_at(&p->q, b, i, 0), tu_at(&p->k, b, j, 0));
            or_softmax_row(mask_of(p), b, p->m, n, i, s, w, &range);
            for (size_t c = 0; c < p->dv; c++) {
                double o = 0.0;
                for (size_t j = 0; j < n; j++)
                    o += w[j] == 0.0 ? 0.0 : w[j] * (double)tu_get(&p->v, b, j, c);
                total += o * (double)tu_get(&p->d_o, b, i, c);
            }
        }
    free(s);
    free(w);
    return total;
}

/* Central difference of the loss in *x, with the step that float actually takes. */
static double fd(problem *p, float *x) {
    const float x0 = *x, step = 0x1p-9f * fmaxf(1.0f, fabsf(x0));
    const float hi = x0 + step, lo = x0 - step;
    *x = hi;
    const double l_hi = loss(p);
    *x = lo;
    const double l_lo = loss(p);
    *x = x0;
    return (l_hi - l_lo) / ((double)hi - (double)lo);
}

/* Every entry of got within rtol·(largest |fd| of the matrix) + atol of its finite difference. */
static int check_fd_mat(const char *what, problem *p, tu_mat *x, const tu_mat *got) {
    tu_mat want = tu_mat_clone(got);
    for (size_t b = 0; b < x->batch; b++)
        for (size_t i = 0; i < x->rows; i++)
            for (size_t j = 0; j < x->cols; j++)
                *tu_at(&want, b, i, j) = (float)fd(p, tu_at(x, b, i, j));
    const int ok = tu_allclose(what, got, &want, 2e-3 * tu_mat_maxabs(&want) + 1e-5, 0.0);
    tu_mat_free(&want);
    return ok;
}

static float *param_ptr(problem *p, size_t l) {
    switch (p->score.kind) {
    case NWATTN_SCORE_DOT:
    case NWATTN_SCORE_COSINE:
        return &p->score.scale;
    default:
        return per_dim(p) ? &p->bw[l] : &p->score.bandwidth;
    }
}

static const unsigned mask_cases[] = {
    0, OR_CAUSAL | OR_LENS_ITEM, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_KEEP, OR_LOO | OR_LENS_ROW,
};
#define MASK_CASES (sizeof mask_cases / sizeof *mask_cases)

static void finite_differences(void **state) {
    (void)state;
    nwattn_context *ctx[2] = {tu_context(NWATTN_BACKEND_REFERENCE),
                              tu_context(NWATTN_BACKEND_FUSED)};
    tu_rng rng;
    tu_rng_seed(&rng, 12);
    for (int kind = 0; kind < KINDS; kind++)
        for (size_t mc = 0; mc < MASK_CASES; mc++)
            for (int which = 0; which < 2; which++) {
                problem p;
                problem_make(&p, &rng, 2, 5, 6, 3, 2, kind, mask_cases[mc], 1);
                forward(ctx[which], &p);
                grads g;
                grads_make(&g, &p, 1);
                TU_ASSERT_OK(ctx[which], backward(ctx[which], &p, &g));
                int ok = check_fd_mat("dq", &p, &p.q, &g.dq) &&
                         check_fd_mat("dk", &p, &p.k, &g.dk) &&
                         check_fd_mat("dv", &p, &p.v, &g.dv) &&
                         tu_mat_padding_intact(&g.dq, "dq") &&
                         tu_mat_padding_intact(&g.dk, "dk");
                double scale = 0.0;
                for (size_t l = 0; l < n_params(&p); l++)
                    scale = fmax(scale, fabs(fd(&p, param_ptr(&p, l))));
                for (size_t l = 0; ok && l < n_params(&p); l++) {
                    const double want = fd(&p, param_ptr(&p, l)), got = g.dparam[l];
                    ok = fabs(got - want) <= 2e-3 * scale + 1e-5;
                    if (!ok)
                        print_error("param %zu: %.9g vs fd %.9g\n", l, got, want);
                }
                if (!ok)
                    print_error("kind %d mask case %zu backend %s\n", kind, mc,
                                which ? "FUSED" : "REFERENCE");
                assert_true(ok);
                assert_true(tu_is_sentinel(g.dparam[n_params(&p)]));
                grads_free(&g);
                problem_free(&p);
            }
    nwattn_context_destroy(ctx[0]);
    nwattn_context_destroy(ctx[1]);
}

/* FUSED's gradients (gf) against REFERENCE's (gr). */
static int fused_close(const problem *p, const grads *gf, const grads *gr) {
    /* |dP| and |D| are at most S: the scale of dS where the ref's gradient cancels */
    const double big_s = tu_mat_maxabs(&p->d_o) * tu_mat_maxabs(&p->v) * (double)p->dv;
    const double tol = 2e-4, atol = 1e-6 * big_s * (double)p->n;
    int ok = tu_allclose("dq", &gf->dq, &gr->dq, tol * tu_mat_maxabs(&gr->dq) + atol, 0.0) &&
             tu_allclose("dk", &gf->dk, &gr->dk, tol * tu_mat_maxabs(&gr->dk) + atol, 0.0) &&
             tu_allclose("dv", &gf->dv, &gr->dv, tol * tu_mat_maxabs(&gr->dv) + atol, 0.0);
    /* The parameter gradient sums m·n terms of size |dS| |x|^2 (data in [-1, 1], h ~ 1). */
    const double terms = (double)p->batch * (double)p->m * (double)p->n * 4.0 *
                         (double)p->d * big_s * 2.0;
    for (size_t l = 0; ok && l < n_params(p); l++) {
        ok = fabs((double)gf->dparam[l] - (double)gr->dparam[l]) <= 1e-6 * terms;
        if (!ok)
            print_error("param %zu: %.9g vs %.9g\n", l, gf->dparam[l], gr->dparam[l]);
    }
    return ok;
}

/* FUSED against REFERENCE over random shapes: 1, odd, tile edges, d = 1, padded rows. */
static void fused_vs_reference(void **state) {
    (void)state;
    nwattn_context *ref = tu_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fused = tu_context(NWATTN_BACKEND_FUSED);
    const size_t sizes[] = {1, 2, 7, 63, 64, 65, 97};
    const size_t widths[] = {1, 3, 8, 9, 17};
    const unsigned parts[] = {0, OR_CAUSAL, OR_LENS_ROW | OR_KEEP, OR_ADDITIVE | OR_LOO};
    tu_rng rng;
    tu_rng_seed(&rng, 1212);
    for (int trial = 0; trial < 36; trial++) {
        problem p;
        const int kind = trial % KINDS;
        problem_make(&p, &rng, 1 + tu_rng_below(&rng, 2), sizes[tu_rng_below(&rng, 7)],
                     sizes[tu_rng_below(&rng, 7)], widths[tu_rng_below(&rng, 5)],
                     1 + tu_rng_below(&rng, 5), kind, parts[tu_rng_below(&rng, 4)],
                     tu_rng_below(&rng, 3));
        forward(fused, &p);
        grads gr, gf;
        grads_make(&gr, &p, 1);
        grads_make(&gf, &p, 2);
        TU_ASSERT_OK(ref, backward(ref, &p, &gr));
        TU_ASSERT_OK(fused, backward(fused, &p, &gf));
        int ok = fused_close(&p, &gf, &gr);
        if (!ok)
            print_error("trial %d: kind %d batch %zu m %zu n %zu d %zu dv %zu\n", trial, kind,
                        p.batch, p.m, p.n, p.d, p.dv);
        assert_true(ok);
        grads_free(&gr);
        grads_free(&gf);
        problem_free(&p);
    }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fused);
}

/* Keys beyond every valid length get exactly 0, and so do the rows of a zero length. */
static void masked_exact_zero(void **state) {
    (void)state;
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_FUSED};
    tu_rng rng;
    tu_rng_seed(&rng, 3);
    for (int kind = 0; kind < KINDS; kind++)
        for (size_t bi = 0; bi < 2; bi++) {
            nwattn_context *ctx = tu_context(backends[bi]);
            problem p;
            problem_make(&p, &rng, 2, 70, 90, 5, 3, kind, 0, 1);
            size_t lens[2] = {0, 40};
            p.mk.mask.valid_lens = lens;
            p.mk.parts = OR_LENS_ITEM; /* or_mask_get then returns the mask */
            /* NaN values of masked keys must not reach anything */
            for (size_t j = 40; j < 90; j++)
                *tu_at(&p.v, 1, j, 0) = NAN;
            forward(ctx, &p);
            grads g;
            grads_make(&g, &p, 0);
            TU_ASSERT_OK(ctx, backward(ctx, &p, &g));
            for (size_t l = 0; l < p.d; l++) {
                for (size_t i = 0; i < p.m; i++)
                    assert_true(tu_get(&g.dq, 0, i, l) == 0.0f);
                for (size_t j = 0; j < p.n; j++) {
                    assert_true(tu_get(&g.dk, 0, j, l) == 0.0f);
                    if (j >= 40)
                        assert_true(tu_get(&g.dk, 1, j, l) == 0.0f);
                }
            }
            for (size_t c = 0; c < p.dv; c++)
                for (size_t j = 40; j < p.n; j++)
                    assert_true(tu_get(&g.dv, 1, j, c) == 0.0f && tu_get(&g.dv, 0, j, c) == 0.0f);
            assert_true(tu_mat_no_nan(&g.dq, "dq") && tu_mat_no_nan(&g.dk, "dk"));
            grads_free(&g);
            problem_free(&p);
            nwattn_context_destroy(ctx);
        }
}

/* The fused path's bits do not depend on the thread count, with batch 1 (units of key and
 * query blocks). */
static void threads_bit_identical(void **state) {
    (void)state;
    tu_rng rng;
    tu_rng_seed(&rng, 77);
    for (int kind = 0; kind < KINDS; kind++) {
        problem p;
        problem_make(&p, &rng, 1, 150, 131, 9, 4, kind, OR_CAUSAL, 1);
        grads g[3];
        for (size_t t = 0; t < 3; t++) {
            nwattn_context *ctx = tu_context(NWATTN_BACKEND_FUSED);
            assert_int_equal(nwattn_context_set_threads(ctx, t + 1), NWATTN_OK);
            if (t == 0)
                forward(ctx, &p);
            grads_make(&g[t], &p, 0);
            TU_ASSERT_OK(ctx, backward(ctx, &p, &g[t]));
            nwattn_context_destroy(ctx);
        }
        for (size_t t = 1; t < 3; t++) {
            assert_true(tu_mat_bits_equal(&g[0].dq, &g[t].dq));
            assert_true(tu_mat_bits_equal(&g[0].dk, &g[t].dk));
            assert_true(tu_mat_bits_equal(&g[0].dv, &g[t].dv));
            assert_memory_equal(g[0].dparam, g[t].dparam, n_params(&p) * sizeof(float));
        }
        for (size_t t = 0; t < 3; t++)
            grads_free(&g[t]);
        problem_free(&p);
    }
}

/* ---- dS: the gradient of the additive mask (learned biases) ---------------------------- */
/* The additive part's gradient as the call lays it out: one m×n matrix for a broadcast mask
 * (stride 0, batch > 1), else one per item; padded rows and items. */
static int ds_shared(const problem *p) { return p->batch > 1 && p->mk.additive.stride == 0; }

static tu_mat ds_make(const problem *p) {
    return tu_mat_new(ds_shared(p) ? 1 : p->batch, p->m, p->n, 2, 3); /* sentinels */
}

static nwattn_status backward_ds(nwattn_context *ctx, const problem *p, grads *g, tu_mat *ds) {
    const nwattn_pool_upstream up = upstream_of(p);
    nwattn_pool_grads gs = grads_struct(p, g);
    gs.d_additive = ds->data, gs.ld_d_additive = ds->ld, gs.stride_d_additive = ds->stride;
    return nwattn_pool_backward(ctx, &p->score, mask_of(p), p->batch, p->m, p->n, p->d, p->dv,
                                p->q.data, p->q.ld, p->q.stride, p->k.data, p->k.ld,
                                p->k.stride, p->v.data, p->v.ld, p->v.stride, &up, &gs);
}

/* Whether (i, j) of the gradient's item b is masked in every item it stands for. */
static int ds_masked(const problem *p, size_t b, size_t i, size_t j) {
    const nwattn_mask *mask = mask_of(p);
    const size_t first = ds_shared(p) ? 0 : b, last = ds_shared(p) ? p->batch : b + 1;
    for (size_t c = first; c < last; c++)
        if (!or_masked(mask, c, p->m, p->n, i, j) && or_additive(mask, c, i, j) != -INFINITY &&
            !(mask->valid_lens == NULL && p->n == 0))
            return 0;
    return 1;
}

/* Against central differences of the loss in each additive entry (a broadcast entry moves
 * every item's), masked entries (an additive -INFINITY among them) exactly 0. */
static void additive_finite_differences(void **state) {
    (void)state;
    nwattn_context *ctx[2] = {tu_context(NWATTN_BACKEND_REFERENCE),
                              tu_context(NWATTN_BACKEND_FUSED)};
    /* batch, m, n, kind, mask parts */
    static const struct { size_t batch, m, n; int kind; unsigned parts; } cases[] = {
        {2, 5, 6, 0, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_LENS_ROW},
        {3, 4, 5, 5, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_BROADCAST | OR_LENS_ROW},
        {1, 1, 1, 2, OR_ADDITIVE},
        {3, 3, 1, 1, OR_ADDITIVE | OR_BROADCAST},
        {2, 1, 7, 3, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_KEEP | OR_CAUSAL},
        {2, 6, 3, 4, OR_ADDITIVE | OR_LOO | OR_BROADCAST | OR_KEEP},
    };
    tu_rng rng;
    tu_rng_seed(&rng, 1201);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int which = 0; which < 2; which++) {
            problem p;
            problem_make(&p, &rng, cases[c].batch, cases[c].m, cases[c].n, 3, 2, cases[c].kind,
                         cases[c].parts, 1);
            if (c == 0) /* a fully masked row in item 1 */
                p.mk.lens[p.m + 2] = 0;
            forward(ctx[which], &p);
            grads g;
            grads_make(&g, &p, 1);
            tu_mat ds = ds_make(&p);
            TU_ASSERT_OK(ctx[which], backward_ds(ctx[which], &p, &g, &ds));
            int ok = tu_mat_padding_intact(&ds, "d_additive");
            tu_mat want = tu_mat_clone(&ds);
            for (size_t b = 0; b < ds.batch; b++)
                for (size_t i = 0; i < p.m; i++)
                    for (size_t j = 0; j < p.n; j++) {
                        float *x = tu_at(&p.mk.additive, b, i, j);
                        const int masked = ds_masked(&p, b, i, j);
                        *tu_at(&want, b, i, j) = masked ? 0.0f : (float)fd(&p, x);
                        if (masked && tu_get(&ds, b, i, j) != 0.0f) {
                            print_error("masked (%zu, %zu, %zu): %g, not 0\n", b, i, j,
                                        tu_get(&ds, b, i, j));
                            ok = 0;
                        }
                    }
            ok = ok && tu_allclose("d_additive", &ds, &want, 2e-3 * tu_mat_maxabs(&want) + 1e-5,
                                   0.0);
            if (!ok)
                print_error("case %zu backend %s\n", c, which ? "FUSED" : "REFERENCE");
            assert_true(ok);
            tu_mat_free(&want);
            tu_mat_free(&ds);
            grads_free(&g);
            problem_free(&p);
        }
    nwattn_context_destroy(ctx[0]);
    nwattn_context_destroy(ctx[1]);
}

/* FUSED against REFERENCE on awkward shapes (tile edges, n = 1, broadcast or not), and the
 * same bits for 1, 2 and 3 threads; the other gradients do not change when dS is asked for. */
static void additive_fused_vs_reference(void **state) {
    (void)state;
    nwattn_context *ref = tu_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fused[3];
    for (size_t t = 0; t < 3; t++) {
        fused[t] = tu_context(NWATTN_BACKEND_FUSED);
        assert_int_equal(nwattn_context_set_threads(fused[t], t + 1), NWATTN_OK);
    }
    const size_t sizes[] = {1, 2, 7, 64, 65, 97};
    tu_rng rng;
    tu_rng_seed(&rng, 1202);
    for (int trial = 0; trial < 12; trial++) {
        problem p;
        const unsigned parts = OR_ADDITIVE | (trial % 2 ? OR_ADDITIVE_NEGINF : OR_LENS_ROW) |
                               (trial % 3 == 0 ? OR_BROADCAST : 0) |
                               (trial % 4 == 1 ? OR_CAUSAL : 0);
        problem_make(&p, &rng, 1 + tu_rng_below(&rng, 3), sizes[tu_rng_below(&rng, 6)],
                     sizes[tu_rng_below(&rng, 6)], 1 + tu_rng_below(&rng, 9),
                     1 + tu_rng_below(&rng, 4), trial % KINDS, parts, tu_rng_below(&rng, 3));
        forward(fused[0], &p);
        grads gr, gf[3], plain;
        tu_mat dr = ds_make(&p), df[3];
        grads_make(&gr, &p, 1);
        TU_ASSERT_OK(ref, backward_ds(ref, &p, &gr, &dr));
        for (size_t t = 0; t < 3; t++) {
            grads_make(&gf[t], &p, 2);
            df[t] = ds_make(&p);
            TU_ASSERT_OK(fused[t], backward_ds(fused[t], &p, &gf[t], &df[t]));
        }
        grads_make(&plain, &p, 2);
        TU_ASSERT_OK(fused[1], backward(fused[1], &p, &plain));
        const double big_s = tu_mat_maxabs(&p.d_o) * tu_mat_maxabs(&p.v) * (double)p.dv;
        int ok = tu_allclose("d_additive", &df[0], &dr,
                             2e-4 * tu_mat_maxabs(&dr) + 1e-6 * big_s * (double)p.batch, 0.0) &&
                 tu_mat_padding_intact(&df[0], "d_additive");
        for (size_t t = 1; t < 3; t++)
            ok = ok && tu_mat_bits_equal(&df[0], &df[t]) &&
                 tu_mat_bits_equal(&gf[0].dq, &gf[t].dq) &&
                 tu_mat_bits_equal(&gf[0].dk, &gf[t].dk) &&
                 memcmp(gf[0].dparam, gf[t].dparam, n_params(&p) * sizeof(float)) == 0;
        ok = ok && tu_mat_bits_equal(&plain.dq, &gf[1].dq) &&
             tu_mat_bits_equal(&plain.dk, &gf[1].dk) && tu_mat_bits_equal(&plain.dv, &gf[1].dv) &&
             memcmp(plain.dparam, gf[1].dparam, n_params(&p) * sizeof(float)) == 0;
        if (!ok)
            print_error("trial %d: kind %d batch %zu m %zu n %zu d %zu dv %zu parts 0x%x\n",
                        trial, trial % KINDS, p.batch, p.m, p.n, p.d, p.dv, parts);
        assert_true(ok);
        for (size_t t = 0; t < 3; t++) {
            grads_free(&gf[t]);
            tu_mat_free(&df[t]);
        }
        grads_free(&plain);
        grads_free(&gr);
        tu_mat_free(&dr);
        problem_free(&p);
    }
    nwattn_context_destroy(ref);
    for (size_t t = 0; t < 3; t++)
        nwattn_context_destroy(fused[t]);
}

/* ---- Several key groups -------------------------------------------------------------- */
/* Item b of src into item 0 of dst (same rows and columns). */
static void copy_item(tu_mat *dst, const tu_mat *src, size_t b) {
    for (size_t i = 0; i < src->rows; i++)
        for (size_t j = 0; j < src->cols; j++)
            *tu_at(dst, 0, i, j) = tu_get(src, b, i, j);
}

/* Item b of p (inputs, the forward's O and lse, the mask) as a batch of one in one. */
static void problem_item(problem *one, const problem *p, size_t b) {
    memcpy(one->bw, p->bw, sizeof p->bw); /* the per-dimension bandwidths */
    copy_item(&one->q, &p->q, b);
    copy_item(&one->k, &p->k, b);
    copy_item(&one->v, &p->v, b);
    copy_item(&one->d_o, &p->d_o, b);
    copy_item(&one->o, &p->o, b);
    copy_item(&one->lse, &p->lse, b);
    if (p->mk.parts & OR_LENS_ROW)
        memcpy(one->mk.lens, p->mk.lens + b * p->m, p->m * sizeof(size_t));
    if (p->mk.parts & OR_ADDITIVE)
        copy_item(&one->mk.additive, &p->mk.additive, b);
    const nwattn_mask *m1 = mask_of(one), *m3 = mask_of(p);
    for (size_t i = 0; p->mk.keep != NULL && i < p->m; i++)
        for (size_t j = 0; j < p->n; j++)
            one->mk.keep[i * m1->ld_keep + j] =
                p->mk.keep[b * m3->stride_keep + i * m3->ld_keep + j];
}

/* Item bx of x equals item by of y bit for bit (their layouts may differ). */
static int item_bits_equal(const tu_mat *x, size_t bx, const tu_mat *y, size_t by) {
    for (size_t i = 0; i < x->rows; i++)
        for (size_t j = 0; j < x->cols; j++) {
            const float u = tu_get(x, bx, i, j), w = tu_get(y, by, i, j);
            if (memcmp(&u, &w, sizeof u) != 0) {
                print_error("(%zu, %zu): %.9g vs %.9g\n", i, j, (double)u, (double)w);
                return 0;
            }
        }
    return 1;
}

static int mat_bits_equal(const tu_mat *x, const tu_mat *y) {
    for (size_t b = 0; b < x->batch; b++)
        if (!item_bits_equal(x, b, y, b))
            return 0;
    return 1;
}

/* Many key blocks, so the five-product units split them into several groups whose dQ sums
 * are added at the end: the same bits for 1, 2 and 3 threads and for an item alone or second
 * of three; FUSED against REFERENCE; rows without a live key exactly 0. Awkward sizes: n not a
 * multiple of the tile, m = 1, d = 1, n = 1, padded rows, fully masked rows, causal. Under
 * NWATTN_TEST_SMALL one score kind per case. */
static void key_groups(void **state) {
    (void)state;
    static const struct { size_t m, n, d, dv; unsigned parts; } cases[] = {
        {700, 650, 9, 4, OR_CAUSAL},
        {150, 700, 9, 4, 0},
        {1, 333, 3, 2, OR_LENS_ROW},
        {1100, 1030, 1, 3, OR_CAUSAL | OR_LENS_ROW},
        {65, 260, 17, 1, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_KEEP},
        {130, 129, 8, 5, OR_LOO | OR_LENS_ROW},
        {70, 1, 5, 2, OR_LENS_ROW},
        {300, 200, 64, 64, OR_CAUSAL | OR_ADDITIVE},
    };
    nwattn_context *ref = tu_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fused[3];
    for (size_t t = 0; t < 3; t++) {
        fused[t] = tu_context(NWATTN_BACKEND_FUSED);
        assert_int_equal(nwattn_context_set_threads(fused[t], t + 1), NWATTN_OK);
    }
    tu_rng rng;
    tu_rng_seed(&rng, 1203);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int kind = 0; kind < KINDS; kind++) {
            if (test_small_shapes() && (size_t)kind != c % KINDS)
                continue; /* one kind per case, every kind over the cases */
            problem p, one;
            const unsigned parts = cases[c].parts;
            const size_t pad = 1 + (c + (size_t)kind) % 2;
            problem_make(&p, &rng, 3, cases[c].m, cases[c].n, cases[c].d, cases[c].dv, kind,
                         parts, pad);
            problem_make(&one, &rng, 1, cases[c].m, cases[c].n, cases[c].d, cases[c].dv, kind,
                         parts, pad + 1);
            forward(fused[0], &p);
            problem_item(&one, &p, 1);
            const int ds = (parts & OR_ADDITIVE) != 0;
            grads gf[3], g1, gr;
            tu_mat df[3], d1 = ds_make(&one), dr = ds_make(&p);
            for (size_t t = 0; t < 3; t++) {
                grads_make(&gf[t], &p, t);
                df[t] = ds_make(&p);
                TU_ASSERT_OK(fused[t], ds ? backward_ds(fused[t], &p, &gf[t], &df[t])
                                          : backward(fused[t], &p, &gf[t]));
            }
            grads_make(&g1, &one, 1);
            TU_ASSERT_OK(fused[1], ds ? backward_ds(fused[1], &one, &g1, &d1)
                                      : backward(fused[1], &one, &g1));
            grads_make(&gr, &p, 0);
            TU_ASSERT_OK(ref, ds ? backward_ds(ref, &p, &gr, &dr) : backward(ref, &p, &gr));
            int ok = 1;
            for (size_t t = 1; t < 3; t++)
                ok = ok && mat_bits_equal(&gf[0].dq, &gf[t].dq) &&
                     mat_bits_equal(&gf[0].dk, &gf[t].dk) && mat_bits_equal(&gf[0].dv, &gf[t].dv) &&
                     (!ds || mat_bits_equal(&df[0], &df[t])) &&
                     memcmp(gf[0].dparam, gf[t].dparam, n_params(&p) * sizeof(float)) == 0;
            if (!ok)
                print_error("thread counts differ\n");
            ok = ok && item_bits_equal(&gf[0].dq, 1, &g1.dq, 0) &&
                 item_bits_equal(&gf[0].dk, 1, &g1.dk, 0) &&
                 item_bits_equal(&gf[0].dv, 1, &g1.dv, 0) &&
                 (!ds || item_bits_equal(&df[0], 1, &d1, 0));
            ok = ok && fused_close(&p, &gf[1], &gr) && tu_mat_padding_intact(&gf[1].dq, "dq") &&
                 tu_mat_padding_intact(&gf[1].dk, "dk") && tu_mat_padding_intact(&gf[1].dv, "dv");
            if (ds)
                ok = ok && tu_mat_padding_intact(&df[0], "d_additive") &&
                     tu_allclose("d_additive", &df[0], &dr, 2e-4 * tu_mat_maxabs(&dr) + 1e-6,
                                 0.0);
            for (size_t b = 0; ok && b < p.batch; b++) /* rows without a live key: exactly 0 */
                for (size_t i = 0; i < p.m; i++)
                    if (tu_get(&p.lse, b, 0, i) == -INFINITY)
                        for (size_t l = 0; l < p.d; l++)
                            ok = ok && tu_get(&gf[2].dq, b, i, l) == 0.0f;
            if (!ok)
                print_error("case %zu kind %d\n", c, kind);
            assert_true(ok);
            for (size_t t = 0; t < 3; t++) {
                grads_free(&gf[t]);
                tu_mat_free(&df[t]);
            }
            grads_free(&g1);
            grads_free(&gr);
            tu_mat_free(&d1);
            tu_mat_free(&dr);
            problem_free(&one);
            problem_free(&p);
        }
    nwattn_context_destroy(ref);
    for (size_t t = 0; t < 3; t++)
        nwattn_context_destroy(fused[t]);
}

/* Where not even two key groups' dQ sums fit the working-memory budget (m·d beyond 12.6 M
 * floats: here m = 200000, d = 64, n = 65, two key blocks), the seven-product units run:
 * the same bits for 1 and 2 threads, and right. Queries and dO repeat every 100 rows, so the
 * big problem's dQ rows are a small one's (REFERENCE) and its dK and dV 2000 times that. */
static void beyond_group_budget(void **state) {
    (void)state;
    /* 160 MB and 8 s natively: past an hour under memcheck (CI's valgrind stage sets
     * NWATTN_TEST_SMALL); the ASan stages run it. */
    if (test_small_shapes())
        skip();
    const size_t period = 100, m = 200000, n = 65, d = 64;
    nwattn_context *ref = tu_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fused[2];
    for (size_t t = 0; t < 2; t++) {
        fused[t] = tu_context(NWATTN_BACKEND_FUSED);
        assert_int_equal(nwattn_context_set_threads(fused[t], t + 1), NWATTN_OK);
    }
    tu_rng rng;
    tu_rng_seed(&rng, 1204);
    const int kinds[] = {0, 2}; /* dot; Gaussian (r sums too) */
    for (size_t c = 0; c < 2; c++) {
        problem small, big;
        problem_make(&small, &rng, 1, period, n, d, 1, kinds[c], 0, 0);
        problem_make(&big, &rng, 1, m, n, d, 1, kinds[c], 0, 0);
        for (size_t i = 0; i < m; i++)
            for (size_t l = 0; l < d; l++) {
                *tu_at(&big.q, 0, i, l) = tu_get(&small.q, 0, i % period, l);
                *tu_at(&big.d_o, 0, i, 0) = tu_get(&small.d_o, 0, i % period, 0);
            }
        copy_item(&big.k, &small.k, 0);
        copy_item(&big.v, &small.v, 0);
        forward(fused[0], &small);
        forward(fused[0], &big);
        grads gs, gb[2];
        grads_make(&gs, &small, 0);
        TU_ASSERT_OK(ref, backward(ref, &small, &gs));
        for (size_t t = 0; t < 2; t++) {
            grads_make(&gb[t], &big, 0);
            TU_ASSERT_OK(fused[t], backward(fused[t], &big, &gb[t]));
        }
        int ok = mat_bits_equal(&gb[0].dq, &gb[1].dq) && mat_bits_equal(&gb[0].dk, &gb[1].dk) &&
                 mat_bits_equal(&gb[0].dv, &gb[1].dv) &&
                 memcmp(gb[0].dparam, gb[1].dparam, sizeof(float)) == 0;
        const double copies = (double)(m / period);
        const double tq = 2e-4 * tu_mat_maxabs(&gs.dq) + 1e-7;
        const double tk = 1e-3 * copies * tu_mat_maxabs(&gs.dk) + 1e-7;
        const double tv = 1e-3 * copies * tu_mat_maxabs(&gs.dv) + 1e-7;
        for (size_t i = 0; ok && i < m; i++)
            for (size_t l = 0; ok && l < d; l++)
                ok = fabs((double)tu_get(&gb[0].dq, 0, i, l) -
                          (double)tu_get(&gs.dq, 0, i % period, l)) <= tq;
        for (size_t j = 0; ok && j < n; j++) {
            for (size_t l = 0; ok && l < d; l++)
                ok = fabs((double)tu_get(&gb[0].dk, 0, j, l) -
                          copies * (double)tu_get(&gs.dk, 0, j, l)) <= tk;
            ok = ok && fabs((double)tu_get(&gb[0].dv, 0, j, 0) -
                            copies * (double)tu_get(&gs.dv, 0, j, 0)) <= tv;
        }
        ok = ok && fabs((double)gb[0].dparam[0] - copies * (double)gs.dparam[0]) <=
                       1e-3 * copies * fabs((double)gs.dparam[0]) + 1e-6;
        if (!ok)
            print_error("kind %d\n", kinds[c]);
        assert_true(ok);
        grads_free(&gs);
        grads_free(&gb[0]);
        grads_free(&gb[1]);
        problem_free(&small);
        problem_free(&big);
    }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fused[0]);
    nwattn_context_destroy(fused[1]);
}

/* Every failure names the problem and writes nothing. */
static void bad_inputs(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_FUSED);
    tu_rng rng;
    tu_rng_seed(&rng, 5);
    problem p;
    problem_make(&p, &rng, 2, 4, 5, 3, 2, 2, 0, 1);
    forward(ctx, &p);
    grads g;
    grads_make(&g, &p, 1);
    nwattn_pool_upstream up = upstream_of(&p);
    nwattn_pool_grads gs = grads_struct(&p, &g);
#define CALL(score_, up_, gs_)                                                                 \
    nwattn_pool_backward(ctx, score_, NULL, p.batch, p.m, p.n, p.d, p.dv, p.q.data, p.q.ld,   \
                         p.q.stride, p.k.data, p.k.ld, p.k.stride, p.v.data, p.v.ld,          \
                         p.v.stride, up_, gs_)
    assert_int_equal(CALL(&p.score, NULL, &gs), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(CALL(&p.score, &up, NULL), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(CALL(NULL, &up, &gs), NWATTN_ERR_NULL_POINTER);
    nwattn_pool_upstream bad_up = up;
    bad_up.d_o = NULL;
    assert_int_equal(CALL(&p.score, &bad_up, &gs), NWATTN_ERR_NULL_POINTER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "d_o"));
    bad_up = up;
    bad_up.ldo = 1;
    assert_int_equal(CALL(&p.score, &bad_up, &gs), NWATTN_ERR_BAD_LEADING_DIM);
    nwattn_pool_grads bad = gs;
    bad.d_k = NULL;
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_NULL_POINTER);
    bad = gs;
    bad.d_scale = g.dparam + 4;
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_BAD_PARAMETER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "d_scale"));
    bad = gs;
    bad.stride_dq = 1;
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_BAD_STRIDE);
    bad = gs;
    bad.d_v = p.v.data; /* writes over an input */
    bad.ld_dv = p.v.ld, bad.stride_dv = p.v.stride;
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_ALIASING);
    bad = gs;
    bad.d_bandwidth = g.dq.data; /* two outputs share an element */
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_ALIASING);
    nwattn_score bad_score = p.score;
    bad_score.bandwidth = -1.0f;
    assert_int_equal(CALL(&bad_score, &up, &gs), NWATTN_ERR_BAD_PARAMETER);
    bad_score.kind = (nwattn_score_kind)17;
    assert_int_equal(CALL(&bad_score, &up, &gs), NWATTN_ERR_BAD_ENUM);
    assert_int_equal(nwattn_pool_backward(ctx, &p.score, NULL, 1, 1, 1, 0, 1, p.q.data, 1, 0,
                                          p.k.data, 1, 0, p.v.data, 1, 0, &up, &gs),
                     NWATTN_ERR_BAD_DIMENSION);
    assert_int_equal(nwattn_pool_backward(ctx, &p.score, NULL, 2, SIZE_MAX / 2, 1, 1, 1,
                                          p.q.data, 1, SIZE_MAX / 4, p.k.data, 1, 0, p.v.data,
                                          1, 0, &up, &gs),
                     NWATTN_ERR_OVERFLOW);
    assert_true(tu_mat_padding_intact(&g.dq, "dq"));
    for (size_t b = 0; b < g.dq.batch; b++)
        for (size_t i = 0; i < g.dq.rows; i++)
            for (size_t j = 0; j < g.dq.cols; j++)
                assert_true(tu_is_sentinel(tu_get(&g.dq, b, i, j)));
    assert_true(tu_is_sentinel(g.dparam[0]));
    /* m == 0: zero gradients for the keys */
    assert_int_equal(nwattn_pool_backward(ctx, &p.score, NULL, p.batch, 0, p.n, p.d, p.dv,
                                          p.q.data, p.q.ld, p.q.stride, p.k.data, p.k.ld,
                                          p.k.stride, p.v.data, p.v.ld, p.v.stride, &up, &gs),
                     NWATTN_OK);
    assert_true(tu_get(&g.dk, 1, 4, 2) == 0.0f && tu_get(&g.dv, 1, 4, 1) == 0.0f);
    assert_true(g.dparam[0] == 0.0f);
    /* d_additive: needs an additive mask, its own layout checks, no overlap with the mask */
    tu_mat ds = tu_mat_new(p.batch, p.m, p.n, 1, 1);
    tu_mat_fill_value(&ds, 0.5f); /* also the additive mask below */
    bad = gs;
    bad.d_additive = ds.data, bad.ld_d_additive = ds.ld, bad.stride_d_additive = ds.stride;
    assert_int_equal(CALL(&p.score, &up, &bad), NWATTN_ERR_BAD_PARAMETER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "d_additive"));
    nwattn_mask add = {0};
    add.additive = ds.data, add.ld_additive = ds.ld, add.stride_additive = ds.stride;
#define CALL_MASK(gs_)                                                                         \
    nwattn_pool_backward(ctx, &p.score, &add, p.batch, p.m, p.n, p.d, p.dv, p.q.data, p.q.ld, \
                         p.q.stride, p.k.data, p.k.ld, p.k.stride, p.v.data, p.v.ld,          \
                         p.v.stride, &up, gs_)
    assert_int_equal(CALL_MASK(&bad), NWATTN_ERR_ALIASING); /* in place over the mask */
    tu_mat ds2 = tu_mat_new(p.batch, p.m, p.n, 0, 0);
    bad.d_additive = ds2.data, bad.ld_d_additive = p.n - 1, bad.stride_d_additive = ds2.stride;
    assert_int_equal(CALL_MASK(&bad), NWATTN_ERR_BAD_LEADING_DIM);
    bad.ld_d_additive = ds2.ld, bad.stride_d_additive = 1;
    assert_int_equal(CALL_MASK(&bad), NWATTN_ERR_BAD_STRIDE);
    add.stride_additive = 0; /* broadcast: one matrix, the stride is not read */
    assert_int_equal(CALL_MASK(&bad), NWATTN_OK);
    for (size_t j = 0; j < ds2.count; j++)
        assert_true(j < p.m * p.n ? !tu_is_sentinel(ds2.data[j]) : tu_is_sentinel(ds2.data[j]));
    tu_mat_free(&ds2);
    tu_mat_free(&ds);
#undef CALL_MASK
#undef CALL
    grads_free(&g);
    problem_free(&p);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_inputs),
        cmocka_unit_test(masked_exact_zero),
        cmocka_unit_test(finite_differences),
        cmocka_unit_test(fused_vs_reference),
        cmocka_unit_test(threads_bit_identical),
        cmocka_unit_test(additive_finite_differences),
        cmocka_unit_test(additive_fused_vs_reference),
        cmocka_unit_test(key_groups),
        cmocka_unit_test(beyond_group_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
