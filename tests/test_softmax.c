/* nwattn_softmax: every mask kind alone and combined, under REFERENCE and BLAS, against a
 * double-precision oracle; masked entries exactly 0, fully masked rows all zero with
 * lse == -INFINITY, rows summing to 1, in-place operation, large scores (max shift).
 *
 * Tolerances (see oracle.h; R = largest |s + additive| over kept keys):
 *   weights REFERENCE (8 + 4R)u relative, BLAS (n + 16 + 8R)u relative (float shift, expf and
 *   an n-term float sum); both 1e-35 absolute for underflowing weights.
 *   lse REFERENCE (8 + 4R)u, BLAS (n + 16 + 8R)u absolute, plus 2u relative.
 *   Row sums: |sum - 1| <= (2n + 8)u. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sm_shape {
    size_t batch, m, n;
    size_t pad;     /* row padding of s and w */
    int bcast_s;    /* s with stride 0 */
    size_t lse_gap; /* stride_lse = m + lse_gap */
    float lo, hi;   /* scores uniform on [lo, hi) */
    double neginf;  /* fraction of -INFINITY scores */
} sm_shape;

typedef struct sm_call {
    const nwattn_mask *mask;
    const tu_mat *s;
    tu_mat *w[2], *lse[2]; /* lse[which] may be NULL */
} sm_call;

static nwattn_status call_softmax(nwattn_context *ctx, void *user, int which) {
    sm_call *c = user;
    tu_mat *w = c->w[which], *lse = c->lse[which];
    return nwattn_softmax(ctx, c->mask, c->s->batch, c->s->rows, c->s->cols, c->s->data,
                          c->s->ld, c->s->stride, w->data, w->ld, w->stride,
                          lse ? lse->data : NULL, lse ? lse->stride : 0);
}

static tu_mat make_scores(const sm_shape *sh, tu_rng *rng) {
    tu_mat s = sh->bcast_s ? tu_mat_new_broadcast(sh->batch, sh->m, sh->n, sh->pad)
                           : tu_mat_new(sh->batch, sh->m, sh->n, sh->pad, 3);
    tu_mat_fill_uniform(&s, rng, sh->lo, sh->hi);
    if (sh->neginf > 0.0)
        for (size_t b = 0; b < s.batch; b++)
            for (size_t i = 0; i < s.rows; i++)
                for (size_t j = 0; j < s.cols; j++)
                    if (tu_rng_unit(rng) < sh->neginf)
                        *tu_at(&s, b, i, j) = -INFINITY;
    return s;
}

static tu_mat make_lse(const sm_shape *sh) {
    return tu_mat_new_layout(sh->batch, 1, sh->m, sh->m, sh->m + sh->lse_gap);
}

/* Is (b, i, j) masked by the mask or by a -INFINITY score + additive? */
static int entry_masked(const nwattn_mask *mask, const tu_mat *s, size_t b, size_t i, size_t j) {
    double x = (double)tu_get(s, b, i, j) + or_additive(mask, b, i, j);
    return or_masked(mask, b, s->rows, s->cols, i, j) || x == -INFINITY;
}

/* Structural checks every result must pass: masked entries exactly 0, fully masked rows all
 * zero with lse -INFINITY, other rows summing to 1. */
static void check_structure(const char *what, const nwattn_mask *mask, const tu_mat *s,
                            const tu_mat *w, const tu_mat *lse) {
    size_t n = s->cols;
    for (size_t b = 0; b < s->batch; b++)
        for (size_t i = 0; i < s->rows; i++) {
            double sum = 0.0;
            size_t kept = 0;
            for (size_t j = 0; j < n; j++) {
                float x = tu_get(w, b, i, j);
                if (entry_masked(mask, s, b, i, j)) {
                    if (x != 0.0f) {
                        print_message("%s: masked entry [%zu,%zu,%zu] = %.9g, not 0\n", what, b,
                                      i, j, (double)x);
                        fail();
                    }
                } else {
                    kept++;
                }
                sum += (double)x;
            }
            if (kept == 0) {
                assert_true(sum == 0.0);
                if (lse != NULL && tu_get(lse, b, 0, i) != -INFINITY) {
                    print_message("%s: fully masked row [%zu,%zu] has lse %.9g\n", what, b, i,
                                  (double)tu_get(lse, b, 0, i));
                    fail();
                }
            } else if (fabs(sum - 1.0) > (2.0 * (double)n + 8.0) * TU_U) {
                print_message("%s: row [%zu,%zu] sums to 1 %+.3g\n", what, b, i, sum - 1.0);
                fail();
            }
        }
}

