/* Closed forms: uniform weights give the mean of V (dot with scale 0, Gaussian with a huge
 * bandwidth, nwattn_average_pool, d2l's average-pooling baseline); h -> 0 picks the nearest
 * key's value exactly; average pooling with valid lengths, keep bytes and additive masks;
 * hand-computed 3x3 poolings whose weights are powers of 2.
 *
 * Tolerances: uniform weights are 1/n up to the softmax rounding, so outputs are the mean within
 * (2n + 24)u·max|V| for float evaluation (n-term sum for the normaliser and the product) and the
 * general bounds of oracle.h otherwise; exact cases (nearest key, m = n = 1) compare exactly. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nwattn_backend all_backends[3] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                               NWATTN_BACKEND_AUTO};
static const char *backend_names[3] = {"REFERENCE", "BLAS", "AUTO"};

/* Mean of rows [0, len) of V item b, column c, in double. */
static double column_mean(const tu_mat *v, size_t b, size_t c, size_t len) {
    double sum = 0.0;
    for (size_t j = 0; j < len; j++)
        sum += (double)tu_get(v, b, j, c);
    return len ? sum / (double)len : 0.0;
}

/* (2n + 24)u · max|V|: the uniform-weight bound. */
static double uniform_tol(size_t n, const tu_mat *v) {
    return (2.0 * (double)n + 24.0) * TU_U * tu_mat_maxabs(v);
}

/* ---- Uniform weights ------------------------------------------------------------------------ */
static void check_uniform(const nwattn_score *score, double extra_rel, const char *label) {
    const size_t batch = 3, m = 5, n = 17, d = 4, dv = 3;
    tu_rng rng;
    tu_rng_seed(&rng, 11);
    tu_mat q = tu_mat_new(batch, m, d, 1, 2), k = tu_mat_new(batch, n, d, 2, 1);
    tu_mat v = tu_mat_new(batch, n, dv, 1, 3);
    tu_mat_fill_uniform(&q, &rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&k, &rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&v, &rng, -4.0f, 4.0f);
    tu_mat want = tu_mat_new(batch, m, dv, 0, 0), want_lse = tu_mat_new(batch, 1, m, 0, 0);
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < m; i++) {
            for (size_t c = 0; c < dv; c++)
                *tu_at(&want, b, i, c) = (float)column_mean(&v, b, c, n);
            *tu_at(&want_lse, b, 0, i) = (float)log((double)n);
        }
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(all_backends[t]);
        tu_mat o = tu_mat_new(batch, m, dv, 2, 1), lse = tu_mat_new(batch, 1, m, 0, 1);
        tu_mat w = tu_mat_new(batch, m, n, 0, 0);
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, score, NULL, batch, m, n, d, dv, q.data, q.ld,
                                      q.stride, k.data, k.ld, k.stride, v.data, v.ld, v.stride,
                                      o.data, o.ld, o.stride, w.data, w.ld, w.stride, lse.data,
                                      lse.stride));
        char what[128];
        snprintf(what, sizeof what, "uniform %s %s: output = mean(V)", label, backend_names[t]);
        double tol = uniform_tol(n, &v) + extra_rel * tu_mat_maxabs(&v);
        assert_true(tu_allclose(what, &o, &want, tol, 0.0));
        assert_true(tu_mat_padding_intact(&o, what));
        tu_mat wn = tu_mat_new(batch, m, n, 0, 0);
        tu_mat_fill_value(&wn, 1.0f / (float)n);
        snprintf(what, sizeof what, "uniform %s %s: weights = 1/n", label, backend_names[t]);
        assert_true(tu_allclose(what, &w, &wn, 0.0, ((double)n + 16.0) * TU_U + extra_rel));
        if (score->kind == NWATTN_SCORE_DOT) {
            snprintf(what, sizeof what, "uniform %s %s: lse = log n", label, backend_names[t]);
            assert_true(tu_allclose(what, &lse, &want_lse, ((double)n + 16.0) * TU_U, 2 * TU_U));
        }
        tu_mat_free(&o);
        tu_mat_free(&lse);
        tu_mat_free(&w);
        tu_mat_free(&wn);
        nwattn_context_destroy(ctx);
    }
    tu_mat *all[] = {&q, &k, &v, &want, &want_lse};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        tu_mat_free(all[t]);
}

