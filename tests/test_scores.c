/* nwattn_scores: every score kind under REFERENCE, BLAS and AUTO against a double-precision
 * oracle, on randomized shapes with padded leading dimensions, batch strides and broadcast
 * inputs; hand-computed 3x3 cases; a self-test that the comparisons catch real bugs.
 *
 * Tolerances (see oracle.h): REFERENCE 4u|s| (+ (d+4)2^-52|scale|sum|q_l k_l| for dot);
 * BLAS per entry from the Accuracy model of nwattn.h: dot (d+4)u|scale|sum|q_l k_l|,
 * Gaussian (2d+16)u(|q'|^2+|k'|^2), Laplace min(sqrt(e_D), e_D/|s|) with e_D twice that. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct shape {
    size_t batch, m, n, d;
    size_t pad;        /* extra floats at the end of every row */
    size_t stride_pad; /* extra floats between items */
    int bcast_q, bcast_k;
    int tight_out; /* output stride exactly (m-1)*lds + n */
    float centre;  /* data uniform on [centre - 1, centre + 1) */
} shape;

typedef struct scores_call {
    const nwattn_score *score;
    const tu_mat *q, *k;
    tu_mat *s[3];
} scores_call;

static nwattn_status call_scores(nwattn_context *ctx, void *user, int which) {
    scores_call *c = user;
    tu_mat *s = c->s[which];
    return nwattn_scores(ctx, c->score, s->batch, c->q->rows, c->k->rows, c->q->cols,
                         c->q->data, c->q->ld, c->q->stride, c->k->data, c->k->ld, c->k->stride,
                         s->data, s->ld, s->stride);
}

static tu_mat make_input(const shape *sh, size_t rows, int bcast, tu_rng *rng) {
    tu_mat x = bcast ? tu_mat_new_broadcast(sh->batch, rows, sh->d, sh->pad)
                     : tu_mat_new(sh->batch, rows, sh->d, sh->pad, sh->stride_pad);
    tu_mat_fill_uniform(&x, rng, sh->centre - 1.0f, sh->centre + 1.0f);
    return x;
}

static tu_mat make_output(const shape *sh) {
    size_t ld = sh->n + sh->pad;
    size_t stride = sh->tight_out ? (sh->m - 1) * ld + sh->n : sh->m * ld + sh->stride_pad;
    return tu_mat_new_layout(sh->batch, sh->m, sh->n, ld, stride);
}

/* Runs one shape under REFERENCE, BLAS and AUTO and checks each against the oracle. */
static void check_scores(const nwattn_score *score, const shape *sh, uint64_t seed,
                         const char *label) {
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    tu_mat q = make_input(sh, sh->m, sh->bcast_q, &rng);
    tu_mat k = make_input(sh, sh->n, sh->bcast_k, &rng);
    tu_mat q0 = tu_mat_clone(&q), k0 = tu_mat_clone(&k);
    tu_mat want = make_output(sh), tol_blas = make_output(sh), tol_ref = make_output(sh);
    or_scores(score, &q, &k, &want, &tol_blas, &tol_ref);

    scores_call c = {score, &q, &k, {NULL, NULL, NULL}};
    tu_mat s[3];
    for (int t = 0; t < 3; t++) {
        s[t] = make_output(sh);
        c.s[t] = &s[t];
    }
    tu_backends bk;
    tu_backends_init(&bk);
    tu_run_both(&bk, call_scores, &c);
    nwattn_context *autoctx = tu_context(NWATTN_BACKEND_AUTO);
    TU_ASSERT_OK(autoctx, call_scores(autoctx, &c, 2));

    static const char *names[3] = {"REFERENCE", "BLAS", "AUTO"};
    for (int t = 0; t < 3; t++) {
        char what[160];
        snprintf(what, sizeof what, "scores %s %s", label, names[t]);
        assert_true(tu_mat_padding_intact(&s[t], what));
        assert_true(tu_mat_no_nan(&s[t], what));
        /* AUTO may pick either backend: it gets the looser (BLAS) bound. */
        const tu_mat *tol = t == TU_REF ? &tol_ref : &tol_blas;
        assert_true(tu_allclose_tol(what, &s[t], &want, tol, 0.0, 0.0));
    }
    char what[160];
    snprintf(what, sizeof what, "scores %s BLAS vs REFERENCE", label);
    assert_true(tu_allclose_tol(what, &s[TU_BLAS], &s[TU_REF], &tol_blas, 0.0, 8 * TU_U));
    assert_true(tu_mat_bits_equal(&q, &q0));
    assert_true(tu_mat_bits_equal(&k, &k0));

    nwattn_context_destroy(autoctx);
    tu_backends_fini(&bk);
    for (int t = 0; t < 3; t++)
        tu_mat_free(&s[t]);
    tu_mat_free(&want);
    tu_mat_free(&tol_blas);
    tu_mat_free(&tol_ref);
    tu_mat_free(&q);
    tu_mat_free(&k);
    tu_mat_free(&q0);
    tu_mat_free(&k0);
}

