/* NaN and ±Inf in scores, masks, Q, K and V: the propagation rules of nwattn.h ("Range and
 * non-finite values"), checked against hand-computed results under both backends, which must
 * also agree with each other entry by entry (NaN where the other has NaN). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nwattn.h"

#define MAXN 16
static const float tol = 1e-6f;

#define N_CTX 3
static nwattn_context *ctx[N_CTX]; /* REFERENCE, BLAS, FUSED with 2 workers */

static int setup(void **state) {
    (void)state;
    static const nwattn_backend backends[N_CTX] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                                   NWATTN_BACKEND_FUSED};
    for (int b = 0; b < N_CTX; b++)
        if (nwattn_context_create(&ctx[b]) != NWATTN_OK ||
            nwattn_context_set_backend(ctx[b], backends[b]) != NWATTN_OK ||
            nwattn_context_set_threads(ctx[b], b == 2 ? 2 : 1) != NWATTN_OK)
            return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int b = 0; b < N_CTX; b++)
        nwattn_context_destroy(ctx[b]);
    return 0;
}

/* want: NAN means "must be NaN", ±INFINITY exact, else within tol. */
static void expect_values(const char *what, int backend, const float *got, const float *want,
                          size_t count) {
    for (size_t i = 0; i < count; i++) {
        int ok = isnan(want[i])   ? isnan(got[i])
                 : isinf(want[i]) ? got[i] == want[i]
                                  : fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i]));
        if (!ok)
            fail_msg("%s (backend %d): [%zu] = %.9g, expected %.9g", what, backend, i,
                     (double)got[i], (double)want[i]);
    }
}

/* ---- Softmax rows ---------------------------------------------------------------------------- */
typedef struct softmax_case {
    const char *what;
    size_t n;
    float s[MAXN];
    float add[MAXN]; /* used when has_add */
    int has_add;
    size_t valid_len; /* masks keys >= valid_len */
    float want_w[MAXN];
    float want_lse;
} softmax_case;

static void run_softmax_case(const softmax_case *sc) {
    for (int b = 0; b < N_CTX; b++) {
        float w[MAXN], lse;
        nwattn_mask mask = {0};
        mask.valid_lens = &sc->valid_len;
        if (sc->has_add) {
            mask.additive = sc->add;
            mask.ld_additive = sc->n;
        }
        assert_int_equal(nwattn_softmax(ctx[b], &mask, 1, 1, sc->n, sc->s, sc->n, 0, w, sc->n, 0,
                                        &lse, 0),
                         NWATTN_OK);
        expect_values(sc->what, b, w, sc->want_w, sc->n);
        expect_values(sc->what, b, &lse, &sc->want_lse, 1);
        /* In place gives the same. */
        float inplace[MAXN];
        memcpy(inplace, sc->s, sizeof inplace);
        assert_int_equal(nwattn_softmax(ctx[b], &mask, 1, 1, sc->n, inplace, sc->n, 0, inplace,
                                        sc->n, 0, NULL, 0),
                         NWATTN_OK);
        expect_values(sc->what, b, inplace, sc->want_w, sc->n);
    }
}