static void test_uniform_dot_scale_zero(void **state) {
    (void)state;
    const nwattn_score sc = {NWATTN_SCORE_DOT, 0.0f, 0.0f, NULL};
    check_uniform(&sc, 0.0, "dot scale 0");
}

static void test_uniform_gaussian_huge_bandwidth(void **state) {
    (void)state;
    /* |q - k|^2 <= 16 here, so scores are within 8/h^2 = 8e-8 of 0: weights 1/n within that
     * (relative), plus the BLAS score error (4d + 32)u·(|q'|^2 + |k'|^2)/2 ~ 1e-20. */
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1e4f, NULL};
    check_uniform(&sc, 2.0 * 8e-8, "gaussian h=1e4");
    const nwattn_score lp = {NWATTN_SCORE_LAPLACE, 0.0f, 1e9f, NULL};
    check_uniform(&lp, 2.0 * 4e-9, "laplace h=1e9");
}

/* ---- h -> 0: the nearest key ------------------------------------------------------------------ */
/* Keys on a grid with spacing 1, each query 0.1 from one key: with h = 1e-3 the nearest key
 * beats the next by (0.9^2 - 0.1^2)/(2h^2) = 4e5 in score (Laplace h = 1e-4: 8e3), far beyond
 * any rounding, so the other weights underflow to exactly 0 and the output is exactly the
 * nearest key's value. */
static void check_nearest(const nwattn_score *score, const char *label) {
    const size_t n = 12, m = 9, d = 2, dv = 2;
    tu_rng rng;
    tu_rng_seed(&rng, 99);
    tu_mat k = tu_mat_new(1, n, d, 1, 0), v = tu_mat_new(1, n, dv, 0, 0);
    tu_mat q = tu_mat_new(1, m, d, 0, 0);
    size_t nearest[9];
    for (size_t j = 0; j < n; j++) {
        *tu_at(&k, 0, j, 0) = (float)(j % 4);
        *tu_at(&k, 0, j, 1) = (float)(j / 4);
        *tu_at(&v, 0, j, 0) = tu_rng_range(&rng, -5.0f, 5.0f);
        *tu_at(&v, 0, j, 1) = (float)j;
    }
    for (size_t i = 0; i < m; i++) {
        nearest[i] = tu_rng_below(&rng, n);
        *tu_at(&q, 0, i, 0) = tu_get(&k, 0, nearest[i], 0) + (i % 2 ? 0.1f : -0.1f);
        *tu_at(&q, 0, i, 1) = tu_get(&k, 0, nearest[i], 1);
    }
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(all_backends[t]);
        tu_mat o = tu_mat_new(1, m, dv, 1, 0), w = tu_mat_new(1, m, n, 0, 0);
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, score, NULL, 1, m, n, d, dv, q.data, q.ld, 0, k.data,
                                      k.ld, 0, v.data, v.ld, 0, o.data, o.ld, 0, w.data, w.ld, 0,
                                      NULL, 0));
        for (size_t i = 0; i < m; i++) {
            for (size_t c = 0; c < dv; c++)
                if (tu_get(&o, 0, i, c) != tu_get(&v, 0, nearest[i], c)) {
                    print_message("%s %s: row %zu col %zu = %.9g, nearest key %zu has %.9g\n",
                                  label, backend_names[t], i, c, (double)tu_get(&o, 0, i, c),
                                  nearest[i], (double)tu_get(&v, 0, nearest[i], c));
                    fail();
                }
            for (size_t j = 0; j < n; j++)
                assert_true(tu_get(&w, 0, i, j) == (j == nearest[i] ? 1.0f : 0.0f));
        }
        tu_mat_free(&o);
        tu_mat_free(&w);
        nwattn_context_destroy(ctx);
    }
    tu_mat_free(&k);
    tu_mat_free(&v);
    tu_mat_free(&q);
}

static void test_small_bandwidth_picks_nearest(void **state) {
    (void)state;
    const nwattn_score g = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1e-3f, NULL};
    check_nearest(&g, "gaussian h=1e-3");
    static const float hj[2] = {1e-3f, 2e-3f};
    const nwattn_score gj = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, hj};
    check_nearest(&gj, "gaussian h=(1e-3, 2e-3)");
    const nwattn_score l = {NWATTN_SCORE_LAPLACE, 0.0f, 1e-4f, NULL};
    check_nearest(&l, "laplace h=1e-4");
}