/* One shape and mask under both backends, with and without lse, against the oracle. */
static void check_softmax(const sm_shape *sh, unsigned parts, uint64_t seed, const char *label) {
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    tu_mat s = make_scores(sh, &rng);
    or_mask mk;
    or_mask_make(&mk, parts, sh->batch, sh->m, sh->n, &rng);
    const nwattn_mask *mask = or_mask_get(&mk);
    tu_mat s0 = tu_mat_clone(&s);

    tu_mat want_w = tu_mat_new(sh->batch, sh->m, sh->n, 0, 0), want_lse = make_lse(sh);
    double range = or_softmax(mask, &s, &want_w, &want_lse);

    tu_mat w[2], lse[2], w_nolse[2];
    for (int t = 0; t < 2; t++) {
        w[t] = tu_mat_new(sh->batch, sh->m, sh->n, sh->pad, 2);
        w_nolse[t] = tu_mat_new(sh->batch, sh->m, sh->n, sh->pad, 2);
        lse[t] = make_lse(sh);
    }
    sm_call c = {mask, &s, {&w[0], &w[1]}, {&lse[0], &lse[1]}};
    sm_call c2 = {mask, &s, {&w_nolse[0], &w_nolse[1]}, {NULL, NULL}};
    tu_backends bk;
    tu_backends_init(&bk);
    tu_run_both(&bk, call_softmax, &c);
    tu_run_both(&bk, call_softmax, &c2);

    const double rtol_w[2] = {or_rtol_weights_ref(range), or_rtol_weights_blas(sh->n, range, 0)};
    const double atol_l[2] = {or_atol_lse_ref(range), or_atol_lse_blas(sh->n, range, 0)};
    static const char *names[2] = {"REFERENCE", "BLAS"};
    for (int t = 0; t < 2; t++) {
        char what[200];
        snprintf(what, sizeof what, "softmax %s %s weights", label, names[t]);
        assert_true(tu_mat_padding_intact(&w[t], what));
        assert_true(tu_mat_no_nan(&w[t], what));
        assert_true(tu_allclose(what, &w[t], &want_w, OR_ATOL_WEIGHT, rtol_w[t]));
        check_structure(what, mask, &s, &w[t], &lse[t]);
        snprintf(what, sizeof what, "softmax %s %s lse", label, names[t]);
        assert_true(tu_mat_padding_intact(&lse[t], what));
        assert_true(tu_mat_no_nan(&lse[t], what));
        assert_true(tu_allclose(what, &lse[t], &want_lse, atol_l[t], 2 * TU_U));
        /* Asking for lse does not change the weights. */
        assert_true(tu_allclose("weights without lse", &w_nolse[t], &w[t], 0.0, 0.0));
    }
    char what[200];
    snprintf(what, sizeof what, "softmax %s BLAS vs REFERENCE", label);
    assert_true(tu_allclose(what, &w[TU_BLAS], &w[TU_REF], OR_ATOL_WEIGHT, rtol_w[1] + rtol_w[0]));
    assert_true(tu_mat_bits_equal(&s, &s0));

    tu_backends_fini(&bk);
    for (int t = 0; t < 2; t++) {
        tu_mat_free(&w[t]);
        tu_mat_free(&w_nolse[t]);
        tu_mat_free(&lse[t]);
    }
    tu_mat_free(&want_w);
    tu_mat_free(&want_lse);
    tu_mat_free(&s);
    tu_mat_free(&s0);
    or_mask_free(&mk);
}

