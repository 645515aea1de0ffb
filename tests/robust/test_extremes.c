/* Extreme but valid inputs: bandwidths from 1e-30 to 1e30 (scalar and per dimension) on data of
 * very different magnitudes, dot scales and data up to the float range, scores near ±FLT_MAX,
 * rows with a single key, leading dimensions above the BLAS integer on small (or sparse mapped)
 * buffers, and problems larger than the BLAS chunk (run this test in a build with
 * -DNWATTN_BLAS_DIM_LIMIT=7 to exercise the splitting). Results are checked against the
 * oracle (tests/oracle.h, long double) with its documented score bounds, and against the limits:
 * one-hot on the nearest key, uniform weights. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "nwattn.h"
#define OR_CORE_ONLY
#include "oracle.h"

#define MAXM 8
#define MAXN 8
#define MAXD 3

#define N_CTX 4
static nwattn_context *ctx[N_CTX]; /* REFERENCE, BLAS, AUTO, FUSED with 2 workers */
static const char *names[N_CTX] = {"REFERENCE", "BLAS", "AUTO", "FUSED"};

static int setup(void **state) {
    (void)state;
    static const nwattn_backend backends[N_CTX] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                                   NWATTN_BACKEND_AUTO, NWATTN_BACKEND_FUSED};
    for (int b = 0; b < N_CTX; b++)
        if (nwattn_context_create(&ctx[b]) != NWATTN_OK ||
            nwattn_context_set_backend(ctx[b], backends[b]) != NWATTN_OK ||
            nwattn_context_set_threads(ctx[b], b == 3 ? 2 : 1) != NWATTN_OK)
            return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int b = 0; b < N_CTX; b++)
        nwattn_context_destroy(ctx[b]);
    return 0;
}

/* ---- Problems, checked against the oracle (tests/oracle.h) ------------------------------- */
typedef struct problem {
    nwattn_score score;
    float bandwidths[MAXD];
    size_t m, n, d;
    float q[MAXM * MAXD], k[MAXN * MAXD], v[MAXN];
} problem;

/* The score descriptor with the per-dimension bandwidths of this copy of the problem. */
static nwattn_score score_of(const problem *p) {
    nwattn_score score = p->score;
    if (score.bandwidths)
        score.bandwidths = p->bandwidths;
    return score;
}

static double oracle_score(const problem *p, size_t i, size_t j) {
    const nwattn_score score = score_of(p);
    return or_score(&score, p->d, p->q + i * p->d, p->k + j * p->d);
}

/* The documented BLAS/FUSED error bound (or_bound_score_blas) for score (i, j). */
static double blas_score_bound(const problem *p, size_t i, size_t j) {
    const nwattn_score score = score_of(p);
    double mean[MAXD];
    or_key_mean(p->n, p->d, p->k, p->d, mean);
    return or_bound_score_blas_pair(&score, p->d, p->q + i * p->d, p->k + j * p->d, mean);
}

/* Runs the pool on every backend and compares with the oracle: weights within 1e-5, outputs
 * within 1e-5 of the value range, lse within 1e-4 relative (±inf exactly when the true value
 * is beyond the float range). */
