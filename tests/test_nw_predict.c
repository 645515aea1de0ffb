/* nwattn_nw_predict: every kernel and both degrees against the direct double evaluation, on
 * both backends, in 1 to 3 dimensions with vector targets and padded rows; local linear
 * reproduces affine functions; empty supports and singular local systems are flagged and get
 * the documented results; the weights output reproduces the predictions. */
#include "nw_test.h"

static const nwattn_kernel all_kernels[] = {NWATTN_KERNEL_GAUSSIAN, NWATTN_KERNEL_LAPLACE,
                                            NWATTN_KERNEL_EPANECHNIKOV, NWATTN_KERNEL_TRICUBE,
                                            NWATTN_KERNEL_UNIFORM};
static const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_AUTO};

typedef struct problem {
    size_t m, n, d, dv, ldq, ldx, ldy, ldo, ldw;
    float *xq, *x, *y, h[4];
} problem;

/* Points on a lattice of step 1/4 and bandwidths of 0.3 and 0.55: no scaled distance comes
 * near the edge t = 1 of the compact kernels, where float and double may disagree. */
static problem lattice_problem(nwattn_rng *rng, size_t m, size_t n, size_t d, size_t dv) {
    problem p = {m, n, d, dv, d + 1, d + 2, dv + 1, dv + 3, n + 2, NULL, NULL, NULL, {0}};
    p.xq = nt_matrix(rng, m, d, p.ldq, 0, 1);
    p.x = nt_matrix(rng, n, d, p.ldx, 0, 1);
    p.y = nt_matrix(rng, n, dv, p.ldy, -2, 2);
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < d; k++)
            p.xq[i * p.ldq + k] = (float)(nwattn_rng_next(rng) % 17) * 0.25f + 0.125f;
    for (size_t j = 0; j < n; j++)
        for (size_t k = 0; k < d; k++)
            p.x[j * p.ldx + k] = (float)(nwattn_rng_next(rng) % 17) * 0.25f;
    for (size_t k = 0; k < d; k++)
        p.h[k] = k % 2 ? 0.55f : 0.3f;
    return p;
}

static void free_problem(problem *p) { free(p->xq), free(p->x), free(p->y); }

/* Runs the prediction; checks it against or_nw_direct (rows the direct evaluation finds empty
 * must be flagged EMPTY, local linear rows it cannot solve must be flagged too). */
static void check_against_direct(nwattn_backend backend, nwattn_kernel kernel, nwattn_degree degree,
                                 const problem *p, double tol) {
    nwattn_context *ctx = nt_context(backend);
    nwattn_regression model = {kernel, degree, NWATTN_EMPTY_NAN};
    float *yq = nt_alloc(p->m * p->ldo * sizeof(float));
    float *w = nt_alloc(p->m * p->ldw * sizeof(float));
    unsigned char *flags = nt_alloc(p->m);
    size_t n_flagged = 99;
    NT_ASSERT_OK(ctx,
                 nwattn_nw_predict(ctx, &model, p->h, p->m, p->n, p->d, p->dv, p->xq, p->ldq, p->x,
                                   p->ldx, p->y, p->ldy, yq, p->ldo, w, p->ldw, flags, &n_flagged));
    double *want = nt_alloc(p->dv * sizeof(double));
    size_t counted = 0;
    for (size_t i = 0; i < p->m; i++) {
        counted += flags[i] != 0;
        int ok = or_nw_direct(kernel, degree, p->n, p->d, p->dv, p->x, p->ldx, p->y, p->ldy,
                              p->h, p->xq + i * p->ldq, SIZE_MAX, want);
        if (!ok) {
            if (flags[i] == 0)
                fail_msg("kernel %d degree %d row %zu: direct evaluation has no estimate but the "
                         "row is not flagged",
                         (int)kernel, (int)degree, i);
            continue;
        }
        if (flags[i] & NWATTN_ROW_EMPTY)
            fail_msg("kernel %d row %zu flagged empty", (int)kernel, i);
        if (flags[i] & NWATTN_ROW_SINGULAR)
            continue; /* the local constant fallback: checked elsewhere */
        for (size_t c = 0; c < p->dv; c++) {
            char what[64];
            snprintf(what, sizeof what, "k%d deg%d b%d d%zu yq row %zu col", (int)kernel,
                     (int)degree, (int)backend, p->d, i);
            nt_close(what, c, yq[i * p->ldo + c], want[c], tol, tol);
            /* weights · y reproduces the prediction */
            double dot = 0.0;
            for (size_t j = 0; j < p->n; j++)
                dot += (double)w[i * p->ldw + j] * (double)p->y[j * p->ldy + c];
            nt_close("weights·y", i, dot, yq[i * p->ldo + c], 1e-4, 1e-4);
        }
        /* the padding of the outputs is untouched */
        for (size_t c = p->dv; c < p->ldo; c++)
            assert_true(yq[i * p->ldo + c] == 0.0f);
    }
    assert_int_equal(counted, n_flagged);
    free(want), free(yq), free(w), free(flags);
    nwattn_context_destroy(ctx);
}

