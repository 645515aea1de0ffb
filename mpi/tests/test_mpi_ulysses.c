/* nwattn_mpi_ulysses_attention against per-head nwattn_pool over the whole sequence: heads =
 * p and 2p, random shard sizes (empty ones included), no mask, causal, leave-one-out, padded
 * rows; heads that do not divide by p refused on every rank. */
#include "mpi_testutil.h"

static void random_cases(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    const size_t p = (size_t)mt_size();
    double worst = 0.0;
    for (int c = 0; c < 18; c++) {
        at_rng rng = {0x0123u + (uint64_t)c};
        const size_t heads = p * (1 + (size_t)(c % 2)), n = at_below(&rng, c < 15 ? 90 : 400);
        const size_t dh = 1 + at_below(&rng, 8), dvh = at_below(&rng, 5);
        const size_t ldq = heads * dh + 1, ldv = heads * dvh + 2, ldo = heads * dvh + 1;
        float *q = at_random(&rng, n * ldq + 1, -1, 1), *k = at_random(&rng, n * ldq + 1, -1, 1);
        float *v = at_random(&rng, n * ldv + 1, -1, 1);
        const size_t o_count = (n * ldo + 1) & 0xffffffu; /* < 2^24: tells GCC it is small */
        float *o1 = at_filled(o_count, 0.0f), *o = at_filled(o_count, -7.0f);
        nwattn_score score = {(nwattn_score_kind)(c % 4), 0.5f, 0.8f, NULL};
        nwattn_mask mask = {0};
        mask.flags = (unsigned)(c % 3);
        for (size_t h = 0; h < heads; h++)
            assert_int_equal(nwattn_pool(ctx, &score, &mask, 1, n, n, dh, dvh, q + h * dh, ldq, 0,
                                         k + h * dh, ldq, 0, v + h * dvh, ldv, 0, o1 + h * dvh,
                                         ldo, 0, NULL, 0, 0, NULL, 0),
                             NWATTN_OK);
        size_t counts[64];
        const size_t off = mt_split(&rng, n, counts, c % 3 == 0 ? c % mt_size() : -1);
        const size_t cnt = counts[mt_rank()];
        nwattn_mpi_error err;
        nwattn_status s = nwattn_mpi_ulysses_attention(
            ctx, MPI_COMM_WORLD, &score, mask.flags, heads, cnt, dh, dvh,
            cnt ? q + off * ldq : NULL, ldq, cnt ? k + off * ldq : NULL, ldq,
            cnt ? v + off * ldv : NULL, ldv, cnt ? o + off * ldo : NULL, ldo, &err);
        const double e = s == NWATTN_OK ? mt_max(mt_diff(o + off * ldo, ldo, o1 + off * ldo,
                                                         ldo, cnt, heads * dvh))
                                        : INFINITY;
        worst = fmax(worst, e);
        if (!mt_all(s == NWATTN_OK && e <= 1e-6) && mt_rank() == 0)
            fprintf(stderr, "case %d (n %zu heads %zu dh %zu dvh %zu): status %d '%s', %.3g\n",
                    c, n, heads, dh, dvh, (int)s, err.message, e);
        assert_true(mt_all(s == NWATTN_OK && e <= 1e-6));
        free(q);
        free(k);
        free(v);
        free(o1);
        free(o);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "largest difference from per-head nwattn_pool on %d ranks: %.3g\n",
                mt_size(), worst);
    nwattn_context_destroy(ctx);
}

static void heads_must_divide(void **state) {
    (void)state;
    if (mt_size() == 1)
        skip();
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    float x[4 * 8] = {0}, o[4 * 8];
    for (int i = 0; i < 32; i++)
        o[i] = -7.0f;
    nwattn_score score = {NWATTN_SCORE_DOT, 0.5f, 1.0f, NULL};
    nwattn_mpi_error err;
    const size_t heads = (size_t)mt_size() + 1;
    nwattn_status s = nwattn_mpi_ulysses_attention(ctx, MPI_COMM_WORLD, &score, 0, heads, 2, 1,
                                                   1, x, heads, x, heads, x, heads, o, heads,
                                                   &err);
    int untouched = 1;
    for (int i = 0; i < 32; i++)
        untouched = untouched && o[i] == -7.0f;
    assert_true(mt_all(s == NWATTN_ERR_BAD_DIMENSION && strstr(err.message, "multiple") &&
                       untouched));
    nwattn_context_destroy(ctx);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(random_cases),
    cmocka_unit_test(heads_must_divide),
};

MT_MAIN(tests)