/* ---- Average pooling ------------------------------------------------------------------------ */
typedef struct avg_case {
    const char *name;
    unsigned parts;
} avg_case;

static void test_average_pool(void **state) {
    (void)state;
    static const avg_case cases[] = {
        {"no mask", 0},
        {"valid lens per item", OR_LENS_ITEM},
        {"valid lens per row", OR_LENS_ROW},
        {"keep bytes", OR_KEEP},
        {"causal + leave-one-out", OR_CAUSAL | OR_LOO},
        {"additive", OR_ADDITIVE},
        {"additive with -inf", OR_ADDITIVE | OR_ADDITIVE_NEGINF},
        {"everything", OR_LENS_ROW | OR_KEEP | OR_CAUSAL | OR_ADDITIVE | OR_ADDITIVE_NEGINF},
    };
    const size_t batch = 4, m = 6, n = 11, dv = 3;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_rng rng;
        tu_rng_seed(&rng, 500 + c);
        tu_mat v = tu_mat_new(batch, n, dv, 2, 1);
        tu_mat_fill_uniform(&v, &rng, -3.0f, 3.0f);
        tu_mat v0 = tu_mat_clone(&v);
        or_mask mk;
        or_mask_make(&mk, cases[c].parts, batch, m, n, &rng);
        const nwattn_mask *mask = or_mask_get(&mk);
        tu_mat want = tu_mat_new(batch, m, dv, 0, 0);
        or_pool_info info;
        or_pool(NULL, mask, NULL, NULL, &v, &want, NULL, NULL, &info);
        /* Without an additive part the oracle's weights are exactly uniform over the kept keys:
         * check that closed form directly too. */
        if (!(cases[c].parts & OR_ADDITIVE))
            for (size_t b = 0; b < batch; b++)
                for (size_t i = 0; i < m; i++)
                    for (size_t col = 0; col < dv; col++) {
                        double sum = 0.0;
                        size_t kept = 0;
                        for (size_t j = 0; j < n; j++)
                            if (!or_masked(mask, b, m, n, i, j)) {
                                sum += (double)tu_get(&v, b, j, col);
                                kept++;
                            }
                        double mean = kept ? sum / (double)kept : 0.0;
                        assert_true(fabs((double)tu_get(&want, b, i, col) - mean) <= 1e-6);
                    }
        for (int t = 0; t < 3; t++) {
            nwattn_context *ctx = tu_context(all_backends[t]);
            tu_mat o = tu_mat_new(batch, m, dv, 1, 2);
            TU_ASSERT_OK(ctx, nwattn_average_pool(ctx, mask, batch, m, n, dv, v.data, v.ld,
                                                  v.stride, o.data, o.ld, o.stride));
            /* R = max|additive| <= 2 (scores are 0); rtol_w as for pooling, see oracle.h */
            double rtol_w = t == 0 ? or_rtol_weights_ref(info.range)
                                   : or_rtol_weights_blas(n, info.range, 0.0);
            double atol = t == 0 ? or_atol_out_ref(n, rtol_w, info.vmax)
                                 : or_atol_out_blas(n, rtol_w, info.vmax);
            char what[128];
            snprintf(what, sizeof what, "average_pool %s %s", cases[c].name, backend_names[t]);
            assert_true(tu_allclose(what, &o, &want, atol, 0.0));
            assert_true(tu_mat_padding_intact(&o, what));
            assert_true(tu_mat_no_nan(&o, what));
            tu_mat_free(&o);
            nwattn_context_destroy(ctx);
        }
        assert_true(tu_mat_bits_equal(&v, &v0));
        tu_mat_free(&v);
        tu_mat_free(&v0);
        tu_mat_free(&want);
        or_mask_free(&mk);
    }
}

