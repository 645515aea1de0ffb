/* nwattn_nw_cv: exact leave-one-out cross-validation in one fit, checked against brute-force
 * refitting without each point; gradients against finite differences; fast against reference;
 * non-admissible bandwidths; duplicates. */
#include "nw_test.h"

static const nwattn_kernel all_kernels[] = {NWATTN_KERNEL_GAUSSIAN, NWATTN_KERNEL_LAPLACE,
                                            NWATTN_KERNEL_EPANECHNIKOV, NWATTN_KERNEL_TRICUBE,
                                            NWATTN_KERNEL_UNIFORM};
static const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_AUTO};

/* CV by refitting n times without point i (nwattn_nw_predict on the other n - 1 points);
 * +INFINITY if a refit has an empty support. */
static double brute_force_cv(nwattn_context *ctx, const nwattn_regression *model, size_t n,
                             size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                             size_t ldy, const float *h) {
    float *xs = nt_alloc(n * d * sizeof(float)), *ys = nt_alloc(n * dv * sizeof(float));
    float *pred = nt_alloc(dv * sizeof(float));
    double total = 0.0;
    int empty = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = 0;
        for (size_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            memcpy(xs + r * d, x + j * ldx, d * sizeof(float));
            memcpy(ys + r * dv, y + j * ldy, dv * sizeof(float));
            r++;
        }
        unsigned char flags;
        NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, model, h, 1, n - 1, d, dv, x + i * ldx, d, xs, d,
                                            ys, dv, pred, dv, NULL, 0, &flags, NULL));
        if (flags & NWATTN_ROW_EMPTY)
            empty = 1;
        for (size_t c = 0; c < dv; c++) {
            double e = (double)pred[c] - (double)y[i * ldy + c];
            total += e * e;
        }
    }
    free(xs), free(ys), free(pred);
    return empty ? INFINITY : total / (double)n;
}

static void check_brute_force(size_t n, size_t d, size_t dv, int lattice) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 100 + n + d * 7 + dv * 13);
    const size_t ldx = d + 1, ldy = dv + 2;
    float *x = nt_matrix(&rng, n, d, ldx, 0, 3), *y = nt_matrix(&rng, n, dv, ldy, -1, 1);
    if (lattice)
        for (size_t j = 0; j < n; j++)
            for (size_t k = 0; k < d; k++)
                x[j * ldx + k] = (float)(nwattn_rng_next(&rng) % 13) * 0.25f;
    /* three bandwidth vectors in a padded grid */
    const size_t ldb = d + 2;
    float grid[3 * 5];
    for (size_t g = 0; g < 3; g++)
        for (size_t k = 0; k < d; k++)
            grid[g * ldb + k] = (lattice ? 0.3f : 0.2f) * (float)(g + 1) + 0.1f * (float)k;
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(backends[b]);
        for (size_t k = lattice ? 4 : 0; k < (lattice ? 5u : 4u); k++)
            for (int degree = 0; degree < 2; degree++) {
                nwattn_regression model = {all_kernels[k], (nwattn_degree)degree, 0};
                double cv[3];
                size_t flagged[3];
                NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, d, dv, x, ldx, y, ldy, 3, grid, ldb,
                                               cv, NULL, 0, flagged));
                for (size_t g = 0; g < 3; g++) {
                    double want =
                        brute_force_cv(ctx, &model, n, d, dv, x, ldx, y, ldy, grid + g * ldb);
                    char what[96];
                    snprintf(what, sizeof what, "cv k%zu deg%d backend %d n%zu d%zu dv%zu", k,
                             degree, (int)backends[b], n, d, dv);
                    if (isinf(want)) {
                        if (!isinf(cv[g]))
                            fail_msg("%s[%zu]: refits have empty rows, CV %g", what, g, cv[g]);
                        assert_true(flagged[g] > 0);
                    } else {
                        nt_close(what, g, cv[g], want, 0, b == 0 ? 1e-6 : 1e-5);
                    }
                }
            }
        nwattn_context_destroy(ctx);
    }
    free(x), free(y);
}

