/* Aliasing by elements (issue 11): operands may share a buffer as long as they share no
 * element. Valid layouts whose spans overlap ([Q | O], [A | C], interleaved batch items, an
 * in-place softmax of batch 1 with another stride) through the public API against direct
 * computations; layouts that share one element refused; and the internal lattice test
 * (src/lattice.c, linked directly) against brute-force enumeration of elements. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "lattice.h"

static void fill(float *x, size_t count, tu_rng *rng) {
    for (size_t i = 0; i < count; i++)
        x[i] = tu_rng_range(rng, -1.0f, 1.0f);
}

static void assert_close(double got, double want, const char *what, size_t at) {
    if (!(fabs(got - want) <= 1e-5 + 1e-5 * fabs(want))) {
        fprintf(stderr, "%s[%zu] = %.9g, want %.9g\n", what, at, got, want);
        fail();
    }
}

/* C_b = A_b·B_b directly, in double. */
static void direct_bmm(size_t batch, size_t m, size_t n, size_t k, const float *a, size_t lda,
                       size_t sa, const float *b, size_t ldb, size_t sb, double *c) {
    for (size_t t = 0; t < batch; t++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double sum = 0.0;
                for (size_t p = 0; p < k; p++)
                    sum += (double)a[t * sa + i * lda + p] * (double)b[t * sb + p * ldb + j];
                c[(t * m + i) * n + j] = sum;
            }
}

static void check_bmm(const float *c, size_t ldc, size_t sc, const double *want, size_t batch,
                      size_t m, size_t n) {
    for (size_t t = 0; t < batch; t++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                assert_close(c[t * sc + i * ldc + j], want[(t * m + i) * n + j], "C",
                             (t * m + i) * n + j);
}

/* ---- Valid layouts whose spans overlap ------------------------------------------------- */

/* O in the spare columns of [Q | O]: one buffer, ld = d + dv, O at column d of Q's rows. */
static void test_pool_output_beside_queries(void **state) {
    (void)state;
    enum { B = 2, M = 5, N = 7, D = 3, DV = 4, LD = D + DV };
    const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                       NWATTN_BACKEND_FUSED};
    for (size_t be = 0; be < sizeof backends / sizeof backends[0]; be++) {
        tu_rng rng;
        tu_rng_seed(&rng, 11 + be);
        float qo[B * M * LD], k[B * N * D], v[B * N * DV], q0[B * M * LD];
        fill(qo, B * M * LD, &rng);
        fill(k, B * N * D, &rng);
        fill(v, B * N * DV, &rng);
        memcpy(q0, qo, sizeof qo);
        nwattn_context *ctx = tu_context(backends[be]);
        const nwattn_score score = {NWATTN_SCORE_DOT, 0.5f, 0.0f, NULL};
        TU_ASSERT_OK(ctx, nwattn_pool(ctx, &score, NULL, B, M, N, D, DV, qo, LD, M * LD, k, D,
                                      N * D, v, DV, N * DV, qo + D, LD, M * LD, NULL, 0, 0,
                                      NULL, 0));
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < M; i++) {
                const float *q = q0 + b * M * LD + i * LD;
                double s[N], mx = -INFINITY, sum = 0.0;
                for (size_t j = 0; j < N; j++) {
                    s[j] = 0.0;
                    for (size_t c = 0; c < D; c++)
                        s[j] += (double)q[c] * (double)k[b * N * D + j * D + c];
                    s[j] *= 0.5;
                    mx = fmax(mx, s[j]);
                }
                for (size_t j = 0; j < N; j++)
                    sum += (s[j] = exp(s[j] - mx));
                for (size_t c = 0; c < DV; c++) {
                    double o = 0.0;
                    for (size_t j = 0; j < N; j++)
                        o += s[j] / sum * (double)v[b * N * DV + j * DV + c];
                    assert_close(qo[b * M * LD + i * LD + D + c], o, "O", c);
                }
                for (size_t c = 0; c < D; c++) /* Q's columns untouched */
                    assert_true(qo[b * M * LD + i * LD + c] == q[c]);
            }
        nwattn_context_destroy(ctx);
    }
}

