/* The fast kernel sums (NWATTN_NW_METHOD_FASTSUM) against the REFERENCE rows and the oracle:
 * CV value and gradient, predictions anywhere, bandwidth selection, for the Laplace family
 * (LAPLACE, MATERN32, MATERN52), local constant and linear, on random, clustered, duplicated
 * and adversarial data (n = 1, 2, 3, ties, x ~ 1e6 with spread 1, h from 1e-6 to 1e6 × the
 * spread); forcing and refusing each method. */
#include <string.h>

#include "nw_test.h"

/* The Laplace family (exact), then the Gaussian (within its bound: set to 1e-12 where it is
 * compared like the exact ones). */
static const nwattn_kernel family[] = {NWATTN_KERNEL_LAPLACE, NWATTN_KERNEL_MATERN32,
                                       NWATTN_KERNEL_MATERN52, NWATTN_KERNEL_GAUSSIAN};
#define KERNELS 4

static nwattn_context *method_context(nwattn_nw_method method, size_t threads) {
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    NT_ASSERT_OK(ctx, nwattn_context_set_nw_method(ctx, method));
    NT_ASSERT_OK(ctx, nwattn_context_set_threads(ctx, threads));
    NT_ASSERT_OK(ctx, nwattn_context_set_nw_tolerance(ctx, 1e-12));
    return ctx;
}

/* Data shapes: 0 uniform, 1 clustered (three tight clumps), 2 lattice with many ties,
 * 3 huge offset (1e6 + uniform on [0, 1)), 4 one far outlier, 5 signs and magnitudes for
 * the radix sort (negative and positive, -0 and +0, ties, 1e-30 to 1e3). */
static void make_data(int shape, size_t n, nwattn_rng *rng, float *x, float *y) {
    for (size_t j = 0; j < n; j++) {
        double u = nwattn_rng_uniform(rng);
        switch (shape) {
        case 1:
            x[j] = (float)((double)(nwattn_rng_next(rng) % 3) * 5.0 + 1e-3 * u);
            break;
        case 2:
            x[j] = (float)(nwattn_rng_next(rng) % 7) * 0.5f;
            break;
        case 3:
            x[j] = (float)(1e6 + u);
            break;
        case 4:
            x[j] = j == 0 ? 1000.0f : (float)u;
            break;
        case 5: {
            static const float pick[] = {-0.0f, 0.0f, -1e-30f, 1e-30f, -2.5f, 2.5f, 1e3f, -1e3f};
            x[j] = j % 3 == 0 ? pick[nwattn_rng_next(rng) % 8] : (float)(6.0 * u - 3.0);
            break;
        }
        default:
            x[j] = (float)(3.0 * u);
        }
        y[j] = (float)(sin(3.0 * (double)x[j]) + 0.3 * nwattn_rng_normal(rng));
    }
}

/* CV and gradient of the fast sums against the reference on a grid of bandwidths. */
static void check_cv(int shape, size_t n, size_t dv, const float *grid, size_t n_bw, double rtol) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 1000 + (uint64_t)shape * 17 + n + dv);
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * dv * sizeof(float));
    float *y1 = nt_alloc(n * sizeof(float));
    make_data(shape, n, &rng, x, y1);
    for (size_t j = 0; j < n; j++)
        for (size_t c = 0; c < dv; c++)
            y[j * dv + c] = c == 0 ? y1[j] : (float)(c + 1) * y1[j] * y1[j];
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
    double *cv_r = nt_alloc(n_bw * sizeof(double)), *cv_f = nt_alloc(n_bw * sizeof(double));
    double *g_r = nt_alloc(n_bw * sizeof(double)), *g_f = nt_alloc(n_bw * sizeof(double));
    for (size_t k = 0; k < KERNELS; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {family[k], (nwattn_degree)degree, 0};
            size_t fl_r[8], fl_f[8];
            NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, 1, dv, x, 1, y, dv, n_bw, grid, 1, cv_r,
                                           g_r, 1, fl_r));
            NT_ASSERT_OK(fs, nwattn_nw_cv(fs, &model, n, 1, dv, x, 1, y, dv, n_bw, grid, 1, cv_f,
                                          g_f, 1, fl_f));
            for (size_t g = 0; g < n_bw; g++) {
                char what[96];
                snprintf(what, sizeof what, "shape %d n %zu dv %zu kernel %d deg %d h %g", shape,
                         n, dv, (int)family[k], degree, (double)grid[g]);
                nt_close(what, g, cv_f[g], cv_r[g], 0, rtol);
                /* h dCV/dh relative to CV: the scale-free gradient. With the outlier 10^6
                 * bandwidths away (shape 4) its Gaussian row's db - yhat·dm cancels terms
                 * u^2 ~ 10^12 in both paths alike: 1e-5 there. */
                const double grtol =
                    shape == 4 && family[k] == NWATTN_KERNEL_GAUSSIAN ? fmax(rtol, 1e-5) : rtol;
                nt_close(what, g, (double)grid[g] * g_f[g], (double)grid[g] * g_r[g],
                         grtol * cv_r[g], grtol);
                if (fl_f[g] != fl_r[g] && rtol < 1e-6)
                    fail_msg("%s: flagged %zu, reference %zu", what, fl_f[g], fl_r[g]);
            }
        }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fs);
    free(x), free(y), free(y1), free(cv_r), free(cv_f), free(g_r), free(g_f);
}

