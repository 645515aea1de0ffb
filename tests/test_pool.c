/* nwattn_pool: every score kind under several masks, REFERENCE, BLAS and AUTO against a
 * double-precision oracle, with and without the optional weights/lse outputs; pool equals
 * scores + softmax + bmm composed by hand; d2l's Nadaraya-Watson experiments (nonparametric,
 * parametric, leave-one-out training set-up); n = 0, m = 1, n = 1, dv = 1; a problem large
 * enough to be processed a block of query rows at a time.
 *
 * Tolerances (see oracle.h; R = largest |score + additive| over kept keys, e_s = largest BLAS
 * score bound, V = largest |V|):
 *   weights REFERENCE (8 + 4R)u relative, BLAS exp(2e_s) - 1 + (n + 16 + 8R)u relative;
 *   outputs REFERENCE (rtol_w + 4u + n2^-50)V, BLAS (rtol_w + (n + 4)u)V absolute;
 *   lse REFERENCE (8 + 4R)u, BLAS e_s + (n + 16 + 8R)u absolute, plus 2u relative. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool_shape {
    size_t batch, m, n, d, dv;
    size_t pad, stride_pad;
    int bcast_q, bcast_kv;
} pool_shape;

/* Outputs of one run; w and lse are requested when their data is not NULL. */
typedef struct pool_out {
    tu_mat o, w, lse;
} pool_out;

typedef struct pool_call {
    const nwattn_score *score;
    const nwattn_mask *mask;
    const tu_mat *q, *k, *v;
    pool_out *out[3];
} pool_call;

static nwattn_status call_pool(nwattn_context *ctx, void *user, int which) {
    pool_call *c = user;
    pool_out *p = c->out[which];
    const tu_mat *q = c->q, *k = c->k, *v = c->v;
    return nwattn_pool(ctx, c->score, c->mask, p->o.batch, p->o.rows, v->rows, q->cols, v->cols,
                       q->data, q->ld, q->stride, k->data, k->ld, k->stride, v->data, v->ld,
                       v->stride, p->o.data, p->o.ld, p->o.stride, p->w.data,
                       p->w.data ? p->w.ld : 0, p->w.data ? p->w.stride : 0, p->lse.data,
                       p->lse.data ? p->lse.stride : 0);
}

static pool_out pool_out_new(const pool_shape *sh, int want_w, int want_lse) {
    pool_out p;
    memset(&p, 0, sizeof p);
    p.o = tu_mat_new(sh->batch, sh->m, sh->dv, sh->pad, sh->stride_pad);
    if (want_w)
        p.w = tu_mat_new(sh->batch, sh->m, sh->n, sh->pad + 1, sh->stride_pad);
    if (want_lse)
        p.lse = tu_mat_new_layout(sh->batch, 1, sh->m, sh->m, sh->m + 2);
    return p;
}

static void pool_out_free(pool_out *p) {
    tu_mat_free(&p->o);
    if (p->w.data)
        tu_mat_free(&p->w);
    if (p->lse.data)
        tu_mat_free(&p->lse);
}

typedef struct pool_problem {
    tu_mat q, k, v;
    or_mask mk;
} pool_problem;

static void problem_make(pool_problem *pb, const pool_shape *sh, unsigned parts, tu_rng *rng) {
    pb->q = sh->bcast_q ? tu_mat_new_broadcast(sh->batch, sh->m, sh->d, sh->pad)
                        : tu_mat_new(sh->batch, sh->m, sh->d, sh->pad, sh->stride_pad);
    pb->k = sh->bcast_kv ? tu_mat_new_broadcast(sh->batch, sh->n, sh->d, sh->pad)
                         : tu_mat_new(sh->batch, sh->n, sh->d, sh->pad, sh->stride_pad);
    pb->v = sh->bcast_kv ? tu_mat_new_broadcast(sh->batch, sh->n, sh->dv, sh->pad)
                         : tu_mat_new(sh->batch, sh->n, sh->dv, sh->pad, sh->stride_pad);
    tu_mat_fill_uniform(&pb->q, rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&pb->k, rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&pb->v, rng, -3.0f, 3.0f);
    or_mask_make(&pb->mk, parts, sh->batch, sh->m, sh->n, rng);
}

static void problem_free(pool_problem *pb) {
    tu_mat_free(&pb->q);
    tu_mat_free(&pb->k);
    tu_mat_free(&pb->v);
    or_mask_free(&pb->mk);
}