static void test_softmax_rules(void **state) {
    (void)state;
    const float third = 1.0f / 3.0f, half = 0.5f;
    const float e1 = (float)(1.0 / (1.0 + exp(-1.0))), e0 = 1.0f - e1; /* softmax(1, 0) */
    static softmax_case cases[24];
    size_t k = 0;
    cases[k++] = (softmax_case){"NaN score of a live key: live weights NaN, masked 0",
                                4, {0, NAN, 1, 2}, {0}, 0, 3, {NAN, NAN, NAN, 0}, NAN};
    cases[k++] = (softmax_case){"NaN score of a key masked by its valid length is ignored",
                                3, {1, 0, NAN}, {0}, 0, 2, {e1, e0, 0}, 1.0f + log1pf(expf(-1))};
    cases[k++] = (softmax_case){"NaN score with additive -inf is masked",
                                3, {1, NAN, 0}, {0, -INFINITY, 0}, 1, 3, {e1, 0, e0},
                                1.0f + log1pf(expf(-1))};
    cases[k++] = (softmax_case){"NaN additive on a live key",
                                3, {1, 0, 0}, {0, NAN, 0}, 1, 3, {NAN, NAN, NAN}, NAN};
    cases[k++] = (softmax_case){"two +inf scores share the weight",
                                4, {INFINITY, 5, INFINITY, -INFINITY}, {0}, 0, 4,
                                {half, 0, half, 0}, INFINITY};
    cases[k++] = (softmax_case){"three +inf scores, one masked by additive -inf",
                                5, {INFINITY, INFINITY, 0, INFINITY, INFINITY}, {0, 0, 0, -INFINITY, 1}, 1, 5,
                                {third, third, 0, 0, third}, INFINITY};
    cases[k++] = (softmax_case){"+inf additive is +inf too",
                                3, {0, 7, 1}, {INFINITY, 0, INFINITY}, 1, 3, {half, 0, half},
                                INFINITY};
    cases[k++] = (softmax_case){"+inf score with additive -inf is masked",
                                3, {INFINITY, 1, 0}, {-INFINITY, 0, 0}, 1, 3, {0, e1, e0},
                                1.0f + log1pf(expf(-1))};
    cases[k++] = (softmax_case){"-inf score with additive +inf is masked",
                                3, {-INFINITY, 1, 0}, {INFINITY, 0, 0}, 1, 3, {0, e1, e0},
                                1.0f + log1pf(expf(-1))};
    cases[k++] = (softmax_case){"NaN beats +inf", 3, {INFINITY, NAN, 0}, {0}, 0, 3,
                                {NAN, NAN, NAN}, NAN};
    cases[k++] = (softmax_case){"all -inf: fully masked", 3, {-INFINITY, -INFINITY, -INFINITY},
                                {0}, 0, 3, {0, 0, 0}, -INFINITY};
    cases[k++] = (softmax_case){"+inf of a masked key does not count",
                                3, {0, 0, INFINITY}, {0}, 0, 2, {half, half, 0},
                                (float)log(2.0)};
    cases[k++] = (softmax_case){"scores at ±FLT_MAX",
                                3, {FLT_MAX, -FLT_MAX, FLT_MAX}, {0}, 0, 3, {half, 0, half},
                                FLT_MAX};
    cases[k++] = (softmax_case){"score + additive beyond FLT_MAX does not overflow",
                                3, {FLT_MAX, FLT_MAX, 0}, {FLT_MAX, 0, 0}, 1, 3, {1, 0, 0},
                                INFINITY /* 2·FLT_MAX rounds to +inf in float */};
    cases[k++] = (softmax_case){"-FLT_MAX and +FLT_MAX additive cancel in double",
                                2, {-FLT_MAX, 0}, {FLT_MAX, 0}, 1, 2, {half, half},
                                (float)log(2.0)};
    cases[k++] = (softmax_case){"one key", 1, {-FLT_MAX}, {0}, 0, 1, {1}, -FLT_MAX};
    cases[k++] = (softmax_case){"one key, NaN", 1, {NAN}, {0}, 0, 1, {NAN}, NAN};
    for (size_t i = 0; i < k; i++)
        run_softmax_case(&cases[i]);
}

/* ---- Pooling with non-finite data ------------------------------------------------------------- */
typedef struct pool_setup {
    nwattn_score score;
    size_t m, n, d, dv;
    float q[MAXN], k[MAXN], v[MAXN];
    const size_t *lens; /* per row when set */
} pool_setup;

static void pool_both(const pool_setup *p, float o[N_CTX][MAXN], float w[N_CTX][MAXN], float lse[N_CTX][MAXN]) {
    nwattn_mask mask = {0};
    mask.flags = NWATTN_MASK_LENS_PER_ROW;
    mask.valid_lens = p->lens;
    for (int b = 0; b < N_CTX; b++) {
        nwattn_status status =
            nwattn_pool(ctx[b], &p->score, p->lens ? &mask : NULL, 1, p->m, p->n, p->d, p->dv,
                        p->q, p->d, 0, p->k, p->d, 0, p->v, p->dv, 0, o[b], p->dv, 0, w[b], p->n, 0,
                        lse[b], 0);
        if (status != NWATTN_OK)
            fail_msg("pool: %s", nwattn_context_last_error(ctx[b]));
    }
}

static void expect_both(const char *what, float got[N_CTX][MAXN], const float *want,
                        size_t count) {
    for (int b = 0; b < N_CTX; b++)
        expect_values(what, b, got[b], want, count);
}