static void test_cv_random(void **state) {
    (void)state;
    const float grid[] = {0.01f, 0.1f, 0.4f, 2.0f};
    const size_t half = test_small_shapes() ? 2 : 1; /* memcheck: n / 2, still > 256 */
    check_cv(0, 3, 1, grid, 4, 1e-9);   /* the smallest n CV allows */
    check_cv(0, 50, 2, grid, 4, 1e-9);
    check_cv(0, 600 / half, 1, grid, 4, 1e-9); /* several blocks of 256 */
    check_cv(1, 400 / half, 1, grid, 4, 1e-8); /* clusters: gaps of 5 between clumps of 1e-3 */
    check_cv(2, 300 / half, 1, grid, 4, 1e-9); /* ties */
    check_cv(5, 700 / half, 1, grid, 4, 1e-8); /* signs, zeros of both signs, 3 radix digits */
}

/* The largest size against the O(n^2) REFERENCE: n = 10^4 (memcheck: 2000), the Gaussian (the
 * engine with a truncation bound: target expansions and M2L over many clusters), both degrees,
 * CV and gradient. (The REFERENCE's 10^8 pairs per call are the cost: the other families are
 * compared on every shape up to n = 900 above.) */
static void test_cv_large(void **state) {
    (void)state;
    const size_t n = test_small_shapes() ? 2000 : 10000;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 4242);
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    make_data(0, n, &rng, x, y);
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
    const float h = 0.03f; /* 50 points a cluster at n = 10^4 (10 at 2000: walked) */
    for (int degree = 0; degree < 2; degree++) {
        nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, (nwattn_degree)degree, 0};
        double cv_r, cv_f, g_r, g_f;
        NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv_r, &g_r, 1,
                                       NULL));
        NT_ASSERT_OK(fs, nwattn_nw_cv(fs, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv_f, &g_f, 1,
                                      NULL));
        nt_close("large CV", (size_t)degree, cv_f, cv_r, 0, 1e-9);
        nt_close("large CV gradient", (size_t)degree, h * g_f, h * g_r, 1e-9 * cv_r, 1e-9);
    }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fs);
    free(x), free(y);
}

/* The sort of the training copy (once per call, shared by every evaluation of a selection):
 * inputs that differ only in the order of distinct values (ties keep their relative order)
 * give bit-identical CV values and gradients, by both the fast sums and the direct rows. */