typedef struct pool_tols {
    double rtol_w, atol_o, atol_lse;
} pool_tols;

static pool_tols tolerances(int which, size_t n, const or_pool_info *info) {
    pool_tols t;
    if (which == TU_REF) {
        t.rtol_w = or_rtol_weights_ref(info->range);
        t.atol_o = or_atol_out_ref(n, t.rtol_w, info->vmax);
        t.atol_lse = or_atol_lse_ref(info->range);
    } else { /* BLAS, and AUTO, which may pick either */
        t.rtol_w = or_rtol_weights_blas(n, info->range, info->score_err_blas);
        t.atol_o = or_atol_out_blas(n, t.rtol_w, info->vmax);
        t.atol_lse = or_atol_lse_blas(n, info->range, info->score_err_blas);
    }
    return t;
}

static void check_against(const char *what, const pool_out *got, const pool_out *want,
                          const pool_tols *tol) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s: output", what);
    assert_true(tu_mat_padding_intact(&got->o, buf));
    assert_true(tu_mat_no_nan(&got->o, buf));
    assert_true(tu_allclose(buf, &got->o, &want->o, tol->atol_o, 0.0));
    if (got->w.data) {
        snprintf(buf, sizeof buf, "%s: weights", what);
        assert_true(tu_mat_padding_intact(&got->w, buf));
        assert_true(tu_mat_no_nan(&got->w, buf));
        assert_true(tu_allclose(buf, &got->w, &want->w, OR_ATOL_WEIGHT, tol->rtol_w));
    }
    if (got->lse.data) {
        snprintf(buf, sizeof buf, "%s: lse", what);
        assert_true(tu_mat_padding_intact(&got->lse, buf));
        assert_true(tu_mat_no_nan(&got->lse, buf));
        assert_true(tu_allclose(buf, &got->lse, &want->lse, tol->atol_lse, 2 * TU_U));
    }
}

/* The masked entries of w are exactly zero (structure only; values are checked elsewhere). */
static void check_masked_zero(const char *what, const nwattn_mask *mask, const tu_mat *w) {
    for (size_t b = 0; b < w->batch; b++)
        for (size_t i = 0; i < w->rows; i++)
            for (size_t j = 0; j < w->cols; j++) {
                int masked = or_masked(mask, b, w->rows, w->cols, i, j) ||
                             or_additive(mask, b, i, j) == -INFINITY;
                if (masked && tu_get(w, b, i, j) != 0.0f) {
                    print_message("%s: masked weight [%zu,%zu,%zu] = %.9g\n", what, b, i, j,
                                  (double)tu_get(w, b, i, j));
                    fail();
                }
            }
}

