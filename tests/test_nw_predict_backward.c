/* nwattn_nw_predict_backward: dL/dh against central finite differences of L = sum dyq o yq
 * with yq the oracle's direct estimate in long double (every kernel, both degrees, d = 1 and
 * 2, both row engines); d2l's learnable-w model as the Gaussian case h = 1/w; bad inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

enum { N = 40, M = 7, DV = 2 };

static double loss(nwattn_kernel kernel, nwattn_degree degree, size_t d, const float *x,
                   const float *y, const float *xq, const float *dyq, const float *h) {
    double total = 0.0, out[DV];
    for (size_t i = 0; i < M; i++) {
        if (!or_nw_direct(kernel, degree, N, d, DV, x, d, y, DV, h, xq + i * d, SIZE_MAX, out))
            continue;
        for (size_t c = 0; c < DV; c++)
            total += out[c] * (double)dyq[i * DV + c];
    }
    return total;
}

static void finite_differences(void **state) {
    (void)state;
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_AUTO};
    tu_rng rng;
    tu_rng_seed(&rng, 31);
    for (size_t bi = 0; bi < 2; bi++) {
        nwattn_context *ctx = tu_context(backends[bi]);
        for (int kernel = 0; kernel < 5; kernel++)
            for (int degree = 0; degree < 2; degree++)
                for (size_t d = 1; d <= 2; d++) {
                    /* the same data for both row engines */
                    tu_rng_seed(&rng, 31 + (uint64_t)(kernel * 4 + degree * 2) + d);
                    float x[N * 2], y[N * DV], xq[M * 2], dyq[M * DV], h[2], got[2];
                    for (size_t j = 0; j < N * d; j++)
                        x[j] = tu_rng_range(&rng, 0.0f, 4.0f);
                    for (size_t j = 0; j < N * DV; j++)
                        y[j] = tu_rng_range(&rng, -1.0f, 1.0f);
                    for (size_t j = 0; j < M * d; j++)
                        xq[j] = tu_rng_range(&rng, 0.5f, 3.5f);
                    for (size_t j = 0; j < M * DV; j++)
                        dyq[j] = tu_rng_range(&rng, -1.0f, 1.0f);
                    for (size_t k = 0; k < d; k++)
                        h[k] = tu_rng_range(&rng, 0.7f, 1.2f);
                    const nwattn_regression model = {(nwattn_kernel)kernel,
                                                     (nwattn_degree)degree, NWATTN_EMPTY_ZERO};
                    TU_ASSERT_OK(ctx, nwattn_nw_predict_backward(ctx, &model, h, M, N, d, DV, xq,
                                                                 d, x, d, y, DV, dyq, DV, got));
                    double want[2], big = 1e-3;
                    for (size_t k = 0; k < d; k++) {
                        const float h0 = h[k], hi = h0 * (1.0f + 0x1p-14f),
                                    lo = h0 * (1.0f - 0x1p-14f);
                        h[k] = hi;
                        const double l_hi = loss(model.kernel, model.degree, d, x, y, xq, dyq, h);
                        h[k] = lo;
                        const double l_lo = loss(model.kernel, model.degree, d, x, y, xq, dyq, h);
                        h[k] = h0;
                        /* the boxcar's estimate is piecewise constant: its gradient is 0 */
                        want[k] = kernel == NWATTN_KERNEL_UNIFORM
                                      ? 0.0
                                      : (l_hi - l_lo) / ((double)hi - (double)lo);
                        big = fmax(big, fabs(want[k]));
                    }
                    for (size_t k = 0; k < d; k++) {
                        const int ok = fabs((double)got[k] - want[k]) <= 1e-4 * big;
                        if (!ok)
                            print_error("backend %d kernel %d degree %d d %zu: dL/dh_%zu = %.9g, "
                                        "finite difference %.9g\n",
                                        (int)backends[bi], kernel, degree, d, k, (double)got[k],
                                        want[k]);
                        assert_true(ok);
                    }
                }
        nwattn_context_destroy(ctx);
    }
}

/* d2l's model softmax(-((x - x_i) w)^2 / 2) is the Gaussian fit with h = 1/w. */
static void learnable_w_is_a_case(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_REFERENCE);
    tu_rng rng;
    tu_rng_seed(&rng, 8);
    enum { n = 30, m = 12 };
    float x[n], y[n], xq[m], target[m], yhat[m], dyq[m];
    for (size_t j = 0; j < n; j++)
        x[j] = tu_rng_range(&rng, 0.0f, 5.0f), y[j] = tu_rng_range(&rng, -1.0f, 2.0f);
    for (size_t i = 0; i < m; i++)
        xq[i] = tu_rng_range(&rng, 0.0f, 5.0f), target[i] = tu_rng_range(&rng, -1.0f, 2.0f);
    const float w = 1.7f, h = 1.0f / w;
    double loss, grad_w;
    TU_ASSERT_OK(ctx, nwattn_wmodel_evaluate(ctx, w, NULL, m, n, 1, 1, xq, 1, x, 1, y, 1, target,
                                             1, yhat, 1, NULL, 0, &loss, &grad_w));
    for (size_t i = 0; i < m; i++)
        dyq[i] = yhat[i] - target[i]; /* L = sum (yhat - target)^2 / 2 */
    const nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT,
                                     NWATTN_EMPTY_ZERO};
    float grad_h;
    TU_ASSERT_OK(ctx, nwattn_nw_predict_backward(ctx, &model, &h, m, n, 1, 1, xq, 1, x, 1, y, 1,
                                                 dyq, 1, &grad_h));
    const double via_h = -(double)grad_h / ((double)w * (double)w);
    assert_true(fabs(via_h - grad_w) <= 1e-5 * fabs(grad_w) + 1e-7);
    nwattn_context_destroy(ctx);
}

static void bad_inputs(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    float x[4] = {0, 1, 2, 3}, y[4] = {1, 2, 3, 4}, xq[2] = {0.5f, 1.5f}, dyq[2] = {1, 1};
    float h = 1.0f, bad_h = 0.0f, out = 42.0f, nan_dyq[2] = {1.0f, NAN};
    const nwattn_regression model = {0};
    assert_int_equal(nwattn_nw_predict_backward(ctx, &model, &h, 2, 4, 1, 1, xq, 1, x, 1, y, 1,
                                                dyq, 1, NULL),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_nw_predict_backward(ctx, &model, &bad_h, 2, 4, 1, 1, xq, 1, x, 1, y,
                                                1, dyq, 1, &out),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_int_equal(nwattn_nw_predict_backward(ctx, &model, &h, 2, 4, 1, 1, xq, 1, x, 1, y, 1,
                                                nan_dyq, 1, &out),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_non_null(strstr(nwattn_context_last_error(ctx), "dyq"));
    assert_int_equal(nwattn_nw_predict_backward(ctx, &model, &h, 2, 4, 1, 1, xq, 1, x, 1, y, 1,
                                                dyq, 1, dyq),
                     NWATTN_ERR_ALIASING);
    assert_int_equal(nwattn_nw_predict_backward(ctx, &model, &h, 2, 0, 1, 1, xq, 1, x, 1, y, 1,
                                                dyq, 1, &out),
                     NWATTN_ERR_DEGENERATE_DATA);
    assert_true(out == 42.0f);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_inputs),
        cmocka_unit_test(learnable_w_is_a_case),
        cmocka_unit_test(finite_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