/* Shapes every kind runs: ones, small odd sizes, one dimension above 1000 each, padding,
 * strides, broadcast inputs, a tight output stride, data far from the origin. */
static const shape shapes[] = {
    {1, 1, 1, 1, 0, 0, 0, 0, 0, 0.0f},
    {1, 3, 7, 13, 0, 0, 0, 0, 0, 0.0f},
    {1, 7, 13, 3, 5, 0, 0, 0, 0, 0.0f},
    {1, 1, 1500, 3, 2, 0, 0, 0, 0, 0.0f},
    {1, 5, 3, 1100, 3, 0, 0, 0, 0, 0.0f},
    {1, 1200, 2, 5, 1, 0, 0, 0, 0, 0.0f},
    {1, 13, 1, 7, 0, 0, 0, 0, 0, 0.0f},
    {4, 7, 13, 3, 3, 11, 0, 0, 0, 0.0f},
    {3, 5, 9, 7, 2, 1, 1, 0, 0, 0.0f},
    {3, 5, 9, 7, 2, 1, 0, 1, 0, 0.0f},
    {5, 3, 4, 2, 1, 0, 1, 1, 0, 0.0f},
    {6, 1, 13, 2, 0, 0, 0, 0, 1, 0.0f},
    {7, 4, 6, 3, 2, 0, 0, 0, 1, 0.0f},
    {3, 64, 80, 33, 1, 5, 0, 0, 0, 0.0f},
    {2, 9, 11, 3, 1, 2, 0, 0, 0, 100.0f},
};

static float *random_bandwidths(size_t d, tu_rng *rng) {
    float *h = malloc(d * sizeof(float));
    assert_non_null(h);
    for (size_t l = 0; l < d; l++)
        h[l] = tu_rng_range(rng, 0.5f, 2.0f);
    return h;
}

/* Per-dimension bandwidths are drawn for each shape's d. */
static void check_kind(nwattn_score_kind kind, int per_dim, float scale, const char *name,
                       uint64_t seed) {
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const shape *sh = &shapes[t];
        float *h = per_dim ? random_bandwidths(sh->d, &rng) : NULL;
        nwattn_score score = {kind, scale, 0.7f, h};
        char label[128];
        snprintf(label, sizeof label, "%s b=%zu m=%zu n=%zu d=%zu pad=%zu%s%s%s c=%g", name,
                 sh->batch, sh->m, sh->n, sh->d, sh->pad, sh->bcast_q ? " bq" : "",
                 sh->bcast_k ? " bk" : "", sh->tight_out ? " tight" : "", (double)sh->centre);
        check_scores(&score, sh, seed + t, label);
        free(h);
    }
}

static void test_dot(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_DOT, 0, 0.37f, "dot scale=0.37", 100);
    check_kind(NWATTN_SCORE_DOT, 0, -2.5f, "dot scale=-2.5", 200);
}

static void test_gaussian_scalar(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_GAUSSIAN, 0, 0.0f, "gaussian h=0.7", 300);
}

static void test_gaussian_per_dim(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_GAUSSIAN, 1, 0.0f, "gaussian h_j", 400);
}

static void test_laplace_scalar(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_LAPLACE, 0, 0.0f, "laplace h=0.7", 500);
}

static void test_laplace_per_dim(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_LAPLACE, 1, 0.0f, "laplace h_j", 600);
}

/* ---- Hand-computed 3x3 cases --------------------------------------------------------------
 * Q = [(1,0), (0,1), (1,1)], K = [(1,0), (0,2), (2,2)]; squared differences |q_i - k_j|^2:
 *   q1: 0, 5, 5   q2: 2, 1, 5   q3: 1, 2, 2
 * With per-dimension h = (1, 2) the rescaled squared distances are
 *   q1: 0, 2, 2   q2: 1.25, 0.25, 4.25   q3: 0.25, 1.25, 1.25 */
static const float hand_q[6] = {1, 0, 0, 1, 1, 1};
static const float hand_k[6] = {1, 0, 0, 2, 2, 2};
static const float hand_h[2] = {1.0f, 2.0f};