static void test_loo_equals_refitting(void **state) {
    (void)state;
    check_brute_force(30, 1, 1, 0);
    check_brute_force(25, 1, 2, 0);
    check_brute_force(40, 2, 1, 0);
    check_brute_force(35, 3, 2, 0);
    check_brute_force(3, 1, 1, 0); /* the smallest n allowed */
    check_brute_force(30, 1, 1, 1);
    check_brute_force(40, 2, 2, 1);
}

/* The textbook identity yhat_-i = (S_i - K(0) y_i) / (D_i - K(0)) from full-fit sums. */
static void test_loo_identity(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 7);
    const size_t n = 40;
    float x[40], y[40];
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_SINE, &rng, n, x, y));
    const float h = 1.5f; /* wide enough that every compact support holds a neighbour */
    for (size_t k = 0; k < 4; k++) {
        double total = 0.0;
        for (size_t i = 0; i < n; i++) {
            double S = 0.0, D = 0.0;
            for (size_t j = 0; j < n; j++) {
                double u = ((double)x[i] - (double)x[j]) / (double)h;
                double kij = (double)or_kernel(all_kernels[k], u * u);
                S += kij * (double)y[j];
                D += kij;
            }
            double loo = (S - 1.0 * (double)y[i]) / (D - 1.0); /* K(0) = 1 */
            total += (loo - (double)y[i]) * (loo - (double)y[i]);
        }
        nwattn_regression model = {all_kernels[k], NWATTN_LOCAL_CONSTANT, 0};
        double cv;
        NT_ASSERT_OK(ctx,
                     nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv, NULL, 0, NULL));
        nt_close("identity", k, cv, total / (double)n, 0, 1e-5);
    }
    nwattn_context_destroy(ctx);
}

/* dCV/dh_k against central differences of the reference CV, and fast against reference. */
static void check_gradient(size_t d, size_t dv) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 31 + d);
    const size_t n = 60;
    float *x = nt_matrix(&rng, n, d, d, 0, 4), *y = nt_matrix(&rng, n, dv, dv, -1, 1);
    for (size_t j = 0; j < n; j++) /* a signal, so that CV has a shape */
        y[j * dv] += (float)sin(2.0 * x[j * d]);
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fast = nt_context(NWATTN_BACKEND_AUTO);
    float h[3] = {0.9f, 1.4f, 1.1f};
    for (size_t e = 0; d > 1 && e < 3; e++) /* wide enough for a neighbour in every support */
        h[e] *= 1.5f;
    for (size_t k = 0; k < 5; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {all_kernels[k], (nwattn_degree)degree, 0};
            double cv, grad[3], cv_fast, grad_fast[3];
            NT_ASSERT_OK(
                ref, nwattn_nw_cv(ref, &model, n, d, dv, x, d, y, dv, 1, h, d, &cv, grad, d, NULL));
            NT_ASSERT_OK(fast, nwattn_nw_cv(fast, &model, n, d, dv, x, d, y, dv, 1, h, d, &cv_fast,
                                            grad_fast, d, NULL));
            nt_close("cv fast", k, cv_fast, cv, 0, 1e-5);
            if (!isfinite(cv))
                fail_msg("CV not finite for kernel %zu, d %zu: widen the bandwidths", k, d);
            for (size_t e = 0; e < d; e++) {
                if (all_kernels[k] == NWATTN_KERNEL_UNIFORM) {
                    assert_true(grad[e] == 0.0 && grad_fast[e] == 0.0);
                    continue;
                }
                float hp[3], hm[3];
                memcpy(hp, h, sizeof hp);
                memcpy(hm, h, sizeof hm);
                hp[e] = h[e] * (1.0f + 1e-5f); /* small: compact kernels have kinks */
                hm[e] = h[e] * (1.0f - 1e-5f);
                double cp, cm;
                NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, d, dv, x, d, y, dv, 1, hp, d, &cp,
                                               NULL, 0, NULL));
                NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, d, dv, x, d, y, dv, 1, hm, d, &cm,
                                               NULL, 0, NULL));
                double fd = (cp - cm) / ((double)hp[e] - (double)hm[e]);
                char what[64];
                snprintf(what, sizeof what, "dCV/dh k%zu deg%d d%zu", k, degree, d);
                nt_close(what, e, grad[e], fd, 1e-6 * fabs(cv), 2e-3);
                nt_close("gradient fast", e, grad_fast[e], grad[e], 1e-6 * fabs(cv), 1e-3);
            }
        }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
    free(x), free(y);
}