/* nwattn_bmm writing the right half of [A | C]. */
static void test_bmm_right_half(void **state) {
    (void)state;
    enum { B = 3, M = 6, K = 4, N = 5, LD = K + N };
    tu_rng rng;
    tu_rng_seed(&rng, 21);
    float ac[B * M * LD], b[B * K * N], a0[B * M * LD];
    double want[B * M * N];
    fill(ac, B * M * LD, &rng);
    fill(b, B * K * N, &rng);
    memcpy(a0, ac, sizeof ac);
    direct_bmm(B, M, N, K, ac, LD, M * LD, b, N, K * N, want);
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    TU_ASSERT_OK(ctx, nwattn_bmm(ctx, B, M, N, K, ac, LD, M * LD, b, N, K * N, ac + K, LD,
                                 M * LD));
    check_bmm(ac + K, LD, M * LD, want, B, M, N);
    for (size_t t = 0; t < B; t++)
        for (size_t i = 0; i < M; i++)
            for (size_t p = 0; p < K; p++)
                assert_true(ac[t * M * LD + i * LD + p] == a0[t * M * LD + i * LD + p]);
    nwattn_context_destroy(ctx);
}

/* Batch items of A and C alternate in one buffer: stride 2·M·LD, C offset by M·LD. */
static void test_bmm_interleaved_items(void **state) {
    (void)state;
    enum { B = 4, M = 3, K = 5, N = 5, LD = 5, S = 2 * M * LD };
    tu_rng rng;
    tu_rng_seed(&rng, 31);
    float buf[B * S], b[B * K * N], a0[B * S];
    double want[B * M * N];
    fill(buf, B * S, &rng);
    fill(b, B * K * N, &rng);
    memcpy(a0, buf, sizeof buf);
    direct_bmm(B, M, N, K, buf, LD, S, b, N, K * N, want);
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    TU_ASSERT_OK(ctx, nwattn_bmm(ctx, B, M, N, K, buf, LD, S, b, N, K * N, buf + M * LD, LD, S));
    check_bmm(buf + M * LD, LD, S, want, B, M, N);
    for (size_t t = 0; t < B; t++) /* the A items untouched */
        assert_memory_equal(buf + t * S, a0 + t * S, M * LD * sizeof(float));
    nwattn_context_destroy(ctx);
}

/* In place with batch 1: the strides are ignored (nwattn.h), so they may differ. */
static void test_in_place_batch_one_other_stride(void **state) {
    (void)state;
    enum { M = 3, N = 4, LD = 6 };
    tu_rng rng;
    tu_rng_seed(&rng, 41);
    float s[M * LD], s0[M * LD];
    fill(s, M * LD, &rng);
    memcpy(s0, s, sizeof s);
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    TU_ASSERT_OK(ctx, nwattn_softmax(ctx, NULL, 1, M, N, s, LD, 7, s, LD, 99, NULL, 0));
    for (size_t i = 0; i < M; i++) {
        double mx = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < N; j++)
            mx = fmax(mx, (double)s0[i * LD + j]);
        for (size_t j = 0; j < N; j++)
            sum += exp((double)s0[i * LD + j] - mx);
        for (size_t j = 0; j < N; j++)
            assert_close(s[i * LD + j], exp((double)s0[i * LD + j] - mx) / sum, "W", i * LD + j);
        for (size_t j = N; j < LD; j++) /* padding untouched */
            assert_true(s[i * LD + j] == s0[i * LD + j]);
    }

    /* nwattn_pool_state_finish: o = acc, batch 1, another stride. */
    enum { DV = 2 };
    float acc[M * DV] = {1, 2, 3, 4, 5, 6}, mx[M] = {0, 1, 2}, sum[M] = {2, 4, 0};
    nwattn_pool_state st = {acc, DV, 5, mx, sum, 0};
    float lse[M];
    TU_ASSERT_OK(ctx, nwattn_pool_state_finish(ctx, 1, M, DV, &st, acc, DV, 123, lse, 0));
    const float want[M * DV] = {0.5f, 1.0f, 0.75f, 1.0f, 0.0f, 0.0f};
    for (size_t i = 0; i < M * DV; i++)
        assert_true(acc[i] == want[i]);
    assert_close(lse[1], 1.0 + log(4.0), "lse", 1);
    assert_true(isinf(lse[2]) && lse[2] < 0);
    nwattn_context_destroy(ctx);
}