static const sm_shape shapes[] = {
    {1, 1, 1, 0, 0, 0, -3.0f, 3.0f, 0.0},
    {3, 7, 13, 2, 0, 1, -3.0f, 3.0f, 0.0},
    {2, 13, 7, 0, 0, 0, -5.0f, 5.0f, 0.0}, /* m > n: rows past the last key */
    {4, 5, 1, 1, 0, 2, -3.0f, 3.0f, 0.0},
    {1, 3, 1500, 1, 0, 0, -8.0f, 8.0f, 0.0},
    {1, 1100, 3, 0, 0, 0, -8.0f, 8.0f, 0.0},
    {3, 6, 9, 3, 1, 4, -3.0f, 3.0f, 0.0}, /* broadcast scores */
    {2, 6, 9, 1, 0, 0, -3.0f, 3.0f, 0.25}, /* -INFINITY scores */
};

static void run_shapes(unsigned parts, const char *name, uint64_t seed) {
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const sm_shape *sh = &shapes[t];
        char label[160];
        snprintf(label, sizeof label, "[%s] b=%zu m=%zu n=%zu%s%s", name, sh->batch, sh->m, sh->n,
                 sh->bcast_s ? " bcast" : "", sh->neginf > 0 ? " -inf" : "");
        check_softmax(sh, parts, seed + 31 * t, label);
    }
}

static void test_no_mask(void **state) {
    (void)state;
    run_shapes(0, "none", 1000);
}
static void test_leave_one_out(void **state) {
    (void)state;
    run_shapes(OR_LOO, "leave-one-out", 2000);
}
static void test_causal(void **state) {
    (void)state;
    run_shapes(OR_CAUSAL, "causal", 3000);
}
static void test_valid_lens_per_item(void **state) {
    (void)state;
    run_shapes(OR_LENS_ITEM, "lens/item", 4000);
}
static void test_valid_lens_per_row(void **state) {
    (void)state;
    run_shapes(OR_LENS_ROW, "lens/row", 5000);
}
static void test_additive(void **state) {
    (void)state;
    run_shapes(OR_ADDITIVE, "additive", 6000);
    run_shapes(OR_ADDITIVE | OR_ADDITIVE_NEGINF, "additive -inf", 6500);
    run_shapes(OR_ADDITIVE | OR_BROADCAST, "additive bcast", 6700);
}
static void test_keep(void **state) {
    (void)state;
    run_shapes(OR_KEEP, "keep", 7000);
    run_shapes(OR_KEEP | OR_BROADCAST, "keep bcast", 7500);
}

/* Every combination of the mask parts. */
static void test_combined_masks(void **state) {
    (void)state;
    static const unsigned lens[3] = {0, OR_LENS_ITEM, OR_LENS_ROW};
    static const unsigned add[3] = {0, OR_ADDITIVE, OR_ADDITIVE | OR_ADDITIVE_NEGINF};
    static const sm_shape small[] = {
        {3, 6, 9, 1, 0, 1, -3.0f, 3.0f, 0.0},
        {2, 9, 5, 0, 0, 0, -3.0f, 3.0f, 0.1},
        {2, 4, 4, 2, 1, 0, -3.0f, 3.0f, 0.0},
    };
    uint64_t seed = 9000;
    for (unsigned loo = 0; loo < 2; loo++)
        for (unsigned causal = 0; causal < 2; causal++)
            for (unsigned keep = 0; keep < 2; keep++)
                for (size_t l = 0; l < 3; l++)
                    for (size_t a = 0; a < 3; a++)
                        for (size_t t = 0; t < sizeof small / sizeof small[0]; t++) {
                            unsigned parts = (loo ? OR_LOO : 0) | (causal ? OR_CAUSAL : 0) |
                                             (keep ? OR_KEEP : 0) | lens[l] | add[a] |
                                             (small[t].bcast_s ? OR_BROADCAST : 0);
                            char label[64];
                            snprintf(label, sizeof label, "parts=0x%x shape %zu", parts, t);
                            check_softmax(&small[t], parts, seed++, label);
                        }
}

/* ---- Fully masked rows --------------------------------------------------------------------- */
typedef struct fm_case {
    const char *name;
    size_t m, n;
    nwattn_mask mask;
    float fill; /* every score */
} fm_case;