static void test_pool_nan_in_q_and_k(void **state) {
    (void)state;
    float o[N_CTX][MAXN], w[N_CTX][MAXN], lse[N_CTX][MAXN];
    const nwattn_score kinds[3] = {{NWATTN_SCORE_GAUSSIAN, 0, 1.0f, NULL},
                                   {NWATTN_SCORE_LAPLACE, 0, 1.0f, NULL},
                                   {NWATTN_SCORE_DOT, 1.0f, 0, NULL}};
    for (int s = 0; s < 3; s++) {
        /* NaN in query 1: row 1 is NaN, rows 0 and 2 are untouched by it. */
        pool_setup p = {kinds[s], 3, 2, 1, 1, {0, NAN, 1}, {0, 1}, {10, 20}, NULL};
        pool_both(&p, o, w, lse);
        for (int b = 0; b < N_CTX; b++) {
            assert_true(isnan(o[b][1]) && isnan(w[b][2]) && isnan(w[b][3]) && isnan(lse[b][1]));
            assert_true(isfinite(o[b][0]) && isfinite(o[b][2]));
            assert_true(fabsf(o[b][0] - o[0][0]) <= 1e-5f && fabsf(o[b][2] - o[0][2]) <= 1e-5f);
        }
        /* NaN in key 1, which query row 0 cannot see (valid length 1): row 0 is finite. */
        static const size_t lens[2] = {1, 2};
        pool_setup p2 = {kinds[s], 2, 2, 1, 1, {0, 0}, {0.5f, NAN}, {10, 20}, lens};
        pool_both(&p2, o, w, lse);
        const float want_o[2] = {10, NAN}, want_w[4] = {1, 0, NAN, NAN};
        expect_both("NaN key hidden by a valid length", o, want_o, 2);
        expect_both("NaN key hidden by a valid length", w, want_w, 4);
    }
}

static void test_pool_inf_in_q_and_k(void **state) {
    (void)state;
    float o[N_CTX][MAXN], w[N_CTX][MAXN], lse[N_CTX][MAXN];
    for (int kind = NWATTN_SCORE_GAUSSIAN; kind <= NWATTN_SCORE_LAPLACE; kind++) {
        nwattn_score g = {(nwattn_score_kind)kind, 0, 1.0f, NULL};
        /* An infinite key coordinate is infinitely far: that key is masked for every finite
         * query; a query at +inf faces +inf - +inf = NaN there and -inf scores elsewhere. */
        pool_setup p = {g, 2, 3, 1, 1, {0, INFINITY}, {0, INFINITY, 0}, {10, 99, 30}, NULL};
        pool_both(&p, o, w, lse);
        const float want_o[2] = {20, NAN}, want_w[6] = {0.5f, 0, 0.5f, 0, NAN, 0};
        expect_both("infinite key coordinate", o, want_o, 2);
        expect_both("infinite key coordinate", w, want_w, 6);
        /* A query at -inf against finite keys: every score -inf, the row is fully masked. */
        pool_setup p2 = {g, 1, 2, 1, 1, {-INFINITY}, {0, 1}, {10, 20}, NULL};
        pool_both(&p2, o, w, lse);
        const float zero[2] = {0, 0}, minus_inf = -INFINITY;
        expect_both("infinite query", o, zero, 1);
        expect_both("infinite query", w, zero, 2);
        expect_both("infinite query", lse, &minus_inf, 1);
    }
    /* Dot: q = +inf gives ±inf scores by the sign of k, NaN for k = 0. */
    nwattn_score dot = {NWATTN_SCORE_DOT, 1.0f, 0, NULL};
    pool_setup p3 = {dot, 2, 3, 1, 1, {INFINITY, -INFINITY}, {1, -1, 2}, {10, 20, 30}, NULL};
    pool_both(&p3, o, w, lse);
    const float want_o3[2] = {20, 20}, want_w3[6] = {0.5f, 0, 0.5f, 0, 1, 0},
                want_lse3[2] = {INFINITY, INFINITY};
    expect_both("dot with an infinite query", o, want_o3, 2);
    expect_both("dot with an infinite query", w, want_w3, 6);
    expect_both("dot with an infinite query", lse, want_lse3, 2);
    pool_setup p4 = {dot, 1, 2, 1, 1, {INFINITY}, {0, 1}, {10, 20}, NULL};
    pool_both(&p4, o, w, lse);
    const float nan2[2] = {NAN, NAN};
    expect_both("inf · 0 is NaN", w, nan2, 2);
}

