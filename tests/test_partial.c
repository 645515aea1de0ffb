/* Partial states: any split of the keys into shards (empty ones included), each shard's state
 * computed on its own, merged in random orders, gives the unsplit pooling; under every mask,
 * for the reference and the fused kernels. Plus the merge identity, finishing in place, and
 * the error paths with untouched outputs. */
#include "attn_testutil.h"

typedef struct states {
    float *acc, *max, *sum;
    nwattn_pool_state view;
} states;

static states new_states(size_t batch, size_t m, size_t dv) {
    states s;
    s.acc = at_filled(batch * m * (dv + 1) + 1, 777.0f);
    s.max = at_filled(batch * (m + 2) + 1, 777.0f);
    s.sum = at_filled(batch * (m + 2) + 1, 777.0f);
    s.view = (nwattn_pool_state){s.acc, dv + 1, m * (dv + 1), s.max, s.sum, m + 2};
    return s;
}

static void free_states(states *s) { free(s->acc), free(s->max), free(s->sum); }

typedef struct problem {
    size_t batch, m, n, d, dv;
    float *q, *k, *v, *additive;
    unsigned char *keep;
    size_t *lens;
    nwattn_score score;
    nwattn_mask mask;
} problem;

static problem make_problem(at_rng *r, nwattn_score_kind kind, unsigned masks, size_t batch,
                            size_t m, size_t n, size_t d, size_t dv) {
    problem p = {.batch = batch, .m = m, .n = n, .d = d, .dv = dv};
    p.q = at_random(r, batch * m * d + 1, -1.0f, 1.0f);
    p.k = at_random(r, batch * n * d + 1, -1.0f, 1.0f);
    p.v = at_random(r, batch * n * dv + 1, -1.0f, 1.0f);
    p.score = (nwattn_score){kind, (float)(1.0 / sqrt((double)d)), 0.7f, NULL};
    p.mask.flags = masks & (NWATTN_MASK_CAUSAL | NWATTN_MASK_LEAVE_ONE_OUT);
    if (masks & 0x100) { /* valid lengths per row, some 0 */
        p.lens = malloc(batch * m * sizeof(size_t));
        for (size_t i = 0; i < batch * m; i++)
            p.lens[i] = at_below(r, 4) == 0 ? 0 : at_below(r, n + 1);
        p.mask.valid_lens = p.lens;
        p.mask.flags |= NWATTN_MASK_LENS_PER_ROW;
    }
    if (masks & 0x200) { /* additive, some -INFINITY */
        p.additive = at_random(r, batch * m * n + 1, -2.0f, 2.0f);
        for (size_t i = 0; i < batch * m * n; i++)
            if (at_below(r, 6) == 0)
                p.additive[i] = -INFINITY;
        p.mask.additive = p.additive, p.mask.ld_additive = n, p.mask.stride_additive = m * n;
    }
    if (masks & 0x400) { /* keep bytes */
        p.keep = malloc(batch * m * n + 1);
        for (size_t i = 0; i < batch * m * n + 1; i++)
            p.keep[i] = at_below(r, 4) == 0 ? 0 : 1;
        p.mask.keep = p.keep, p.mask.ld_keep = n, p.mask.stride_keep = m * n;
    }
    return p;
}

static void free_problem(problem *p) {
    free(p->q), free(p->k), free(p->v), free(p->additive), free(p->keep), free(p->lens);
}

/* The state of keys [a, b): the whole mask seen through the shard. */
static void shard_state(nwattn_context *ctx, const problem *p, size_t a, size_t b,
                        const states *out) {
    nwattn_mask mask = p->mask;
    if (mask.additive)
        mask.additive += a;
    if (mask.keep)
        mask.keep += a;
    AT_OK(ctx, nwattn_pool_partial(ctx, &p->score, &mask, p->batch, p->m, b - a, p->d, p->dv, a,
                                   p->q, p->d, p->m * p->d, p->k + a * p->d, p->d, p->n * p->d,
                                   p->v + a * p->dv, p->dv, p->n * p->dv, &out->view));
}

/* Splits the keys at random cut points, computes every shard's state, merges them pairwise in
 * a random order and finishes: o and lse (batch × m). */
