/* The regression statistics (nwattn_nw_summary, _inference, _bootstrap_bands) and the kernel
 * density (nwattn_kde, _kde_cv): integer observation weights equal repeated rows; closed forms
 * at infinite bandwidth (the sample mean and ordinary least squares, with their classical and
 * HC2 standard errors); derivatives against analytic ones and finite differences; bootstrap
 * reproducibility and its agreement with the heteroscedastic variance; densities against
 * direct sums and numerical integrals; the bad-input matrix with outputs untouched. */
#include "nw_test.h"

static const nwattn_kernel kernels[] = {NWATTN_KERNEL_GAUSSIAN, NWATTN_KERNEL_LAPLACE,
                                        NWATTN_KERNEL_EPANECHNIKOV, NWATTN_KERNEL_TRICUBE,
                                        NWATTN_KERNEL_UNIFORM};

typedef struct data {
    size_t n, d;
    float *x, *y, *w;
} data;

/* n points in [0, 1)^d on a lattice of step 1/16 (no kernel edge ties at h = 0.3 + ...),
 * y = sin 4x_1 + x_2/2 + noise, integer weights 0..3 (at least 1 for the first three). */
static data make_data(uint64_t seed, size_t n, size_t d) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    data s = {n, d, nt_alloc(n * d * sizeof(float)), nt_alloc(n * sizeof(float)),
              nt_alloc(n * sizeof(float))};
    for (size_t j = 0; j < n; j++) {
        for (size_t k = 0; k < d; k++)
            s.x[j * d + k] = (float)(nwattn_rng_next(&rng) % 16) / 16.0f + 0.01f * (float)k;
        s.y[j] = (float)(sin(4.0 * s.x[j * d]) + (d > 1 ? 0.5 * s.x[j * d + 1] : 0.0) +
                         0.3 * nwattn_rng_normal(&rng));
        s.w[j] = (float)(j < 3 ? 1 + nwattn_rng_next(&rng) % 3 : nwattn_rng_next(&rng) % 4);
    }
    return s;
}

/* The same data with each row repeated w times (unit weights). */
static data repeat_rows(const data *s) {
    size_t total = 0;
    for (size_t j = 0; j < s->n; j++)
        total += (size_t)s->w[j];
    data r = {total, s->d, nt_alloc(total * s->d * sizeof(float)), nt_alloc(total * sizeof(float)),
              NULL};
    size_t at = 0;
    for (size_t j = 0; j < s->n; j++)
        for (size_t c = 0; c < (size_t)s->w[j]; c++, at++) {
            memcpy(r.x + at * s->d, s->x + j * s->d, s->d * sizeof(float));
            r.y[at] = s->y[j];
        }
    return r;
}

static void free_data(data *s) { free(s->x), free(s->y), free(s->w); }

static void same_summary(const char *what, const nwattn_fit_summary *a,
                         const nwattn_fit_summary *b, double tol) {
    nt_close(what, 0, a->r2, b->r2, tol, tol);
    nt_close(what, 1, a->dof, b->dof, tol, tol);
    nt_close(what, 2, a->dof_resid, b->dof_resid, tol, tol);
    nt_close(what, 3, a->sigma2, b->sigma2, tol, tol);
    nt_close(what, 4, a->rss, b->rss, tol, tol);
    nt_close(what, 5, a->cv, b->cv, tol, tol);
}

static void test_integer_weights_are_repeated_rows(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    for (size_t d = 1; d <= 2; d++)
        for (size_t kk = 0; kk < 5; kk++)
            for (int degree = 0; degree < 2; degree++) {
                data s = make_data(100 + d, 23, d);
                data r = repeat_rows(&s);
                nwattn_regression model = {kernels[kk], (nwattn_degree)degree, NWATTN_EMPTY_NAN};
                const float h[2] = {0.33f, 0.61f};
                nwattn_fit_summary ws, rs;
                NT_ASSERT_OK(ctx, nwattn_nw_summary(ctx, &model, h, s.n, d, s.x, d, s.y, s.w, &ws,
                                                    NULL, NULL));
                NT_ASSERT_OK(ctx, nwattn_nw_summary(ctx, &model, h, r.n, d, r.x, d, r.y, NULL,
                                                    &rs, NULL, NULL));
                same_summary("weighted vs repeated summary", &ws, &rs, 1e-9);
                const size_t m = 6;
                float xq[12];
                for (size_t i = 0; i < m * d; i++)
                    xq[i] = 0.1f + 0.13f * (float)i;
                double a[4][12], b[4][12];
                for (int v = 0; v < 2; v++) {
                    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &model, h, s.n, d, s.x, d, s.y,
                                                          s.w, (nwattn_variance)v, m, xq, d, a[0],
                                                          a[1], a[2], d, a[3], d, NULL));
                    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &model, h, r.n, d, r.x, d, r.y,
                                                          NULL, (nwattn_variance)v, m, xq, d, b[0],
                                                          b[1], b[2], d, b[3], d, NULL));
                    for (int o = 0; o < 4; o++)
                        for (size_t i = 0; i < (o < 2 ? m : m * d); i++)
                            if (!(isnan(a[o][i]) && isnan(b[o][i])))
                                nt_close("weighted vs repeated inference", (size_t)o * 100 + i,
                                         a[o][i], b[o][i], 1e-9, 1e-9);
                }
                free_data(&s), free_data(&r);
            }
    nwattn_context_destroy(ctx);
}

/* With unit weights the fit is the oracle's direct long double estimate. */
static void test_fit_matches_oracle(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    for (size_t d = 1; d <= 2; d++) {
        data s = make_data(200 + d, 29, d);
        const float h[2] = {0.29f, 0.53f};
        float xq[14];
        for (size_t i = 0; i < 7 * d; i++)
            xq[i] = 0.05f + 0.11f * (float)i;
        for (size_t kk = 0; kk < 5; kk++)
            for (int degree = 0; degree < 2; degree++) {
                nwattn_regression model = {kernels[kk], (nwattn_degree)degree, NWATTN_EMPTY_NAN};
                double fit[7];
                unsigned char flags[7];
                NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &model, h, s.n, d, s.x, d, s.y, NULL,
                                                      NWATTN_VARIANCE_HOMOSCEDASTIC, 7, xq, d,
                                                      fit, NULL, NULL, d, NULL, d, flags));
                for (size_t i = 0; i < 7; i++) {
                    double want;
                    int ok = or_nw_direct(kernels[kk], (nwattn_degree)degree, s.n, d, 1, s.x, d,
                                          s.y, 1, h, xq + i * d, SIZE_MAX, &want);
                    if (!ok) {
                        assert_true(flags[i] != 0);
                        continue;
                    }
                    if (flags[i] == 0)
                        nt_close("fit vs oracle", kk * 100 + (size_t)degree * 10 + i, fit[i], want,
                                 1e-9, 1e-9);
                }
            }
        free_data(&s);
    }
    nwattn_context_destroy(ctx);
}

/* At a bandwidth far beyond the data the uniform kernel gives every point weight 1: the local
 * constant fit is the mean (se = s / sqrt n), local linear is ordinary least squares with its
 * textbook standard errors (and HC3 for the heteroscedastic variance). */
