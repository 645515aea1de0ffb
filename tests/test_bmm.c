/* nwattn_bmm: REFERENCE, BLAS and AUTO against a naive triple loop in double, on shapes that
 * take every code path: m = 1 and n = 1 (dot products), k = 1, d2l's (B,1,n)x(B,n,1), odd sizes,
 * padded leading dimensions, batch strides, stride-0 broadcast, batches up to 50, and the
 * batch split over worker threads.
 *
 * Tolerances (see oracle.h): per entry, BLAS (k + 4)u·sum_l |a_il b_lj| + u|c| (float
 * accumulation, worst case); REFERENCE 4u|c| + (k + 4)2^-52·sum_l |a_il b_lj| (double
 * accumulation, then one rounding). Integer data with exact sums must come out exact. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>

typedef struct bmm_shape {
    size_t batch, m, n, k;
    size_t pad, stride_pad;
    int bcast_a, bcast_b, tight_c;
} bmm_shape;

typedef struct bmm_call {
    const tu_mat *a, *b;
    tu_mat *c[4];
} bmm_call;

static nwattn_status call_bmm(nwattn_context *ctx, void *user, int which) {
    bmm_call *x = user;
    tu_mat *c = x->c[which];
    return nwattn_bmm(ctx, c->batch, c->rows, c->cols, x->a->cols, x->a->data, x->a->ld,
                      x->a->stride, x->b->data, x->b->ld, x->b->stride, c->data, c->ld,
                      c->stride);
}

static tu_mat make_in(const bmm_shape *sh, size_t rows, size_t cols, int bcast) {
    return bcast ? tu_mat_new_broadcast(sh->batch, rows, cols, sh->pad)
                 : tu_mat_new(sh->batch, rows, cols, sh->pad, sh->stride_pad);
}

static tu_mat make_out(const bmm_shape *sh) {
    size_t ld = sh->n + sh->pad;
    size_t stride = sh->tight_c ? (sh->m - 1) * ld + sh->n : sh->m * ld + sh->stride_pad;
    return tu_mat_new_layout(sh->batch, sh->m, sh->n, ld, stride);
}

/* integers != 0: small integers, so that every sum is exact in float. */
static void check_bmm(const bmm_shape *sh, uint64_t seed, int integers) {
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    tu_mat a = make_in(sh, sh->m, sh->k, sh->bcast_a), b = make_in(sh, sh->k, sh->n, sh->bcast_b);
    tu_mat_fill_uniform(&a, &rng, -1.0f, 1.0f);
    tu_mat_fill_uniform(&b, &rng, -2.0f, 2.0f);
    if (integers) {
        tu_mat *ab[2] = {&a, &b};
        for (int t = 0; t < 2; t++)
            for (size_t u = 0; u < ab[t]->batch; u++)
                for (size_t i = 0; i < ab[t]->rows; i++)
                    for (size_t j = 0; j < ab[t]->cols; j++)
                        *tu_at(ab[t], u, i, j) = (float)((int)tu_rng_below(&rng, 9) - 4);
    }
    tu_mat a0 = tu_mat_clone(&a), b0 = tu_mat_clone(&b);
    tu_mat want = make_out(sh), tol_blas = make_out(sh), tol_ref = make_out(sh);
    or_bmm(&a, &b, &want, &tol_blas, &tol_ref);

    tu_mat c[4];
    bmm_call x = {&a, &b, {NULL, NULL, NULL, NULL}};
    for (int t = 0; t < 4; t++) {
        c[t] = make_out(sh);
        x.c[t] = &c[t];
    }
    tu_backends bk;
    tu_backends_init(&bk);
    tu_run_both(&bk, call_bmm, &x);
    nwattn_context *autoctx = tu_context(NWATTN_BACKEND_AUTO);
    TU_ASSERT_OK(autoctx, call_bmm(autoctx, &x, 2));
    /* Worker threads split the batch: the same products, item by item. */
    nwattn_context *threaded = tu_context(NWATTN_BACKEND_BLAS);
    TU_ASSERT_OK(threaded, nwattn_context_set_threads(threaded, 3));
    TU_ASSERT_OK(threaded, call_bmm(threaded, &x, 3));
    nwattn_context_destroy(threaded);

    static const char *names[4] = {"REFERENCE", "BLAS", "AUTO", "BLAS, 3 threads"};
    for (int t = 0; t < 4; t++) {
        char what[160];
        snprintf(what, sizeof what, "bmm %s b=%zu m=%zu n=%zu k=%zu%s%s%s%s", names[t],
                 sh->batch, sh->m, sh->n, sh->k, sh->bcast_a ? " bcast-a" : "",
                 sh->bcast_b ? " bcast-b" : "", sh->tight_c ? " tight" : "",
                 integers ? " integers" : "");
        assert_true(tu_mat_padding_intact(&c[t], what));
        assert_true(tu_mat_no_nan(&c[t], what));
        if (integers)
            assert_true(tu_allclose(what, &c[t], &want, 0.0, 0.0));
        else
            assert_true(tu_allclose_tol(what, &c[t], &want, t == TU_REF ? &tol_ref : &tol_blas,
                                        0.0, 0.0));
    }
    assert_true(tu_mat_bits_equal(&a, &a0));
    assert_true(tu_mat_bits_equal(&b, &b0));
    nwattn_context_destroy(autoctx);
    tu_backends_fini(&bk);
    tu_mat *all[] = {&a, &b, &a0, &b0, &want, &tol_blas, &tol_ref, &c[0], &c[1], &c[2],
                      &c[3]};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
        tu_mat_free(all[t]);
}