static void test_gradient_finite_differences(void **state) {
    (void)state;
    check_gradient(1, 1);
    check_gradient(1, 2);
    check_gradient(2, 1);
    check_gradient(3, 1);
}

/* A compact kernel narrower than the gap to some point's neighbour: CV is +INFINITY, the
 * gradient 0, and the empty rows are counted. */
static void test_not_admissible(void **state) {
    (void)state;
    const float x[6] = {0.0f, 0.1f, 0.2f, 0.3f, 5.0f, 5.05f};
    const float y[6] = {1, 2, 3, 4, 5, 6};
    const float h[2] = {1.0f, 0.06f};
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(backends[b]);
        for (size_t k = 2; k < 5; k++) {
            nwattn_regression model = {all_kernels[k], NWATTN_LOCAL_CONSTANT, 0};
            double cv[2], grad[2];
            size_t flagged[2];
            NT_ASSERT_OK(
                ctx, nwattn_nw_cv(ctx, &model, 6, 1, 1, x, 1, y, 1, 2, h, 1, cv, grad, 1, flagged));
            assert_true(isfinite(cv[0]));
            assert_int_equal(flagged[0], 0);
            assert_true(isinf(cv[1]) && cv[1] > 0);
            assert_true(grad[1] == 0.0);
            assert_int_equal(flagged[1], 4); /* the four points 0.1 apart */
        }
        nwattn_context_destroy(ctx);
    }
}

/* Duplicated inputs: leave-one-out leaves out the point itself only, so with a tiny Gaussian
 * bandwidth each point is predicted by its twin. */
static void test_duplicates(void **state) {
    (void)state;
    const size_t n = 10;
    float x[10], y[10];
    double want = 0.0;
    for (size_t j = 0; j < n; j++) {
        x[j] = (float)(j / 2) * 1.0f;
        y[j] = (float)((j * 7) % 5);
    }
    for (size_t j = 0; j < n; j += 2)
        want += 2.0 * ((double)y[j] - (double)y[j + 1]) * ((double)y[j] - (double)y[j + 1]);
    want /= (double)n;
    const float h = 0.01f;
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(backends[b]);
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, (nwattn_degree)degree, 0};
            double cv;
            NT_ASSERT_OK(
                ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv, NULL, 0, NULL));
            nt_close("duplicates", (size_t)degree, cv, want, 1e-6, 1e-6);
        }
        nwattn_context_destroy(ctx);
    }
}

/* Fast and reference CV agree on a larger set (sorted windows, several chunks). */
static void test_fast_matches_reference_large(void **state) {
    (void)state;
    nwattn_context *fast = nt_context(NWATTN_BACKEND_AUTO),
                   *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 8);
    const size_t n = test_small_shapes() ? 400 : 1500; /* 400: still 13 units of 32 rows */
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    NT_ASSERT_OK(fast, nwattn_dataset_generate(fast, NWATTN_DATASET_SINE, &rng, n, x, y));
    const float hs[4] = {0.01f, 0.05f, 0.4f, 6.0f};
    for (size_t k = 0; k < 5; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {all_kernels[k], (nwattn_degree)degree, 0};
            double a[4], b[4], ga[4], gb[4];
            NT_ASSERT_OK(fast,
                         nwattn_nw_cv(fast, &model, n, 1, 1, x, 1, y, 1, 4, hs, 1, a, ga, 1, NULL));
            NT_ASSERT_OK(ref,
                         nwattn_nw_cv(ref, &model, n, 1, 1, x, 1, y, 1, 4, hs, 1, b, gb, 1, NULL));
            for (size_t g = 0; g < 4; g++) {
                if (isinf(b[g])) {
                    assert_true(isinf(a[g]));
                    continue;
                }
                nt_close("cv fast vs reference", g, a[g], b[g], 0, 2e-6);
                nt_close("gradient fast vs reference", g, ga[g], gb[g], 1e-4 * b[g], 1e-3);
            }
        }
    free(x), free(y);
    nwattn_context_destroy(fast);
    nwattn_context_destroy(ref);
}