static void test_infinite_bandwidth_closed_forms(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 7);
    const size_t n = 31;
    const double nd = 31.0;
    float x[31], y[31];
    long double sx = 0, sy = 0;
    for (size_t j = 0; j < n; j++) {
        x[j] = (float)nwattn_rng_uniform(&rng);
        y[j] = (float)(1.0 + 2.0 * x[j] + 0.5 * nwattn_rng_normal(&rng) * (0.5 + x[j]));
        sx += x[j], sy += y[j];
    }
    const long double mx = sx / n, my = sy / n;
    long double sxx = 0, sxy = 0, syy = 0;
    for (size_t j = 0; j < n; j++) {
        sxx += (x[j] - mx) * (x[j] - mx);
        sxy += (x[j] - mx) * (y[j] - my);
        syy += (y[j] - my) * (y[j] - my);
    }
    const long double beta = sxy / sxx, alpha = my - beta * mx;
    long double rss = 0;
    for (size_t j = 0; j < n; j++) {
        long double r = y[j] - alpha - beta * x[j];
        rss += r * r;
    }
    const float h = 1e4f, q = 0.3f;
    nwattn_fit_summary s;
    double fit, se, deriv, dse;
    /* local constant: the mean */
    nwattn_regression lc = {NWATTN_KERNEL_UNIFORM, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NAN};
    NT_ASSERT_OK(ctx, nwattn_nw_summary(ctx, &lc, &h, n, 1, x, 1, y, NULL, &s, NULL, NULL));
    nt_close("mean: dof", 0, s.dof, 1.0, 1e-12, 1e-12);
    nt_close("mean: dof_resid", 0, s.dof_resid, nd - 1.0, 1e-10, 1e-12);
    nt_close("mean: sigma2", 0, s.sigma2, (double)(syy / (n - 1)), 1e-12, 1e-9);
    nt_close("mean: r2", 0, s.r2, 0.0, 1e-9, 0);
    nt_close("mean: cv", 0, s.cv, (double)(syy / n) * nd * nd / ((nd - 1.0) * (nd - 1.0)), 1e-12,
             1e-9);
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &lc, &h, n, 1, x, 1, y, NULL,
                                          NWATTN_VARIANCE_HOMOSCEDASTIC, 1, &q, 1, &fit, &se,
                                          &deriv, 1, &dse, 1, NULL));
    nt_close("mean: fit", 0, fit, (double)my, 1e-12, 1e-9);
    nt_close("mean: se", 0, se, sqrt((double)(syy / (n - 1)) / nd), 1e-12, 1e-9);
    nt_close("mean: derivative", 0, deriv, 0.0, 1e-12, 0);
    /* local linear: least squares */
    nwattn_regression ll = {NWATTN_KERNEL_UNIFORM, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    NT_ASSERT_OK(ctx, nwattn_nw_summary(ctx, &ll, &h, n, 1, x, 1, y, NULL, &s, NULL, NULL));
    nt_close("ols: dof", 0, s.dof, 2.0, 1e-9, 1e-9);
    nt_close("ols: dof_resid", 0, s.dof_resid, nd - 2.0, 1e-8, 1e-9);
    const double s2 = (double)(rss / (n - 2));
    nt_close("ols: sigma2", 0, s.sigma2, s2, 1e-12, 1e-7);
    nt_close("ols: r2", 0, s.r2, (double)(1 - rss / syy), 1e-9, 1e-7);
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &ll, &h, n, 1, x, 1, y, NULL,
                                          NWATTN_VARIANCE_HOMOSCEDASTIC, 1, &q, 1, &fit, &se,
                                          &deriv, 1, &dse, 1, NULL));
    nt_close("ols: fit", 0, fit, (double)(alpha + beta * q), 1e-9, 1e-7);
    nt_close("ols: slope", 0, deriv, (double)beta, 1e-9, 1e-7);
    nt_close("ols: se", 0, se, sqrt(s2 * (1.0 / nd + (double)((q - mx) * (q - mx) / sxx))), 1e-12,
             1e-6);
    nt_close("ols: slope se", 0, dse, sqrt(s2 / (double)sxx), 1e-12, 1e-6);
    /* HC3: sum_j l_j^2 r_j^2 / (1 - h_jj)^2, h_jj = 1/n + (x_j - mx)^2 / sxx */
    long double hc3 = 0, hc3_slope = 0;
    for (size_t j = 0; j < n; j++) {
        const long double lev = 1.0L / n + (x[j] - mx) * (x[j] - mx) / sxx;
        const long double l = 1.0L / n + (q - mx) * (x[j] - mx) / sxx, ls = (x[j] - mx) / sxx;
        const long double r = y[j] - alpha - beta * x[j];
        hc3 += l * l * r * r / ((1 - lev) * (1 - lev));
        hc3_slope += ls * ls * r * r / ((1 - lev) * (1 - lev));
    }
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &ll, &h, n, 1, x, 1, y, NULL,
                                          NWATTN_VARIANCE_HETEROSCEDASTIC, 1, &q, 1, &fit, &se,
                                          &deriv, 1, &dse, 1, NULL));
    nt_close("ols: HC3 se", 0, se, sqrt((double)hc3), 1e-12, 1e-6);
    nt_close("ols: HC3 slope se", 0, dse, sqrt((double)hc3_slope), 1e-12, 1e-6);
    nwattn_context_destroy(ctx);
}

/* Noise-free y = sin(x) + x2^2/2 on a fine grid: the local linear slope is cos(x) (and x2),
 * the local constant derivative is the derivative of its own fit (central differences). */
static void test_derivatives(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    const size_t g = 21, n = g * g;
    float *x = nt_alloc(2 * n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    for (size_t a = 0; a < g; a++)
        for (size_t b = 0; b < g; b++) {
            const size_t j = a * g + b;
            x[2 * j] = 3.0f * (float)a / (float)(g - 1);
            x[2 * j + 1] = (float)b / (float)(g - 1);
            y[j] = (float)(sin(x[2 * j]) + 0.5 * x[2 * j + 1] * x[2 * j + 1]);
        }
    const float h[2] = {0.12f, 0.08f}, q[6] = {1.0f, 0.5f, 1.7f, 0.4f, 2.2f, 0.6f};
    double fit[3], deriv[6];
    nwattn_regression ll = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &ll, h, n, 2, x, 2, y, NULL,
                                          NWATTN_VARIANCE_HOMOSCEDASTIC, 3, q, 2, fit, NULL, deriv,
                                          2, NULL, 2, NULL));
    for (size_t i = 0; i < 3; i++) {
        nt_close("slope vs cos", i, deriv[2 * i], cos(q[2 * i]), 1e-2, 0);
        nt_close("slope vs x2", i, deriv[2 * i + 1], q[2 * i + 1], 1e-2, 0);
    }
    /* the uniform kernel's derivative is 0 by definition: not compared */
    for (size_t kk = 0; kk < 4; kk++) {
        nwattn_regression lc = {kernels[kk], NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NAN};
        const float hc[2] = {kk >= 2 ? 0.43f : 0.2f, kk >= 2 ? 0.37f : 0.15f}; /* no edge on a point */
        NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &lc, hc, n, 2, x, 2, y, NULL,
                                              NWATTN_VARIANCE_HOMOSCEDASTIC, 3, q, 2, fit, NULL,
                                              deriv, 2, NULL, 2, NULL));
        for (size_t i = 0; i < 3; i++)
            for (size_t k = 0; k < 2; k++) {
                const float e = 1e-3f;
                float qp[2] = {q[2 * i], q[2 * i + 1]}, qm[2] = {q[2 * i], q[2 * i + 1]};
                qp[k] += e, qm[k] -= e;
                double fp, fm;
                NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &lc, hc, n, 2, x, 2, y, NULL,
                                                      NWATTN_VARIANCE_HOMOSCEDASTIC, 1, qp, 2, &fp,
                                                      NULL, NULL, 2, NULL, 2, NULL));
                NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &lc, hc, n, 2, x, 2, y, NULL,
                                                      NWATTN_VARIANCE_HOMOSCEDASTIC, 1, qm, 2, &fm,
                                                      NULL, NULL, 2, NULL, 2, NULL));
                const double fd = (fp - fm) / ((double)qp[k] - (double)qm[k]);
                nt_close("local constant derivative vs central difference", kk * 10 + i * 2 + k,
                         deriv[2 * i + k], fd, 2e-3, 2e-3);
            }
    }
    free(x), free(y);
    nwattn_context_destroy(ctx);
}