/* One problem: the four combinations of optional outputs under REFERENCE, BLAS and AUTO. */
static void check_pool(const nwattn_score *score, const pool_shape *sh, unsigned parts,
                       uint64_t seed, const char *label) {
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    pool_problem pb;
    problem_make(&pb, sh, parts, &rng);
    const nwattn_mask *mask = or_mask_get(&pb.mk);
    tu_mat q0 = tu_mat_clone(&pb.q), k0 = tu_mat_clone(&pb.k), v0 = tu_mat_clone(&pb.v);

    pool_out want = pool_out_new(sh, 1, 1);
    or_pool_info info;
    or_pool(score, mask, &pb.q, &pb.k, &pb.v, &want.o, &want.w, &want.lse, &info);

    tu_backends bk;
    tu_backends_init(&bk);
    nwattn_context *autoctx = tu_context(NWATTN_BACKEND_AUTO);
    static const char *names[3] = {"REFERENCE", "BLAS", "AUTO"};
    tu_mat base_o[3], base_lse[3]; /* outputs without the optional outputs / lse alone */
    for (int variant = 0; variant < 4; variant++) {
        int want_w = variant & 1, want_lse = (variant >> 1) & 1;
        pool_out out[3];
        pool_call c = {score, mask, &pb.q, &pb.k, &pb.v, {NULL, NULL, NULL}};
        for (int t = 0; t < 3; t++) {
            out[t] = pool_out_new(sh, want_w, want_lse);
            c.out[t] = &out[t];
        }
        tu_run_both(&bk, call_pool, &c);
        TU_ASSERT_OK(autoctx, call_pool(autoctx, &c, 2));
        for (int t = 0; t < 3; t++) {
            char what[256];
            snprintf(what, sizeof what, "pool %s %s%s%s", label, names[t], want_w ? " +w" : "",
                     want_lse ? " +lse" : "");
            pool_tols tol = tolerances(t, sh->n, &info);
            check_against(what, &out[t], &want, &tol);
            if (want_w)
                check_masked_zero(what, mask, &out[t].w);
        }
        pool_tols tb = tolerances(TU_BLAS, sh->n, &info);
        assert_true(tu_allclose("pool BLAS vs REFERENCE", &out[TU_BLAS].o, &out[TU_REF].o,
                                2 * tb.atol_o, 0.0));
        /* Requesting weights or lse does not change the other results, bit for bit. */
        for (int t = 0; t < 3; t++) {
            if (variant == 0)
                base_o[t] = tu_mat_clone(&out[t].o);
            else if (!tu_mat_bits_equal(&out[t].o, &base_o[t])) {
                print_message("%s %s: the output with w=%d lse=%d differs from the one "
                              "without (max |diff| %.3g)\n",
                              label, names[t], want_w, want_lse,
                              tu_max_abs_diff(&out[t].o, &base_o[t]));
                fail();
            }
            if (variant == 2)
                base_lse[t] = tu_mat_clone(&out[t].lse);
            else if (variant == 3 && !tu_mat_bits_equal(&out[t].lse, &base_lse[t])) {
                print_message("%s %s: lse changes when weights are requested\n", label,
                              names[t]);
                fail();
            }
            pool_out_free(&out[t]);
        }
    }
    for (int t = 0; t < 3; t++) {
        tu_mat_free(&base_o[t]);
        tu_mat_free(&base_lse[t]);
    }
    assert_true(tu_mat_bits_equal(&pb.q, &q0));
    assert_true(tu_mat_bits_equal(&pb.k, &k0));
    assert_true(tu_mat_bits_equal(&pb.v, &v0));
    nwattn_context_destroy(autoctx);
    tu_backends_fini(&bk);
    pool_out_free(&want);
    tu_mat_free(&q0);
    tu_mat_free(&k0);
    tu_mat_free(&v0);
    problem_free(&pb);
}

static const pool_shape shapes[] = {
    {2, 7, 13, 3, 4, 1, 2, 0, 0},
    {1, 1, 1, 1, 1, 0, 0, 0, 0},
    {3, 1, 9, 2, 1, 2, 0, 0, 0},  /* m = 1, dv = 1 */
    {2, 9, 1, 5, 3, 0, 1, 0, 0},  /* n = 1 */
    {3, 5, 6, 2, 2, 1, 0, 0, 1},  /* keys and values broadcast */
    {3, 6, 5, 2, 3, 1, 0, 1, 0},  /* queries broadcast */
    {1, 3, 1200, 3, 2, 0, 0, 0, 0},
};

static const unsigned mask_sets[] = {
    0,
    OR_LOO,
    OR_CAUSAL | OR_LENS_ITEM,
    OR_LENS_ROW | OR_KEEP,
    OR_ADDITIVE | OR_ADDITIVE_NEGINF,
    OR_LOO | OR_CAUSAL | OR_LENS_ROW | OR_ADDITIVE | OR_KEEP,
};

static void run_kind(const nwattn_score *score, const char *name, uint64_t seed) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t k = 0; k < sizeof mask_sets / sizeof mask_sets[0]; k++) {
            const pool_shape *sh = &shapes[s];
            unsigned parts = mask_sets[k] | (sh->bcast_kv || sh->bcast_q ? OR_BROADCAST : 0);
            char label[160];
            snprintf(label, sizeof label, "[%s mask=0x%x b=%zu m=%zu n=%zu d=%zu dv=%zu]", name,
                     parts, sh->batch, sh->m, sh->n, sh->d, sh->dv);
            check_pool(score, sh, parts, seed++, label);
        }
}

static void test_dot(void **state) {
    (void)state;
    nwattn_score sc = {NWATTN_SCORE_DOT, 0.5f, 0.0f, NULL};
    run_kind(&sc, "dot 0.5", 1000);
    sc.scale = 3.0f;
    run_kind(&sc, "dot 3", 1100);
}

static void test_gaussian(void **state) {
    (void)state;
    static const float h5[5] = {0.5f, 1.0f, 2.0f, 0.75f, 1.5f};
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.6f, NULL};
    run_kind(&sc, "gaussian 0.6", 2000);
    sc.bandwidths = h5; /* every shape has d <= 5 */
    run_kind(&sc, "gaussian h_j", 2100);
}