static const bmm_shape shapes[] = {
    {1, 1, 1, 1, 0, 0, 0, 0, 0},
    {50, 1, 1, 50, 0, 0, 0, 0, 0},  /* d2l: (B,1,n) x (B,n,1) */
    {50, 1, 1, 49, 2, 3, 0, 0, 0},  /* the same, leave-one-out sized, padded */
    {37, 1, 1, 23, 0, 5, 0, 0, 0},  /* dot products with strided items */
    {9, 1, 1, 70, 0, 0, 0, 1, 0},   /* dot products, broadcast B */
    {3, 7, 1, 13, 1, 2, 0, 0, 0},   /* dv = 1: a matrix-vector product */
    {4, 1, 9, 13, 3, 0, 0, 0, 0},   /* one row */
    {3, 5, 7, 1, 1, 1, 0, 0, 0},    /* k = 1: an outer product */
    {2, 1, 1, 1, 0, 0, 0, 0, 0},
    {3, 13, 7, 11, 5, 7, 0, 0, 0},  /* odd, padded, strided */
    {4, 13, 7, 11, 2, 0, 1, 0, 0},  /* broadcast A */
    {4, 13, 7, 11, 2, 0, 0, 1, 0},  /* broadcast B */
    {5, 3, 1, 11, 1, 0, 0, 1, 0},   /* broadcast B, one column */
    {4, 1, 5, 11, 1, 0, 1, 0, 0},   /* broadcast A, one row */
    {3, 6, 5, 4, 2, 0, 1, 1, 0},    /* both broadcast */
    {6, 5, 7, 3, 2, 0, 0, 0, 1},    /* tight output stride */
    {50, 3, 5, 7, 1, 2, 0, 0, 0},   /* batch 50 */
    {50, 40, 41, 64, 1, 3, 0, 0, 0}, /* enough work to spread over worker threads */
    {2, 65, 33, 130, 3, 1, 0, 0, 0},
    {1, 2, 3, 1500, 0, 0, 0, 0, 0}, /* long inner dimension */
    {1, 1100, 3, 4, 1, 0, 0, 0, 0}, /* many rows */
    {1, 3, 1100, 2, 0, 0, 0, 0, 0}, /* many columns */
};

static void test_shapes_random(void **state) {
    (void)state;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
        check_bmm(&shapes[t], 100 + t, 0);
}

static void test_shapes_exact_integers(void **state) {
    (void)state;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
        check_bmm(&shapes[t], 200 + t, 1);
}