/* The same seed gives the same bands; the bootstrap variance of Rademacher draws is exactly
 * the heteroscedastic variance, so the pointwise band is fit ± 1.96 se up to Monte Carlo
 * error; the simultaneous band is wider than the pointwise one. */
static void test_bootstrap(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    data s = make_data(9, 60, 1);
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    const float h = 0.15f;
    enum { M = 9 };
    float xq[M];
    for (size_t i = 0; i < M; i++)
        xq[i] = 0.1f + 0.1f * (float)i;
    double b1[4][M], b2[4][M], b3[4][M], fit[M], se[M];
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, NULL, M, xq,
                                                1, 4000, 42, 0.95, b1[0], b1[1], b1[2], b1[3]));
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, NULL, M, xq,
                                                1, 4000, 42, 0.95, b2[0], b2[1], b2[2], b2[3]));
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, NULL, M, xq,
                                                1, 4000, 43, 0.95, b3[0], b3[1], b3[2], b3[3]));
    assert_memory_equal(b1, b2, sizeof b1);
    assert_true(memcmp(b1, b3, sizeof b1) != 0);
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &model, &h, s.n, 1, s.x, 1, s.y, NULL,
                                          NWATTN_VARIANCE_HETEROSCEDASTIC, M, xq, 1, fit, se, NULL,
                                          1, NULL, 1, NULL));
    for (size_t i = 0; i < M; i++) {
        nt_close("bootstrap lower vs fit - 1.96 se", i, b1[0][i], fit[i] - 1.96 * se[i],
                 0.1 * se[i], 0);
        nt_close("bootstrap upper vs fit + 1.96 se", i, b1[1][i], fit[i] + 1.96 * se[i],
                 0.1 * se[i], 0);
        assert_true(b1[2][i] < b1[0][i] && b1[3][i] > b1[1][i]);
        nt_close("simultaneous band centred", i, 0.5 * (b1[2][i] + b1[3][i]), fit[i], 1e-12,
                 1e-12);
    }
    free_data(&s);
    nwattn_context_destroy(ctx);
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The studentised bands: seed-reproducible; fit ± crit · se with nwattn_nw_inference's HC3 fit
 * and se; they contain the fit, the simultaneous one the pointwise one (sim_crit >= crit); a
 * query far from the data whose compact window is empty gets NaN. */
static void test_bootstrap_t(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    data s = make_data(9, 60, 1);
    enum { M = 6, B = 300 };
    float xq[M];
    for (size_t i = 0; i < M; i++)
        xq[i] = 0.1f + 0.15f * (float)i;
    for (int weighted = 0; weighted < 2; weighted++) {
        const float *w = weighted ? s.w : NULL;
        nwattn_regression model = {weighted ? NWATTN_KERNEL_EPANECHNIKOV : NWATTN_KERNEL_GAUSSIAN,
                                   NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
        const float h = weighted ? 0.3f : 0.15f;
        double b1[5][M], b2[5][M], b3[5][M], c1, c2, c3, fit[M], se[M];
        NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, w, M,
                                                      xq, 1, B, 42, 0.95, b1[0], b1[1], b1[2],
                                                      b1[3], b1[4], &c1));
        NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, w, M,
                                                      xq, 1, B, 42, 0.95, b2[0], b2[1], b2[2],
                                                      b2[3], b2[4], &c2));
        NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, s.n, 1, s.x, 1, s.y, w, M,
                                                      xq, 1, B, 43, 0.95, b3[0], b3[1], b3[2],
                                                      b3[3], b3[4], &c3));
        assert_memory_equal(b1, b2, sizeof b1);
        assert_true(c1 == c2);
        assert_true(memcmp(b1, b3, sizeof b1) != 0);
        NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &model, &h, s.n, 1, s.x, 1, s.y, w,
                                              NWATTN_VARIANCE_HETEROSCEDASTIC, M, xq, 1, fit, se,
                                              NULL, 1, NULL, 1, NULL));
        for (size_t i = 0; i < M; i++) {
            const double ci = b1[4][i];
            /* a percentile-t quantile near the normal's, larger with few residuals */
            assert_true(ci > 1.5 && ci < 4.0);
            assert_true(c1 >= ci);
            nt_close("t band lower", i, b1[0][i], fit[i] - ci * se[i], 1e-12, 1e-12);
            nt_close("t band upper", i, b1[1][i], fit[i] + ci * se[i], 1e-12, 1e-12);
            nt_close("t band sim_lower", i, b1[2][i], fit[i] - c1 * se[i], 1e-12, 1e-12);
            nt_close("t band sim_upper", i, b1[3][i], fit[i] + c1 * se[i], 1e-12, 1e-12);
            assert_true(b1[2][i] <= b1[0][i] && b1[0][i] <= fit[i] && fit[i] <= b1[1][i] &&
                        b1[1][i] <= b1[3][i]);
        }
    }
    /* an empty compact window: NaN bounds, crit 0, the other rows unchanged */
    nwattn_regression epan = {NWATTN_KERNEL_EPANECHNIKOV, NWATTN_LOCAL_CONSTANT,
                              NWATTN_EMPTY_NAN};
    const float h = 0.2f, q2[2] = {0.5f, 7.0f};
    double lo[2], hi[2], crit[2], lo1, hi1;
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &epan, &h, s.n, 1, s.x, 1, s.y, NULL, 2,
                                                  q2, 1, 50, 1, 0.9, lo, hi, NULL, NULL, crit,
                                                  NULL));
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &epan, &h, s.n, 1, s.x, 1, s.y, NULL, 1,
                                                  q2, 1, 50, 1, 0.9, &lo1, &hi1, NULL, NULL, NULL,
                                                  NULL));
    assert_true(isnan(lo[1]) && isnan(hi[1]) && crit[1] == 0.0);
    assert_true(lo[0] == lo1 && hi[0] == hi1);
    free_data(&s);
    nwattn_context_destroy(ctx);
}

/* Closed form: the uniform kernel at a bandwidth beyond the data (local constant) weighs every
 * point 1/n: the fit is the mean, L_jj = 1/n, e_j = (y_j - ybar) n/(n-1); replicate b's
 * deviation is mean(u_b) and its HC3 standard error sqrt(sum_j (u_bj - mean u_b)^2) / (n-1).
 * The test redraws the Rademacher signs from nwattn_rng and takes numpy's quantile. */