static void test_laplace(void **state) {
    (void)state;
    static const float h5[5] = {1.5f, 0.5f, 1.0f, 2.0f, 0.25f};
    nwattn_score sc = {NWATTN_SCORE_LAPLACE, 0.0f, 0.4f, NULL};
    run_kind(&sc, "laplace 0.4", 3000);
    sc.bandwidths = h5;
    run_kind(&sc, "laplace h_j", 3100);
}

/* ---- Composition ---------------------------------------------------------------------------- */
/* pool(Q, K, V) == bmm(softmax(scores(Q, K) + mask), V), backend by backend. */
static void test_equals_composition(void **state) {
    (void)state;
    const pool_shape sh = {3, 8, 11, 3, 2, 1, 1, 0, 0};
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.8f, NULL};
    tu_rng rng;
    tu_rng_seed(&rng, 4242);
    pool_problem pb;
    problem_make(&pb, &sh, OR_LOO | OR_LENS_ROW | OR_ADDITIVE, &rng);
    const nwattn_mask *mask = or_mask_get(&pb.mk);
    pool_out want = pool_out_new(&sh, 1, 1);
    or_pool_info info;
    or_pool(&sc, mask, &pb.q, &pb.k, &pb.v, &want.o, &want.w, &want.lse, &info);
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        nwattn_context *ctx = bk.ctx[t];
        pool_out pooled = pool_out_new(&sh, 1, 1), composed = pool_out_new(&sh, 1, 1);
        pool_call c = {&sc, mask, &pb.q, &pb.k, &pb.v, {&pooled, NULL, NULL}};
        TU_ASSERT_OK(ctx, call_pool(ctx, &c, 0));
        tu_mat s = tu_mat_new(sh.batch, sh.m, sh.n, 0, 0);
        TU_ASSERT_OK(ctx, nwattn_scores(ctx, &sc, sh.batch, sh.m, sh.n, sh.d, pb.q.data, pb.q.ld,
                                        pb.q.stride, pb.k.data, pb.k.ld, pb.k.stride, s.data,
                                        s.ld, s.stride));
        TU_ASSERT_OK(ctx, nwattn_softmax(ctx, mask, sh.batch, sh.m, sh.n, s.data, s.ld, s.stride,
                                         composed.w.data, composed.w.ld, composed.w.stride,
                                         composed.lse.data, composed.lse.stride));
        TU_ASSERT_OK(ctx, nwattn_bmm(ctx, sh.batch, sh.m, sh.dv, sh.n, composed.w.data,
                                     composed.w.ld, composed.w.stride, pb.v.data, pb.v.ld,
                                     pb.v.stride, composed.o.data, composed.o.ld,
                                     composed.o.stride));
        pool_tols tol = tolerances(t, sh.n, &info);
        check_against(t ? "composed BLAS" : "composed REFERENCE", &composed, &want, &tol);
        check_against(t ? "pooled BLAS" : "pooled REFERENCE", &pooled, &want, &tol);
        /* Both sides are within tol of the exact value, so within 2 tol of each other. */
        assert_true(tu_allclose("pool vs composition: output", &pooled.o, &composed.o,
                                2 * tol.atol_o, 0.0));
        assert_true(tu_allclose("pool vs composition: weights", &pooled.w, &composed.w,
                                OR_ATOL_WEIGHT, 2 * tol.rtol_w));
        tu_mat_free(&s);
        pool_out_free(&pooled);
        pool_out_free(&composed);
    }
    tu_backends_fini(&bk);
    pool_out_free(&want);
    problem_free(&pb);
}

/* ---- d2l's experiments ------------------------------------------------------------------------
 * n_train = 50 sorted x uniform on [0, 5), y = 2 sin x + x^0.8 + N(0, 0.5^2), x_test = 0, 0.1,
 * ..., 4.9. Nonparametric attention pooling is Gaussian with h = 1; the parametric model
 * softmax(-((x - x_i) w)^2 / 2) is Gaussian with h = 1/|w|. */
#define D2L_N 50

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct d2l_data {
    float x_train[D2L_N], y_train[D2L_N], x_test[D2L_N];
} d2l_data;