static void test_sort_order_bits(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 23);
    const size_t n = 900;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    float *xs = nt_alloc(n * sizeof(float)), *ys = nt_alloc(n * sizeof(float));
    size_t *order = nt_alloc(n * sizeof(size_t));
    make_data(5, n, &rng, x, y);
    for (size_t j = 0; j < n; j++)
        order[j] = j;
    /* a stable insertion sort by value (-0 == +0): the input order of ties is kept */
    for (size_t j = 1; j < n; j++)
        for (size_t i = j; i > 0 && x[order[i]] < x[order[i - 1]]; i--) {
            size_t t = order[i];
            order[i] = order[i - 1], order[i - 1] = t;
        }
    for (size_t j = 0; j < n; j++)
        xs[j] = x[order[j]], ys[j] = y[order[j]];
    const float h[] = {0.02f, 0.3f};
    const nwattn_nw_method methods[] = {NWATTN_NW_METHOD_FASTSUM, NWATTN_NW_METHOD_DIRECT};
    for (size_t m = 0; m < 2; m++)
        for (size_t k = 0; k < KERNELS; k++) {
            nwattn_context *ctx = method_context(methods[m], 2);
            nwattn_regression model = {family[k], NWATTN_LOCAL_LINEAR, 0};
            double cv[2][2], g[2][2];
            NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 2, h, 1, cv[0], g[0],
                                           1, NULL));
            NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, xs, 1, ys, 1, 2, h, 1, cv[1],
                                           g[1], 1, NULL));
            for (size_t b = 0; b < 2; b++)
                if (memcmp(&cv[0][b], &cv[1][b], sizeof(double)) != 0 ||
                    memcmp(&g[0][b], &g[1][b], sizeof(double)) != 0)
                    fail_msg("method %zu kernel %d h %g: cv %.17g vs %.17g, grad %.17g vs %.17g",
                             m, (int)family[k], (double)h[b], cv[0][b], cv[1][b], g[0][b],
                             g[1][b]);
            nwattn_context_destroy(ctx);
        }
    free(x), free(y), free(xs), free(ys), free(order);
}

/* x ~ 1e6 with spread 1: an expansion about the origin would cancel like 2^-53 (1e6 / h)^k. */
static void test_cv_huge_offset(void **state) {
    (void)state;
    const float grid[] = {1e-3f, 0.05f, 0.5f, 5.0f};
    check_cv(3, 400, 1, grid, 4, 1e-8);
    check_cv(4, 300, 1, grid, 4, 1e-8); /* one point 1000 spreads away */
}

/* Bandwidths from 1e-6 to 1e6 × the spread. At the extremes the local linear systems are
 * singular (both paths fall back alike) and CV is ill-conditioned in h: looser there. */
static void test_cv_extreme_bandwidths(void **state) {
    (void)state;
    const float grid[] = {3e-6f, 3e-4f, 3e4f, 3e6f};
    check_cv(0, 200, 1, grid, 4, 1e-6);
}

/* Predictions at queries anywhere: unsorted, outside the data, on training points. */
static void check_predict(int shape, size_t n, float h, double rtol) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 77 + n + (uint64_t)shape);
    const size_t m = 41, dv = 2;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * dv * sizeof(float));
    float *y1 = nt_alloc(n * sizeof(float)), *xq = nt_alloc(m * sizeof(float));
    make_data(shape, n, &rng, x, y1);
    for (size_t j = 0; j < n; j++) {
        y[j * dv] = y1[j];
        y[j * dv + 1] = -2.0f * y1[j] + 1.0f;
    }
    float lo = x[0], hi = x[0];
    for (size_t j = 0; j < n; j++)
        lo = fminf(lo, x[j]), hi = fmaxf(hi, x[j]);
    const float span = hi > lo ? hi - lo : 1.0f;
    for (size_t i = 0; i < m; i++) {
        if (i % 5 == 0)
            xq[i] = x[nwattn_rng_next(&rng) % n]; /* on a training point */
        else
            xq[i] = (float)((double)lo + span * (2.0 * nwattn_rng_uniform(&rng) - 0.5));
    }
    xq[1] = lo - 50.0f * span; /* far outside on both sides */
    xq[2] = hi + 50.0f * span;
    float *yr = nt_alloc(m * dv * sizeof(float)), *yf = nt_alloc(m * dv * sizeof(float));
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
    for (size_t k = 0; k < KERNELS; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {family[k], (nwattn_degree)degree, 0};
            unsigned char fr[41], ff[41];
            NT_ASSERT_OK(ref, nwattn_nw_predict(ref, &model, &h, m, n, 1, dv, xq, 1, x, 1, y, dv,
                                                yr, dv, NULL, 0, fr, NULL));
            NT_ASSERT_OK(fs, nwattn_nw_predict(fs, &model, &h, m, n, 1, dv, xq, 1, x, 1, y, dv,
                                               yf, dv, NULL, 0, ff, NULL));
            for (size_t i = 0; i < m; i++) {
                char what[96];
                snprintf(what, sizeof what, "predict shape %d n %zu h %g kernel %d deg %d q %g",
                         shape, n, (double)h, (int)family[k], degree, (double)xq[i]);
                for (size_t c = 0; c < dv; c++)
                    nt_close(what, i * dv + c, yf[i * dv + c], yr[i * dv + c], rtol * 4.0, rtol);
                /* The Gaussian leaves out points below eps of the nearest weight; the
                 * equilibrated rcond test can see a neighbour of relative weight 1e-10, so at
                 * tiny h a local linear row may be flagged singular by one path only (the
                 * estimates agree: compared above). */
                if (ff[i] != fr[i] &&
                    !(family[k] == NWATTN_KERNEL_GAUSSIAN && degree == 1 && h < 1e-3f))
                    fail_msg("%s: flags %u, reference %u", what, ff[i], fr[i]);
                /* the oracle in long double (rows the reference solves, not the fallbacks) */
                double want[2];
                if (fr[i] == 0 && or_nw_direct(family[k], (nwattn_degree)degree, n, 1, dv, x, 1, y,
                                               dv, &h, xq + i, SIZE_MAX, want))
                    for (size_t c = 0; c < dv; c++)
                        nt_close(what, i * dv + c, yf[i * dv + c], want[c], rtol * 4.0, rtol);
            }
        }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fs);
    free(x), free(y), free(y1), free(xq), free(yr), free(yf);
}