static void test_bootstrap_t_closed_form(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    data s = make_data(5, 12, 1);
    const size_t n = s.n;
    enum { B = 99 };
    nwattn_regression model = {NWATTN_KERNEL_UNIFORM, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NAN};
    const float h = 100.0f, q[2] = {0.25f, 0.75f};
    double lo[2], hi[2], slo[2], shi[2], crit[2], sim;
    NT_ASSERT_OK(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, n, 1, s.x, 1, s.y, NULL, 2, q,
                                                  1, B, 7, 0.8, lo, hi, slo, shi, crit, &sim));
    double ybar = 0.0, e[12], t[B];
    for (size_t j = 0; j < n; j++)
        ybar += (double)s.y[j] / (double)n;
    for (size_t j = 0; j < n; j++)
        e[j] = ((double)s.y[j] - ybar) * (double)n / (double)(n - 1);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 7);
    for (size_t b = 0; b < B; b++) {
        double u[12], ub = 0.0, ss = 0.0;
        for (size_t j = 0; j < n; j++) {
            u[j] = e[j] * ((nwattn_rng_next(&rng) >> 63) ? 1.0 : -1.0);
            ub += u[j] / (double)n;
        }
        for (size_t j = 0; j < n; j++)
            ss += (u[j] - ub) * (u[j] - ub);
        t[b] = fabs(ub) / (sqrt(ss) / (double)(n - 1));
    }
    qsort(t, B, sizeof(double), compare_doubles);
    const double pos = 0.8 * (B - 1);
    const size_t at = (size_t)pos;
    const double want = t[at] + (pos - (double)at) * (t[at + 1] - t[at]);
    double se = 0.0;
    for (size_t j = 0; j < n; j++)
        se += e[j] * e[j] / (double)(n * n);
    se = sqrt(se);
    for (size_t i = 0; i < 2; i++) {
        nt_close("closed-form crit", i, crit[i], want, 1e-9, 1e-9);
        nt_close("closed-form lower", i, lo[i], ybar - want * se, 1e-9, 1e-9);
        nt_close("closed-form upper", i, hi[i], ybar + want * se, 1e-9, 1e-9);
        nt_close("closed-form sim (equal rows)", i, shi[i], hi[i], 1e-12, 1e-12);
    }
    nt_close("closed-form sim_crit", 0, sim, want, 1e-9, 1e-9);
    free_data(&s);
    nwattn_context_destroy(ctx);
}

/* Density: direct sums, weights as repeats, integral 1 (Riemann sum), LSCV's integral term
 * and the likelihood against direct leave-one-out evaluations. */
static void test_kde(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    data s = make_data(11, 17, 1);
    data r = repeat_rows(&s);
    const float h = 0.21f;
    const size_t grid = 2001;
    float *q = nt_alloc(grid * sizeof(float));
    double *f = nt_alloc(grid * sizeof(double)), *fr = nt_alloc(grid * sizeof(double));
    for (size_t i = 0; i < grid; i++)
        q[i] = -2.0f + 5.0f * (float)i / (float)(grid - 1);
    NT_ASSERT_OK(ctx, nwattn_kde(ctx, &h, grid, s.n, 1, q, 1, s.x, 1, s.w, f));
    NT_ASSERT_OK(ctx, nwattn_kde(ctx, &h, grid, r.n, 1, q, 1, r.x, 1, NULL, fr));
    double integral = 0.0, integral_sq = 0.0;
    for (size_t i = 0; i < grid; i++) {
        nt_close("kde weighted vs repeated", i, f[i], fr[i], 1e-13, 1e-12);
        const double dx = 5.0 / (double)(grid - 1) * (i == 0 || i + 1 == grid ? 0.5 : 1.0);
        integral += f[i] * dx;
        integral_sq += f[i] * f[i] * dx;
    }
    nt_close("kde integral", 0, integral, 1.0, 1e-6, 0);
    /* direct: the weighted sum of normal densities */
    long double total = 0, direct = 0;
    for (size_t j = 0; j < s.n; j++) {
        long double u = ((long double)q[700] - s.x[j]) / h;
        direct += s.w[j] * expl(-0.5L * u * u) / (sqrtl(2.0L * 3.14159265358979323846L) * h);
        total += s.w[j];
    }
    nt_close("kde direct", 0, f[700], (double)(direct / total), 1e-14, 1e-12);
    double lscv[2], ll[2], lscv_r[2], ll_r[2];
    const float hs[2] = {h, 0.4f};
    NT_ASSERT_OK(ctx, nwattn_kde_cv(ctx, 2, hs, 1, s.n, 1, s.x, 1, s.w, lscv, ll));
    NT_ASSERT_OK(ctx, nwattn_kde_cv(ctx, 2, hs, 1, r.n, 1, r.x, 1, NULL, lscv_r, ll_r));
    for (size_t g = 0; g < 2; g++) {
        nt_close("lscv weighted vs repeated", g, lscv[g], lscv_r[g], 1e-12, 1e-10);
        nt_close("loglik weighted vs repeated", g, ll[g], ll_r[g], 1e-12, 1e-10);
    }
    /* LSCV = integral f^2 - 2 mean f_-i(x_i), by direct leave-one-out sums on the repeats */
    long double loo = 0, lsum = 0;
    for (size_t i = 0; i < r.n; i++) {
        long double sum = 0;
        for (size_t j = 0; j < r.n; j++)
            if (j != i) {
                long double u = ((long double)r.x[i] - r.x[j]) / h;
                sum += expl(-0.5L * u * u) / (sqrtl(2.0L * 3.14159265358979323846L) * h);
            }
        loo += sum / (r.n - 1);
        lsum += logl(sum / (r.n - 1));
    }
    nt_close("lscv vs numerical integral", 0, lscv[0],
             integral_sq - 2.0 * (double)(loo / r.n), 1e-6, 0);
    nt_close("loglik direct", 0, ll[0], (double)(lsum / r.n), 1e-12, 1e-10);
    free(q), free(f), free(fr);
    free_data(&s), free_data(&r);
    nwattn_context_destroy(ctx);
}