static void d2l_make(d2l_data *dd) {
    tu_rng rng;
    tu_rng_seed(&rng, 1322);
    for (size_t i = 0; i < D2L_N; i++)
        dd->x_train[i] = tu_rng_range(&rng, 0.0f, 5.0f);
    qsort(dd->x_train, D2L_N, sizeof(float), cmp_float);
    for (size_t i = 0; i < D2L_N; i++) {
        double x = (double)dd->x_train[i];
        dd->y_train[i] = (float)(2.0 * sin(x) + pow(x, 0.8) + 0.5 * tu_rng_normal(&rng));
        dd->x_test[i] = (float)(0.1 * (double)i);
    }
}

/* The Nadaraya-Watson estimate at x with bandwidth h, skipping key `skip` (or none). */
static double nw_estimate(const d2l_data *dd, double x, double h, size_t skip) {
    double num = 0.0, den = 0.0;
    for (size_t j = 0; j < D2L_N; j++) {
        if (j == skip)
            continue;
        double u = (x - (double)dd->x_train[j]) / h;
        double kern = exp(-0.5 * u * u);
        num += kern * (double)dd->y_train[j];
        den += kern;
    }
    return num / den;
}

/* Bound for the d2l checks: scores up to (5/h)^2/2 = R, V up to 5, n = 50. */
static double d2l_tol(int which, double h) {
    double r = 12.5 / (h * h);
    or_pool_info info = {0.0, r, 5.0};
    /* e_s: q', k' within 5/h of the mean key, d = 1: (4 + 32)u · 2(5/h)^2 / 2 */
    info.score_err_blas = 36.0 * TU_U * r * 2.0;
    return tolerances(which, D2L_N, &info).atol_o;
}

static void check_d2l(const d2l_data *dd, float h, const char *label) {
    tu_mat want = tu_mat_new(1, D2L_N, 1, 0, 0);
    for (size_t i = 0; i < D2L_N; i++)
        *tu_at(&want, 0, i, 0) =
            (float)nw_estimate(dd, (double)dd->x_test[i], (double)h, (size_t)-1);
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, h, NULL};
    static const nwattn_backend backends[3] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                               NWATTN_BACKEND_AUTO};
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(backends[t]);
        tu_mat o = tu_mat_new(1, D2L_N, 1, 0, 0), w = tu_mat_new(1, D2L_N, D2L_N, 0, 0);
        /* queries (50, 1), keys (50, 1), values (50, 1) */
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, D2L_N, D2L_N, 1, 1, dd->x_test, 1, 0,
                                      dd->x_train, 1, 0, dd->y_train, 1, 0, o.data, 1, 0, w.data,
                                      D2L_N, 0, NULL, 0));
        char what[128];
        snprintf(what, sizeof what, "d2l %s backend %d", label, t);
        assert_true(tu_allclose(what, &o, &want, d2l_tol(t == 0 ? TU_REF : TU_BLAS, (double)h),
                                0.0));
        /* The heatmap rows: weights sum to 1 (d2l's attention_weights). */
        for (size_t i = 0; i < D2L_N; i++) {
            double sum = 0.0;
            for (size_t j = 0; j < D2L_N; j++)
                sum += (double)tu_get(&w, 0, i, j);
            assert_true(fabs(sum - 1.0) <= (2.0 * D2L_N + 8.0) * TU_U);
        }
        tu_mat_free(&o);
        tu_mat_free(&w);
        nwattn_context_destroy(ctx);
    }
    tu_mat_free(&want);
}

static void test_d2l_nonparametric(void **state) {
    (void)state;
    d2l_data dd;
    d2l_make(&dd);
    check_d2l(&dd, 1.0f, "nonparametric h=1");
}

static void test_d2l_parametric(void **state) {
    (void)state;
    d2l_data dd;
    d2l_make(&dd);
    const double w = 4.2; /* a trained d2l weight is of this order */
    check_d2l(&dd, (float)(1.0 / w), "parametric w=4.2");
}

/* d2l trains with keys = all other training points: the leave-one-out mask on the training set
 * equals pooling query i over the 49 keys that remain after removing key i. */