static void test_predict_anywhere(void **state) {
    (void)state;
    const double tol = 4e-6; /* float outputs: a few float32 ulp */
    check_predict(0, 1, 0.3f, tol); /* one training point: every row is its y */
    check_predict(0, 2, 0.3f, tol);
    check_predict(0, 600, 0.05f, tol);
    check_predict(0, 600, 1e-5f, tol);  /* tiny h: the nearest points decide */
    check_predict(2, 300, 0.2f, tol);   /* ties */
    check_predict(3, 300, 0.01f, tol);  /* huge offset */
    check_predict(1, 400, 0.5f, tol);   /* clusters */
}

/* Every training x equal but one: CV needs two values; ties everywhere else. */
static void test_all_equal_but_one(void **state) {
    (void)state;
    const size_t n = 40;
    float x[40], y[40];
    for (size_t j = 0; j < n; j++) {
        x[j] = j == 7 ? 2.0f : 1.0f;
        y[j] = (float)(j % 5) - 2.0f;
    }
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 1);
    const float grid[] = {0.01f, 1.0f, 100.0f};
    for (size_t k = 0; k < KERNELS; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {family[k], (nwattn_degree)degree, 0};
            double cr[3], cf[3], gr[3], gf[3];
            NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, 1, 1, x, 1, y, 1, 3, grid, 1, cr, gr, 1,
                                           NULL));
            NT_ASSERT_OK(fs, nwattn_nw_cv(fs, &model, n, 1, 1, x, 1, y, 1, 3, grid, 1, cf, gf, 1,
                                          NULL));
            for (size_t g = 0; g < 3; g++) {
                nt_close("all equal cv", g, cf[g], cr[g], 0, 1e-9);
                nt_close("all equal grad", g, gf[g], gr[g], 1e-9 * cr[g] / (double)grid[g], 1e-7);
            }
        }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fs);
}

/* The bandwidth chosen through the fast sums is the reference search's within its tolerance. */
static void test_select_matches_reference(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 5);
    const size_t n = 260; /* two blocks */
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    make_data(0, n, &rng, x, y);
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
    nwattn_cv_options opt;
    nwattn_cv_options_default(&opt);
    for (size_t k = 0; k < KERNELS; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {family[k], (nwattn_degree)degree, 0};
            float hr, hf;
            nwattn_cv_report rr, rf;
            NT_ASSERT_OK(ref, nwattn_nw_select_bandwidth(ref, &model, n, 1, 1, x, 1, y, 1, &opt,
                                                         &hr, &rr, NULL, NULL));
            NT_ASSERT_OK(fs, nwattn_nw_select_bandwidth(fs, &model, n, 1, 1, x, 1, y, 1, &opt, &hf,
                                                        &rf, NULL, NULL));
            nt_close("selected h", k, hf, hr, 0, 4.0 * opt.tolerance);
            nt_close("selected cv", k, rf.cv, rr.cv, 0, 1e-8);
        }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fs);
    free(x), free(y);
}

/* AUTO, DIRECT and FASTSUM agree; forcing FASTSUM where it cannot run is refused with a
 * message and leaves the outputs alone; unknown methods are refused. */