/* Bad inputs: a readable status, outputs untouched. */
static void test_bad_inputs(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    data s = make_data(3, 10, 1);
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    nwattn_regression bad_kernel = {(nwattn_kernel)77, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    const float h = 0.3f, bad_h = -1.0f, q = 0.5f;
    float w[10];
    nwattn_fit_summary sum;
    memset(&sum, 0x5a, sizeof sum);
    nwattn_fit_summary before = sum;
    double out[4] = {7, 7, 7, 7}, dens = 7;
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, NULL, &h, 10, 1, s.x, 1, s.y, NULL, &sum, NULL,
                                            NULL),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &bad_kernel, &h, 10, 1, s.x, 1, s.y, NULL, &sum,
                                            NULL, NULL),
                     NWATTN_ERR_BAD_ENUM);
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &bad_h, 10, 1, s.x, 1, s.y, NULL, &sum,
                                            NULL, NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL, NULL, NULL,
                                            NULL),
                     NWATTN_ERR_NULL_POINTER);
    for (size_t j = 0; j < 10; j++)
        w[j] = 1.0f;
    w[4] = -1.0f;
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &h, 10, 1, s.x, 1, s.y, w, &sum, NULL,
                                            NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    w[4] = NAN;
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &h, 10, 1, s.x, 1, s.y, w, &sum, NULL,
                                            NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    for (size_t j = 0; j < 10; j++)
        w[j] = j < 2 ? 1.0f : 0.0f;
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &h, 10, 1, s.x, 1, s.y, w, &sum, NULL,
                                            NULL),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_nw_summary(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                            (nwattn_fit_summary *)(void *)s.y, NULL, NULL),
                     NWATTN_ERR_ALIASING);
    assert_memory_equal(&sum, &before, sizeof sum);
    NT_ASSERT_STATUS(ctx, nwattn_nw_inference(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                              (nwattn_variance)5, 1, &q, 1, out, out + 1,
                                              out + 2, 1, out + 3, 1, NULL),
                     NWATTN_ERR_BAD_ENUM);
    NT_ASSERT_STATUS(ctx, nwattn_nw_inference(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                              NWATTN_VARIANCE_HOMOSCEDASTIC, 1, NULL, 1, out,
                                              out + 1, out + 2, 1, out + 3, 1, NULL),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_inference(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                              NWATTN_VARIANCE_HOMOSCEDASTIC, 2, &q, 1, out,
                                              out + 1, out + 2, 0, out + 3, 0, NULL),
                     NWATTN_ERR_BAD_LEADING_DIM);
    NT_ASSERT_STATUS(ctx, nwattn_nw_inference(ctx, &model, &h, SIZE_MAX / 2, 1, s.x, 1, s.y, NULL,
                                              NWATTN_VARIANCE_HOMOSCEDASTIC, 1, &q, 1, out,
                                              out + 1, out + 2, 1, out + 3, 1, NULL),
                     NWATTN_ERR_OVERFLOW);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL, 1,
                                                    &q, 1, 1, 0, 0.95, out, out + 1, out + 2,
                                                    out + 3),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL, 1,
                                                    &q, 1, 100, 0, 1.0, out, out + 1, out + 2,
                                                    out + 3),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL, 1,
                                                    &q, 1, SIZE_MAX / 4, 0, 0.9, out, out + 1,
                                                    out + 2, out + 3),
                     NWATTN_ERR_OVERFLOW);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                                      1, &q, 1, 1, 0, 0.95, out, out + 1, out + 2,
                                                      out + 3, NULL, NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                                      1, &q, 1, 100, 0, 0.0, out, out + 1,
                                                      out + 2, out + 3, NULL, NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                                      1, &q, 1, SIZE_MAX / 4, 0, 0.9, out,
                                                      out + 1, out + 2, out + 3, NULL, NULL),
                     NWATTN_ERR_OVERFLOW);
    NT_ASSERT_STATUS(ctx, nwattn_nw_bootstrap_t_bands(ctx, &model, &h, 10, 1, s.x, 1, s.y, NULL,
                                                      1, &q, 1, 50, 0, 0.9, out, out + 1,
                                                      out + 2, out + 3, out, NULL),
                     NWATTN_ERR_ALIASING);
    for (int o = 0; o < 4; o++)
        assert_true(out[o] == 7.0);
    NT_ASSERT_STATUS(ctx, nwattn_kde(ctx, &bad_h, 1, 10, 1, &q, 1, s.x, 1, NULL, &dens),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_kde(ctx, &h, 1, 10, 0, &q, 1, s.x, 1, NULL, &dens),
                     NWATTN_ERR_BAD_DIMENSION);
    for (size_t j = 0; j < 10; j++)
        w[j] = 0.0f;
    NT_ASSERT_STATUS(ctx, nwattn_kde(ctx, &h, 1, 10, 1, &q, 1, s.x, 1, w, &dens),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_kde(ctx, &h, 1, 10, 1, &q, 1, s.x, 1, NULL, NULL),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_kde_cv(ctx, 1, &h, 1, 1, 1, s.x, 1, NULL, &dens, NULL),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_kde_cv(ctx, 1, &bad_h, 1, 10, 1, s.x, 1, NULL, &dens, NULL),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(dens == 7.0);
    free_data(&s);
    nwattn_context_destroy(ctx);
}

/* Mixed data: exact matching (lambda = 0) gives the category means; an irrelevant column
 * (Aitchison-Aitken at (c-1)/c, Li-Racine at 1) leaves the continuous fit; integer weights
 * are repeated rows; a categorical density sums to 1 over the categories; bad inputs. */
static void test_mixed(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    enum { N = 24 };
    float x[N * 3], y[N], w[N], xr[3 * 3 * N], yr[3 * N];
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 31);
    size_t total = 0;
    for (size_t j = 0; j < N; j++) {
        x[3 * j] = (float)nwattn_rng_uniform(&rng);
        x[3 * j + 1] = (float)(j % 3);
        x[3 * j + 2] = (float)(j % 4);
        y[j] = (float)(x[3 * j] + (double)(j % 3) + 0.1 * nwattn_rng_normal(&rng));
        w[j] = (float)(j < 3 ? 1 : j % 3);
        for (size_t c = 0; c < (size_t)w[j]; c++, total++) {
            memcpy(xr + 3 * total, x + 3 * j, 3 * sizeof(float));
            yr[total] = y[j];
        }
    }
    const nwattn_var_type cuo[3] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED,
                                    NWATTN_VAR_ORDERED};
    const nwattn_var_type u[1] = {NWATTN_VAR_UNORDERED};
    /* exact matching on the unordered column alone: the category means */
    const float zero = 0.0f, q[3] = {0.0f, 1.0f, 2.0f};
    double fit[3];
    float xu[N];
    for (size_t j = 0; j < N; j++)
        xu[j] = x[3 * j + 1];
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, u, &zero, 3, N, 1, q, 1, xu, 1, y, NULL, fit));
    for (size_t c = 0; c < 3; c++) {
        double mean = 0.0;
        for (size_t j = c; j < N; j += 3)
            mean += y[j] / (N / 3.0);
        nt_close("category mean", c, fit[c], mean, 1e-12, 1e-12);
    }
    /* irrelevant categorical columns */
    const nwattn_var_type li[3] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED_LI_RACINE,
                                   NWATTN_VAR_ORDERED_LI_RACINE};
    const float h_aa[3] = {0.2f, 2.0f / 3.0f, 0.0f}, h_li[3] = {0.2f, 1.0f, 1.0f};
    double a[4], b[4], c4[4];
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, li, h_li, 4, N, 3, x, 3, x, 3, y, NULL, a));
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cuo, h_li, 4, N, 1, x, 3, x, 3, y, NULL, b));
    for (size_t i = 0; i < 4; i++)
        nt_close("Li-Racine lambda 1: irrelevant", i, a[i], b[i], 1e-12, 1e-12);
    const nwattn_var_type cu[2] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED};
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cu, h_aa, 4, N, 2, x, 3, x, 3, y, NULL, c4));
    for (size_t i = 0; i < 4; i++)
        nt_close("Aitchison-Aitken (c-1)/c: irrelevant", i, c4[i], b[i], 1e-6, 1e-6);
    /* weights = repeated rows */
    const float h[3] = {0.3f, 0.2f, 0.4f};
    double cvw, cvr, llw, llr, dw[4], dr[4];
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cuo, h, 4, N, 3, x, 3, x, 3, y, w, a));
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cuo, h, 4, total, 3, x, 3, xr, 3, yr, NULL, b));
    NT_ASSERT_OK(ctx, nwattn_mixed_cv(ctx, cuo, 1, h, 3, N, 3, x, 3, y, w, &cvw));
    NT_ASSERT_OK(ctx, nwattn_mixed_cv(ctx, cuo, 1, h, 3, total, 3, xr, 3, yr, NULL, &cvr));
    NT_ASSERT_OK(ctx, nwattn_mixed_kde(ctx, cuo, h, 4, N, 3, x, 3, x, 3, w, dw, &llw));
    NT_ASSERT_OK(ctx, nwattn_mixed_kde(ctx, cuo, h, 4, total, 3, x, 3, xr, 3, NULL, dr, &llr));
    for (size_t i = 0; i < 4; i++) {
        nt_close("mixed weighted vs repeated fit", i, a[i], b[i], 1e-12, 1e-12);
        nt_close("mixed weighted vs repeated density", i, dw[i], dr[i], 1e-12, 1e-12);
    }
    nt_close("mixed weighted vs repeated cv", 0, cvw, cvr, 1e-12, 1e-12);
    nt_close("mixed weighted vs repeated loglik", 0, llw, llr, 1e-12, 1e-12);
    /* an Aitchison-Aitken density sums to 1 over the categories */
    double dens[3];
    const float lam = 0.3f;
    NT_ASSERT_OK(ctx, nwattn_mixed_kde(ctx, u, &lam, 3, N, 1, q, 1, xu, 1, NULL, dens, NULL));
    nt_close("categorical density sums to 1", 0, dens[0] + dens[1] + dens[2], 1.0, 1e-12, 0);
    /* bad inputs, outputs untouched */
    double keep[4] = {7, 7, 7, 7};
    const nwattn_var_type bad_type[3] = {NWATTN_VAR_CONTINUOUS, (nwattn_var_type)9,
                                         NWATTN_VAR_ORDERED};
    const float bad_lambda[3] = {0.3f, 1.5f, 0.4f}, bad_h[3] = {-0.3f, 0.5f, 0.4f};
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict(ctx, bad_type, h, 4, N, 3, x, 3, x, 3, y, NULL,
                                               keep),
                     NWATTN_ERR_BAD_ENUM);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict(ctx, cuo, bad_lambda, 4, N, 3, x, 3, x, 3, y, NULL,
                                               keep),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict(ctx, cuo, bad_h, 4, N, 3, x, 3, x, 3, y, NULL,
                                               keep),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict(ctx, NULL, h, 4, N, 3, x, 3, x, 3, y, NULL, keep),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_cv(ctx, cuo, 1, h, 3, 1, 3, x, 3, y, NULL, keep),
                     NWATTN_ERR_DEGENERATE_DATA);
    float half[3] = {x[0], 0.5f, x[2]};
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict(ctx, cuo, h, 1, N, 3, half, 3, x, 3, y, NULL, keep),
                     NWATTN_ERR_BAD_PARAMETER);
    float one_level[N];
    for (size_t j = 0; j < N; j++)
        one_level[j] = 2.0f;
    NT_ASSERT_STATUS(ctx, nwattn_mixed_kde(ctx, u, &lam, 3, N, 1, q, 1, one_level, 1, NULL, keep,
                                           NULL),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_kde(ctx, cuo, h, SIZE_MAX / 4, N, 3, x, 3, x, 3, NULL,
                                           keep, NULL),
                     NWATTN_ERR_OVERFLOW);
    for (size_t i = 0; i < 4; i++)
        assert_true(keep[i] == 7.0);
    nwattn_context_destroy(ctx);
}