static void test_leave_one_out_removes_key(void **state) {
    (void)state;
    d2l_data dd;
    d2l_make(&dd);
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    nwattn_mask loo;
    memset(&loo, 0, sizeof loo);
    loo.flags = NWATTN_MASK_LEAVE_ONE_OUT;
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        nwattn_context *ctx = bk.ctx[t];
        tu_mat o = tu_mat_new(1, D2L_N, 1, 0, 0), removed = tu_mat_new(1, D2L_N, 1, 0, 0);
        tu_mat direct = tu_mat_new(1, D2L_N, 1, 0, 0);
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, &sc, &loo, 1, D2L_N, D2L_N, 1, 1, dd.x_train, 1, 0,
                                      dd.x_train, 1, 0, dd.y_train, 1, 0, o.data, 1, 0, NULL, 0,
                                      0, NULL, 0));
        for (size_t i = 0; i < D2L_N; i++) {
            float keys[D2L_N - 1], vals[D2L_N - 1];
            for (size_t j = 0, r = 0; j < D2L_N; j++)
                if (j != i) {
                    keys[r] = dd.x_train[j];
                    vals[r++] = dd.y_train[j];
                }
            TU_ASSERT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, 1, D2L_N - 1, 1, 1, &dd.x_train[i],
                                          1, 0, keys, 1, 0, vals, 1, 0, tu_at(&removed, 0, i, 0),
                                          1, 0, NULL, 0, 0, NULL, 0));
            *tu_at(&direct, 0, i, 0) = (float)nw_estimate(&dd, (double)dd.x_train[i], 1.0, i);
        }
        double tol = d2l_tol(t, 1.0);
        assert_true(tu_allclose("leave-one-out vs direct", &o, &direct, tol, 0.0));
        assert_true(tu_allclose("removed key vs direct", &removed, &direct, tol, 0.0));
        assert_true(tu_allclose("leave-one-out vs removed key", &o, &removed, 2 * tol, 0.0));
        tu_mat_free(&o);
        tu_mat_free(&removed);
        tu_mat_free(&direct);
    }
    tu_backends_fini(&bk);
}

/* ---- Degenerate sizes ----------------------------------------------------------------------- */
/* n == 0: every row is fully masked: zero output, lse -inf, never NaN. */
static void test_no_keys(void **state) {
    (void)state;
    const nwattn_score kinds[3] = {{NWATTN_SCORE_DOT, 1.0f, 0.0f, NULL},
                                   {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL},
                                   {NWATTN_SCORE_LAPLACE, 0.0f, 1.0f, NULL}};
    const float q[6] = {1, 2, 3, 4, 5, 6}, kv[1] = {0};
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 3; s++) {
            tu_mat o = tu_mat_new(2, 3, 2, 1, 1), lse = tu_mat_new_layout(2, 1, 3, 3, 4);
            tu_mat_fill_value(&o, 9.0f);
            tu_mat_fill_value(&lse, 9.0f);
            float w[1] = {7.0f};
            TU_ASSERT_OK(bk.ctx[t], nwattn_pool(bk.ctx[t], &kinds[s], NULL, 2, 3, 0, 1, 2, q, 1,
                                                3, kv, 1, 0, kv, 2, 0, o.data, o.ld, o.stride, w,
                                                1, 0, lse.data, lse.stride));
            for (size_t b = 0; b < 2; b++)
                for (size_t i = 0; i < 3; i++) {
                    assert_true(tu_get(&o, b, i, 0) == 0.0f && tu_get(&o, b, i, 1) == 0.0f);
                    assert_true(tu_get(&lse, b, 0, i) == -INFINITY);
                }
            assert_true(w[0] == 7.0f);
            assert_true(tu_mat_padding_intact(&o, "pool n=0 output"));
            assert_true(tu_mat_padding_intact(&lse, "pool n=0 lse"));
            /* without the optional outputs too */
            tu_mat_fill_value(&o, 9.0f);
            TU_ASSERT_OK(bk.ctx[t], nwattn_pool(bk.ctx[t], &kinds[s], NULL, 2, 3, 0, 1, 2, q, 1,
                                                3, kv, 1, 0, kv, 2, 0, o.data, o.ld, o.stride,
                                                NULL, 0, 0, NULL, 0));
            for (size_t b = 0; b < 2; b++)
                for (size_t i = 0; i < 3; i++)
                    assert_true(tu_get(&o, b, i, 0) == 0.0f && tu_get(&o, b, i, 1) == 0.0f);
            tu_mat_free(&o);
            tu_mat_free(&lse);
        }
    tu_backends_fini(&bk);
}

/* m = n = 1: the only key gets weight exactly 1 and the output is its value; with
 * leave-one-out it is masked and the output is 0. */