static void test_forcing(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 9);
    const size_t n = 300;
    float x[300], y[300], x2[600];
    make_data(0, n, &rng, x, y);
    for (size_t j = 0; j < 2 * n; j++)
        x2[j] = (float)nwattn_rng_uniform(&rng);
    const float h = 0.2f, h2[2] = {0.3f, 0.3f};
    nwattn_nw_method methods[] = {NWATTN_NW_METHOD_AUTO, NWATTN_NW_METHOD_DIRECT,
                                  NWATTN_NW_METHOD_FASTSUM};
    double cv[3];
    for (size_t i = 0; i < 3; i++) {
        nwattn_context *ctx = method_context(methods[i], 1);
        assert_int_equal(nwattn_context_get_nw_method(ctx), methods[i]);
        nwattn_regression model = {NWATTN_KERNEL_MATERN32, NWATTN_LOCAL_LINEAR, 0};
        NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv[i], NULL, 0,
                                       NULL));
        nwattn_context_destroy(ctx);
    }
    nt_close("direct vs fastsum", 0, cv[1], cv[2], 0, 2e-6); /* direct: float32 weights */
    nt_close("auto vs fastsum", 0, cv[0], cv[2], 0, 2e-6);

    nwattn_context *ctx = method_context(NWATTN_NW_METHOD_FASTSUM, 1);
    nwattn_regression gauss = {NWATTN_KERNEL_EPANECHNIKOV, NWATTN_LOCAL_CONSTANT, 0};
    nwattn_regression lap = {NWATTN_KERNEL_LAPLACE, NWATTN_LOCAL_CONSTANT, 0};
    double out = -7.0;
    NT_ASSERT_STATUS(ctx, nwattn_nw_cv(ctx, &gauss, n, 1, 1, x, 1, y, 1, 1, &h, 1, &out, NULL, 0,
                                       NULL), NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_cv(ctx, &lap, n, 2, 1, x2, 2, y, 1, 1, h2, 2, &out, NULL, 0,
                                       NULL), NWATTN_ERR_BAD_PARAMETER);
    assert_true(out == -7.0);
    float yq = -7.0f, w[300];
    NT_ASSERT_STATUS(ctx, nwattn_nw_predict(ctx, &lap, &h, 1, n, 1, 1, x, 1, x, 1, y, 1, &yq, 1, w,
                                            n, NULL, NULL), NWATTN_ERR_BAD_PARAMETER);
    assert_true(yq == -7.0f);
    NT_ASSERT_STATUS(ctx, nwattn_context_set_nw_method(ctx, (nwattn_nw_method)9),
                     NWATTN_ERR_BAD_ENUM);
    assert_int_equal(nwattn_context_get_nw_method(ctx), NWATTN_NW_METHOD_FASTSUM);
    assert_int_equal(nwattn_context_get_nw_method(NULL), NWATTN_NW_METHOD_AUTO);
    NT_ASSERT_STATUS(ctx, nwattn_context_set_nw_tolerance(ctx, 0.5), NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_context_set_nw_tolerance(ctx, NAN), NWATTN_ERR_BAD_PARAMETER);
    assert_true(nwattn_context_get_nw_tolerance(ctx) == 1e-12);
    assert_true(nwattn_context_get_nw_tolerance(NULL) == NWATTN_NW_TOLERANCE_DEFAULT);
    /* REFERENCE overrides the method: the compact kernel runs there */
    NT_ASSERT_OK(ctx, nwattn_context_set_backend(ctx, NWATTN_BACKEND_REFERENCE));
    NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &gauss, n, 1, 1, x, 1, y, 1, 1, &h, 1, &out, NULL, 0, NULL));
    nwattn_context_destroy(ctx);
}

/* AUTO's choice for the Gaussian (nwattn.h): the fast sums where its clusters of width h/2 are
 * dense, the direct rows where they are not even when the window is wide (there the fast sums
 * sum points one by one with a scalar exp: several times slower); dense, also for local
 * constant predictions, whose alternative is the dense pool. A choice shows as bits equal to
 * the forced method's. */