static void check_pool(const problem *p, const char *what) {
    double w_want[MAXM][MAXN], o_want[MAXM], lse_want[MAXM];
    nwattn_score score = score_of(p);
    for (size_t i = 0; i < p->m; i++)
        lse_want[i] = or_pool_row(&score, p->d, 1, p->n, p->q + i * p->d, p->k, p->d, p->v, 1,
                                  NULL, NULL, w_want[i], &o_want[i], NULL);
    /* lse moves by the score error: the documented bound for BLAS (and AUTO, which may be it). */
    double row_bound[N_CTX][MAXM] = {{0}};
    for (size_t i = 0; i < p->m; i++)
        for (size_t j = 0; j < p->n; j++)
            for (int b = 1; b < N_CTX; b++)
                row_bound[b][i] = fmax(row_bound[b][i], blas_score_bound(p, i, j));
    for (int b = 0; b < N_CTX; b++) {
        float w[MAXM * MAXN], o[MAXM], lse[MAXM];
        nwattn_status status = nwattn_pool(ctx[b], &score, NULL, 1, p->m, p->n, p->d, 1, p->q,
                                           p->d, 0, p->k, p->d, 0, p->v, 1, 0, o, 1, 0, w, p->n,
                                           0, lse, 0);
        if (status != NWATTN_OK)
            fail_msg("%s [%s]: %s", what, names[b], nwattn_context_last_error(ctx[b]));
        for (size_t i = 0; i < p->m; i++) {
            for (size_t j = 0; j < p->n; j++)
                if (!(fabs(w[i * p->n + j] - w_want[i][j]) <= 1e-5))
                    fail_msg("%s [%s]: w[%zu][%zu] = %.9g, oracle %.9g", what, names[b], i, j,
                             (double)w[i * p->n + j], w_want[i][j]);
            if (!(fabs(o[i] - o_want[i]) <= 1e-5 * 10.0))
                fail_msg("%s [%s]: o[%zu] = %.9g, oracle %.9g", what, names[b], i, (double)o[i],
                         o_want[i]);
            const double lw = lse_want[i];
            if (fabs(lw) > (double)FLT_MAX * (1.0 + 1e-6)) {
                if (lse[i] != (lw > 0 ? INFINITY : -INFINITY))
                    fail_msg("%s [%s]: lse[%zu] = %g, oracle %g (beyond float)", what, names[b],
                             i, (double)lse[i], lw);
            } else if (fabs(lw) < (double)FLT_MAX * (1.0 - 1e-6) &&
                       !(fabs(lse[i] - lw) <= 1e-4 * (1.0 + fabs(lw)) + row_bound[b][i])) {
                fail_msg("%s [%s]: lse[%zu] = %.9g, oracle %.9g", what, names[b], i,
                         (double)lse[i], lw);
            }
        }
    }
}

/* Keys on a line of spacing `scale`, queries in between but nearer to one key each. */
static void line_problem(problem *p, nwattn_score_kind kind, float data_scale, size_t d) {
    memset(p, 0, sizeof *p);
    p->score.kind = kind;
    p->m = 4;
    p->n = 6;
    p->d = d;
    for (size_t j = 0; j < p->n; j++) {
        for (size_t l = 0; l < d; l++)
            p->k[j * d + l] = data_scale * ((float)j + 0.25f * (float)l);
        p->v[j] = (float)(j * j) - 3.0f;
    }
    static const float at[4] = {0.3f, 2.6f, 4.9f, 5.8f};
    for (size_t i = 0; i < p->m; i++)
        for (size_t l = 0; l < d; l++)
            p->q[i * d + l] = data_scale * (at[i] + 0.25f * (float)l);
}

static void test_bandwidth_sweep(void **state) {
    (void)state;
    static const float data_scales[] = {1.0f, 1e-15f, 1e15f, 1e-35f};
    int checked = 0;
    for (size_t s = 0; s < sizeof data_scales / sizeof data_scales[0]; s++)
        for (int kind = NWATTN_SCORE_GAUSSIAN; kind <= NWATTN_SCORE_LAPLACE; kind++)
            for (int e = -30; e <= 30; e += 2) {
                problem p;
                line_problem(&p, (nwattn_score_kind)kind, data_scales[s], 2);
                const float h = (float)pow(10.0, e);
                p.score.bandwidth = h;
                char what[96];
                snprintf(what, sizeof what, "kind %d, data x%g, h %g", kind,
                         (double)data_scales[s], (double)h);
                check_pool(&p, what);
                /* Per-dimension bandwidths: the tiny one decides. */
                p.score.bandwidths = p.bandwidths;
                p.bandwidths[0] = h;
                p.bandwidths[1] = 1e30f;
                check_pool(&p, what);
                checked += 2;
            }
    printf("bandwidth sweep: %d problems\n", checked);
}

/* The limits, exactly: one-hot weights on the nearest key for tiny h, uniform for huge h. */
static void test_bandwidth_limits(void **state) {
    (void)state;
    for (int kind = NWATTN_SCORE_GAUSSIAN; kind <= NWATTN_SCORE_LAPLACE; kind++)
        for (int b = 0; b < N_CTX; b++) {
            problem p;
            line_problem(&p, (nwattn_score_kind)kind, 1.0f, 1);
            static const size_t nearest[4] = {0, 3, 5, 6 - 1};
            for (int tiny = 0; tiny < 2; tiny++) {
                p.score.bandwidth = tiny ? 1e-30f : 1e30f;
                float w[MAXM * MAXN], o[MAXM];
                assert_int_equal(nwattn_pool(ctx[b], &p.score, NULL, 1, p.m, p.n, 1, 1, p.q, 1, 0,
                                             p.k, 1, 0, p.v, 1, 0, o, 1, 0, w, p.n, 0, NULL, 0),
                                 NWATTN_OK);
                for (size_t i = 0; i < p.m; i++)
                    for (size_t j = 0; j < p.n; j++) {
                        float want = tiny ? (j == nearest[i] ? 1.0f : 0.0f) : 1.0f / (float)p.n;
                        if (!(fabsf(w[i * p.n + j] - want) <= (tiny ? 0.0f : 1e-6f)))
                            fail_msg("kind %d [%s] h %g: w[%zu][%zu] = %.9g, want %.9g", kind,
                                     names[b], (double)p.score.bandwidth, i, j,
                                     (double)w[i * p.n + j], (double)want);
                    }
            }
        }
}