/* ---- Layouts that share an element: still refused -------------------------------------- */

static void test_one_shared_element_refused(void **state) {
    (void)state;
    enum { B = 2, M = 3, K = 4, N = 4, LD = K + N };
    static float buf[4 * B * M * LD], b[B * K * N];
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    const size_t last_a = (B - 1) * M * LD + (M - 1) * LD + K - 1; /* A's bottom-right corner */
    /* C's top-left element is A's bottom-right one. */
    assert_int_equal(nwattn_bmm(ctx, B, M, N, K, buf, LD, M * LD, b, N, K * N, buf + last_a,
                                LD, M * LD),
                     NWATTN_ERR_ALIASING);
    /* C's bottom-right element is A's top-left one (C before A in the buffer). */
    const size_t last_c = (B - 1) * M * LD + (M - 1) * LD + N - 1;
    assert_int_equal(nwattn_bmm(ctx, B, M, N, K, buf + last_c, LD, M * LD, b, N, K * N, buf, LD,
                                M * LD),
                     NWATTN_ERR_ALIASING);
    /* [A | C] with C one column early: the columns overlap by one. */
    assert_int_equal(nwattn_bmm(ctx, B, M, N, K, buf, LD, M * LD, b, N, K * N, buf + K - 1, LD,
                                M * LD),
                     NWATTN_ERR_ALIASING);
    /* Interleaved items (dense rows: ld = K = N) shifted by one element either way. */
    enum { LD2 = K, S2 = 2 * M * LD2 };
    assert_int_equal(nwattn_bmm(ctx, B, M, N, K, buf, LD2, S2, b, N, K * N,
                                buf + M * LD2 - 1, LD2, S2),
                     NWATTN_ERR_ALIASING);
    assert_int_equal(nwattn_bmm(ctx, B, M, N, K, buf, LD2, S2, b, N, K * N,
                                buf + M * LD2 + 1, LD2, S2),
                     NWATTN_ERR_ALIASING);
    /* ... and unshifted they are fine. */
    TU_ASSERT_OK(ctx, nwattn_bmm(ctx, B, M, N, K, buf, LD2, S2, b, N, K * N, buf + M * LD2, LD2,
                                 S2));
    /* In place needs the same ld, and with batch > 1 the same stride. */
    assert_int_equal(nwattn_softmax(ctx, NULL, 2, M, N, buf, LD, M * LD, buf, LD, M * LD + 1,
                                    NULL, 0),
                     NWATTN_ERR_ALIASING);
    assert_int_equal(nwattn_softmax(ctx, NULL, 1, M, N, buf, LD, 0, buf, LD + 1, 0, NULL, 0),
                     NWATTN_ERR_ALIASING);
    /* lse in S's padding is fine, on its last element is not. */
    TU_ASSERT_OK(ctx, nwattn_softmax(ctx, NULL, 1, 2, N, buf, LD, 0, buf + 3 * LD, LD, 0,
                                     buf + N, 0));
    assert_int_equal(nwattn_softmax(ctx, NULL, 1, 2, N, buf, LD, 0, buf + 3 * LD, LD, 0,
                                    buf + LD + N - 2, 0),
                     NWATTN_ERR_ALIASING);
    nwattn_context_destroy(ctx);
}

/* ---- The lattice test against brute force ---------------------------------------------- */

typedef struct layout {
    uintptr_t data;
    size_t elem, batch, rows, cols, ld, stride;
} layout;