/* Runs softmax with the given mask; rows listed in `dead` must be all zero with lse -inf. */
static void check_dead_rows(const fm_case *fc, const size_t *dead, size_t ndead) {
    tu_backends bk;
    tu_backends_init(&bk);
    tu_mat s = tu_mat_new(1, fc->m, fc->n, 1, 0);
    tu_mat_fill_value(&s, fc->fill);
    for (int t = 0; t < 2; t++) {
        tu_mat w = tu_mat_new(1, fc->m, fc->n, 1, 0);
        tu_mat lse = tu_mat_new(1, 1, fc->m, 0, 0);
        nwattn_context *ctx = bk.ctx[t];
        TU_ASSERT_OK(ctx, nwattn_softmax(ctx, &fc->mask, 1, fc->m, fc->n, s.data, s.ld, 0,
                                         w.data, w.ld, 0, lse.data, 0));
        assert_true(tu_mat_no_nan(&w, fc->name));
        assert_true(tu_mat_no_nan(&lse, fc->name));
        assert_true(tu_mat_padding_intact(&w, fc->name));
        for (size_t r = 0; r < ndead; r++) {
            size_t i = dead[r];
            for (size_t j = 0; j < fc->n; j++)
                if (tu_get(&w, 0, i, j) != 0.0f) {
                    print_message("%s (%s): w[%zu][%zu] = %.9g\n", fc->name, t ? "BLAS" : "REF",
                                  i, j, (double)tu_get(&w, 0, i, j));
                    fail();
                }
            if (tu_get(&lse, 0, 0, i) != -INFINITY) {
                print_message("%s (%s): lse[%zu] = %.9g, want -inf\n", fc->name,
                              t ? "BLAS" : "REF", i, (double)tu_get(&lse, 0, 0, i));
                fail();
            }
        }
        /* The other rows: the oracle. Scores here are equal within a row, so the shift is
         * exact and only the normalisation rounds: (n + 16)u. */
        tu_mat want = tu_mat_new(1, fc->m, fc->n, 0, 0), want_lse = tu_mat_new(1, 1, fc->m, 0, 0);
        or_softmax(&fc->mask, &s, &want, &want_lse);
        double tol = ((double)fc->n + 16.0) * TU_U;
        assert_true(tu_allclose(fc->name, &w, &want, OR_ATOL_WEIGHT, tol));
        assert_true(tu_allclose(fc->name, &lse, &want_lse, tol, 2 * TU_U));
        check_structure(fc->name, &fc->mask, &s, &w, &lse);
        tu_mat_free(&want);
        tu_mat_free(&want_lse);
        tu_mat_free(&w);
        tu_mat_free(&lse);
    }
    tu_mat_free(&s);
    tu_backends_fini(&bk);
}