static void test_dot_extremes(void **state) {
    (void)state;
    static const float data_scales[] = {1e-30f, 1e-15f, 1.0f, 1e15f, 1e30f, 1e38f};
    static const float scales[] = {1e-30f, 1e-10f, 1.0f, 1e10f, 1e30f, FLT_MAX, -1e20f};
    int checked = 0;
    for (size_t ds = 0; ds < sizeof data_scales / sizeof data_scales[0]; ds++)
        for (size_t sc = 0; sc < sizeof scales / sizeof scales[0]; sc++) {
            problem p;
            memset(&p, 0, sizeof p);
            p.score.kind = NWATTN_SCORE_DOT;
            p.score.scale = scales[sc];
            p.m = 3;
            p.n = 5;
            p.d = 2;
            for (size_t j = 0; j < p.n; j++) {
                p.k[2 * j] = data_scales[ds] * 0.2f * (float)j;
                p.k[2 * j + 1] = data_scales[ds] * (0.5f - 0.1f * (float)(j * j));
                p.v[j] = (float)j;
            }
            for (size_t i = 0; i < p.m; i++) {
                p.q[2 * i] = data_scales[ds] * (0.3f * (float)i - 0.2f);
                p.q[2 * i + 1] = data_scales[ds] * 0.7f * (float)(i % 2);
            }
            char what[96];
            snprintf(what, sizeof what, "dot, data x%g, scale %g", (double)data_scales[ds],
                     (double)scales[sc]);
            check_pool(&p, what);
            checked++;
        }
    printf("dot extremes: %d problems\n", checked);
}

/* nwattn_scores returns the float rounding of each score: ±inf beyond the range, and the two
 * backends agree wherever the true score is clearly inside or outside it. */
static void test_scores_rounding(void **state) {
    (void)state;
    for (int kind = 0; kind < 3; kind++)
        for (int e = -30; e <= 30; e += 5) {
            problem p;
            line_problem(&p, (nwattn_score_kind)(kind == 0 ? 1 : kind), 1.0f, 2);
            p.score.kind = (nwattn_score_kind)kind;
            p.score.bandwidth = (float)pow(10.0, e);
            p.score.scale = (float)pow(10.0, -e);
            for (int b = 0; b < N_CTX; b++) {
                float s[MAXM * MAXN];
                assert_int_equal(nwattn_scores(ctx[b], &p.score, 1, p.m, p.n, p.d, p.q, p.d, 0,
                                               p.k, p.d, 0, s, p.n, 0),
                                 NWATTN_OK);
                for (size_t i = 0; i < p.m; i++)
                    for (size_t j = 0; j < p.n; j++) {
                        const double want = oracle_score(&p, i, j);
                        const float got = s[i * p.n + j];
                        if (fabs(want) > (double)FLT_MAX * 1.01) {
                            if (got != (want > 0 ? INFINITY : -INFINITY))
                                fail_msg("[%s] kind %d 1e%d: s = %g, true %g", names[b], kind, e,
                                         (double)got, want);
                        } else if (fabs(want) < (double)FLT_MAX * 0.99) {
                            double tol = 1e-6 * fabs(want) + 1e-44;
                            if (b != 0)
                                tol += blas_score_bound(&p, i, j);
                            if (!(fabs((double)got - want) <= tol))
                                fail_msg("[%s] kind %d 1e%d: s = %.9g, true %.9g", names[b], kind,
                                         e, (double)got, want);
                        }
                    }
            }
        }
}