static void split_pool(nwattn_context *ctx, at_rng *r, const problem *p, float *o, float *lse) {
    size_t shards = 1 + at_below(r, 6);
    size_t cuts[8];
    cuts[0] = 0, cuts[shards] = p->n;
    for (size_t s = 1; s < shards; s++)
        cuts[s] = at_below(r, p->n + 1);
    for (size_t s = 1; s < shards; s++) /* sort the inner cuts: shards may be empty */
        for (size_t t = s + 1; t < shards; t++)
            if (cuts[t] < cuts[s]) {
                size_t x = cuts[s];
                cuts[s] = cuts[t], cuts[t] = x;
            }
    states st[8];
    size_t live = shards;
    for (size_t s = 0; s < shards; s++) {
        st[s] = new_states(p->batch, p->m, p->dv);
        shard_state(ctx, p, cuts[s], cuts[s + 1], &st[s]);
    }
    while (live > 1) { /* merge a random pair, keep the result in place of the first */
        size_t i = at_below(r, live), j = at_below(r, live - 1);
        j += j >= i;
        AT_OK(ctx, nwattn_pool_state_merge(ctx, p->batch, p->m, p->dv, &st[i].view, &st[j].view));
        free_states(&st[j]);
        st[j] = st[live - 1];
        live--;
    }
    AT_OK(ctx, nwattn_pool_state_finish(ctx, p->batch, p->m, p->dv, &st[0].view, o, p->dv,
                                        p->m * p->dv, lse, p->m));
    free_states(&st[0]);
}

static const unsigned mask_sets[] = {0,     NWATTN_MASK_CAUSAL, NWATTN_MASK_LEAVE_ONE_OUT,
                                     0x100, 0x200,              0x400,
                                     0x100 | 0x200 | 0x400 | NWATTN_MASK_CAUSAL};

static void check_splits(nwattn_backend backend, nwattn_score_kind kind) {
    at_rng r = {(uint64_t)backend * 10 + (uint64_t)kind};
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *ctx = at_context(backend, 2);
    const size_t shapes[][5] = {{2, 70, 300, 6, 5}, {1, 1, 40, 3, 1}, {3, 5, 9, 2, 4}};
    for (size_t sh = 0; sh < 3; sh++)
        for (size_t mk = 0; mk < sizeof mask_sets / sizeof mask_sets[0]; mk++) {
            const size_t *s = shapes[sh];
            problem p = make_problem(&r, kind, mask_sets[mk], s[0], s[1], s[2], s[3], s[4]);
            float *want = at_filled(p.batch * p.m * p.dv, 0.0f);
            float *want_lse = at_filled(p.batch * p.m, 0.0f);
            AT_OK(ref, nwattn_pool(ref, &p.score, &p.mask, p.batch, p.m, p.n, p.d, p.dv, p.q,
                                   p.d, p.m * p.d, p.k, p.d, p.n * p.d, p.v, p.dv, p.n * p.dv,
                                   want, p.dv, p.m * p.dv, NULL, 0, 0, want_lse, p.m));
            for (int trial = 0; trial < 4; trial++) {
                float *o = at_filled(p.batch * p.m * p.dv, 0.0f);
                float *lse = at_filled(p.batch * p.m, 0.0f);
                split_pool(ctx, &r, &p, o, lse);
                char what[100];
                snprintf(what, sizeof what, "backend %d kind %d shape %zu masks 0x%x", backend,
                         kind, sh, mask_sets[mk]);
                assert_true(at_close(what, p.batch, p.m, p.dv, o, p.dv, p.m * p.dv, want, p.dv,
                                     p.m * p.dv, 5e-5, 5e-5));
                assert_true(at_close(what, p.batch, 1, p.m, lse, 0, p.m, want_lse, 0, p.m, 5e-5,
                                     5e-5));
                free(o), free(lse);
            }
            free(want), free(want_lse);
            free_problem(&p);
        }
    nwattn_context_destroy(ref), nwattn_context_destroy(ctx);
}