static void test_fully_masked_rows(void **state) {
    (void)state;
    const size_t row1[1] = {1}, row0[1] = {0}, all3[3] = {0, 1, 2};
    static const size_t lens_row[3] = {2, 0, 3};
    static const size_t lens_zero[1] = {0};
    static const unsigned char keep[3 * 4] = {1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    float add[3 * 4];
    for (size_t t = 0; t < 12; t++)
        add[t] = (t >= 8) ? -INFINITY : 0.5f;

    fm_case c1 = {"valid length 0 per row", 3, 4, {0}, 1.0f};
    c1.mask.flags = NWATTN_MASK_LENS_PER_ROW;
    c1.mask.valid_lens = lens_row;
    check_dead_rows(&c1, row1, 1);

    fm_case c2 = {"valid length 0 per item", 3, 4, {0}, 1.0f};
    c2.mask.valid_lens = lens_zero;
    check_dead_rows(&c2, all3, 3);

    fm_case c3 = {"keep all zero", 3, 4, {0}, 2.0f};
    c3.mask.keep = keep;
    c3.mask.ld_keep = 4;
    check_dead_rows(&c3, row1, 1);

    fm_case c4 = {"additive all -inf", 3, 4, {0}, -1.0f};
    c4.mask.additive = add;
    c4.mask.ld_additive = 4;
    const size_t row2[1] = {2};
    check_dead_rows(&c4, row2, 1);

    fm_case c5 = {"leave-one-out + causal, row 0", 3, 4, {0}, 0.0f};
    c5.mask.flags = NWATTN_MASK_LEAVE_ONE_OUT | NWATTN_MASK_CAUSAL;
    check_dead_rows(&c5, row0, 1);

    fm_case c6 = {"leave-one-out with one key", 1, 1, {0}, 3.0f};
    c6.mask.flags = NWATTN_MASK_LEAVE_ONE_OUT;
    check_dead_rows(&c6, row0, 1);

    fm_case c7 = {"all scores -inf", 3, 4, {0}, -INFINITY};
    check_dead_rows(&c7, all3, 3);

    /* Equal huge negative scores are no mask: uniform weights, finite lse. */
    fm_case c8 = {"huge negative scores are not masked", 2, 3, {0}, -3e38f};
    check_dead_rows(&c8, NULL, 0);
}

/* n == 0: every row fully masked; m×0 weights, lse all -inf. */
static void test_no_keys(void **state) {
    (void)state;
    tu_backends bk;
    tu_backends_init(&bk);
    float s[1] = {0}, w[4] = {7, 7, 7, 7};
    tu_mat lse = tu_mat_new(2, 1, 3, 0, 1);
    for (int t = 0; t < 2; t++) {
        tu_mat_fill_value(&lse, 5.0f);
        TU_ASSERT_OK(bk.ctx[t], nwattn_softmax(bk.ctx[t], NULL, 2, 3, 0, s, 1, 0, w, 1, 0,
                                               lse.data, lse.stride));
        for (size_t b = 0; b < 2; b++)
            for (size_t i = 0; i < 3; i++)
                assert_true(tu_get(&lse, b, 0, i) == -INFINITY);
        assert_true(tu_mat_padding_intact(&lse, "lse n=0"));
        assert_true(w[0] == 7.0f && w[3] == 7.0f);
    }
    tu_mat_free(&lse);
    tu_backends_fini(&bk);
}

/* ---- In place ------------------------------------------------------------------------------ */
static void test_in_place(void **state) {
    (void)state;
    static const unsigned masks[3] = {0, OR_CAUSAL | OR_KEEP, OR_LENS_ROW | OR_ADDITIVE};
    tu_backends bk;
    tu_backends_init(&bk);
    for (size_t mi = 0; mi < 3; mi++) {
        tu_rng rng;
        tu_rng_seed(&rng, 77 + mi);
        sm_shape sh = {3, 9, 17, 2, 0, 0, -4.0f, 4.0f, 0.0};
        tu_mat s = make_scores(&sh, &rng);
        or_mask mk;
        or_mask_make(&mk, masks[mi], sh.batch, sh.m, sh.n, &rng);
        const nwattn_mask *mask = or_mask_get(&mk);
        tu_mat want = tu_mat_new(sh.batch, sh.m, sh.n, 0, 0), want_lse = make_lse(&sh);
        double range = or_softmax(mask, &s, &want, &want_lse);
        for (int t = 0; t < 2; t++) {
            nwattn_context *ctx = bk.ctx[t];
            tu_mat out = tu_mat_new(sh.batch, sh.m, sh.n, sh.pad, 3);
            tu_mat inplace = tu_mat_clone(&s), lse = make_lse(&sh);
            TU_ASSERT_OK(ctx, nwattn_softmax(ctx, mask, sh.batch, sh.m, sh.n, s.data, s.ld,
                                             s.stride, out.data, out.ld, out.stride, NULL, 0));
            TU_ASSERT_OK(ctx, nwattn_softmax(ctx, mask, sh.batch, sh.m, sh.n, inplace.data,
                                             inplace.ld, inplace.stride, inplace.data, inplace.ld,
                                             inplace.stride, lse.data, lse.stride));
            double rtol = t == TU_REF ? or_rtol_weights_ref(range)
                                      : or_rtol_weights_blas(sh.n, range, 0.0);
            assert_true(tu_allclose("in-place vs oracle", &inplace, &want, OR_ATOL_WEIGHT, rtol));
            assert_true(tu_allclose("in-place vs out-of-place", &inplace, &out, 0.0, 4 * TU_U));
            assert_true(tu_mat_padding_intact(&inplace, "in-place padding"));
            check_structure("in-place", mask, &s, &inplace, &lse);
            tu_mat_free(&out);
            tu_mat_free(&inplace);
            tu_mat_free(&lse);
        }
        tu_mat_free(&s);
        tu_mat_free(&want);
        tu_mat_free(&want_lse);
        or_mask_free(&mk);
    }
    tu_backends_fini(&bk);
}

/* ---- lse against the definition, without any shift ---------------------------------------- */
static void test_lse_direct(void **state) {
    (void)state;
    const size_t m = 5, n = 37;
    tu_rng rng;
    tu_rng_seed(&rng, 1234);
    tu_mat s = tu_mat_new(1, m, n, 1, 0);
    tu_mat_fill_uniform(&s, &rng, -6.0f, 6.0f);
    tu_mat want = tu_mat_new(1, 1, m, 0, 0);
    for (size_t i = 0; i < m; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < n; j++)
            sum += exp((double)tu_get(&s, 0, i, j));
        *tu_at(&want, 0, 0, i) = (float)log(sum);
    }
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        tu_mat w = tu_mat_new(1, m, n, 0, 0), lse = tu_mat_new(1, 1, m, 0, 0);
        TU_ASSERT_OK(bk.ctx[t], nwattn_softmax(bk.ctx[t], NULL, 1, m, n, s.data, s.ld, 0, w.data,
                                               w.ld, 0, lse.data, 0));
        /* R = 6: REFERENCE 32u, BLAS (37 + 16 + 48)u absolute, see the header */
        double atol = t == TU_REF ? or_atol_lse_ref(6.0) : or_atol_lse_blas(n, 6.0, 0.0);
        assert_true(tu_allclose("lse = log(sum(exp(s)))", &lse, &want, atol, 2 * TU_U));
        /* w = exp(s - lse) */
        tu_mat ew = tu_mat_new(1, m, n, 0, 0);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                *tu_at(&ew, 0, i, j) =
                    (float)exp((double)tu_get(&s, 0, i, j) - (double)tu_get(&want, 0, 0, i));
        assert_true(tu_allclose("w = exp(s - lse)", &w, &ew, OR_ATOL_WEIGHT,
                                or_rtol_weights_blas(n, 6.0, 0.0) + 8 * TU_U));
        tu_mat_free(&w);
        tu_mat_free(&lse);
        tu_mat_free(&ew);
    }
    tu_backends_fini(&bk);
    tu_mat_free(&s);
    tu_mat_free(&want);
}