static void check_hand(const nwattn_score *score, const double expect[9], const char *label) {
    tu_mat q = tu_mat_new(1, 3, 2, 3, 0), k = tu_mat_new(1, 3, 2, 1, 0);
    for (size_t i = 0; i < 3; i++)
        for (size_t l = 0; l < 2; l++) {
            *tu_at(&q, 0, i, l) = hand_q[2 * i + l];
            *tu_at(&k, 0, i, l) = hand_k[2 * i + l];
        }
    tu_mat want = tu_mat_new(1, 3, 3, 2, 0);
    for (size_t t = 0; t < 9; t++)
        *tu_at(&want, 0, t / 3, t % 3) = (float)expect[t];
    tu_mat oracle = tu_mat_clone(&want), tol_blas = tu_mat_clone(&want);
    tu_mat tol_ref = tu_mat_clone(&want);
    or_scores(score, &q, &k, &oracle, &tol_blas, &tol_ref);
    char what[128];
    snprintf(what, sizeof what, "hand %s: oracle", label);
    assert_true(tu_allclose(what, &oracle, &want, 0.0, TU_U)); /* the oracle itself */

    scores_call c = {score, &q, &k, {NULL, NULL, NULL}};
    tu_mat s[2] = {tu_mat_new(1, 3, 3, 2, 0), tu_mat_new(1, 3, 3, 2, 0)};
    c.s[0] = &s[0];
    c.s[1] = &s[1];
    tu_backends bk;
    tu_backends_init(&bk);
    tu_run_both(&bk, call_scores, &c);
    snprintf(what, sizeof what, "hand %s: REFERENCE", label);
    assert_true(tu_allclose_tol(what, &s[TU_REF], &want, &tol_ref, 0.0, TU_U));
    assert_true(tu_mat_padding_intact(&s[TU_REF], what));
    snprintf(what, sizeof what, "hand %s: BLAS", label);
    assert_true(tu_allclose_tol(what, &s[TU_BLAS], &want, &tol_blas, 0.0, TU_U));
    assert_true(tu_mat_padding_intact(&s[TU_BLAS], what));
    tu_backends_fini(&bk);
    tu_mat *all[] = {&q, &k, &want, &oracle, &tol_blas, &tol_ref, &s[0], &s[1]};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        tu_mat_free(all[t]);
}

static void test_hand_computed(void **state) {
    (void)state;
    const double r2 = sqrt(2.0), r5 = sqrt(5.0), r125 = sqrt(1.25), r425 = sqrt(4.25);
    /* dot, scale 0.5: q·k = [1 0 2; 0 2 2; 1 2 4] */
    nwattn_score dot = {NWATTN_SCORE_DOT, 0.5f, 0.0f, NULL};
    const double e_dot[9] = {0.5, 0, 1, 0, 1, 1, 0.5, 1, 2};
    check_hand(&dot, e_dot, "dot scale 0.5");
    nwattn_score g1 = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    const double e_g1[9] = {0, -2.5, -2.5, -1, -0.5, -2.5, -0.5, -1, -1};
    check_hand(&g1, e_g1, "gaussian h=1");
    nwattn_score g2 = {NWATTN_SCORE_GAUSSIAN, 0.0f, 2.0f, NULL};
    const double e_g2[9] = {0, -0.625, -0.625, -0.25, -0.125, -0.625, -0.125, -0.25, -0.25};
    check_hand(&g2, e_g2, "gaussian h=2");
    nwattn_score gd = {NWATTN_SCORE_GAUSSIAN, 0.0f, 99.0f, hand_h};
    const double e_gd[9] = {0, -1, -1, -0.625, -0.125, -2.125, -0.125, -0.625, -0.625};
    check_hand(&gd, e_gd, "gaussian h=(1,2)");
    nwattn_score l1 = {NWATTN_SCORE_LAPLACE, 0.0f, 1.0f, NULL};
    const double e_l1[9] = {0, -r5, -r5, -r2, -1, -r5, -1, -r2, -r2};
    check_hand(&l1, e_l1, "laplace h=1");
    nwattn_score lh = {NWATTN_SCORE_LAPLACE, 0.0f, 0.5f, NULL};
    double e_lh[9];
    for (size_t t = 0; t < 9; t++)
        e_lh[t] = 2.0 * e_l1[t];
    check_hand(&lh, e_lh, "laplace h=0.5");
    nwattn_score ld = {NWATTN_SCORE_LAPLACE, 0.0f, 99.0f, hand_h};
    const double e_ld[9] = {0, -r2, -r2, -r125, -0.5, -r425, -0.5, -r125, -r125};
    check_hand(&ld, e_ld, "laplace h=(1,2)");
}