static void test_reference_dot(void **state) {
    (void)state;
    check_splits(NWATTN_BACKEND_REFERENCE, NWATTN_SCORE_DOT);
}
static void test_fused_dot(void **state) {
    (void)state;
    check_splits(NWATTN_BACKEND_FUSED, NWATTN_SCORE_DOT);
}
static void test_fused_gaussian(void **state) {
    (void)state;
    check_splits(NWATTN_BACKEND_FUSED, NWATTN_SCORE_GAUSSIAN);
}
static void test_blas_laplace(void **state) {
    (void)state;
    check_splits(NWATTN_BACKEND_BLAS, NWATTN_SCORE_LAPLACE);
}

/* The state of the whole key set: fused against the reference's definition, entry by entry. */
static void test_state_values(void **state) {
    (void)state;
    at_rng r = {5};
    problem p = make_problem(&r, NWATTN_SCORE_DOT, NWATTN_MASK_CAUSAL | 0x200, 2, 70, 300, 5, 3);
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *fused = at_context(NWATTN_BACKEND_FUSED, 1);
    states want = new_states(2, 70, 3), got = new_states(2, 70, 3);
    shard_state(ref, &p, 0, 300, &want);
    shard_state(fused, &p, 0, 300, &got);
    const nwattn_pool_state *w = &want.view, *g = &got.view;
    assert_true(at_close("max", 2, 1, 70, g->max, 0, g->stride_stats, w->max, 0, w->stride_stats,
                         1e-5, 1e-5));
    assert_true(at_close("sum", 2, 1, 70, g->sum, 0, g->stride_stats, w->sum, 0, w->stride_stats,
                         1e-5, 1e-5));
    assert_true(at_close("acc", 2, 70, 3, g->acc, g->ld_acc, g->stride_acc, w->acc, w->ld_acc,
                         w->stride_acc, 1e-5, 1e-5));
    /* A fully masked row (row 0 with causal and an additive -inf at key 0) is empty. */
    for (size_t b = 0; b < 2; b++)
        if (p.additive[b * 70 * 300] == -INFINITY) {
            assert_true(g->sum[b * g->stride_stats] == 0.0f);
            assert_true(g->max[b * g->stride_stats] == -INFINITY);
        }
    free_states(&want), free_states(&got);
    nwattn_context_destroy(ref), nwattn_context_destroy(fused);
    free_problem(&p);
}

/* An empty shard's state is the identity of merge (both ways), bit for bit; finishing in place
 * works; finishing an empty state gives zeros and -INFINITY. */
static void test_identity_and_in_place(void **state) {
    (void)state;
    at_rng r = {9};
    problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, 1, 4, 20, 3, 2);
    nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 1);
    states full = new_states(1, 4, 2), empty = new_states(1, 4, 2), copy = new_states(1, 4, 2);
    shard_state(ctx, &p, 0, 20, &full);
    shard_state(ctx, &p, 20, 20, &empty);
    shard_state(ctx, &p, 0, 20, &copy);
    for (size_t i = 0; i < 4; i++)
        assert_true(empty.max[i] == -INFINITY && empty.sum[i] == 0.0f &&
                    empty.acc[i * 3] == 0.0f && empty.acc[i * 3 + 1] == 0.0f);
    AT_OK(ctx, nwattn_pool_state_merge(ctx, 1, 4, 2, &full.view, &empty.view));
    assert_true(at_same_bits(full.acc, copy.acc, 4 * 3) && at_same_bits(full.max, copy.max, 4) &&
                at_same_bits(full.sum, copy.sum, 4));
    AT_OK(ctx, nwattn_pool_state_merge(ctx, 1, 4, 2, &empty.view, &full.view));
    assert_true(at_same_bits(empty.acc, copy.acc, 4 * 3) && at_same_bits(empty.max, copy.max, 4));

    float want[8], lse[4];
    AT_OK(ctx, nwattn_pool(ctx, &p.score, NULL, 1, 4, 20, 3, 2, p.q, 3, 0, p.k, 3, 0, p.v, 2, 0,
                           want, 2, 0, NULL, 0, 0, NULL, 0));
    AT_OK(ctx, nwattn_pool_state_finish(ctx, 1, 4, 2, &full.view, full.acc, 3, full.view.stride_acc,
                                        lse, 0));
    assert_true(at_close("finish in place", 1, 4, 2, full.acc, 3, 0, want, 2, 0, 1e-6, 1e-6));

    states none = new_states(1, 4, 2);
    shard_state(ctx, &p, 5, 5, &none);
    float o[8];
    AT_OK(ctx, nwattn_pool_state_finish(ctx, 1, 4, 2, &none.view, o, 2, 0, lse, 0));
    for (size_t i = 0; i < 4; i++)
        assert_true(lse[i] == -INFINITY && o[2 * i] == 0.0f && o[2 * i + 1] == 0.0f);
    free_states(&full), free_states(&empty), free_states(&copy), free_states(&none);
    nwattn_context_destroy(ctx);
    free_problem(&p);
}