static int fits(const layout *l) {
    if (l->batch == 0 || l->rows == 0 || l->cols == 0)
        return 1;
    /* ((batch-1)·stride + (rows-1)·ld + cols)·elem + data <= UINTPTR_MAX, without overflow */
    const size_t lim = SIZE_MAX;
    size_t x = 0;
    if (l->batch > 1 && l->stride > lim / (l->batch - 1))
        return 0;
    x = (l->batch - 1) * l->stride;
    if (l->rows > 1 && l->ld > (lim - x) / (l->rows - 1))
        return 0;
    x += (l->rows - 1) * l->ld;
    if (l->cols > lim - x)
        return 0;
    x += l->cols;
    if (x > lim / l->elem)
        return 0;
    return x * l->elem <= UINTPTR_MAX - l->data;
}

static void make(nw_lattice *out, const layout *l) {
    nw_lattice_make(out, l->data, l->elem, l->batch, l->rows, l->cols, l->ld, l->stride);
}

static uintptr_t elem_at(const layout *l, size_t b, size_t i, size_t j) {
    return l->data + ((l->batch > 1 ? b * l->stride : 0) + (l->rows > 1 ? i * l->ld : 0) + j) *
                         l->elem;
}

/* Element by element, pairwise (any addresses). */
static int brute_pairs(const layout *a, const layout *b) {
    for (size_t ab = 0; ab < a->batch; ab++)
        for (size_t ai = 0; ai < a->rows; ai++)
            for (size_t aj = 0; aj < a->cols; aj++) {
                const uintptr_t x = elem_at(a, ab, ai, aj);
                for (size_t bb = 0; bb < b->batch; bb++)
                    for (size_t bi = 0; bi < b->rows; bi++)
                        for (size_t bj = 0; bj < b->cols; bj++) {
                            const uintptr_t y = elem_at(b, bb, bi, bj);
                            if (x < y + b->elem && y < x + a->elem)
                                return 1;
                        }
            }
    return 0;
}

/* Element by element through a byte map of [origin, origin + bytes). */
static int brute_map(const layout *a, const layout *b, uintptr_t origin, unsigned char *map,
                     size_t bytes) {
    memset(map, 0, bytes);
    for (size_t t = 0; t < a->batch; t++)
        for (size_t i = 0; i < a->rows; i++)
            for (size_t j = 0; j < a->cols; j++)
                memset(map + (elem_at(a, t, i, j) - origin), 1, a->elem);
    for (size_t t = 0; t < b->batch; t++)
        for (size_t i = 0; i < b->rows; i++)
            for (size_t j = 0; j < b->cols; j++) {
                const uintptr_t at = elem_at(b, t, i, j) - origin;
                for (size_t e = 0; e < b->elem; e++)
                    if (map[at + e])
                        return 1;
            }
    return 0;
}

static void report(const char *what, const layout *a, const layout *b, int got, int want) {
    fprintf(stderr,
            "%s: share = %d, brute force %d\n"
            "  a: data %#jx elem %zu batch %zu rows %zu cols %zu ld %zu stride %zu\n"
            "  b: data %#jx elem %zu batch %zu rows %zu cols %zu ld %zu stride %zu\n",
            what, got, want, (uintmax_t)a->data, a->elem, a->batch, a->rows, a->cols, a->ld,
            a->stride, (uintmax_t)b->data, b->elem, b->batch, b->rows, b->cols, b->ld,
            b->stride);
}

static const size_t elems[] = {1, 2, 4, 8};

/* A random small layout within `room` bytes from origin; ld >= cols, any stride. aligned: data
 * a multiple of the element size. */