static void test_auto_choice_gaussian(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 31);
    const size_t n = test_small_shapes() ? 2000 : 5000; /* 2000: still 30 points a cluster */
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float)),
          *fit = nt_alloc(3 * n * sizeof(float));
    for (size_t j = 0; j < n; j++) {
        x[j] = (float)(10.0 * nwattn_rng_uniform(&rng));
        y[j] = (float)(sin(x[j]) + 0.2 * nwattn_rng_normal(&rng));
    }
    const nwattn_nw_method methods[] = {NWATTN_NW_METHOD_AUTO, NWATTN_NW_METHOD_DIRECT,
                                        NWATTN_NW_METHOD_FASTSUM};
    /* dense: h = 0.3 (75 points per cluster); sparse: 21 points per cluster, a window of
     * about 690 points whatever n */
    const float hs[2] = {0.3f, 42.0f * 10.0f / (float)n};
    for (size_t b = 0; b < 2; b++) {
        nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
        double cv[3];
        for (size_t i = 0; i < 3; i++) {
            nwattn_context *ctx = method_context(methods[i], 2);
            NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 1, &hs[b], 1, &cv[i],
                                           NULL, 0, NULL));
            NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &hs[b], n, n, 1, 1, x, 1, x, 1, y, 1,
                                                fit + i * n, 1, NULL, 0, NULL, NULL));
            nwattn_context_destroy(ctx);
        }
        assert_true(cv[1] != cv[2]); /* the two methods are told apart by their bits */
        if (!(b == 0 ? cv[0] == cv[2] : cv[0] == cv[1]))
            fail_msg("h = %g: AUTO's CV %.17g, direct %.17g, fast sums %.17g", (double)hs[b],
                     cv[0], cv[1], cv[2]);
        if (b == 0) /* local constant predictions: the fast sums, not the dense pool */
            assert_true(memcmp(fit, fit + 2 * n, n * sizeof(float)) == 0 &&
                        memcmp(fit, fit + n, n * sizeof(float)) != 0);
    }
    free(x), free(y), free(fit);
}

/* The same bits for any thread count, every fast-sum kernel family and degree (the Gaussian's
 * rows run two at a time: each row's sums must not depend on its neighbour). */
static void test_threads_same_bits(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 11);
    const size_t n = 1001;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    make_data(0, n, &rng, x, y);
    const float h = 0.05f;
    const nwattn_kernel kernels[] = {NWATTN_KERNEL_MATERN52, NWATTN_KERNEL_GAUSSIAN};
    for (size_t k = 0; k < 2; k++)
        for (int deg = 0; deg < 2; deg++) {
            double cv[3], g[3];
            for (size_t t = 1; t <= 3; t++) {
                nwattn_context *ctx = method_context(NWATTN_NW_METHOD_FASTSUM, t);
                nwattn_regression model = {kernels[k], (nwattn_degree)deg, 0};
                NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1,
                                               &cv[t - 1], &g[t - 1], 1, NULL));
                nwattn_context_destroy(ctx);
            }
            if (!(cv[0] == cv[1] && cv[1] == cv[2] && g[0] == g[1] && g[1] == g[2]))
                fail_msg("kernel %d degree %d: CV %.17g %.17g %.17g", (int)kernels[k], deg, cv[0],
                         cv[1], cv[2]);
        }
    free(x), free(y);
}

/* The fitted values (queries = the training x, the same array: the data's own order) equal
 * bit for bit the predictions at a reversed copy (the query sort), for 1 and 3 threads, on tied
 * data spanning several blocks; and they match the REFERENCE. */
static void test_fitted_same_bits(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 23);
    const size_t n = test_small_shapes() ? 300 : 700; /* 300: still two blocks of 256 */
    const float h = 0.1f;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    float *xr = nt_alloc(n * sizeof(float)), *fit = nt_alloc(n * sizeof(float));
    float *rev = nt_alloc(n * sizeof(float)), *ref_fit = nt_alloc(n * sizeof(float));
    make_data(2, n, &rng, x, y);
    for (size_t j = 0; j < n; j++)
        xr[j] = x[n - 1 - j];
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    const nwattn_kernel kernels[] = {NWATTN_KERNEL_LAPLACE, NWATTN_KERNEL_GAUSSIAN};
    for (size_t k = 0; k < 2; k++)
        for (int degree = 0; degree < 2; degree++) {
            nwattn_regression model = {kernels[k], (nwattn_degree)degree, 0};
            NT_ASSERT_OK(ref, nwattn_nw_predict(ref, &model, &h, n, n, 1, 1, x, 1, x, 1, y, 1,
                                                ref_fit, 1, NULL, 0, NULL, NULL));
            for (size_t t = 1; t <= 3; t += 2) {
                nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, t);
                NT_ASSERT_OK(fs, nwattn_nw_predict(fs, &model, &h, n, n, 1, 1, x, 1, x, 1, y, 1,
                                                   fit, 1, NULL, 0, NULL, NULL));
                NT_ASSERT_OK(fs, nwattn_nw_predict(fs, &model, &h, n, n, 1, 1, xr, 1, x, 1, y, 1,
                                                   rev, 1, NULL, 0, NULL, NULL));
                for (size_t j = 0; j < n; j++) {
                    if (memcmp(&fit[j], &rev[n - 1 - j], sizeof(float)) != 0)
                        fail_msg("kernel %d deg %d threads %zu row %zu: %.9g vs %.9g",
                                 (int)kernels[k], degree, t, j, (double)fit[j],
                                 (double)rev[n - 1 - j]);
                    nt_close("fitted values", j, fit[j], ref_fit[j], 4e-6, 4e-6);
                }
                nwattn_context_destroy(fs);
            }
        }
    nwattn_context_destroy(ref);
    free(x), free(y), free(xr), free(fit), free(rev), free(ref_fit);
}

