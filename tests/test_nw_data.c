/* Random numbers (golden values from SplitMix64's published test vector and an independent
 * Python implementation), the seeds' data sets, rules of thumb, weight diagnostics. */
#include "nw_test.h"

static void test_rng_golden(void **state) {
    (void)state;
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 1234567); /* SplitMix64's reference outputs for this seed */
    const uint64_t want[5] = {6457827717110365317u, 3203168211198807973u, 9817491932198370423u,
                              4593380528125082431u, 16408922859458223821u};
    for (int i = 0; i < 5; i++)
        assert_true(nwattn_rng_next(&rng) == want[i]);
    nwattn_rng_seed(&rng, 0);
    assert_true(nwattn_rng_next(&rng) == 0xe220a8397b1dcdafu);
    /* uniforms and normals of seed 42, from a Python implementation with math.log */
    nwattn_rng_seed(&rng, 42);
    const double uniforms[3] = {0.7415648787718233, 0.1599103928769201, 0.27860113025513866};
    for (int i = 0; i < 3; i++)
        assert_true(nwattn_rng_uniform(&rng) == uniforms[i]);
    nwattn_rng_seed(&rng, 42);
    const double normals[5] = {0.49295065581737485, -1.2810773478777024, -0.6018779810957331,
                               -1.5423606818352653, -1.4515103855695575};
    for (int i = 0; i < 5; i++)
        nt_close("normal", (size_t)i, nwattn_rng_normal(&rng), normals[i], 0, 4e-16);
    /* NULL is harmless */
    nwattn_rng_seed(NULL, 1);
    assert_true(nwattn_rng_next(NULL) == 0 && nwattn_rng_uniform(NULL) == 0.0 &&
                nwattn_rng_normal(NULL) == 0.0);
}

/* The polar method against the same method with libm's log, and the moments of many draws. */
static void test_rng_normal_distribution(void **state) {
    (void)state;
    nwattn_rng a, b;
    nwattn_rng_seed(&a, 9);
    nwattn_rng_seed(&b, 9);
    const size_t count = 200000;
    double sum = 0.0, sum2 = 0.0, sum4 = 0.0, umin = 1.0, umax = 0.0;
    for (size_t i = 0; i < count; i++) {
        double z = nwattn_rng_normal(&a), want;
        for (;;) {
            double u = 2.0 * nwattn_rng_uniform(&b) - 1.0, v = 2.0 * nwattn_rng_uniform(&b) - 1.0;
            double s = u * u + v * v;
            if (s > 0.0 && s < 1.0) {
                want = u * sqrt(-2.0 * log(s) / s);
                break;
            }
        }
        if (!(fabs(z - want) <= 1e-15 * fabs(want) + 1e-300)) /* ~4 ulp: two logs */
            fail_msg("normal %zu: %.17g vs %.17g", i, z, want);
        sum += z, sum2 += z * z, sum4 += z * z * z * z;
        double u = nwattn_rng_uniform(&a);
        (void)nwattn_rng_uniform(&b);
        umin = fmin(umin, u), umax = fmax(umax, u);
    }
    const double mean = sum / (double)count, var = sum2 / (double)count - mean * mean;
    assert_true(fabs(mean) < 0.01);       /* 4.5 standard errors */
    assert_true(fabs(var - 1.0) < 0.015); /* 4.7 standard errors */
    assert_true(fabs(sum4 / (double)count - 3.0) < 0.1);
    assert_true(umin >= 0.0 && umin < 1e-4 && umax < 1.0 && umax > 1.0 - 1e-4);
}