static void test_pool_nonfinite_values(void **state) {
    (void)state;
    float o[N_CTX][MAXN], w[N_CTX][MAXN], lse[N_CTX][MAXN];
    nwattn_score g = {NWATTN_SCORE_GAUSSIAN, 0, 1.0f, NULL};
    /* NaN in column 0 of a live key: column 0 NaN, column 1 finite. */
    pool_setup p = {g, 1, 2, 1, 2, {0}, {0, 0}, {NAN, 1, 3, 5}, NULL};
    pool_both(&p, o, w, lse);
    const float want[2] = {NAN, 3};
    expect_both("NaN value of a live key", o, want, 2);
    /* +inf value with positive weight: +inf output; +inf and -inf together: NaN. */
    pool_setup p2 = {g, 1, 2, 1, 2, {0}, {0, 0}, {INFINITY, INFINITY, 1, -INFINITY}, NULL};
    pool_both(&p2, o, w, lse);
    const float want2[2] = {INFINITY, NAN};
    expect_both("infinite values", o, want2, 2);
    /* A masked key's NaN value: 0 · NaN = NaN with the reference and OpenBLAS (documented). */
    static const size_t lens[1] = {1};
    pool_setup p3 = {g, 1, 2, 1, 1, {0}, {0, 0}, {4, NAN}, lens};
    pool_both(&p3, o, w, lse);
    assert_true(w[0][1] == 0.0f && w[1][1] == 0.0f && w[2][1] == 0.0f);
    assert_true(isnan(o[0][0]));
    assert_true(isnan(o[1][0])); /* OpenBLAS; another BLAS may give 4 here */
    assert_true(o[2][0] == 4.0f); /* FUSED never reads keys beyond every row's valid length */
}

static void test_average_pool_and_bmm(void **state) {
    (void)state;
    for (int b = 0; b < N_CTX; b++) {
        float v[4] = {1, NAN, 3, 5}, o[4];
        assert_int_equal(nwattn_average_pool(ctx[b], NULL, 1, 2, 2, 2, v, 2, 0, o, 2, 0),
                         NWATTN_OK);
        assert_true(o[0] == 2.0f && isnan(o[1]) && o[2] == 2.0f && isnan(o[3]));
        /* bmm: NaN in a[1][0] poisons row 1 of c only; Inf times a positive stays Inf. */
        float a[4] = {1, 2, NAN, 1}, bm[4] = {1, 0, INFINITY, 1}, c[4];
        assert_int_equal(nwattn_bmm(ctx[b], 1, 2, 2, 2, a, 2, 0, bm, 2, 0, c, 2, 0), NWATTN_OK);
        assert_true(c[0] == INFINITY && c[1] == 2.0f && isnan(c[2]) && isnan(c[3]));
    }
}

/* nwattn_scores puts NaN and ±Inf at the same places with both backends. */
static void test_scores_agree(void **state) {
    (void)state;
    const float special[5] = {NAN, INFINITY, -INFINITY, 0.0f, 1.5f};
    for (int kind = 0; kind < 3; kind++)
        for (int qi = 0; qi < 5; qi++)
            for (int ki = 0; ki < 5; ki++) {
                float q[4] = {special[qi], 1, 0.5f, -1}, k[6] = {special[ki], 2, 0, 0, -1, 3};
                nwattn_score sc = {(nwattn_score_kind)kind, 0.5f, 0.75f, NULL};
                float s[N_CTX][6];
                for (int b = 0; b < N_CTX; b++)
                    assert_int_equal(nwattn_scores(ctx[b], &sc, 1, 2, 3, 2, q, 2, 0, k, 2, 0,
                                                   s[b], 3, 0),
                                     NWATTN_OK);
                for (int b = 1; b < N_CTX; b++)
                    for (int i = 0; i < 6; i++) {
                        assert_int_equal(isnan(s[0][i]), isnan(s[b][i]));
                        if (!isnan(s[0][i]) && !(isfinite(s[0][i]) && isfinite(s[b][i])))
                            assert_true(s[0][i] == s[b][i]);
                    }
            }
}