/* Context threads split the rows into fixed units reduced in order: the results are the same
 * bit for bit with any number of threads. */
static void test_threads_same_results(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 9);
    const size_t n = test_small_shapes() ? 120 : 300, m = test_small_shapes() ? 50 : 133;
    float *x = nt_matrix(&rng, n, 2, 2, 0, 5), *y = nt_matrix(&rng, n, 1, 1, -1, 1);
    float *xq = nt_matrix(&rng, m, 2, 2, 0, 5);
    float *a = nt_alloc(m * sizeof(float)), *b = nt_alloc(m * sizeof(float));
    float *wa = nt_alloc(m * n * sizeof(float)), *wb = nt_alloc(m * n * sizeof(float));
    const float h[4] = {0.5f, 0.7f, 0.3f, 0.4f};
    for (size_t k = 0; k < 5; k++) {
        nwattn_regression model = {all_kernels[k], NWATTN_LOCAL_LINEAR, 0};
        double cv1[2], g1[4], cvt[2], gt[4];
        float h1[2], ht[2];
        nwattn_context *one = nt_context(NWATTN_BACKEND_AUTO);
        NT_ASSERT_OK(one,
                     nwattn_nw_cv(one, &model, n, 2, 1, x, 2, y, 1, 2, h, 2, cv1, g1, 2, NULL));
        NT_ASSERT_OK(one, nwattn_nw_predict(one, &model, h, m, n, 2, 1, xq, 2, x, 2, y, 1, a, 1, wa,
                                            n, NULL, NULL));
        nwattn_cv_options quick = {6, 0.3f, 3.0f, NULL, 30, 1e-3};
        NT_ASSERT_OK(one, nwattn_nw_select_bandwidth(one, &model, n, 2, 1, x, 2, y, 1, &quick, h1,
                                                     NULL, NULL, NULL));
        for (size_t threads = 2; threads <= 3; threads++) {
            nwattn_context *many = nt_context(NWATTN_BACKEND_AUTO);
            NT_ASSERT_OK(many, nwattn_context_set_threads(many, threads));
            NT_ASSERT_OK(
                many, nwattn_nw_cv(many, &model, n, 2, 1, x, 2, y, 1, 2, h, 2, cvt, gt, 2, NULL));
            NT_ASSERT_OK(many, nwattn_nw_predict(many, &model, h, m, n, 2, 1, xq, 2, x, 2, y, 1, b,
                                                 1, wb, n, NULL, NULL));
            NT_ASSERT_OK(many, nwattn_nw_select_bandwidth(many, &model, n, 2, 1, x, 2, y, 1, &quick,
                                                          ht, NULL, NULL, NULL));
            assert_memory_equal(cv1, cvt, sizeof cv1);
            assert_memory_equal(g1, gt, sizeof g1);
            assert_memory_equal(a, b, m * sizeof(float));
            assert_memory_equal(wa, wb, m * n * sizeof(float));
            assert_memory_equal(h1, ht, sizeof h1);
            nwattn_context_destroy(many);
        }
        nwattn_context_destroy(one);
    }
    free(x), free(y), free(xq), free(a), free(b), free(wa), free(wb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loo_equals_refitting),
        cmocka_unit_test(test_loo_identity),
        cmocka_unit_test(test_gradient_finite_differences),
        cmocka_unit_test(test_not_admissible),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_fast_matches_reference_large),
        cmocka_unit_test(test_threads_same_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
