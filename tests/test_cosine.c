/* NWATTN_SCORE_COSINE: scale · q·k / (|q| |k|), 0 where q or k has norm 0. Every backend's
 * pooling against the definition in long double, over awkward shapes (1, odd, d = 1, n = 1,
 * padded leading dimensions), with zero rows among the queries and keys; nwattn_scores'
 * values; and the bad parameters. Bounds: REFERENCE within 8 float ulp of the exact weights
 * (it works in double); BLAS and FUSED scores carry about (d + 2)·2^-24·|scale| (a float GEMM
 * on normalised rows), which the weights carry as relative error: 64·d·2^-24·|scale| + 1e-6. */
#include "oracle.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static float uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void check_case(size_t m, size_t n, size_t d, size_t dv, float scale, unsigned seed) {
    const size_t ldq = d + 3, ldk = d + 1, ldv = dv + 2; /* padded rows */
    float *q = calloc(m * ldq, sizeof *q), *k = calloc(n * ldk, sizeof *k);
    float *v = calloc(n * ldv, sizeof *v), *o = calloc(m * dv + 1, sizeof *o);
    float *w = calloc(m * n, sizeof *w), *s = calloc(m * n, sizeof *s);
    double *exact_w = calloc(m * n, sizeof *exact_w);
    double *exact_o = calloc(m * (dv > 0 ? dv : 1), sizeof *exact_o);
    assert_non_null(q), assert_non_null(k), assert_non_null(v), assert_non_null(o);
    assert_non_null(w), assert_non_null(s), assert_non_null(exact_w);
    assert_non_null(exact_o);
    unsigned st = seed;
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < d; l++)
            q[i * ldq + l] = i == 1 ? 0.0f : 3.0f * uniform(&st); /* query 1 has norm 0 */
    for (size_t j = 0; j < n; j++)
        for (size_t l = 0; l < d; l++)
            k[j * ldk + l] = j == 2 ? 0.0f : 100.0f * uniform(&st); /* key 2 has norm 0 */
    for (size_t j = 0; j < n; j++)
        for (size_t c = 0; c < dv; c++)
            v[j * ldv + c] = uniform(&st);
    const nwattn_score score = {NWATTN_SCORE_COSINE, scale, 0.0f, NULL};
    for (size_t i = 0; i < m; i++) /* the oracle's pooling row: exact weights and outputs */
        or_pool_row(&score, d, dv, n, q + i * ldq, k, ldk, v, ldv, NULL, NULL, exact_w + i * n,
                    exact_o + i * (dv > 0 ? dv : 1), NULL);
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                       NWATTN_BACKEND_FUSED, NWATTN_BACKEND_AUTO};
    for (size_t t = 0; t < sizeof backends / sizeof backends[0]; t++) {
        nwattn_context *ctx = NULL;
        assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
        assert_int_equal(nwattn_context_set_backend(ctx, backends[t]), NWATTN_OK);
        assert_int_equal(nwattn_pool(ctx, &score, NULL, 1, m, n, d, dv, q, ldq, 0, k, ldk, 0, v,
                                     ldv, 0, o, dv > 0 ? dv : 1, 0, w, n, 0, NULL, 0),
                         NWATTN_OK);
        assert_int_equal(nwattn_scores(ctx, &score, 1, m, n, d, q, ldq, 0, k, ldk, 0, s, n, 0),
                         NWATTN_OK);
        const double score_tol = t == 0 ? 1e-6 * fabs((double)scale) + 1e-30
                                        : 4.0 * (double)(d + 2) * FLT_EPSILON * fabs((double)scale);
        const double w_rel = t == 0 ? 8.0 * FLT_EPSILON
                                    : 64.0 * (double)d * FLT_EPSILON * fabs((double)scale) + 1e-6;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                const long double want_s = or_score_ex(&score, d, q + i * ldq, k + j * ldk, NULL);
                if (!(fabsl(s[i * n + j] - want_s) <= score_tol + 1e-6L * fabsl(want_s)))
                    fail_msg("backend %d m=%zu n=%zu d=%zu: s[%zu][%zu] = %.9g, exact %.9Lg",
                             (int)backends[t], m, n, d, i, j, (double)s[i * n + j], want_s);
                if ((i == 1 || j == 2) && s[i * n + j] != 0.0f)
                    fail_msg("backend %d: a zero-norm row must score exactly 0, got %g",
                             (int)backends[t], (double)s[i * n + j]);
                const long double want_w = exact_w[i * n + j];
                if (!(fabsl(w[i * n + j] - want_w) <= w_rel * want_w + 1e-30L))
                    fail_msg("backend %d m=%zu n=%zu d=%zu: w[%zu][%zu] = %.9g, exact %.9Lg",
                             (int)backends[t], m, n, d, i, j, (double)w[i * n + j], want_w);
            }
        for (size_t i = 0; i < m; i++)
            for (size_t c = 0; c < dv; c++) {
                const long double want = exact_o[i * (dv > 0 ? dv : 1) + c];
                if (!(fabsl(o[i * dv + c] - want) <= 1e-5L))
                    fail_msg("backend %d m=%zu n=%zu d=%zu: o[%zu][%zu] = %.9g, exact %.9Lg",
                             (int)backends[t], m, n, d, i, c, (double)o[i * dv + c], want);
            }
        nwattn_context_destroy(ctx);
    }
    free(q), free(k), free(v), free(o), free(w), free(s), free(exact_w), free(exact_o);
}

static void test_cosine_shapes(void **state) {
    (void)state;
    static const size_t shapes[][4] = {{3, 3, 1, 1},   {2, 3, 1, 2},    {5, 4, 2, 3},
                                       {7, 33, 3, 1},  {65, 300, 5, 2}, {9, 257, 64, 4},
                                       {3, 4, 129, 1}, {64, 1000, 16, 1}};
    static const float scales[] = {1.0f, 10.0f, -3.5f};
    unsigned seed = 11;
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
        for (size_t sc = 0; sc < sizeof scales / sizeof scales[0]; sc++)
            check_case(shapes[c][0], shapes[c][1], shapes[c][2], shapes[c][3], scales[sc], seed++);
}

static void test_cosine_bad_scale(void **state) {
    (void)state;
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    float q[2] = {1, 2}, k[2] = {3, 4}, s[1] = {7.0f};
    const nwattn_score bad = {NWATTN_SCORE_COSINE, NAN, 0.0f, NULL};
    assert_int_equal(nwattn_scores(ctx, &bad, 1, 1, 1, 2, q, 2, 0, k, 2, 0, s, 1, 0),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(s[0] == 7.0f); /* untouched */
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cosine_shapes),
        cmocka_unit_test(test_cosine_bad_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