/* ---- Mixed data, local linear ----------------------------------------------------------------
 * The header's kernels and a direct weighted least-squares solve (long double, Gaussian
 * elimination with partial pivoting), written here independently of the library. */
static double mixed_column_kernel(nwattn_var_type type, double h, double levels, double a,
                                  double b) {
    const double dist = fabs(a - b);
    switch (type) {
    case NWATTN_VAR_CONTINUOUS:
        return exp(-0.5 * (a - b) * (a - b) / (h * h)) / (h * 2.5066282746310002);
    case NWATTN_VAR_UNORDERED:
        return dist == 0.0 ? 1.0 - h : h / (levels - 1.0);
    case NWATTN_VAR_ORDERED:
        return dist == 0.0 ? 1.0 - h : 0.5 * (1.0 - h) * pow(h, dist);
    case NWATTN_VAR_UNORDERED_LI_RACINE:
        return dist == 0.0 ? 1.0 : h;
    case NWATTN_VAR_ORDERED_LI_RACINE:
        return pow(h, dist);
    }
    return 0.0;
}

enum { ML_MAXP = 5 };

/* The weighted least-squares intercept at q with regressors (1, x_c - q_c) for the columns c
 * with slope[c] set; point skip with one unit of weight out. Returns 0 if the system is
 * singular (a zero pivot). */
static int mixed_wls(const nwattn_var_type *types, const double *levels, const int *slope,
                     const float *h, size_t n, size_t d, const float *x, const float *y,
                     const float *w, const float *q, size_t skip, double *fit) {
    long double a[ML_MAXP][ML_MAXP + 1] = {{0}};
    size_t cols[ML_MAXP - 1], p = 1;
    for (size_t c = 0; c < d; c++)
        if (slope[c])
            cols[p++ - 1] = c;
    for (size_t j = 0; j < n; j++) {
        double wj = w != NULL ? (double)w[j] : 1.0;
        if (j == skip)
            wj -= fmin(1.0, wj);
        if (!(wj > 0.0))
            continue;
        double k = wj;
        for (size_t c = 0; c < d; c++)
            k *= mixed_column_kernel(types[c], h[c], levels[c], q[c], x[j * d + c]);
        long double z[ML_MAXP];
        z[0] = 1.0L;
        for (size_t e = 1; e < p; e++)
            z[e] = (long double)x[j * d + cols[e - 1]] - (long double)q[cols[e - 1]];
        for (size_t r = 0; r < p; r++) {
            for (size_t e = 0; e < p; e++)
                a[r][e] += (long double)k * z[r] * z[e];
            a[r][p] += (long double)k * z[r] * (long double)y[j];
        }
    }
    for (size_t c = 0; c < p; c++) {
        size_t piv = c;
        for (size_t r = c + 1; r < p; r++)
            if (fabsl(a[r][c]) > fabsl(a[piv][c]))
                piv = r;
        if (a[piv][c] == 0.0L)
            return 0;
        for (size_t e = 0; e <= p; e++) {
            long double t = a[c][e];
            a[c][e] = a[piv][e];
            a[piv][e] = t;
        }
        for (size_t r = 0; r < p; r++)
            if (r != c) {
                const long double f = a[r][c] / a[c][c];
                for (size_t e = c; e <= p; e++)
                    a[r][e] -= f * a[c][e];
            }
    }
    *fit = (double)(a[0][p] / a[0][0]);
    return 1;
}

typedef struct mixed_data {
    size_t n;
    float x[40 * 3], y[40], w[40];
    double levels[3];
} mixed_data;

/* Columns c (uniform in [0, 2) on multiples of 1/64), u = j % 3, o = (5j) % 4 (every category
 * several times); y = sin 2c + 0.5 [u == 1] + 0.2 o + noise; integer weights 0..2. */
static void make_mixed(mixed_data *s, uint64_t seed) {
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    s->n = 40;
    for (size_t j = 0; j < s->n; j++) {
        s->x[3 * j] = (float)(nwattn_rng_next(&rng) % 128) / 64.0f;
        s->x[3 * j + 1] = (float)(j % 3);
        s->x[3 * j + 2] = (float)((5 * j) % 4);
        s->y[j] = (float)(sin(2.0 * s->x[3 * j]) + 0.5 * (j % 3 == 1) + 0.2 * s->x[3 * j + 2] +
                          0.3 * nwattn_rng_normal(&rng));
        s->w[j] = (float)(j < 3 ? 1 : j % 3);
    }
    s->levels[0] = 0, s->levels[1] = 3, s->levels[2] = 4;
}

/* np's local linear (slopes in the continuous columns) and statsmodels' (slopes in every
 * column) against the direct solve: fits and leave-one-out CV, with and without weights,
 * with both kernel families; the local constant estimator is nwattn_mixed_predict/_cv bit for
 * bit. */