/* Errors: every check fires before anything is written. */
static void test_errors(void **state) {
    (void)state;
    at_rng r = {3};
    problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, 1, 4, 20, 3, 2);
    nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 1);
    states st = new_states(1, 4, 2), other = new_states(1, 4, 2);
    float *before = at_copy(st.acc, 4 * 3 + 1);

    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, NULL),
                     NWATTN_ERR_NULL_POINTER);
    assert_true(strstr(nwattn_context_last_error(ctx), "state") != NULL);
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 3, 2, SIZE_MAX, p.q, 3,
                                         0, p.k, 3, 0, p.v, 2, 0, &st.view),
                     NWATTN_ERR_OVERFLOW);
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 0, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, &st.view),
                     NWATTN_ERR_BAD_DIMENSION);
    nwattn_pool_state alias = st.view;
    alias.sum = st.max; /* two state arrays overlap */
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, &alias),
                     NWATTN_ERR_ALIASING);
    alias = st.view;
    alias.acc = p.v; /* the accumulator overlaps an input */
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, &alias),
                     NWATTN_ERR_ALIASING);
    alias = st.view;
    alias.ld_acc = 1; /* shorter than dv */
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, NULL, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, &alias),
                     NWATTN_ERR_BAD_LEADING_DIM);
    nwattn_mask bad = {.flags = 1u << 7};
    assert_int_equal(nwattn_pool_partial(ctx, &p.score, &bad, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                         3, 0, p.v, 2, 0, &st.view),
                     NWATTN_ERR_BAD_ENUM);
    assert_true(at_same_bits(st.acc, before, 4 * 3 + 1));

    /* A valid length beyond the shard is fine for a shard (it counts whole-problem keys). */
    size_t lens[1] = {1000};
    nwattn_mask lens_mask = {.valid_lens = lens};
    AT_OK(ctx, nwattn_pool_partial(ctx, &p.score, &lens_mask, 1, 4, 20, 3, 2, 0, p.q, 3, 0, p.k,
                                   3, 0, p.v, 2, 0, &st.view));

    assert_int_equal(nwattn_pool_state_merge(ctx, 1, 4, 2, &st.view, &st.view),
                     NWATTN_ERR_ALIASING);
    assert_int_equal(nwattn_pool_state_merge(ctx, 1, 4, 2, NULL, &st.view),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_pool_state_merge(ctx, 1, 4, 2, &other.view, NULL),
                     NWATTN_ERR_NULL_POINTER);
    float o[8], lse[4];
    assert_int_equal(nwattn_pool_state_finish(ctx, 1, 4, 2, NULL, o, 2, 0, lse, 0),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_pool_state_finish(ctx, 1, 4, 2, &st.view, st.acc + 1, 3, 0, lse, 0),
                     NWATTN_ERR_ALIASING); /* overlapping, but not the same layout */
    assert_int_equal(nwattn_pool_state_finish(ctx, 1, 4, 2, &st.view, o, 2, 0, o + 1, 0),
                     NWATTN_ERR_ALIASING);
    assert_int_equal(nwattn_pool_state_finish(NULL, 1, 4, 2, &st.view, o, 2, 0, lse, 0),
                     NWATTN_ERR_NULL_POINTER);
    free(before);
    free_states(&st), free_states(&other);
    nwattn_context_destroy(ctx);
    free_problem(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_dot),  cmocka_unit_test(test_fused_dot),
        cmocka_unit_test(test_fused_gaussian), cmocka_unit_test(test_blas_laplace),
        cmocka_unit_test(test_state_values),   cmocka_unit_test(test_identity_and_in_place),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