/* The Gaussian's stated bound, at loose tolerances where it is visible: for the local
 * constant estimate B / S with |dB| <= eps max|y| S and |dS| <= eps S, the prediction is
 * within 2 eps max|y| (+ float rounding) of the exact one. The bound must hold and, at
 * eps = 1e-3, the error must be seen to be non-zero somewhere (else the test proves nothing). */
static void test_gauss_bound(void **state) {
    (void)state;
    const double eps_list[] = {1e-3, 1e-5, 1e-7};
    const float h_list[] = {1e-5f, 0.01f, 0.1f, 1.0f, 100.0f};
    const size_t n = 400, m = 37;
    double worst_seen = 0.0;
    for (int shape = 0; shape < 5; shape++) {
        nwattn_rng rng;
        nwattn_rng_seed(&rng, 300 + (uint64_t)shape);
        float x[400], y[400], xq[37], yq[37];
        make_data(shape, n, &rng, x, y);
        double ymax = 0.0;
        for (size_t j = 0; j < n; j++)
            ymax = fmax(ymax, fabs((double)y[j]));
        for (size_t i = 0; i < m; i++)
            xq[i] = i % 3 == 0 ? x[nwattn_rng_next(&rng) % n]
                               : x[nwattn_rng_next(&rng) % n] + (float)(0.3 * nwattn_rng_normal(&rng));
        for (size_t e = 0; e < 3; e++)
            for (size_t b = 0; b < 5; b++) {
                nwattn_context *ctx = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
                NT_ASSERT_OK(ctx, nwattn_context_set_nw_tolerance(ctx, eps_list[e]));
                nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
                const float h = h_list[b] * (shape == 1 || shape == 4 ? 3.0f : 1.0f);
                NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &h, m, n, 1, 1, xq, 1, x, 1, y, 1,
                                                    yq, 1, NULL, 0, NULL, NULL));
                for (size_t i = 0; i < m; i++) {
                    double want;
                    assert_true(or_nw_direct(NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, n, 1, 1,
                                             x, 1, y, 1, &h, xq + i, SIZE_MAX, &want));
                    const double err = fabs((double)yq[i] - want);
                    const double bound = 2.0 * eps_list[e] * ymax + 0x1p-23 * ymax;
                    char what[80];
                    snprintf(what, sizeof what, "gauss bound shape %d eps %g h %g", shape,
                             eps_list[e], (double)h);
                    if (!(err <= bound))
                        fail_msg("%s: query %zu error %.3g > bound %.3g", what, i, err, bound);
                    if (e == 0)
                        worst_seen = fmax(worst_seen, err / ymax);
                }
                nwattn_context_destroy(ctx);
            }
    }
    assert_true(worst_seen > 1e-6); /* the expansion really truncates at eps = 1e-3 */
}

/* The same bound through nwattn_nw_cv, whose leave-one-out rows of dense clusters go through
 * target expansions: each LOO estimate is within 2 · 3 eps · max|y| (nwattn.h), its residual
 * within 2 max|y|, so |dCV| <= 12 eps ymax^2 · 2 + (6 eps ymax)^2. */