/* batch == 0, m == 0 and n == 0 write nothing. */
static void test_empty(void **state) {
    (void)state;
    tu_mat a = tu_mat_new(2, 3, 4, 1, 0), b = tu_mat_new(2, 4, 5, 1, 0);
    tu_mat_fill_value(&a, 1.0f);
    tu_mat_fill_value(&b, 1.0f);
    tu_mat c = tu_mat_new(2, 3, 5, 1, 0), c0 = tu_mat_clone(&c);
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        nwattn_context *ctx = bk.ctx[t];
        TU_ASSERT_OK(ctx, nwattn_bmm(ctx, 0, 3, 5, 4, a.data, a.ld, a.stride, b.data, b.ld,
                                     b.stride, c.data, c.ld, c.stride));
        TU_ASSERT_OK(ctx, nwattn_bmm(ctx, 2, 0, 5, 4, a.data, a.ld, a.stride, b.data, b.ld,
                                     b.stride, c.data, c.ld, c.stride));
        TU_ASSERT_OK(ctx, nwattn_bmm(ctx, 2, 3, 0, 4, a.data, a.ld, a.stride, b.data, b.ld,
                                     b.stride, c.data, c.ld, c.stride));
        assert_true(tu_mat_bits_equal(&c, &c0));
    }
    tu_backends_fini(&bk);
    tu_mat *all[] = {&a, &b, &c, &c0};
    for (size_t t = 0; t < 4; t++)
        tu_mat_free(all[t]);
}

/* k == 0: an empty sum, C = 0 (torch.bmm semantics), under every path (dot, gemv, gemm, batch). */
static void test_inner_dimension_zero(void **state) {
    (void)state;
    static const size_t shapes_mn[4][2] = {{1, 1}, {3, 1}, {1, 3}, {3, 4}};
    float a[1] = {1.0f}, b[1] = {1.0f};
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < 4; s++) {
            size_t m = shapes_mn[s][0], n = shapes_mn[s][1];
            tu_mat c = tu_mat_new(3, m, n, 1, 2);
            tu_mat_fill_value(&c, 7.0f);
            TU_ASSERT_OK(bk.ctx[t], nwattn_bmm(bk.ctx[t], 3, m, n, 0, a, 1, 0, b, n, 0, c.data,
                                               c.ld, c.stride));
            tu_mat zero = tu_mat_new(3, m, n, 0, 0);
            tu_mat_fill_value(&zero, 0.0f);
            assert_true(tu_allclose("bmm k=0", &c, &zero, 0.0, 0.0));
            assert_true(tu_mat_padding_intact(&c, "bmm k=0"));
            tu_mat_free(&c);
            tu_mat_free(&zero);
        }
    tu_backends_fini(&bk);
}

/* The product of weights and values is a weighted average: rows of W summing to 1 against a
 * constant V column give that constant. */
static void test_weighted_average(void **state) {
    (void)state;
    const size_t m = 4, n = 9;
    tu_rng rng;
    tu_rng_seed(&rng, 5);
    tu_mat w = tu_mat_new(1, m, n, 0, 0), v = tu_mat_new(1, n, 2, 0, 0);
    for (size_t i = 0; i < m; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) {
            *tu_at(&w, 0, i, j) = tu_rng_range(&rng, 0.0f, 1.0f);
            sum += (double)tu_get(&w, 0, i, j);
        }
        for (size_t j = 0; j < n; j++)
            *tu_at(&w, 0, i, j) = (float)((double)tu_get(&w, 0, i, j) / sum);
    }
    for (size_t j = 0; j < n; j++) {
        *tu_at(&v, 0, j, 0) = 2.5f;
        *tu_at(&v, 0, j, 1) = (float)j;
    }
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        tu_mat o = tu_mat_new(1, m, 2, 1, 0);
        TU_ASSERT_OK(bk.ctx[t], nwattn_bmm(bk.ctx[t], 1, m, 2, n, w.data, w.ld, 0, v.data, v.ld,
                                           0, o.data, o.ld, 0));
        for (size_t i = 0; i < m; i++) {
            /* (n + 4)u relative: the rows of w sum to 1 within n·u */
            assert_true(fabs((double)tu_get(&o, 0, i, 0) - 2.5) <= 2.5 * 2 * (double)(n + 4) * TU_U);
            double mean = 0.0;
            for (size_t j = 0; j < n; j++)
                mean += (double)tu_get(&w, 0, i, j) * (double)j;
            assert_true(fabs((double)tu_get(&o, 0, i, 1) - mean) <=
                        (double)n * (double)(n + 4) * TU_U);
        }
        tu_mat_free(&o);
    }
    tu_backends_fini(&bk);
    tu_mat_free(&w);
    tu_mat_free(&v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_random),
        cmocka_unit_test(test_shapes_exact_integers),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_inner_dimension_zero),
        cmocka_unit_test(test_weighted_average),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