static void test_single_key(void **state) {
    (void)state;
    const nwattn_score sc = {NWATTN_SCORE_LAPLACE, 0.0f, 0.3f, NULL};
    const float q[2] = {0.25f, -1.0f}, k[2] = {3.0f, 2.0f}, v[3] = {1.5f, -2.0f, 1e-3f};
    nwattn_mask loo;
    memset(&loo, 0, sizeof loo);
    loo.flags = NWATTN_MASK_LEAVE_ONE_OUT;
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        float o[3] = {0}, w = 0.0f, lse = 0.0f;
        TU_ASSERT_OK(bk.ctx[t], nwattn_pool(bk.ctx[t], &sc, NULL, 1, 1, 1, 2, 3, q, 2, 0, k, 2,
                                            0, v, 3, 0, o, 3, 0, &w, 1, 0, &lse, 0));
        assert_true(w == 1.0f);
        assert_true(o[0] == v[0] && o[1] == v[1] && o[2] == v[2]);
        /* lse is the one score: -|q - k| / h = -sqrt(2.75^2 + 3^2) / 0.3 */
        double s = -sqrt(2.75 * 2.75 + 9.0) / (double)0.3f;
        assert_true(fabs((double)lse - s) <= 1e-5 * fabs(s));
        TU_ASSERT_OK(bk.ctx[t], nwattn_pool(bk.ctx[t], &sc, &loo, 1, 1, 1, 2, 3, q, 2, 0, k, 2,
                                            0, v, 3, 0, o, 3, 0, &w, 1, 0, &lse, 0));
        assert_true(w == 0.0f && o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f);
        assert_true(lse == -INFINITY);
    }
    tu_backends_fini(&bk);
}

/* ---- Large problems: blocks of query rows ------------------------------------------------------ */
/* m = 2000 queries against n = 3000 keys: the 24 MB of weights are never formed at once when
 * they are not requested, so the pool walks blocks of rows. The mask's row index must be the
 * global one in every block. */
static void check_large(unsigned parts, uint64_t seed) {
    const pool_shape sh = {1, 2000, 3000, 2, 3, 1, 0, 0, 0};
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.5f, NULL};
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    pool_problem pb;
    problem_make(&pb, &sh, parts, &rng);
    const nwattn_mask *mask = or_mask_get(&pb.mk);
    pool_out want = pool_out_new(&sh, 0, 1);
    or_pool_info info;
    or_pool(&sc, mask, &pb.q, &pb.k, &pb.v, &want.o, NULL, &want.lse, &info);
    tu_backends bk;
    tu_backends_init(&bk);
    pool_out out[2] = {pool_out_new(&sh, 0, 1), pool_out_new(&sh, 0, 1)};
    pool_call c = {&sc, mask, &pb.q, &pb.k, &pb.v, {&out[0], &out[1], NULL}};
    tu_run_both(&bk, call_pool, &c);
    for (int t = 0; t < 2; t++) {
        char what[64];
        snprintf(what, sizeof what, "large pool mask=0x%x %s", parts, t ? "BLAS" : "REFERENCE");
        pool_tols tol = tolerances(t, sh.n, &info);
        check_against(what, &out[t], &want, &tol);
        size_t ws = nwattn_context_workspace_bytes(bk.ctx[t]);
        if (ws == 0 || ws >= sh.m * sh.n * sizeof(float)) {
            print_message("%s: workspace %zu bytes, expected a block of rows (0 < ws < %zu)\n",
                          what, ws, sh.m * sh.n * sizeof(float));
            fail();
        }
    }
    assert_true(tu_allclose("large pool BLAS vs REFERENCE", &out[1].o, &out[0].o,
                            2 * tolerances(TU_BLAS, sh.n, &info).atol_o, 0.0));
    tu_backends_fini(&bk);
    pool_out_free(&out[0]);
    pool_out_free(&out[1]);
    pool_out_free(&want);
    problem_free(&pb);
}

static void test_large_blocked(void **state) {
    (void)state;
    check_large(0, 777);
    check_large(OR_LOO | OR_CAUSAL | OR_LENS_ROW | OR_KEEP, 778);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_gaussian),
        cmocka_unit_test(test_laplace),
        cmocka_unit_test(test_equals_composition),
        cmocka_unit_test(test_d2l_nonparametric),
        cmocka_unit_test(test_d2l_parametric),
        cmocka_unit_test(test_leave_one_out_removes_key),
        cmocka_unit_test(test_no_keys),
        cmocka_unit_test(test_single_key),
        cmocka_unit_test(test_large_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