/* Valid lengths: row i of item b is the mean of the first len rows of V_b; len 0 gives 0. */
static void test_average_pool_valid_lens(void **state) {
    (void)state;
    const size_t batch = 3, m = 2, n = 7, dv = 2;
    static const size_t lens[3] = {7, 3, 0};
    tu_rng rng;
    tu_rng_seed(&rng, 3);
    tu_mat v = tu_mat_new(batch, n, dv, 1, 0);
    tu_mat_fill_uniform(&v, &rng, -1.0f, 1.0f);
    nwattn_mask mask;
    memset(&mask, 0, sizeof mask);
    mask.valid_lens = lens;
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(all_backends[t]);
        tu_mat o = tu_mat_new(batch, m, dv, 1, 0);
        TU_ASSERT_OK(ctx, nwattn_average_pool(ctx, &mask, batch, m, n, dv, v.data, v.ld,
                                              v.stride, o.data, o.ld, o.stride));
        for (size_t b = 0; b < batch; b++)
            for (size_t i = 0; i < m; i++)
                for (size_t c = 0; c < dv; c++) {
                    double want = column_mean(&v, b, c, lens[b]);
                    double got = (double)tu_get(&o, b, i, c);
                    if (lens[b] == 0)
                        assert_true(got == 0.0);
                    else
                        assert_true(fabs(got - want) <= uniform_tol(n, &v));
                }
        tu_mat_free(&o);
        nwattn_context_destroy(ctx);
    }
    tu_mat_free(&v);
}

/* d2l's baseline: y_hat = mean(y_train) for every test point; nwattn_pool with dot scale 0 is
 * the same estimator. */
static void test_d2l_average_baseline(void **state) {
    (void)state;
    const size_t n = 50, m = 50;
    tu_rng rng;
    tu_rng_seed(&rng, 1322);
    tu_mat x = tu_mat_new(1, n, 1, 0, 0), y = tu_mat_new(1, n, 1, 0, 0);
    for (size_t i = 0; i < n; i++) {
        double xi = 5.0 * tu_rng_unit(&rng);
        *tu_at(&x, 0, i, 0) = (float)xi;
        *tu_at(&y, 0, i, 0) = (float)(2.0 * sin(xi) + pow(xi, 0.8) + 0.5 * tu_rng_normal(&rng));
    }
    tu_mat xt = tu_mat_new(1, m, 1, 0, 0);
    for (size_t i = 0; i < m; i++)
        *tu_at(&xt, 0, i, 0) = (float)(0.1 * (double)i);
    double mean = column_mean(&y, 0, 0, n);
    const nwattn_score zero = {NWATTN_SCORE_DOT, 0.0f, 0.0f, NULL};
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(all_backends[t]);
        tu_mat o1 = tu_mat_new(1, m, 1, 0, 0), o2 = tu_mat_new(1, m, 1, 0, 0);
        TU_ASSERT_OK(ctx, nwattn_average_pool(ctx, NULL, 1, m, n, 1, y.data, 1, 0, o1.data, 1, 0));
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, &zero, NULL, 1, m, n, 1, 1, xt.data, 1, 0, x.data, 1,
                                      0, y.data, 1, 0, o2.data, 1, 0, NULL, 0, 0, NULL, 0));
        for (size_t i = 0; i < m; i++) {
            assert_true(fabs((double)tu_get(&o1, 0, i, 0) - mean) <= uniform_tol(n, &y));
            assert_true(fabs((double)tu_get(&o2, 0, i, 0) - mean) <= uniform_tol(n, &y));
        }
        tu_mat_free(&o1);
        tu_mat_free(&o2);
        nwattn_context_destroy(ctx);
    }
    tu_mat_free(&x);
    tu_mat_free(&y);
    tu_mat_free(&xt);
}

/* ---- Hand-computed 3x3 pooling ----------------------------------------------------------------
 * Q = [(1,0), (0,1), (1,1)], K = [(1,0), (0,2), (2,2)], V = [(1,0), (0,1), (3,-3)].
 * Dot with scale ln 2: q·k = [1 0 2; 0 2 2; 1 2 4], weights 2^(q·k) normalised:
 *   [2,1,4]/7, [1,4,4]/9, [1,2,8]/11  ->  O = (2, -11/7), (13/9, -8/9), (25/11, -2),
 *   lse = ln 7, ln 9, ln 22.
 * Leave-one-out: [0,1,4]/5, [1,0,4]/5, [2,4,0]/6  ->  O = (12/5, -11/5), (13/5, -12/5), (1/3, 2/3).
 * Gaussian with 2h^2 = 1/ln 2: |q-k|^2 = [0 5 5; 2 1 5; 1 2 2], weights 2^-|q-k|^2:
 *   [32,1,1]/34, [8,16,1]/25, [2,1,1]/4  ->  O = (35/34, -2/34), (11/25, 13/25), (5/4, -1/2). */