static void test_datasets(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    const size_t n = 20000;
    float *x = nt_alloc(n * sizeof(float)), *y = nt_alloc(n * sizeof(float));
    float *x2 = nt_alloc(n * sizeof(float)), *y2 = nt_alloc(n * sizeof(float));
    float *f = nt_alloc(n * sizeof(float));
    for (int which = 0; which < 2; which++) {
        const nwattn_dataset set = which ? NWATTN_DATASET_SINE : NWATTN_DATASET_D2L;
        nwattn_rng rng, copy;
        nwattn_rng_seed(&rng, 77);
        copy = rng;
        NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, set, &rng, n, x, y));
        NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, set, &copy, n, x2, y2));
        assert_memory_equal(x, x2, n * sizeof(float)); /* deterministic */
        assert_memory_equal(y, y2, n * sizeof(float));
        assert_true(rng.state == copy.state);
        NT_ASSERT_OK(ctx, nwattn_dataset_truth(ctx, set, n, x, f));
        const double range = which ? 10.0 : 5.0, sd = which ? 0.2 : 0.5;
        double s2 = 0.0;
        size_t descents = 0;
        for (size_t i = 0; i < n; i++) {
            assert_true(x[i] >= 0.0f && x[i] < (float)range);
            const double want =
                which ? sin((double)x[i]) : 2.0 * sin((double)x[i]) + pow((double)x[i], 0.8);
            nt_close("truth", i, f[i], want, 1e-6, 1e-6);
            s2 += ((double)y[i] - want) * ((double)y[i] - want);
            descents += i > 0 && x[i] < x[i - 1];
        }
        assert_true(fabs(sqrt(s2 / (double)n) / sd - 1.0) < 0.03);
        if (which)
            assert_true(descents > n / 4); /* seed 1 leaves x unsorted */
        else
            assert_int_equal(descents, 0); /* d2l sorts it */
    }
    /* the draw order for the sine set: n uniforms, then n normals */
    nwattn_rng rng, mine;
    nwattn_rng_seed(&rng, 5);
    nwattn_rng_seed(&mine, 5);
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_SINE, &rng, 100, x, y));
    for (size_t i = 0; i < 100; i++)
        x2[i] = (float)(10.0 * nwattn_rng_uniform(&mine));
    for (size_t i = 0; i < 100; i++) {
        assert_true(x2[i] == x[i]);
        assert_true((float)(sin((double)x[i]) + 0.2 * nwattn_rng_normal(&mine)) == y[i]);
    }
    /* n = 0 and n = 1 */
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 0, x, y));
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 1, x, y));
    /* 2 sin x + x^0.8 needs x >= 0 */
    const float negative = -1.0f;
    float out = 7.0f;
    NT_ASSERT_STATUS(ctx, nwattn_dataset_truth(ctx, NWATTN_DATASET_D2L, 1, &negative, &out),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(out == 7.0f);
    NT_ASSERT_OK(ctx, nwattn_dataset_truth(ctx, NWATTN_DATASET_SINE, 1, &negative, &out));
    NT_ASSERT_STATUS(ctx, nwattn_dataset_truth(ctx, (nwattn_dataset)7, 1, &negative, &out),
                     NWATTN_ERR_BAD_ENUM);
    NT_ASSERT_STATUS(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, NULL, 3, x, y),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 3, x, x + 1),
                     NWATTN_ERR_ALIASING);
    free(x), free(y), free(x2), free(y2), free(f);
    nwattn_context_destroy(ctx);
}

/* Quantile by linear interpolation of sorted values (numpy's default). */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_rules_of_thumb(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 3);
    const size_t n = 101, d = 2, ld = 3;
    float *x = nt_matrix(&rng, n, d, ld, 0, 1);
    for (size_t i = 0; i < n; i++) /* a heavy tail in column 1: the IQR term wins there */
        x[i * ld + 1] = (float)pow(nwattn_rng_uniform(&rng), 4.0) * 10.0f;
    double *col = nt_alloc(n * sizeof(double));
    for (size_t k = 0; k < d; k++) {
        double mean = 0.0, ss = 0.0;
        for (size_t i = 0; i < n; i++)
            mean += (col[i] = x[i * ld + k]);
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            ss += (col[i] - mean) * (col[i] - mean);
        const double sd = sqrt(ss / (double)(n - 1));
        qsort(col, n, sizeof(double), cmp_double);
        const double iqr = col[75] - col[25]; /* (n - 1) p is an integer for n = 101 */
        const double rate = pow((double)n, -1.0 / 6.0);
        const double want[3] = {0.9 * fmin(sd, iqr / 1.34) * rate,
                                1.06 * fmin(sd, iqr / 1.34) * rate, 1.06 * sd * rate};
        for (int rule = 0; rule < 3; rule++) {
            float h[2];
            NT_ASSERT_OK(ctx, nwattn_bandwidth_rule_of_thumb(ctx, (nwattn_bandwidth_rule)rule, n, d,
                                                             x, ld, h));
            nt_close("rule of thumb", (size_t)rule, h[k], want[rule], 0, 1e-6);
        }
        if (k == 1)
            assert_true(iqr / 1.34 < sd);
    }
    /* IQR == 0 (most values tie): the standard deviation alone */
    float ties[9] = {1, 1, 1, 1, 1, 1, 1, 2, 9}, h;
    NT_ASSERT_OK(ctx,
                 nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_SILVERMAN, 9, 1, ties, 1, &h));
    double m = 18.0 / 9.0, ss = 0.0;
    for (int i = 0; i < 9; i++)
        ss += ((double)ties[i] - m) * ((double)ties[i] - m);
    nt_close("iqr 0", 0, h, 0.9 * sqrt(ss / 8.0) * pow(9.0, -0.2), 0, 1e-6);
    /* degenerate data */
    h = 5.0f;
    NT_ASSERT_STATUS(ctx, nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_SCOTT, 1, 1, ties, 1, &h),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_SCOTT, 7, 1, ties, 1, &h),
                     NWATTN_ERR_DEGENERATE_DATA);
    assert_true(h == 5.0f);
    NT_ASSERT_STATUS(
        ctx, nwattn_bandwidth_rule_of_thumb(ctx, (nwattn_bandwidth_rule)3, 9, 1, ties, 1, &h),
        NWATTN_ERR_BAD_ENUM);
    free(x), free(col);
    nwattn_context_destroy(ctx);
}