/* ---- Across the fused path's key tiles ----------------------------------------------------- */
/* 600 keys: three tiles of the fused path. The special values sit in different tiles, so the
 * online softmax must carry them from tile to tile (+inf met after finite maxima, NaN after
 * +inf), and all backends must agree with the rules. */
enum { MANY = 600 };

static void test_rules_across_tiles(void **state) {
    (void)state;
    static float q[3], k[MANY], v[MANY], add[3 * MANY], o[N_CTX][3], w[N_CTX][3 * MANY],
        lse[N_CTX][3];
    for (size_t j = 0; j < MANY; j++) {
        k[j] = (float)j / MANY;
        v[j] = (float)(j % 7);
    }
    for (size_t i = 0; i < 3; i++) {
        q[i] = 0.5f;
        for (size_t j = 0; j < MANY; j++)
            add[i * MANY + j] = 0.0f;
    }
    add[0 * MANY + 10] = INFINITY; /* row 0: +inf in tiles 0 and 2 */
    add[0 * MANY + 520] = INFINITY;
    add[1 * MANY + 300] = INFINITY; /* row 1: +inf in tile 1, NaN in tile 2 */
    add[1 * MANY + 599] = NAN;
    add[2 * MANY + 599] = 1e30f; /* row 2: a huge finite value in the last tile */
    nwattn_mask mask = {0};
    mask.additive = add;
    mask.ld_additive = MANY;
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0, 0.25f, NULL};
    for (int b = 0; b < N_CTX; b++) {
        assert_int_equal(nwattn_pool(ctx[b], &sc, &mask, 1, 3, MANY, 1, 1, q, 1, 0, k, 1, 0, v, 1,
                                     0, o[b], 1, 0, w[b], MANY, 0, lse[b], 0),
                         NWATTN_OK);
        assert_true(o[b][0] == (v[10] + v[520]) / 2.0f);
        assert_true(w[b][10] == 0.5f && w[b][520] == 0.5f && w[b][11] == 0.0f);
        assert_true(lse[b][0] == INFINITY);
        assert_true(isnan(o[b][1]) && isnan(lse[b][1]) && isnan(w[b][MANY + 300]));
        assert_true(o[b][2] == v[599] && w[b][2 * MANY + 599] == 1.0f && lse[b][2] == 1e30f);
    }
}

/* Bandwidth 1e-30 over many keys: the nearest key wins wherever its tile is. */
static void test_tiny_bandwidth_across_tiles(void **state) {
    (void)state;
    static float q[4], k[MANY], v[MANY], o[N_CTX][4];
    for (size_t j = 0; j < MANY; j++) {
        k[j] = (float)((j * 7919) % MANY); /* a permutation of 0 .. MANY-1 */
        v[j] = (float)j;
    }
    static const float at[4] = {3.2f, 257.9f, 400.4f, 598.6f};
    for (int kind = NWATTN_SCORE_GAUSSIAN; kind <= NWATTN_SCORE_LAPLACE; kind++) {
        nwattn_score sc = {(nwattn_score_kind)kind, 0, 1e-30f, NULL};
        memcpy(q, at, sizeof q);
        for (int b = 0; b < N_CTX; b++) {
            assert_int_equal(nwattn_pool(ctx[b], &sc, NULL, 1, 4, MANY, 1, 1, q, 1, 0, k, 1, 0, v,
                                         1, 0, o[b], 1, 0, NULL, 0, 0, NULL, 0),
                             NWATTN_OK);
            for (int i = 0; i < 4; i++) {
                const float nearest = roundf(at[i]);
                size_t j = 0;
                while (k[j] != nearest)
                    j++;
                if (o[b][i] != v[j])
                    fail_msg("kind %d backend %d row %d: %g, want %g", kind, b, i,
                             (double)o[b][i], (double)v[j]);
            }
        }
    }
}

/* ---- Partial states ------------------------------------------------------------------------ */
typedef struct shard_result {
    float acc[3], max[3], sum[3];
} shard_result;