static const float hq[6] = {1, 0, 0, 1, 1, 1};
static const float hk[6] = {1, 0, 0, 2, 2, 2};
static const float hv[6] = {1, 0, 0, 1, 3, -3};

static void check_hand_pool(const nwattn_score *score, const nwattn_mask *mask,
                            const double want_o[6], const double *want_lse, double range,
                            const char *label) {
    tu_mat want = tu_mat_new(1, 3, 2, 0, 0);
    for (size_t t = 0; t < 6; t++)
        *tu_at(&want, 0, t / 2, t % 2) = (float)want_o[t];
    /* R = largest |score| = 4 ln 2 (dot) or 5 ln 2 (Gaussian); V = 3; the BLAS score bound
     * for these O(1) integers is below 200u */
    or_pool_info info = {200.0 * TU_U, range, 3.0};
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(all_backends[t]);
        float o[3 * 3], lse[3];
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, score, mask, 1, 3, 3, 2, 2, hq, 2, 0, hk, 2, 0, hv, 2,
                                      0, o, 3, 0, NULL, 0, 0, lse, 0));
        tu_mat got = tu_mat_new_layout(1, 3, 2, 3, 0);
        for (size_t i = 0; i < 3; i++)
            for (size_t c = 0; c < 2; c++)
                *tu_at(&got, 0, i, c) = o[3 * i + c];
        double rtol_w = t == 0 ? or_rtol_weights_ref(range)
                               : or_rtol_weights_blas(3, range, info.score_err_blas);
        double atol = (t == 0 ? or_atol_out_ref(3, rtol_w, 3.0) : or_atol_out_blas(3, rtol_w, 3.0));
        char what[128];
        snprintf(what, sizeof what, "hand pooling %s %s", label, backend_names[t]);
        assert_true(tu_allclose(what, &got, &want, atol, 0.0));
        if (want_lse != NULL)
            for (size_t i = 0; i < 3; i++)
                assert_true(fabs((double)lse[i] - want_lse[i]) <=
                            or_atol_lse_blas(3, range, info.score_err_blas) + 2 * TU_U * 4);
        tu_mat_free(&got);
        nwattn_context_destroy(ctx);
    }
    tu_mat_free(&want);
}

static void test_hand_computed_pooling(void **state) {
    (void)state;
    const double ln2 = log(2.0);
    const nwattn_score dot = {NWATTN_SCORE_DOT, (float)ln2, 0.0f, NULL};
    const double o_dot[6] = {2.0, -11.0 / 7, 13.0 / 9, -8.0 / 9, 25.0 / 11, -2.0};
    const double lse_dot[3] = {log(7.0), log(9.0), log(22.0)};
    check_hand_pool(&dot, NULL, o_dot, lse_dot, 4 * ln2, "dot ln2");

    nwattn_mask loo;
    memset(&loo, 0, sizeof loo);
    loo.flags = NWATTN_MASK_LEAVE_ONE_OUT;
    const double o_loo[6] = {12.0 / 5, -11.0 / 5, 13.0 / 5, -12.0 / 5, 1.0 / 3, 2.0 / 3};
    const double lse_loo[3] = {log(5.0), log(5.0), log(6.0)};
    check_hand_pool(&dot, &loo, o_loo, lse_loo, 4 * ln2, "dot ln2 leave-one-out");

    const nwattn_score gauss = {NWATTN_SCORE_GAUSSIAN, 0.0f, (float)(1.0 / sqrt(2.0 * ln2)),
                                NULL};
    const double o_g[6] = {35.0 / 34, -2.0 / 34, 11.0 / 25, 13.0 / 25, 5.0 / 4, -0.5};
    const double lse_g[3] = {log(34.0 / 32), log(25.0 / 32), log(4.0 / 4)};
    check_hand_pool(&gauss, NULL, o_g, lse_g, 5 * ln2, "gaussian 2^-|q-k|^2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_dot_scale_zero),
        cmocka_unit_test(test_uniform_gaussian_huge_bandwidth),
        cmocka_unit_test(test_small_bandwidth_picks_nearest),
        cmocka_unit_test(test_average_pool),
        cmocka_unit_test(test_average_pool_valid_lens),
        cmocka_unit_test(test_d2l_average_baseline),
        cmocka_unit_test(test_hand_computed_pooling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