/* A single key gets weight 1 whatever its score, and the output is its value. */
static void test_one_key_rows(void **state) {
    (void)state;
    static const float data[] = {0.0f, 1e-38f, -1e38f, 3e38f, 1e20f};
    for (size_t t = 0; t < sizeof data / sizeof data[0]; t++)
        for (int kind = 0; kind < 3; kind++)
            for (int b = 0; b < N_CTX; b++) {
                float q[2] = {data[t], -data[t]}, k[1] = {-data[t]}, v[1] = {7.5f}, o[2], w[2],
                      lse[2];
                nwattn_score sc = {(nwattn_score_kind)kind, FLT_MAX, FLT_MIN, NULL};
                assert_int_equal(nwattn_pool(ctx[b], &sc, NULL, 1, 2, 1, 1, 1, q, 1, 0, k, 1, 0,
                                             v, 1, 0, o, 1, 0, w, 1, 0, lse, 0),
                                 NWATTN_OK);
                for (int i = 0; i < 2; i++) {
                    assert_true(w[i] == 1.0f);
                    assert_true(o[i] == 7.5f);
                    assert_false(isnan(lse[i]));
                }
            }
    /* Softmax of one score anywhere in the float range. */
    static const float scores[] = {-FLT_MAX, -1e30f, -FLT_MIN, 0.0f, FLT_TRUE_MIN, 1e30f,
                                   FLT_MAX};
    for (size_t t = 0; t < sizeof scores / sizeof scores[0]; t++)
        for (int b = 0; b < N_CTX; b++) {
            float w, lse;
            assert_int_equal(nwattn_softmax(ctx[b], NULL, 1, 1, 1, &scores[t], 1, 0, &w, 1, 0,
                                            &lse, 0),
                             NWATTN_OK);
            assert_true(w == 1.0f);
            assert_true(lse == scores[t]);
        }
}

/* Random scores spread over the whole float range: weights against a double softmax. */
static void test_scores_near_float_max(void **state) {
    (void)state;
    uint64_t x = 12345;
    for (int row = 0; row < 200; row++) {
        float s[MAXN];
        double max = -INFINITY, sum = 0.0;
        for (int j = 0; j < MAXN; j++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
            s[j] = (float)((2.0 * u - 1.0) * FLT_MAX);
            if (row % 3 == 0 && j == 3)
                s[j] = s[1]; /* ties at huge magnitude */
            max = fmax(max, s[j]);
        }
        for (int j = 0; j < MAXN; j++)
            sum += exp((double)s[j] - max);
        for (int b = 0; b < N_CTX; b++) {
            float w[MAXN], lse;
            assert_int_equal(nwattn_softmax(ctx[b], NULL, 1, 1, MAXN, s, MAXN, 0, w, MAXN, 0,
                                            &lse, 0),
                             NWATTN_OK);
            for (int j = 0; j < MAXN; j++)
                assert_true(fabs((double)w[j] - exp((double)s[j] - max) / sum) <= 1e-6);
            assert_true(fabs((double)lse - (max + log(sum))) <= 1e-6 * fabs(max) + 1e-6);
        }
    }
}

/* ---- Leading dimensions above the BLAS integer --------------------------------------------- */
/* K with rows 2^31 + 8 floats apart, mapped without reserving memory: only the pages holding
 * the rows are ever touched. BLAS refuses (TOO_LARGE), AUTO takes the reference and gives the
 * very same bits as the reference on a compact copy. */