static void partial(int b, const nwattn_score *sc, const nwattn_mask *mask, size_t n,
                    size_t offset, const float *q, const float *k, const float *v,
                    shard_result *r) {
    nwattn_pool_state st = {r->acc, 1, 0, r->max, r->sum, 0};
    assert_int_equal(nwattn_pool_partial(ctx[b], sc, mask, 1, 3, n, 1, 1, offset, q, 1, 0, k, 1,
                                         0, v, 1, 0, &st),
                     NWATTN_OK);
}

static void finish(int b, shard_result *r, float *o, float *lse) {
    nwattn_pool_state st = {r->acc, 1, 0, r->max, r->sum, 0};
    assert_int_equal(nwattn_pool_state_finish(ctx[b], 1, 3, 1, &st, o, 1, 0, lse, 0), NWATTN_OK);
}

/* Row 0: +inf keys in both shards; row 1: NaN in the second shard; row 2: ordinary. Each
 * backend's shard states, merged in either order, finish to the rules' result. */
static void test_partial_states_rules(void **state) {
    (void)state;
    const float q[3] = {0, 0, 0}, k[6] = {0, 1, 2, 3, 4, 5}, v[6] = {1, 2, 3, 4, 5, 6};
    float add[3 * 6] = {0};
    add[0 * 6 + 1] = INFINITY; /* shard 0 */
    add[0 * 6 + 4] = INFINITY; /* shard 1 */
    add[1 * 6 + 5] = NAN;
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0, 2.0f, NULL};
    for (int b = 0; b < N_CTX; b++)
        for (int order = 0; order < 2; order++) {
            shard_result s0, s1;
            nwattn_mask m0 = {0}, m1 = {0};
            m0.additive = add;
            m0.ld_additive = 6;
            m1.additive = add + 3; /* the whole mask's pointer + key_offset */
            m1.ld_additive = 6;
            partial(b, &sc, &m0, 3, 0, q, k, v, &s0);
            partial(b, &sc, &m1, 3, 3, q, k + 3, v + 3, &s1);
            assert_true(s0.max[0] == INFINITY && s0.sum[0] == 1.0f && s0.acc[0] == 2.0f);
            assert_true(isnan(s1.sum[1]) && isnan(s1.acc[1]));
            shard_result *into = order ? &s1 : &s0, *from = order ? &s0 : &s1;
            nwattn_pool_state a = {into->acc, 1, 0, into->max, into->sum, 0};
            nwattn_pool_state f = {from->acc, 1, 0, from->max, from->sum, 0};
            assert_int_equal(nwattn_pool_state_merge(ctx[b], 1, 3, 1, &a, &f), NWATTN_OK);
            float o[3], lse[3];
            finish(b, into, o, lse);
            assert_true(o[0] == 3.5f && lse[0] == INFINITY); /* (v1 + v4) / 2 */
            assert_true(isnan(o[1]) && isnan(lse[1]));
            assert_true(isfinite(o[2]) && isfinite(lse[2]));
        }
}

/* A shift beyond the float range cannot be stored: such rows become NaN states (documented),
 * never an empty state that would finish to a silent zero. */
static void test_partial_state_out_of_range(void **state) {
    (void)state;
    const float q[3] = {0.3f, 1.9f, 0}, k[3] = {0, 1, 2}, v[3] = {10, 20, 30};
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0, 1e-30f, NULL};
    for (int b = 0; b < N_CTX; b++) {
        shard_result r;
        partial(b, &sc, NULL, 3, 0, q, k, v, &r);
        assert_true(isnan(r.max[0]) && isnan(r.sum[0]) && isnan(r.acc[0]));
        assert_true(isnan(r.max[1]) && isnan(r.sum[1]));
        /* row 2 sits on key 0: its largest score is 0, in range */
        assert_true(r.max[2] == 0.0f && r.sum[2] == 1.0f && r.acc[2] == 10.0f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_rules),
        cmocka_unit_test(test_pool_nan_in_q_and_k),
        cmocka_unit_test(test_pool_inf_in_q_and_k),
        cmocka_unit_test(test_pool_nonfinite_values),
        cmocka_unit_test(test_average_pool_and_bmm),
        cmocka_unit_test(test_scores_agree),
        cmocka_unit_test(test_rules_across_tiles),
        cmocka_unit_test(test_tiny_bandwidth_across_tiles),
        cmocka_unit_test(test_partial_states_rules),
        cmocka_unit_test(test_partial_state_out_of_range),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