static void test_diagnostics(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    const size_t n = 8, ldw = 10;
    float w[5 * 10];
    for (size_t j = 0; j < ldw; j++) {
        w[0 * ldw + j] = 0.125f;               /* uniform */
        w[1 * ldw + j] = j == 3 ? 1.0f : 0.0f; /* one-hot */
        w[2 * ldw + j] = 0.0f;                 /* all zero (a fully masked row) */
        w[3 * ldw + j] = (float)(j + 1);       /* unnormalised */
        w[4 * ldw + j] = j < 2 ? 0.5f : 0.0f;  /* two neighbours */
    }
    w[0 * ldw + 8] = w[0 * ldw + 9] = -1.0f; /* padding is not read */
    float ent[5], neff[5];
    NT_ASSERT_OK(ctx, nwattn_weights_diagnostics(ctx, 5, n, w, ldw, ent, neff));
    nt_close("uniform entropy", 0, ent[0], log(8.0), 1e-6, 0);
    nt_close("uniform n_eff", 0, neff[0], 8.0, 1e-5, 0);
    nt_close("one-hot", 1, ent[1], 0.0, 0, 0);
    nt_close("one-hot", 1, neff[1], 1.0, 0, 0);
    nt_close("zero row", 2, ent[2], 0.0, 0, 0);
    nt_close("zero row", 2, neff[2], 0.0, 0, 0);
    double sum = 36.0, h = 0.0, s2 = 0.0;
    for (int j = 1; j <= 8; j++) {
        h -= (j / sum) * log(j / sum);
        s2 += (double)j * j;
    }
    nt_close("entropy", 3, ent[3], h, 1e-6, 0);
    nt_close("n_eff", 3, neff[3], sum * sum / s2, 1e-5, 0);
    nt_close("two", 4, ent[4], log(2.0), 1e-6, 0);
    nt_close("two", 4, neff[4], 2.0, 1e-6, 0);
    /* one output alone */
    NT_ASSERT_OK(ctx, nwattn_weights_diagnostics(ctx, 5, n, w, ldw, NULL, neff));
    /* negative or non-finite weights are refused, outputs untouched */
    w[3 * ldw + 2] = -0.5f;
    ent[0] = 42.0f;
    NT_ASSERT_STATUS(ctx, nwattn_weights_diagnostics(ctx, 5, n, w, ldw, ent, neff),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(ent[0] == 42.0f);
    w[3 * ldw + 2] = NAN;
    NT_ASSERT_STATUS(ctx, nwattn_weights_diagnostics(ctx, 5, n, w, ldw, ent, neff),
                     NWATTN_ERR_BAD_PARAMETER);
    /* a seed-1 style comparison: h = 10 is near-uniform, h = 0.05 nearly one-hot */
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 1);
    float x[80], y[80], xq[20], pred[20], weights[20 * 80], e_wide[20], e_narrow[20];
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_SINE, &rng, 80, x, y));
    for (int i = 0; i < 20; i++)
        xq[i] = 0.5f * (float)i;
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    const float wide = 10.0f, narrow = 0.05f;
    NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &wide, 20, 80, 1, 1, xq, 1, x, 1, y, 1, pred,
                                        1, weights, 80, NULL, NULL));
    NT_ASSERT_OK(ctx, nwattn_weights_diagnostics(ctx, 20, 80, weights, 80, e_wide, NULL));
    NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &model, &narrow, 20, 80, 1, 1, xq, 1, x, 1, y, 1, pred,
                                        1, weights, 80, NULL, NULL));
    NT_ASSERT_OK(ctx, nwattn_weights_diagnostics(ctx, 20, 80, weights, 80, e_narrow, NULL));
    for (int i = 0; i < 20; i++) {
        assert_true(e_wide[i] > 0.97 * log(80.0));
        assert_true(e_narrow[i] < 0.5 * log(80.0));
    }
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_golden),  cmocka_unit_test(test_rng_normal_distribution),
        cmocka_unit_test(test_datasets),    cmocka_unit_test(test_rules_of_thumb),
        cmocka_unit_test(test_diagnostics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