/* ---- Queries equal to keys -----------------------------------------------------------------
 * On the diagonal the exact distance is 0 while the BLAS expansion |q'|^2 + |k'|^2 - 2 q'·k'
 * rounds to either side of it: a negative rounding must not reach sqrt (NaN) and Gaussian
 * scores must stay <= 0 within the bound. Q and K are the very same buffer here. */
static void test_queries_equal_keys(void **state) {
    (void)state;
    static const float h7[7] = {0.3f, 1.0f, 0.7f, 2.0f, 0.05f, 1.5f, 0.9f};
    const nwattn_score kinds[4] = {{NWATTN_SCORE_LAPLACE, 0.0f, 0.3f, NULL},
                                   {NWATTN_SCORE_LAPLACE, 0.0f, 1.0f, h7},
                                   {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.3f, NULL},
                                   {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, h7}};
    const size_t n = 97, d = 7;
    tu_rng rng;
    tu_rng_seed(&rng, 31337);
    tu_mat x = tu_mat_new(1, n, d, 1, 0);
    tu_mat_fill_uniform(&x, &rng, 49.0f, 51.0f);
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 4; t++) {
        tu_mat want = tu_mat_new(1, n, n, 0, 0), tol_blas = tu_mat_new(1, n, n, 0, 0);
        tu_mat tol_ref = tu_mat_new(1, n, n, 0, 0);
        or_scores(&kinds[t], &x, &x, &want, &tol_blas, &tol_ref);
        for (int which = TU_REF; which <= TU_BLAS; which++) {
            tu_mat s = tu_mat_new(1, n, n, 1, 0);
            TU_ASSERT_OK(bk.ctx[which],
                         nwattn_scores(bk.ctx[which], &kinds[t], 1, n, n, d, x.data, x.ld, 0,
                                       x.data, x.ld, 0, s.data, s.ld, 0));
            char what[96];
            snprintf(what, sizeof what, "q == k, kind %d%s, %s", (int)kinds[t].kind,
                     kinds[t].bandwidths ? " h_j" : "", which == TU_REF ? "REFERENCE" : "BLAS");
            assert_true(tu_mat_no_nan(&s, what));
            assert_true(tu_allclose_tol(what, &s, &want, which == TU_REF ? &tol_ref : &tol_blas,
                                        0.0, 0.0));
            for (size_t i = 0; i < n; i++) {
                assert_true(tu_get(&s, 0, i, i) <= 0.0f);
                if (which == TU_REF)
                    assert_true(tu_get(&s, 0, i, i) == 0.0f);
            }
            tu_mat_free(&s);
        }
        tu_mat_free(&want);
        tu_mat_free(&tol_blas);
        tu_mat_free(&tol_ref);
    }
    tu_backends_fini(&bk);
    tu_mat_free(&x);
}

/* ---- Empty problems ------------------------------------------------------------------------ */
static void test_empty_problems(void **state) {
    (void)state;
    nwattn_score score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    tu_rng rng;
    tu_rng_seed(&rng, 7);
    tu_mat q = tu_mat_new(2, 3, 2, 0, 0), k = tu_mat_new(2, 4, 2, 0, 0);
    tu_mat_fill_uniform(&q, &rng, -1, 1);
    tu_mat_fill_uniform(&k, &rng, -1, 1);
    tu_mat s = tu_mat_new(2, 3, 4, 1, 0);
    tu_mat s0 = tu_mat_clone(&s);
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = TU_REF; t <= TU_BLAS; t++) {
        nwattn_context *ctx = bk.ctx[t];
        /* batch == 0, m == 0: nothing is written */
        TU_ASSERT_OK(ctx, nwattn_scores(ctx, &score, 0, 3, 4, 2, q.data, q.ld, q.stride, k.data,
                                        k.ld, k.stride, s.data, s.ld, s.stride));
        TU_ASSERT_OK(ctx, nwattn_scores(ctx, &score, 2, 0, 4, 2, q.data, q.ld, q.stride, k.data,
                                        k.ld, k.stride, s.data, s.ld, s.stride));
        /* n == 0: an m×0 result, nothing to write */
        TU_ASSERT_OK(ctx, nwattn_scores(ctx, &score, 2, 3, 0, 2, q.data, q.ld, q.stride, k.data,
                                        k.ld, k.stride, s.data, s.ld, s.stride));
        assert_true(tu_mat_bits_equal(&s, &s0));
    }
    tu_backends_fini(&bk);
    tu_mat_free(&q);
    tu_mat_free(&k);
    tu_mat_free(&s);
    tu_mat_free(&s0);
}

/* ---- Self-test of the comparison machinery ------------------------------------------------
 * A tolerance that cannot fail is a defect: a deliberately broken result must be rejected. */