static void test_mixed_local_linear_direct(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    mixed_data s;
    make_mixed(&s, 41);
    const size_t n = s.n, d = 3, m = 7;
    float xq[7 * 3];
    for (size_t i = 0; i < m; i++) {
        xq[3 * i] = 0.1f + 0.29f * (float)i;
        xq[3 * i + 1] = (float)(i % 3);
        xq[3 * i + 2] = (float)((i + 1) % 4);
    }
    const nwattn_var_type sets[2][3] = {
        {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED, NWATTN_VAR_ORDERED},
        {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED_LI_RACINE, NWATTN_VAR_ORDERED_LI_RACINE}};
    const float h[2][3] = {{0.3f, 0.2f, 0.4f}, {0.25f, 0.35f, 0.5f}};
    for (int t = 0; t < 2; t++)
        for (int est = 0; est < 3; est++)
            for (int weighted = 0; weighted < 2; weighted++) {
                const nwattn_mixed_estimator e = (nwattn_mixed_estimator)est;
                const int slope[3] = {est != 0, est == 2, est == 2};
                const float *w = weighted ? s.w : NULL;
                double fit[7], cv, want = 0.0;
                unsigned char flags[7];
                size_t n_flagged = 99, cv_flagged = 99;
                NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, sets[t], e, h[t], m, n, d,
                                                                 xq, d, s.x, d, s.y, w, fit,
                                                                 flags, &n_flagged));
                assert_int_equal(n_flagged, 0);
                for (size_t i = 0; i < m; i++) {
                    assert_int_equal(flags[i], 0);
                    assert_true(mixed_wls(sets[t], s.levels, slope, h[t], n, d, s.x, s.y, w,
                                          xq + 3 * i, SIZE_MAX, &want));
                    nt_close("mixed local linear fit vs direct", (size_t)(100 * est + i), fit[i],
                             want, 1e-12, 1e-11);
                }
                NT_ASSERT_OK(ctx, nwattn_mixed_cv_estimator(ctx, sets[t], e, 1, h[t], d, n, d,
                                                            s.x, d, s.y, w, &cv, &cv_flagged));
                assert_int_equal(cv_flagged, 0);
                double sum = 0.0, total = 0.0;
                for (size_t i = 0; i < n; i++) {
                    const double wi = w != NULL ? (double)w[i] : 1.0;
                    if (!(wi > 0.0))
                        continue;
                    assert_true(mixed_wls(sets[t], s.levels, slope, h[t], n, d, s.x, s.y, w,
                                          s.x + 3 * i, i, &want));
                    sum += wi * ((double)s.y[i] - want) * ((double)s.y[i] - want);
                    total += wi;
                }
                nt_close("mixed local linear cv vs direct", (size_t)est, cv, sum / total, 1e-12,
                         1e-11);
                if (est == 0) { /* the local constant functions, bit for bit */
                    double old_fit[7], old_cv;
                    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, sets[t], h[t], m, n, d, xq, d,
                                                           s.x, d, s.y, w, old_fit));
                    NT_ASSERT_OK(ctx, nwattn_mixed_cv(ctx, sets[t], 1, h[t], d, n, d, s.x, d,
                                                      s.y, w, &old_cv));
                    assert_memory_equal(fit, old_fit, sizeof fit);
                    assert_memory_equal(&cv, &old_cv, sizeof cv);
                }
            }
    nwattn_context_destroy(ctx);
}

/* Closed forms: local linear reproduces y affine in the columns with a slope (np: the
 * continuous one; statsmodels: every column) at any bandwidths; the other does not. With
 * every column continuous both are the continuous local linear Gaussian fit and its CV
 * (nwattn_nw_inference's fit and nwattn_nw_cv on the reference engine). */
static void test_mixed_local_linear_closed_forms(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_REFERENCE);
    mixed_data s;
    make_mixed(&s, 43);
    const size_t n = s.n, d = 3;
    const nwattn_var_type cuo[3] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED,
                                    NWATTN_VAR_ORDERED};
    const float h[3] = {0.3f, 0.2f, 0.4f};
    float y_c[40], y_all[40]; /* exact in float: c on multiples of 1/64 */
    for (size_t j = 0; j < n; j++) {
        y_c[j] = 2.0f + 3.0f * s.x[3 * j];
        y_all[j] = y_c[j] - 0.25f * s.x[3 * j + 1] + 0.5f * s.x[3 * j + 2];
    }
    const float q[3] = {0.7f, 2.0f, 1.0f};
    double fit, cv;
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, h, 1, n,
                                                     d, q, d, s.x, d, y_c, NULL, &fit, NULL,
                                                     NULL));
    nt_close("np local linear reproduces a + b c", 0, fit, 2.0 + 3.0 * q[0], 1e-12, 1e-12);
    NT_ASSERT_OK(ctx, nwattn_mixed_cv_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, 1, h, d, n,
                                                d, s.x, d, y_c, NULL, &cv, NULL));
    nt_close("np local linear cv of a + b c", 0, cv, 0.0, 1e-20, 0);
    const double want_all = 2.0 + 3.0 * q[0] - 0.25 * q[1] + 0.5 * q[2];
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR_ALL, h,
                                                     1, n, d, q, d, s.x, d, y_all, NULL, &fit,
                                                     NULL, NULL));
    nt_close("statsmodels' local linear reproduces a + b'x", 0, fit, want_all, 1e-12, 1e-12);
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, h, 1, n,
                                                     d, q, d, s.x, d, y_all, NULL, &fit, NULL,
                                                     NULL));
    assert_true(fabs(fit - want_all) > 1e-3); /* np's smooths the codes instead */
    /* every column continuous */
    enum { M = 6 };
    const nwattn_var_type cc[2] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_CONTINUOUS};
    float x2[40 * 2], xq[M * 2];
    for (size_t j = 0; j < n; j++)
        x2[2 * j] = s.x[3 * j], x2[2 * j + 1] = 0.5f * s.x[3 * j + 2] + 0.01f * (float)(j % 7);
    for (size_t i = 0; i < M; i++)
        xq[2 * i] = 0.2f + 0.3f * (float)i, xq[2 * i + 1] = 0.1f * (float)i;
    const float h2[2] = {0.35f, 0.6f};
    const nwattn_regression ll = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_LINEAR, NWATTN_EMPTY_NAN};
    double want[M], got[M], want_cv, got_cv;
    NT_ASSERT_OK(ctx, nwattn_nw_inference(ctx, &ll, h2, n, 2, x2, 2, s.y, s.w,
                                          NWATTN_VARIANCE_HOMOSCEDASTIC, M, xq, 2, want, NULL,
                                          NULL, 2, NULL, 2, NULL));
    NT_ASSERT_OK(ctx, nwattn_nw_cv(ctx, &ll, n, 2, 1, x2, 2, s.y, 1, 1, h2, 2, &want_cv, NULL, 2,
                                   NULL));
    for (int est = 1; est <= 2; est++) {
        NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cc, (nwattn_mixed_estimator)est, h2,
                                                         M, n, 2, xq, 2, x2, 2, s.y, s.w, got,
                                                         NULL, NULL));
        for (size_t i = 0; i < M; i++)
            nt_close("all continuous: the continuous local linear fit", i, got[i], want[i], 1e-12,
                     1e-12);
        NT_ASSERT_OK(ctx, nwattn_mixed_cv_estimator(ctx, cc, (nwattn_mixed_estimator)est, 1, h2, 2,
                                                    n, 2, x2, 2, s.y, NULL, &got_cv, NULL));
        nt_close("all continuous: nwattn_nw_cv", (size_t)est, got_cv, want_cv, 0, 1e-12);
    }
    nwattn_context_destroy(ctx);
}