static void test_kernels_against_direct(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 11);
    const size_t shapes[][4] = {{9, 40, 1, 1}, {7, 33, 1, 3}, {5, 60, 2, 2},
                                {4, 80, 3, 1}, {1, 1, 1, 1},  {3, 2, 2, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        problem p = lattice_problem(&rng, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        for (size_t b = 0; b < 2; b++)
            for (size_t k = 0; k < 5; k++)
                for (int degree = 0; degree < 2; degree++)
                    check_against_direct(backends[b], all_kernels[k], (nwattn_degree)degree, &p,
                                         b == 0 ? 1e-5 : 2e-4);
        free_problem(&p);
    }
}

/* Random (off-lattice) data for the kernels without an edge: tighter agreement checks. */
static void test_smooth_kernels_random_data(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 12);
    for (size_t d = 1; d <= 3; d++) {
        problem p = {13, 150, d, 2, d, d + 3, 2, 2, 150, NULL, NULL, NULL, {0}};
        p.xq = nt_matrix(&rng, p.m, d, p.ldq, -1, 11);
        p.x = nt_matrix(&rng, p.n, d, p.ldx, 0, 10);
        p.y = nt_matrix(&rng, p.n, 2, p.ldy, -1, 1);
        for (size_t k = 0; k < d; k++)
            p.h[k] = 0.4f + 0.3f * (float)k;
        for (size_t b = 0; b < 2; b++)
            for (size_t k = 0; k < 4; k++) /* the uniform kernel has its edge: lattice test */
                for (int degree = 0; degree < 2; degree++)
                    check_against_direct(backends[b], all_kernels[k], (nwattn_degree)degree, &p,
                                         b == 0 ? 1e-5 : 1e-4);
        free_problem(&p);
    }
}

/* Local linear fits reproduce y = a + b·x exactly (up to float rounding), at interior and
 * boundary queries, with every kernel: what removes Nadaraya-Watson's boundary bias. */
static void test_local_linear_reproduces_lines(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 13);
    for (size_t d = 1; d <= 2; d++) {
        const size_t n = 60, m = 9;
        float *x = nt_matrix(&rng, n, d, d, 0, 4), *xq = nt_matrix(&rng, m, d, d, 0, 4);
        float *y = nt_alloc(n * 2 * sizeof(float)), *yq = nt_alloc(m * 2 * sizeof(float));
        float *yq_lc = nt_alloc(m * 2 * sizeof(float));
        for (size_t k = 0; k < d; k++) { /* queries at the corners: the boundary */
            xq[0 * d + k] = 0.0f;
            xq[1 * d + k] = 4.0f;
        }
        for (size_t j = 0; j < n; j++) {
            y[j * 2] = 1.5f - 0.75f * x[j * d] + (d > 1 ? 0.5f * x[j * d + 1] : 0.0f);
            y[j * 2 + 1] = -2.0f + 2.0f * x[j * d];
        }
        const float h[2] = {1.3f, 1.7f};
        for (size_t b = 0; b < 2; b++) {
            nwattn_context *ctx = nt_context(backends[b]);
            for (size_t k = 0; k < 5; k++) {
                nwattn_regression ll = {all_kernels[k], NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
                nwattn_regression lc = {all_kernels[k], NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NAN};
                size_t flagged = 1;
                NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &ll, h, m, n, d, 2, xq, d, x, d, y, 2, yq,
                                                    2, NULL, 0, NULL, &flagged));
                NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &lc, h, m, n, d, 2, xq, d, x, d, y, 2,
                                                    yq_lc, 2, NULL, 0, NULL, NULL));
                assert_int_equal(flagged, 0);
                double worst_lc = 0.0;
                for (size_t i = 0; i < m; i++) {
                    const float *q = xq + i * d;
                    double want0 = 1.5 - 0.75 * q[0] + (d > 1 ? 0.5 * q[1] : 0.0);
                    double want1 = -2.0 + 2.0 * q[0];
                    nt_close("local linear line", i, yq[i * 2], want0, 2e-5, 2e-5);
                    nt_close("local linear line 2", i, yq[i * 2 + 1], want1, 2e-5, 2e-5);
                    worst_lc = fmax(worst_lc, fabs(yq_lc[i * 2 + 1] - want1));
                }
                /* the local constant fit is biased at the boundary: this test can tell */
                assert_true(worst_lc > 0.1);
            }
            nwattn_context_destroy(ctx);
        }
        free(x), free(xq), free(y), free(yq), free(yq_lc);
    }
}