static void test_comparisons_catch_bugs(void **state) {
    (void)state;
    tu_rng rng;
    tu_rng_seed(&rng, 42);
    const size_t m = 4, n = 5, d = 1100;
    tu_mat q = tu_mat_new(1, m, d, 1, 0), k = tu_mat_new(1, n, d, 1, 0);
    tu_mat_fill_uniform(&q, &rng, -1, 1);
    tu_mat_fill_uniform(&k, &rng, -1, 1);
    nwattn_score kinds[2] = {{NWATTN_SCORE_DOT, 1.0f, 0.0f, NULL},
                             {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL}};
    print_message("(the following out-of-tolerance reports are expected)\n");
    for (int t = 0; t < 2; t++) {
        const nwattn_score *score = &kinds[t];
        tu_mat want = tu_mat_new(1, m, n, 0, 0), tol = tu_mat_new(1, m, n, 0, 0);
        or_scores(score, &q, &k, &want, &tol, NULL);
        tu_mat s = tu_mat_new(1, m, n, 2, 0);
        nwattn_context *ctx = tu_context(NWATTN_BACKEND_BLAS);
        TU_ASSERT_OK(ctx, nwattn_scores(ctx, score, 1, m, n, d, q.data, q.ld, 0, k.data, k.ld, 0,
                                        s.data, s.ld, 0));
        assert_true(tu_allclose_tol("self-test: unbroken", &s, &want, &tol, 0.0, 0.0));
        /* A kernel that drops the last coordinate (an off-by-one in a chunk loop). */
        tu_mat broken = tu_mat_clone(&s);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double qi = (double)tu_get(&q, 0, i, d - 1), kj = (double)tu_get(&k, 0, j, d - 1);
                double term = t == 0 ? qi * kj : -0.5 * (qi - kj) * (qi - kj);
                *tu_at(&broken, 0, i, j) = (float)((double)tu_get(&s, 0, i, j) - term);
            }
        assert_false(tu_allclose_tol("self-test: dropped coordinate", &broken, &want, &tol, 0.0,
                                     0.0));
        /* One entry off by twice its bound; NaN; an infinity. */
        tu_mat_free(&broken);
        broken = tu_mat_clone(&want);
        *tu_at(&broken, 0, 2, 3) += 2.0f * tu_get(&tol, 0, 2, 3) + 1e-6f;
        assert_false(tu_allclose_tol("self-test: one entry", &broken, &want, &tol, 0.0, 0.0));
        *tu_at(&broken, 0, 2, 3) = tu_get(&want, 0, 2, 3) + 0.5f * tu_get(&tol, 0, 2, 3);
        assert_true(tu_allclose_tol("self-test: within bound", &broken, &want, &tol, 0.0, 0.0));
        *tu_at(&broken, 0, 1, 1) = NAN;
        assert_false(tu_allclose_tol("self-test: NaN", &broken, &want, &tol, 1.0, 1.0));
        *tu_at(&broken, 0, 1, 1) = -INFINITY;
        assert_false(tu_allclose_tol("self-test: -inf", &broken, &want, &tol, 1.0, 1.0));
        /* A write into row padding. */
        tu_mat padded = tu_mat_clone(&s);
        assert_true(tu_mat_padding_intact(&padded, "self-test: padding"));
        padded.data[padded.ld - 1] = 0.0f;
        assert_false(tu_mat_padding_intact(&padded, "self-test: padding"));
        nwattn_context_destroy(ctx);
        tu_mat *all[] = {&want, &tol, &s, &broken, &padded};
        for (size_t u = 0; u < sizeof all / sizeof all[0]; u++)
            tu_mat_free(all[u]);
    }
    /* Matching infinities pass. */
    tu_mat a = tu_mat_new(1, 1, 2, 0, 0);
    *tu_at(&a, 0, 0, 0) = -INFINITY;
    *tu_at(&a, 0, 0, 1) = 1.0f;
    tu_mat b = tu_mat_clone(&a);
    assert_true(tu_allclose("self-test: -inf == -inf", &a, &b, 0.0, 0.0));
    tu_mat_free(&a);
    tu_mat_free(&b);
    tu_mat_free(&q);
    tu_mat_free(&k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons_catch_bugs),
        cmocka_unit_test(test_hand_computed),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_gaussian_scalar),
        cmocka_unit_test(test_gaussian_per_dim),
        cmocka_unit_test(test_laplace_scalar),
        cmocka_unit_test(test_laplace_per_dim),
        cmocka_unit_test(test_queries_equal_keys),
        cmocka_unit_test(test_empty_problems),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