/* The singular rule is the continuous data's (nw_finish_row): statsmodels' design with exact
 * matching on the unordered column (lambda = 0: the code's column of differences is 0) and np's
 * with a continuous column that takes one value fall back to the local constant fit bit for bit,
 * flagged; at h = 1e5 x the range the fit is the least-squares line, not flagged (the
 * equilibrated test); an empty row is NaN and flagged empty. Then bad inputs. */
static void test_mixed_local_linear_fallback(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    mixed_data s;
    make_mixed(&s, 47);
    const size_t n = s.n, d = 3, m = 4;
    const nwattn_var_type cuo[3] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED,
                                    NWATTN_VAR_ORDERED};
    const float h0[3] = {0.3f, 0.0f, 0.4f};
    double lc[4], ll[4];
    unsigned char flags[4];
    size_t n_flagged = 0, cv_flagged = 0;
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cuo, h0, m, n, d, s.x, d, s.x, d, s.y, NULL, lc));
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR_ALL, h0,
                                                     m, n, d, s.x, d, s.x, d, s.y, NULL, ll,
                                                     flags, &n_flagged));
    assert_memory_equal(lc, ll, sizeof lc);
    assert_int_equal(n_flagged, m);
    for (size_t i = 0; i < m; i++)
        assert_int_equal(flags[i], NWATTN_ROW_SINGULAR);
    double cv_lc, cv_ll;
    NT_ASSERT_OK(ctx, nwattn_mixed_cv(ctx, cuo, 1, h0, d, n, d, s.x, d, s.y, NULL, &cv_lc));
    NT_ASSERT_OK(ctx, nwattn_mixed_cv_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR_ALL, 1, h0, d,
                                                n, d, s.x, d, s.y, NULL, &cv_ll, &cv_flagged));
    assert_memory_equal(&cv_lc, &cv_ll, sizeof cv_lc);
    assert_int_equal(cv_flagged, n);
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, h0, m, n,
                                                     d, s.x, d, s.x, d, s.y, NULL, ll, flags,
                                                     &n_flagged));
    assert_int_equal(n_flagged, 0); /* np's design has no code column */
    /* a continuous column with one value */
    float xk[40 * 3];
    memcpy(xk, s.x, sizeof xk);
    for (size_t j = 0; j < n; j++)
        xk[3 * j] = 1.0f;
    const float h[3] = {0.3f, 0.2f, 0.4f};
    NT_ASSERT_OK(ctx, nwattn_mixed_predict(ctx, cuo, h, m, n, d, xk, d, xk, d, s.y, NULL, lc));
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, h, m, n,
                                                     d, xk, d, xk, d, s.y, NULL, ll, flags,
                                                     &n_flagged));
    assert_memory_equal(lc, ll, sizeof lc);
    assert_int_equal(n_flagged, m);
    /* huge bandwidths: the least-squares line in c (Li-Racine lambda = 1: codes irrelevant) */
    const nwattn_var_type cUO[3] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED_LI_RACINE,
                                    NWATTN_VAR_ORDERED_LI_RACINE};
    const float huge[3] = {2e5f, 1.0f, 1.0f};
    long double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t j = 0; j < n; j++)
        sx += s.x[3 * j], sy += s.y[j];
    const long double mxc = sx / n, my = sy / n;
    for (size_t j = 0; j < n; j++) {
        sxx += (s.x[3 * j] - mxc) * (s.x[3 * j] - mxc);
        sxy += (s.x[3 * j] - mxc) * (s.y[j] - my);
    }
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, cUO, NWATTN_MIXED_LOCAL_LINEAR, huge, m,
                                                     n, d, s.x, d, s.x, d, s.y, NULL, ll, flags,
                                                     &n_flagged));
    assert_int_equal(n_flagged, 0);
    for (size_t i = 0; i < m; i++)
        nt_close("h = 1e5 x range: least squares", i, ll[i],
                 (double)(my + sxy / sxx * (s.x[3 * i] - mxc)), 1e-9, 1e-9);
    /* an empty row: exact matching on a category no point has */
    const nwattn_var_type u1[2] = {NWATTN_VAR_CONTINUOUS, NWATTN_VAR_UNORDERED};
    const float hu[2] = {0.3f, 0.0f}, qe[2] = {0.5f, 7.0f};
    NT_ASSERT_OK(ctx, nwattn_mixed_predict_estimator(ctx, u1, NWATTN_MIXED_LOCAL_LINEAR, hu, 1, n,
                                                     d - 1, qe, 2, s.x, d, s.y, NULL, ll, flags,
                                                     &n_flagged));
    assert_true(isnan(ll[0]));
    assert_int_equal(flags[0], NWATTN_ROW_EMPTY);
    assert_int_equal(n_flagged, 1);
    /* bad inputs: outputs untouched */
    double keep[4] = {7, 7, 7, 7};
    unsigned char keep_flags[4] = {9, 9, 9, 9};
    size_t keep_count = 9, keep_cv_flagged[2] = {9, 9};
    const int bad_estimators[3] = {3, -1, 1 << 30};
    for (int b = 0; b < 3; b++) {
        NT_ASSERT_STATUS(ctx, nwattn_mixed_predict_estimator(
                                  ctx, cuo, (nwattn_mixed_estimator)bad_estimators[b], h, m, n, d,
                                  s.x, d, s.x, d, s.y, NULL, keep, keep_flags, &keep_count),
                         NWATTN_ERR_BAD_ENUM);
        NT_ASSERT_STATUS(ctx, nwattn_mixed_cv_estimator(
                                  ctx, cuo, (nwattn_mixed_estimator)bad_estimators[b], 1, h, d, n,
                                  d, s.x, d, s.y, NULL, keep, keep_cv_flagged),
                         NWATTN_ERR_BAD_ENUM);
    }
    NT_ASSERT_STATUS(ctx, nwattn_mixed_predict_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, h, m,
                                                         n, d, s.x, d, s.x, d, s.y, NULL, keep,
                                                         (unsigned char *)keep, &keep_count),
                     NWATTN_ERR_ALIASING);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_cv_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, 1, h, d,
                                                    n, d, s.x, d, s.y, NULL, keep,
                                                    (size_t *)(void *)keep),
                     NWATTN_ERR_ALIASING);
    NT_ASSERT_STATUS(ctx, nwattn_mixed_cv_estimator(ctx, cuo, NWATTN_MIXED_LOCAL_LINEAR, 1, h, d,
                                                    1, d, s.x, d, s.y, NULL, keep,
                                                    keep_cv_flagged),
                     NWATTN_ERR_DEGENERATE_DATA);
    for (size_t i = 0; i < 4; i++)
        assert_true(keep[i] == 7.0 && keep_flags[i] == 9);
    assert_true(keep_count == 9 && keep_cv_flagged[0] == 9 && keep_cv_flagged[1] == 9);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer_weights_are_repeated_rows),
        cmocka_unit_test(test_fit_matches_oracle),
        cmocka_unit_test(test_infinite_bandwidth_closed_forms),
        cmocka_unit_test(test_derivatives),
        cmocka_unit_test(test_bootstrap),
        cmocka_unit_test(test_bootstrap_t),
        cmocka_unit_test(test_bootstrap_t_closed_form),
        cmocka_unit_test(test_kde),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_mixed_local_linear_direct),
        cmocka_unit_test(test_mixed_local_linear_closed_forms),
        cmocka_unit_test(test_mixed_local_linear_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