/* A compact kernel and queries with nothing inside the bandwidth: every policy. */
static void test_empty_support(void **state) {
    (void)state;
    const float x[6] = {0.0f, 0.5f, 1.0f, 3.0f, 3.0f, 5.0f}; /* 3.0 twice: a tie */
    const float y[6] = {1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f};
    const float xq[4] = {0.25f, 2.2f, 9.0f, -4.0f};
    const float h = 0.4f;
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(backends[b]);
        for (size_t k = 2; k < 5; k++)
            for (int degree = 0; degree < 2; degree++)
                for (int policy = 0; policy < 3; policy++) {
                    nwattn_regression model = {all_kernels[k], (nwattn_degree)degree,
                                               (nwattn_empty)policy};
                    float yq[4], w[4 * 6];
                    unsigned char flags[4];
                    size_t flagged = 0;
                    NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &h, 4, 6, 1, 1, xq, 1, x, 1, y,
                                                        1, yq, 1, w, 6, flags, &flagged));
                    /* row 0 has support, rows 1..3 have none */
                    assert_false(flags[0] & NWATTN_ROW_EMPTY);
                    assert_true(isfinite(yq[0]));
                    for (int i = 1; i < 4; i++)
                        assert_int_equal(flags[i], NWATTN_ROW_EMPTY);
                    assert_int_equal(flagged, 3 + (flags[0] != 0));
                    const float nearest[4] = {0.0f, 5.0f /* mean of 4 and 6 */, 8.0f, 1.0f};
                    for (int i = 1; i < 4; i++) {
                        if (policy == NWATTN_EMPTY_NEAREST)
                            nt_close("nearest", (size_t)i, yq[i], nearest[i], 1e-6, 0);
                        else if (policy == NWATTN_EMPTY_NAN)
                            assert_true(isnan(yq[i]));
                        else
                            assert_true(yq[i] == 0.0f);
                        double sum = 0.0;
                        for (int j = 0; j < 6; j++)
                            sum += w[i * 6 + j];
                        nt_close("empty weights sum", (size_t)i, sum,
                                 policy == NWATTN_EMPTY_NEAREST ? 1.0 : 0.0, 1e-6, 0);
                    }
                    /* the tie shares: weights 1/2 on both points at 3.0 */
                    if (policy == NWATTN_EMPTY_NEAREST) {
                        nt_close("tie weight", 3, w[1 * 6 + 3], 0.5, 1e-7, 0);
                        nt_close("tie weight", 4, w[1 * 6 + 4], 0.5, 1e-7, 0);
                    }
                }
        /* The Gaussian never has an empty row: a far query gets the nearest point (max shift) */
        nwattn_regression gauss = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
        float yq[4];
        unsigned char flags[4] = {9, 9, 9, 9};
        const float tiny = 0.01f;
        NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &gauss, &tiny, 4, 6, 1, 1, xq, 1, x, 1, y, 1, yq,
                                            1, NULL, 0, flags, NULL));
        for (int i = 0; i < 4; i++)
            assert_int_equal(flags[i], 0);
        nt_close("far gaussian", 2, yq[2], 8.0, 1e-5, 0);
        nt_close("far gaussian", 3, yq[3], 1.0, 1e-5, 0);
        nwattn_context_destroy(ctx);
    }
}

/* d = 2 with every training point on the line x2 = x1: no local plane. The rows are flagged
 * singular and equal the local constant estimate. */