static void test_huge_leading_dimension(void **state) {
    (void)state;
    if (SIZE_MAX <= UINT32_MAX)
        skip();
    const size_t n = 3, d = 2, m = 2, ldk = (size_t)INT_MAX + 9;
    const size_t bytes = ((n - 1) * ldk + d) * sizeof(float);
    float *k = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
    if (k == MAP_FAILED) {
        printf("mmap of %zu bytes failed: skipped\n", bytes);
        skip();
    }
    float kc[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, q[4] = {0.1f, 0.2f, 1.0f, -0.5f},
          v[3] = {1, 2, 4};
    for (size_t j = 0; j < n; j++)
        memcpy(k + j * ldk, kc + j * d, d * sizeof(float));
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0, 0.8f, NULL};
    float want_o[2], want_w[6], o[2], w[6];
    assert_int_equal(nwattn_pool(ctx[0], &sc, NULL, 1, m, n, d, 1, q, d, 0, kc, d, 0, v, 1, 0,
                                 want_o, 1, 0, want_w, n, 0, NULL, 0),
                     NWATTN_OK);
    for (int b = 0; b < N_CTX; b++) {
        memset(o, 0, sizeof o);
        nwattn_status status = nwattn_pool(ctx[b], &sc, NULL, 1, m, n, d, 1, q, d, 0, k, ldk, 0,
                                           v, 1, 0, o, 1, 0, w, n, 0, NULL, 0);
        if (b == 1 || b == 3) {
            assert_int_equal(status, NWATTN_ERR_TOO_LARGE);
            assert_true(o[0] == 0.0f && o[1] == 0.0f);
        } else {
            assert_int_equal(status, NWATTN_OK);
            assert_memory_equal(o, want_o, sizeof o);
            assert_memory_equal(w, want_w, sizeof w);
        }
    }
    /* bmm with the mapped rows as A (2×3, lda = ldk): the same story. */
    float a[6], c[2 * 2], want_c[2 * 2];
    for (size_t i = 0; i < 2; i++)
        memcpy(a + 3 * i, k + i * ldk, 3 * sizeof(float));
    assert_int_equal(nwattn_bmm(ctx[0], 1, 2, 2, 3, a, 3, 0, kc, 2, 0, want_c, 2, 0), NWATTN_OK);
    assert_int_equal(nwattn_bmm(ctx[1], 1, 2, 2, 3, k, ldk, 0, kc, 2, 0, c, 2, 0),
                     NWATTN_ERR_TOO_LARGE);
    assert_int_equal(nwattn_bmm(ctx[2], 1, 2, 2, 3, k, ldk, 0, kc, 2, 0, c, 2, 0), NWATTN_OK);
    assert_memory_equal(c, want_c, sizeof c);
    assert_int_equal(nwattn_bmm(ctx[3], 1, 2, 2, 3, k, ldk, 0, kc, 2, 0, c, 2, 0),
                     NWATTN_ERR_TOO_LARGE);
    munmap(k, bytes);
}

/* ---- Problems larger than one BLAS call ---------------------------------------------------- */
/* With -DNWATTN_BLAS_DIM_LIMIT=7 every dimension here is split into chunks of 7; without it
 * this is a plain BLAS-versus-reference comparison. */
static void test_split_dimensions(void **state) {
    (void)state;
    enum { M = 17, N = 22, D = 15, DV = 9 };
    static float q[M * D], k[N * D], v[N * DV];
    uint64_t x = 99;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++, x = x * 6364136223846793005u + 1)
        q[i] = (float)((x >> 40) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++, x = x * 6364136223846793005u + 1)
        k[i] = (float)((x >> 40) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++, x = x * 6364136223846793005u + 1)
        v[i] = (float)((x >> 40) % 1000) / 500.0f - 1.0f;
    for (int kind = 0; kind < 3; kind++) {
        nwattn_score sc = {(nwattn_score_kind)kind, 0.25f, 2.0f, NULL};
        static float o[N_CTX][M * DV], w[N_CTX][M * N];
        for (int b = 0; b < N_CTX; b++)
            assert_int_equal(nwattn_pool(ctx[b], &sc, NULL, 1, M, N, D, DV, q, D, 0, k, D, 0, v,
                                         DV, 0, o[b], DV, 0, w[b], N, 0, NULL, 0),
                             NWATTN_OK);
        for (int b = 1; b < N_CTX; b++) {
            for (size_t i = 0; i < M * N; i++)
                assert_true(fabsf(w[0][i] - w[b][i]) <= 1e-5f);
            for (size_t i = 0; i < M * DV; i++)
                assert_true(fabsf(o[0][i] - o[b][i]) <= 1e-5f);
        }
    }
    static float a[M * N], c[2][M * DV];
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++, x = x * 6364136223846793005u + 1)
        a[i] = (float)((x >> 40) % 1000) / 500.0f - 1.0f;
    for (int b = 0; b < 2; b++)
        assert_int_equal(nwattn_bmm(ctx[b], 1, M, DV, N, a, N, 0, v, DV, 0, c[b], DV, 0),
                         NWATTN_OK);
    for (size_t i = 0; i < M * DV; i++)
        assert_true(fabsf(c[0][i] - c[1][i]) <= 1e-5f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bandwidth_sweep),
        cmocka_unit_test(test_bandwidth_limits),
        cmocka_unit_test(test_dot_extremes),
        cmocka_unit_test(test_scores_rounding),
        cmocka_unit_test(test_one_key_rows),
        cmocka_unit_test(test_scores_near_float_max),
        cmocka_unit_test(test_huge_leading_dimension),
        cmocka_unit_test(test_split_dimensions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