static layout random_layout(tu_rng *rng, uintptr_t origin, size_t room, int aligned,
                            size_t max_rows) {
    for (;;) {
        layout l;
        l.elem = elems[tu_rng_below(rng, 4)];
        /* empty now and then (a zero dimension) */
        const int empty = tu_rng_below(rng, 16) == 0;
        l.batch = tu_rng_below(rng, 4) + !empty;
        l.rows = tu_rng_below(rng, max_rows) + !empty;
        l.cols = tu_rng_below(rng, 5) + !empty;
        l.ld = l.cols + (tu_rng_below(rng, 3) == 0 ? 0 : tu_rng_below(rng, 9));
        switch (tu_rng_below(rng, 4)) {
        case 0: /* any stride, overlapping items too */
            l.stride = tu_rng_below(rng, 40);
            break;
        case 1: /* whole rows apart */
            l.stride = l.ld * tu_rng_below(rng, l.rows + 3);
            break;
        default: { /* items kept apart, as for an output */
            const size_t item = l.rows && l.cols ? (l.rows - 1) * l.ld + l.cols : 0;
            l.stride = item + tu_rng_below(rng, 12);
        }
        }
        size_t off = tu_rng_below(rng, room);
        if (aligned)
            off -= off % l.elem;
        l.data = origin + off;
        const size_t span =
            l.batch && l.rows && l.cols
                ? ((l.batch - 1) * l.stride + (l.rows - 1) * l.ld + l.cols) * l.elem
                : 0;
        if (off + span <= room)
            return l;
    }
}

static void check_pair(const layout *a, const layout *b, int want) {
    nw_lattice la, lb;
    make(&la, a);
    make(&lb, b);
    const int got = nw_lattices_share(&la, &lb), back = nw_lattices_share(&lb, &la);
    if (got != want || back != want) {
        report(got != want ? "a, b" : "b, a", a, b, got != want ? got : back, want);
        fail();
    }
}

static void test_lattice_random_small(void **state) {
    (void)state;
    enum { ROOM = 1 << 12 };
    static unsigned char map[ROOM];
    tu_rng rng;
    tu_rng_seed(&rng, 51);
    const uintptr_t origins[] = {0x10000, UINTPTR_MAX - ROOM}; /* the end fits too */
    size_t shared = 0, total = 0;
    for (size_t o = 0; o < 2; o++)
        for (int round = 0; round < 60000; round++) {
            /* A small room makes the two meet often. */
            const size_t room = round % 3 == 0 ? ROOM : 64 + tu_rng_below(&rng, 400);
            const size_t max_rows = round % 5 == 0 ? 30 : 5;
            const int aligned = round % 4 != 0;
            const layout a = random_layout(&rng, origins[o], room, aligned, max_rows);
            const layout b = random_layout(&rng, origins[o], room, aligned, max_rows);
            const int want = brute_map(&a, &b, origins[o], map, room);
            check_pair(&a, &b, want);
            shared += (size_t)want;
            total++;
        }
    /* Both answers are well represented. */
    printf("lattice pairs sharing an element: %zu of %zu\n", shared, total);
    assert_true(shared > total / 10 && shared < total - total / 10);
}

/* Rows of different pitches interleaving over many rows: the modular path of lattice.c. */
static void test_lattice_random_pitches(void **state) {
    (void)state;
    enum { ROOM = 1 << 14 };
    static unsigned char map[ROOM];
    tu_rng rng;
    tu_rng_seed(&rng, 61);
    for (int round = 0; round < 20000; round++) {
        layout l[2];
        for (int s = 0; s < 2; s++) {
            l[s].elem = 1 + tu_rng_below(&rng, 2) * 3;
            l[s].batch = 1 + tu_rng_below(&rng, 3);
            l[s].cols = 1 + tu_rng_below(&rng, 4);
            l[s].ld = l[s].cols + 1 + tu_rng_below(&rng, 30);
            l[s].rows = 1 + tu_rng_below(&rng, 120);
            l[s].stride = (l[s].rows - 1) * l[s].ld + l[s].cols + tu_rng_below(&rng, 50);
            l[s].data = 0x1000 + tu_rng_below(&rng, 64);
        }
        size_t span[2];
        for (int s = 0; s < 2; s++)
            span[s] = ((l[s].batch - 1) * l[s].stride + (l[s].rows - 1) * l[s].ld + l[s].cols) *
                      l[s].elem;
        if (span[0] + 64 > ROOM || span[1] + 64 > ROOM)
            continue;
        check_pair(&l[0], &l[1], brute_map(&l[0], &l[1], 0x1000, map, ROOM));
    }
}