/* ---- Large scores: the max shift keeps exp() in range -------------------------------------- */
static void test_large_scores(void **state) {
    (void)state;
    static const float offsets[] = {1e4f, -1e4f, 80.0f, -120.0f, 1e30f, -1e30f};
    for (size_t t = 0; t < sizeof offsets / sizeof offsets[0]; t++) {
        float off = offsets[t];
        sm_shape sh = {2, 4, 23, 1, 0, 0, off - 3.0f, off + 3.0f, 0.0};
        char label[64];
        snprintf(label, sizeof label, "offset %g", (double)off);
        check_softmax(&sh, 0, 555 + t, label);
        check_softmax(&sh, OR_ADDITIVE | OR_ADDITIVE_NEGINF | OR_CAUSAL, 655 + t, label);
    }
    /* A row holding both +1e4 and -1e4: all the weight on the large entries. */
    tu_mat s = tu_mat_new(1, 1, 4, 0, 0);
    const float row[4] = {1e4f, -1e4f, 1e4f, -1e4f};
    memcpy(s.data, row, sizeof row);
    tu_backends bk;
    tu_backends_init(&bk);
    for (int t = 0; t < 2; t++) {
        float w[4], lse;
        TU_ASSERT_OK(bk.ctx[t], nwattn_softmax(bk.ctx[t], NULL, 1, 1, 4, s.data, 4, 0, w, 4, 0,
                                               &lse, 0));
        assert_true(w[0] == 0.5f && w[2] == 0.5f && w[1] == 0.0f && w[3] == 0.0f);
        assert_true(fabs((double)lse - (1e4 + log(2.0))) <= 1e4 * 4 * TU_U);
    }
    tu_backends_fini(&bk);
    tu_mat_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_mask),
        cmocka_unit_test(test_leave_one_out),
        cmocka_unit_test(test_causal),
        cmocka_unit_test(test_valid_lens_per_item),
        cmocka_unit_test(test_valid_lens_per_row),
        cmocka_unit_test(test_additive),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_combined_masks),
        cmocka_unit_test(test_fully_masked_rows),
        cmocka_unit_test(test_no_keys),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_lse_direct),
        cmocka_unit_test(test_large_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