static void test_singular_local_linear(void **state) {
    (void)state;
    const size_t n = 12, m = 3;
    float x[12 * 2], y[12], xq[3 * 2] = {0.5f, 0.5f, 1.0f, 0.2f, 2.0f, 2.5f};
    for (size_t j = 0; j < n; j++) {
        x[2 * j] = x[2 * j + 1] = 0.25f * (float)j;
        y[j] = (float)sin((double)j);
    }
    const float h[2] = {0.7f, 0.9f};
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(backends[b]);
        for (size_t k = 0; k < 4; k++) {
            nwattn_regression ll = {all_kernels[k], NWATTN_LOCAL_LINEAR, 0};
            nwattn_regression lc = {all_kernels[k], NWATTN_LOCAL_CONSTANT, 0};
            float got[3], want[3], w[3 * 12];
            unsigned char flags[3];
            size_t flagged = 0;
            NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &ll, h, m, n, 2, 1, xq, 2, x, 2, y, 1, got, 1,
                                                w, 12, flags, &flagged));
            NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &lc, h, m, n, 2, 1, xq, 2, x, 2, y, 1, want, 1,
                                                NULL, 0, NULL, NULL));
            assert_int_equal(flagged, m);
            for (size_t i = 0; i < m; i++) {
                assert_int_equal(flags[i], NWATTN_ROW_SINGULAR);
                nt_close("singular fallback", i, got[i], want[i], 1e-5, 1e-5);
                for (size_t j = 0; j < n; j++)
                    assert_true(w[i * 12 + j] >= 0.0f); /* local constant weights */
            }
        }
        nwattn_context_destroy(ctx);
    }
}

/* The Gaussian local constant fit is the pooling of seed 2: nwattn_pool with the Gaussian
 * score gives the same predictions and weights. */
static void test_gaussian_is_pooling(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 14);
    float x[50], y[50], xq[50], a[50], b[50], wa[50 * 50], wb[50 * 50];
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 50, x, y));
    for (int i = 0; i < 50; i++)
        xq[i] = 0.1f * (float)i;
    const float h = 1.0f;
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &h, 50, 50, 1, 1, xq, 1, x, 1, y, 1, a, 1, wa,
                                        50, NULL, NULL));
    nwattn_score score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    NT_ASSERT_OK(ctx, nwattn_pool(ctx, &score, NULL, 1, 50, 50, 1, 1, xq, 1, 0, x, 1, 0, y, 1, 0, b,
                                  1, 0, wb, 50, 0, NULL, 0));
    for (int i = 0; i < 50; i++)
        nt_close("pool", (size_t)i, a[i], b[i], 0, 0);
    for (int i = 0; i < 50 * 50; i++)
        nt_close("pool weights", (size_t)i, wa[i], wb[i], 0, 0);
    nwattn_context_destroy(ctx);
}

/* Fast and reference paths agree on a larger 1-D problem (windows over sorted data, chunks). */
static void test_fast_matches_reference_large(void **state) {
    (void)state;
    nwattn_context *fast = nt_context(NWATTN_BACKEND_AUTO),
                   *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 15);
    const size_t n = test_small_shapes() ? 1500 : 3000, m = test_small_shapes() ? 350 : 700;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    NT_ASSERT_OK(fast, nwattn_dataset_generate(fast, NWATTN_DATASET_SINE, &rng, n, x, y));
    float *xq = nt_matrix(&rng, m, 1, 1, -0.5, 10.5);
    float *a = nt_alloc(m * sizeof(float)), *b = nt_alloc(m * sizeof(float));
    const float hs[3] = {0.003f, 0.08f, 3.0f};
    for (size_t k = 0; k < 5; k++)
        for (int degree = 0; degree < 2; degree++)
            for (int hi = 0; hi < 3; hi++) {
                nwattn_regression model = {all_kernels[k], (nwattn_degree)degree, 0};
                NT_ASSERT_OK(fast, nwattn_nw_predict(fast, &model, &hs[hi], m, n, 1, 1, xq, 1, x, 1,
                                                     y, 1, a, 1, NULL, 0, NULL, NULL));
                NT_ASSERT_OK(ref, nwattn_nw_predict(ref, &model, &hs[hi], m, n, 1, 1, xq, 1, x, 1,
                                                    y, 1, b, 1, NULL, 0, NULL, NULL));
                char what[80];
                snprintf(what, sizeof what, "fast vs reference k%zu deg%d h%g", k, degree,
                         (double)hs[hi]);
                for (size_t i = 0; i < m; i++)
                    nt_close(what, i, a[i], b[i], 1e-4, 1e-4);
            }
    free(x), free(y), free(xq), free(a), free(b);
    nwattn_context_destroy(fast);
    nwattn_context_destroy(ref);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_against_direct),
        cmocka_unit_test(test_smooth_kernels_random_data),
        cmocka_unit_test(test_local_linear_reproduces_lines),
        cmocka_unit_test(test_empty_support),
        cmocka_unit_test(test_singular_local_linear),
        cmocka_unit_test(test_gaussian_is_pooling),
        cmocka_unit_test(test_fast_matches_reference_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