/* Huge pitches and addresses near the top: pairwise enumeration of the (few) elements. */
static void test_lattice_random_huge(void **state) {
    (void)state;
    tu_rng rng;
    tu_rng_seed(&rng, 71);
    int done = 0;
    while (done < 50000) {
        layout l[2];
        const uintptr_t top = (uintptr_t)tu_rng_u64(&rng) | ((uintptr_t)1 << 63);
        const size_t unit = (size_t)1 << tu_rng_below(&rng, 62);
        for (int s = 0; s < 2; s++) {
            l[s].elem = elems[tu_rng_below(&rng, 4)];
            l[s].batch = tu_rng_below(&rng, 4);
            l[s].rows = tu_rng_below(&rng, 4);
            l[s].cols = tu_rng_below(&rng, 4);
            l[s].ld = l[s].cols + tu_rng_below(&rng, 3) * (tu_rng_below(&rng, 2) ? unit : 1);
            l[s].stride = tu_rng_below(&rng, 4) * (tu_rng_below(&rng, 2) ? unit : 3) +
                          tu_rng_below(&rng, 3);
            l[s].data = top - tu_rng_below(&rng, 3) * unit - tu_rng_below(&rng, 64);
        }
        if (!fits(&l[0]) || !fits(&l[1]))
            continue;
        check_pair(&l[0], &l[1], brute_pairs(&l[0], &l[1]));
        done++;
    }
}

/* Large operands are answered without visiting their elements: a [Q | O] pair of 2^20 rows
 * each, and interleaved items, both disjoint; one element in common. */
static void test_lattice_large(void **state) {
    (void)state;
    const size_t m = (size_t)1 << 20, d = 64, dv = 64, ld = d + dv;
    nw_lattice q, o, x, y;
    nw_lattice_make(&q, 0x100000, 4, 8, m, d, ld, m * ld);
    nw_lattice_make(&o, 0x100000 + 4 * d, 4, 8, m, dv, ld, m * ld);
    assert_false(nw_lattices_share(&q, &o));
    nw_lattice_make(&o, 0x100000 + 4 * (d - 1), 4, 8, m, dv, ld, m * ld);
    assert_true(nw_lattices_share(&q, &o));
    /* different leading dimensions, one period apart */
    nw_lattice_make(&x, 0x100000, 4, 1, m, 1, 2, 0);
    nw_lattice_make(&y, 0x100000 + 4, 4, 1, m / 2, 1, 4, 0);
    assert_false(nw_lattices_share(&x, &y));
    nw_lattice_make(&y, 0x100000 + 8 * (m - 1), 4, 1, m / 2, 1, 3, 0);
    assert_true(nw_lattices_share(&x, &y));
    /* interleaved items of many rows */
    nw_lattice_make(&x, 0x100000, 4, 1 << 10, 1 << 10, 16, 16, 2 << 14);
    nw_lattice_make(&y, 0x100000 + 4 * (1 << 14), 4, 1 << 10, 1 << 10, 16, 16, 2 << 14);
    assert_false(nw_lattices_share(&x, &y));
    nw_lattice_make(&y, 0x100000 + 4 * (1 << 14) - 4, 4, 1 << 10, 1 << 10, 16, 16, 2 << 14);
    assert_true(nw_lattices_share(&x, &y));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_output_beside_queries),
        cmocka_unit_test(test_bmm_right_half),
        cmocka_unit_test(test_bmm_interleaved_items),
        cmocka_unit_test(test_in_place_batch_one_other_stride),
        cmocka_unit_test(test_one_shared_element_refused),
        cmocka_unit_test(test_lattice_random_small),
        cmocka_unit_test(test_lattice_random_pitches),
        cmocka_unit_test(test_lattice_random_huge),
        cmocka_unit_test(test_lattice_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