static void test_gauss_cv_bound(void **state) {
    (void)state;
    const size_t n = 900; /* dense: clusters of h/2 hold >= 24 points at these bandwidths */
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 404);
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    make_data(0, n, &rng, x, y);
    double ymax = 0.0;
    for (size_t j = 0; j < n; j++)
        ymax = fmax(ymax, fabs((double)y[j]));
    const float grid[] = {0.2f, 0.6f, 3.0f};
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE);
    double seen = 0.0;
    for (int degree = 0; degree < 2; degree++) {
        nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, (nwattn_degree)degree, 0};
        double want[3];
        NT_ASSERT_OK(ref, nwattn_nw_cv(ref, &model, n, 1, 1, x, 1, y, 1, 3, grid, 1, want, NULL, 0,
                                       NULL));
        const double eps_list[] = {1e-3, 1e-6};
        for (size_t e = 0; e < 2; e++) {
            nwattn_context *fs = method_context(NWATTN_NW_METHOD_FASTSUM, 2);
            NT_ASSERT_OK(fs, nwattn_context_set_nw_tolerance(fs, eps_list[e]));
            double got[3];
            NT_ASSERT_OK(fs, nwattn_nw_cv(fs, &model, n, 1, 1, x, 1, y, 1, 3, grid, 1, got, NULL,
                                          0, NULL));
            const double eps = eps_list[e];
            for (size_t g = 0; g < 3; g++) {
                /* local linear: the bound on the moments, not on the estimate; held to the
                 * local constant's bound times 10 as a smoke check of the expansion */
                const double bound = (24.0 * eps + 36.0 * eps * eps) * ymax * ymax *
                                     (degree == 0 ? 1.0 : 10.0);
                const double err = fabs(got[g] - want[g]);
                if (!(err <= bound))
                    fail_msg("cv bound deg %d eps %g h %g: |%.9g - %.9g| = %.3g > %.3g", degree,
                             eps, (double)grid[g], got[g], want[g], err, bound);
                if (e == 0 && degree == 0)
                    seen = fmax(seen, err);
            }
            nwattn_context_destroy(fs);
        }
    }
    assert_true(seen > 1e-9); /* the expansions really truncate at eps = 1e-3 */
    nwattn_context_destroy(ref);
    free(x), free(y);
}

/* An evaluation without the gradient carries fewer moments (the selection's grid): its CV
 * value is the same to the last bit as with the gradient (the lower moments never read the
 * higher ones), so the grid and the refinement compare like with like. Data with rows beyond
 * the rescaling distance (h = 3e-4 on gaps of ~0.01) and without; two y columns (a padded
 * pair). */
static void test_value_without_gradient_bits(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 31);
    const size_t n = 600;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(2 * n * sizeof(float));
    make_data(0, n, &rng, x, y);
    for (size_t j = n; j-- > 0;) {
        y[2 * j] = y[j];
        y[2 * j + 1] = y[j] * y[j];
    }
    const float h[] = {3e-4f, 0.05f, 1.0f};
    for (size_t t = 1; t <= 2; t++)
        for (size_t dv = 1; dv <= 2; dv++)
            for (size_t k = 0; k + 1 < KERNELS; k++)
                for (int degree = 0; degree < 2; degree++) {
                    nwattn_context *ctx = method_context(NWATTN_NW_METHOD_FASTSUM, t);
                    nwattn_regression model = {family[k], (nwattn_degree)degree, 0};
                    double with[3], without[3], g[3];
                    NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, dv, x, 1, y, 2, 3, h, 1, with,
                                                   g, 1, NULL));
                    NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &model, n, 1, dv, x, 1, y, 2, 3, h, 1,
                                                   without, NULL, 0, NULL));
                    for (size_t b = 0; b < 3; b++)
                        if (memcmp(&with[b], &without[b], sizeof(double)) != 0)
                            fail_msg("kernel %d deg %d dv %zu h %g: %.17g with the gradient, "
                                     "%.17g without",
                                     (int)family[k], degree, dv, (double)h[b], with[b],
                                     without[b]);
                    nwattn_context_destroy(ctx);
                }
    free(x), free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cv_random),
        cmocka_unit_test(test_cv_large),
        cmocka_unit_test(test_sort_order_bits),
        cmocka_unit_test(test_cv_huge_offset),
        cmocka_unit_test(test_cv_extreme_bandwidths),
        cmocka_unit_test(test_predict_anywhere),
        cmocka_unit_test(test_all_equal_but_one),
        cmocka_unit_test(test_select_matches_reference),
        cmocka_unit_test(test_forcing),
        cmocka_unit_test(test_auto_choice_gaussian),
        cmocka_unit_test(test_threads_same_bits),
        cmocka_unit_test(test_fitted_same_bits),
        cmocka_unit_test(test_gauss_bound),
        cmocka_unit_test(test_gauss_cv_bound),
        cmocka_unit_test(test_value_without_gradient_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
