/* nwattn_mpi_pool_sharded_keys against the one-process nwattn_pool on the concatenated keys:
 * random shapes and shard sizes (empty shards included), every score kind and mask, batch and
 * padded leading dimensions, both reductions; the same bits on every rank; collective errors
 * (a bad argument, an allocation failure or disagreeing shapes on one rank). */
#include "mpi_testutil.h"

/* REFERENCE one-process results vs the MPI call on the default backend: the FUSED tiles'
 * float scores against scores in double (the core's own FUSED-vs-REFERENCE gap) plus the
 * merges' rounding. With the MPI call on REFERENCE only the merges differ. */
#define TOL_FAST 2e-5
#define TOL_REF 1e-6

static double worst_fast, worst_ref; /* largest differences seen, printed at the end */

typedef struct problem {
    size_t batch, m, n, d, dv, ldq, ldk, ldv, ldo, sq, sk, sv, so;
    nwattn_score score;
    nwattn_mask mask;
    float *q, *k, *v, *bandwidths, *additive;
    unsigned char *keep;
    size_t *lens;
} problem;

static void make_problem(at_rng *rng, problem *p, size_t n_max) {
    memset(p, 0, sizeof *p);
    p->batch = 1 + at_below(rng, 2);
    p->m = 1 + at_below(rng, 37);
    p->n = at_below(rng, 8) == 0 ? at_below(rng, 3) : at_below(rng, n_max + 1);
    p->d = at_below(rng, 4) == 0 ? 1 : 1 + at_below(rng, 17);
    p->dv = at_below(rng, 6) == 0 ? 0 : 1 + at_below(rng, 6);
    p->ldq = p->d + at_below(rng, 3);
    p->ldk = p->d + at_below(rng, 3);
    p->ldv = p->dv + at_below(rng, 3);
    p->ldo = p->dv + at_below(rng, 2);
    p->sq = p->m * p->ldq + at_below(rng, 4);
    p->sk = p->n * p->ldk + at_below(rng, 4);
    p->sv = p->n * p->ldv + at_below(rng, 4);
    p->so = p->m * p->ldo;
    p->q = at_random(rng, p->batch * p->sq, -1.5f, 1.5f);
    p->k = at_random(rng, p->batch * p->sk, -1.5f, 1.5f);
    p->v = at_random(rng, p->batch * p->sv, -1.0f, 1.0f);
    p->score.kind = (nwattn_score_kind)at_below(rng, 4);
    p->score.scale = 1.0f / sqrtf((float)p->d) * at_uniform(rng, 0.5f, 3.0f);
    p->score.bandwidth = at_uniform(rng, 0.3f, 2.0f);
    if (at_below(rng, 3) == 0 && (p->score.kind == NWATTN_SCORE_GAUSSIAN ||
                                  p->score.kind == NWATTN_SCORE_LAPLACE)) {
        p->bandwidths = at_random(rng, p->d, 0.3f, 2.0f);
        p->score.bandwidths = p->bandwidths;
    }
    p->mask.flags = (unsigned)at_below(rng, 4); /* leave-one-out and causal bits */
    switch (at_below(rng, 3)) {
    case 1:
        p->lens = malloc(p->batch * sizeof *p->lens);
        for (size_t b = 0; b < p->batch; b++)
            p->lens[b] = at_below(rng, p->n + 1);
        break;
    case 2:
        p->mask.flags |= NWATTN_MASK_LENS_PER_ROW;
        p->lens = malloc(p->batch * p->m * sizeof *p->lens);
        for (size_t i = 0; i < p->batch * p->m; i++)
            p->lens[i] = at_below(rng, p->n + 1);
        break;
    default:
        break;
    }
    p->mask.valid_lens = p->lens;
    if (at_below(rng, 4) == 0 && p->n > 0) { /* additive, ld n + 1 */
        p->additive = at_random(rng, p->batch * p->m * (p->n + 1), -2.0f, 1.0f);
        p->mask.additive = p->additive;
        p->mask.ld_additive = p->n + 1;
        p->mask.stride_additive = p->m * (p->n + 1);
    }
    if (at_below(rng, 4) == 0 && p->n > 0) {
        p->keep = malloc(p->batch * p->m * p->n);
        for (size_t i = 0; i < p->batch * p->m * p->n; i++)
            p->keep[i] = at_below(rng, 5) != 0;
        p->mask.keep = p->keep;
        p->mask.ld_keep = p->n;
        p->mask.stride_keep = p->m * p->n;
    }
}

static void free_problem(problem *p) {
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->bandwidths);
    free(p->additive);
    free(p->keep);
    free(p->lens);
}

/* The shard of rank `me`: keys offset .. offset + count - 1 and the mask's columns. */
static nwattn_status run_sharded(nwattn_context *ctx, const problem *p,
                                 nwattn_mpi_reduction how, size_t offset, size_t count,
                                 float *o, float *lse, nwattn_mpi_error *err) {
    nwattn_mask mask = p->mask;
    if (mask.additive)
        mask.additive += offset;
    if (mask.keep)
        mask.keep += offset;
    /* an empty shard passes NULL pointers */
    const float *k = count ? p->k + offset * p->ldk : NULL;
    const float *v = count ? p->v + offset * p->ldv : NULL;
    return nwattn_mpi_pool_sharded_keys(ctx, MPI_COMM_WORLD, how, &p->score, &mask, p->batch,
                                        p->m, count, p->d, p->dv, p->q, p->ldq, p->sq, k,
                                        p->ldk, p->sk, v, p->ldv, p->sv, o, p->ldo, p->so, lse,
                                        p->m, err);
}

static double compare(const problem *p, const float *o, const float *lse, const float *o1,
                      const float *lse1) {
    double worst = 0.0;
    for (size_t b = 0; b < p->batch; b++) {
        double e = mt_diff(o + b * p->so, p->ldo, o1 + b * p->so, p->ldo, p->m, p->dv);
        if (e > worst)
            worst = e;
        for (size_t i = 0; i < p->m; i++) {
            const double x = lse[b * p->m + i], y = lse1[b * p->m + i];
            double el = x == y ? 0.0 : fabs(x - y) / (1.0 + fabs(y));
            if (isnan(el))
                el = INFINITY;
            if (el > worst)
                worst = el;
        }
    }
    return worst;
}

static void random_cases(void **state) {
    (void)state;
    nwattn_context *fast = at_context(NWATTN_BACKEND_AUTO, 1);
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    const int p_ranks = mt_size();
    size_t counts[64];
    for (int c = 0; c < 120; c++) {
        at_rng rng = {0x5eed0000u + (uint64_t)c};
        problem p;
        make_problem(&rng, &p, c < 100 ? 90 : 700);
        const size_t offset = mt_split(&rng, p.n, counts, c % 3 == 0 ? c % p_ranks : -1);
        const size_t count = counts[mt_rank()];
        const size_t osize = p.batch * p.so + 1, lsize = p.batch * p.m;
        float *o1 = at_filled(osize, 0.0f), *lse1 = at_filled(lsize, 0.0f);
        assert_int_equal(nwattn_pool(ref, &p.score, &p.mask, p.batch, p.m, p.n, p.d, p.dv,
                                     p.q, p.ldq, p.sq, p.k, p.ldk, p.sk, p.v, p.ldv, p.sv, o1,
                                     p.ldo, p.so, NULL, 0, 0, lse1, p.m),
                         NWATTN_OK);
        for (int how = 0; how < 3; how++) {
            for (int on_ref = 0; on_ref < 2; on_ref++) {
                float *o = at_filled(osize, 0.0f), *lse = at_filled(lsize, 0.0f);
                nwattn_mpi_error err;
                nwattn_status s = run_sharded(on_ref ? ref : fast, &p,
                                              (nwattn_mpi_reduction)how, offset, count, o, lse,
                                              &err);
                const double e = s == NWATTN_OK ? mt_max(compare(&p, o, lse, o1, lse1))
                                                : INFINITY;
                double *worst = on_ref ? &worst_ref : &worst_fast;
                if (e > *worst)
                    *worst = e;
                const int ok = mt_all(s == NWATTN_OK && e <= (on_ref ? TOL_REF : TOL_FAST));
                if (!ok && mt_rank() == 0)
                    fprintf(stderr,
                            "case %d (batch %zu m %zu n %zu d %zu dv %zu kind %d flags %x "
                            "reduction %d%s): status %d '%s', difference %.3g\n",
                            c, p.batch, p.m, p.n, p.d, p.dv, (int)p.score.kind, p.mask.flags,
                            how, on_ref ? ", REFERENCE" : "", (int)s, err.message, e);
                assert_true(ok);
                assert_true(mt_same_everywhere(o, osize * sizeof(float)));
                assert_true(mt_same_everywhere(lse, lsize * sizeof(float)));
                free(o);
                free(lse);
            }
        }
        free(o1);
        free(lse1);
        free_problem(&p);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "largest difference from nwattn_pool on %d ranks: %.3g (default "
                "backend), %.3g (REFERENCE)\n", p_ranks, worst_fast, worst_ref);
    nwattn_context_destroy(fast);
    nwattn_context_destroy(ref);
}

/* Non-finite scores: a +INFINITY additive value on one rank's key, a NaN on another row. */
static void non_finite_rows(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    const size_t m = 3, n = 11, d = 2, dv = 2;
    at_rng rng = {42};
    float *q = at_random(&rng, m * d, -1, 1), *k = at_random(&rng, n * d, -1, 1);
    float *v = at_random(&rng, n * dv, -1, 1), *add = at_filled(m * n, 0.0f);
    add[0 * n + 7] = INFINITY; /* row 0: weight 1 on key 7 */
    add[1 * n + 2] = NAN;      /* row 1: NaN */
    add[2 * n + 3] = INFINITY; /* row 2: 1/2 on keys 3 and 9 */
    add[2 * n + 9] = INFINITY;
    nwattn_mask mask = {0};
    mask.additive = add;
    mask.ld_additive = n;
    nwattn_score score = {NWATTN_SCORE_DOT, 1.0f, 1.0f, NULL};
    float o1[6], lse1[3];
    assert_int_equal(nwattn_pool(ctx, &score, &mask, 1, m, n, d, dv, q, d, 0, k, d, 0, v, dv,
                                 0, o1, dv, 0, NULL, 0, 0, lse1, 0),
                     NWATTN_OK);
    size_t counts[64];
    for (int how = 0; how < 3; how++) {
        at_rng split = {7 + (uint64_t)how};
        const size_t offset = mt_split(&split, n, counts, -1), count = counts[mt_rank()];
        nwattn_mask shard = mask;
        shard.additive += offset;
        float o[6], lse[3];
        nwattn_status s = nwattn_mpi_pool_sharded_keys(
            ctx, MPI_COMM_WORLD, (nwattn_mpi_reduction)how, &score, &shard, 1, m, count, d, dv,
            q, d, 0, k + offset * d, d, 0, v + offset * dv, dv, 0, o, dv, 0, lse, 0, NULL);
        const double e = s == NWATTN_OK ? mt_diff(o, dv, o1, dv, m, dv) : INFINITY;
        assert_true(mt_all(s == NWATTN_OK && e <= 1e-6 && isnan(o[2]) && isnan(lse[1]) &&
                           lse[0] == INFINITY && lse[2] == INFINITY));
    }
    free(q);
    free(k);
    free(v);
    free(add);
    nwattn_context_destroy(ctx);
}

/* ---- Collective errors -------------------------------------------------------------------- */
typedef struct err_setup {
    nwattn_context *ctx;
    float q[12], k[40], v[40], o[12], lse[6];
    nwattn_score score;
    size_t n_local;
} err_setup;

static void err_init(err_setup *e) {
    memset(e, 0, sizeof *e);
    e->ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    for (int i = 0; i < 40; i++)
        e->k[i] = e->v[i] = (float)i / 40.0f;
    for (int i = 0; i < 12; i++) {
        e->q[i] = (float)i / 12.0f;
        e->o[i] = -7.0f; /* sentinel: must survive any failure */
    }
    e->score = (nwattn_score){NWATTN_SCORE_DOT, 0.5f, 1.0f, NULL};
    e->n_local = 5;
}

/* Every rank got `status`, the same message, and o is untouched. */
static void expect_everywhere(err_setup *e, nwattn_status got, nwattn_status status,
                              const nwattn_mpi_error *err, int rank, const char *needle) {
    int ok = got == status && err->status == status && err->rank == rank &&
             strstr(err->message, needle) != NULL;
    for (int i = 0; i < 12; i++)
        ok = ok && e->o[i] == -7.0f;
    if (!ok)
        fprintf(stderr, "rank %d: status %d (want %d), error rank %d (want %d), '%s'\n",
                mt_rank(), (int)got, (int)status, err->rank, rank, err->message);
    assert_true(mt_all(ok));
    assert_true(mt_same_everywhere(err->message, strlen(err->message)));
    nwattn_context_destroy(e->ctx);
}

static nwattn_status call(err_setup *e, size_t m, const float *q, nwattn_mpi_error *err) {
    return nwattn_mpi_pool_sharded_keys(e->ctx, MPI_COMM_WORLD, NWATTN_MPI_REDUCTION_AUTO,
                                        &e->score, NULL, 1, m, e->n_local, 2, 2, q, 2, 0, e->k,
                                        2, 0, e->v, 2, 0, e->o, 2, 0, e->lse, 0, err);
}

static void error_null_on_last_rank(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    const int last = mt_size() - 1;
    nwattn_mpi_error err;
    nwattn_status s = call(&e, 6, mt_rank() == last ? NULL : e.q, &err);
    expect_everywhere(&e, s, NWATTN_ERR_NULL_POINTER, &err, last, "q is NULL");
}

static void error_bad_leading_dim_everywhere(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        e.ctx, MPI_COMM_WORLD, NWATTN_MPI_REDUCTION_AUTO, &e.score, NULL, 1, 6, e.n_local, 2, 2,
        e.q, 2, 0, e.k, 2, 0, e.v, 2, 0, e.o, 1, 0, NULL, 0, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_LEADING_DIM, &err, 0, "leading dimension of o");
}

static void error_shape_disagreement(void **state) {
    (void)state;
    if (mt_size() == 1)
        skip();
    err_setup e;
    err_init(&e);
    nwattn_mpi_error err;
    nwattn_status s = call(&e, mt_rank() == 1 ? 5 : 6, e.q, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_DIMENSION, &err, mt_size(), "disagree on m");
}

static void error_score_disagreement(void **state) {
    (void)state;
    if (mt_size() == 1)
        skip();
    err_setup e;
    err_init(&e);
    if (mt_rank() == mt_size() - 1)
        e.score.scale = 0.25f;
    nwattn_mpi_error err;
    nwattn_status s = call(&e, 6, e.q, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_PARAMETER, &err, mt_size(), "score.scale");
}

static void error_query_disagreement(void **state) {
    (void)state;
    if (mt_size() == 1)
        skip();
    err_setup e;
    err_init(&e);
    if (mt_rank() == 1)
        e.q[7] += 1.0f;
    nwattn_mpi_error err;
    nwattn_status s = call(&e, 6, e.q, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_PARAMETER, &err, mt_size(), "disagree on q");
}

static void error_valid_length_beyond_global_n(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    const size_t lens[1] = {5 * (size_t)mt_size() + 1};
    nwattn_mask mask = {0};
    mask.valid_lens = lens;
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        e.ctx, MPI_COMM_WORLD, NWATTN_MPI_REDUCTION_AUTO, &e.score, &mask, 1, 6, e.n_local, 2, 2,
        e.q, 2, 0, e.k, 2, 0, e.v, 2, 0, e.o, 2, 0, NULL, 0, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_MASK, &err, 0, "global n");
}

static void *failing_alloc(void *user, size_t bytes) {
    (void)user;
    (void)bytes;
    return NULL;
}
static void failing_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}
static void *plain_alloc(void *user, size_t bytes) {
    int *armed = user;
    return *armed ? NULL : malloc(bytes);
}

/* The last rank's context cannot allocate its working memory: ALLOC on every rank. */
static void error_alloc_on_last_rank(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    const int last = mt_size() - 1;
    int armed = 0;
    nwattn_context *ctx = NULL;
    const nwattn_allocator allocator = {plain_alloc, failing_free, &armed};
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &allocator), NWATTN_OK);
    armed = mt_rank() == last; /* the context exists; its working memory will not */
    nwattn_context_destroy(e.ctx);
    e.ctx = ctx;
    /* a size that needs working memory on every backend */
    static float big_k[64 * 300], big_v[64 * 300];
    float q[6 * 64];
    for (size_t i = 0; i < 64 * 300; i++)
        big_k[i] = big_v[i] = (float)(i % 17) / 17.0f;
    for (size_t i = 0; i < 6 * 64; i++)
        q[i] = (float)(i % 5) / 5.0f;
    float o[6 * 64];
    for (size_t i = 0; i < 6 * 64; i++)
        o[i] = -7.0f;
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        ctx, MPI_COMM_WORLD, NWATTN_MPI_REDUCTION_AUTO, &e.score, NULL, 1, 6, 300, 64, 64, q, 64,
        0, big_k, 64, 0, big_v, 64, 0, o, 64, 0, NULL, 0, &err);
    int untouched = 1;
    for (size_t i = 0; i < 6 * 64; i++)
        untouched = untouched && o[i] == -7.0f;
    assert_true(mt_all(untouched));
    armed = 0;
    (void)failing_alloc;
    expect_everywhere(&e, s, NWATTN_ERR_ALLOC, &err, last, "rank");
}

static void error_bad_enum(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        e.ctx, MPI_COMM_WORLD, (nwattn_mpi_reduction)9, &e.score, NULL, 1, 6, e.n_local, 2, 2,
        e.q, 2, 0, e.k, 2, 0, e.v, 2, 0, e.o, 2, 0, NULL, 0, &err);
    expect_everywhere(&e, s, NWATTN_ERR_BAD_ENUM, &err, 0, "unknown reduction");
    assert_string_equal(nwattn_mpi_status_name(NWATTN_MPI_ERR_COMM), "NWATTN_MPI_ERR_COMM");
    assert_string_equal(nwattn_mpi_status_name(NWATTN_ERR_ALLOC), "NWATTN_ERR_ALLOC");
    assert_int_equal(nwattn_mpi_version_number(), NWATTN_VERSION_NUMBER);
}

static void error_null_comm(void **state) {
    (void)state;
    err_setup e;
    err_init(&e);
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        e.ctx, MPI_COMM_NULL, NWATTN_MPI_REDUCTION_AUTO, &e.score, NULL, 1, 6, e.n_local, 2, 2,
        e.q, 2, 0, e.k, 2, 0, e.v, 2, 0, e.o, 2, 0, NULL, 0, &err);
    expect_everywhere(&e, s, NWATTN_ERR_NULL_POINTER, &err, -1, "MPI_COMM_NULL");
}

/* An intercommunicator (even ranks facing odd ones) is refused on every rank. */
static void error_intercommunicator(void **state) {
    (void)state;
    if (mt_size() < 2)
        skip();
    err_setup e;
    err_init(&e);
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank() % 2, mt_rank(), &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, mt_rank() % 2 ? 0 : 1, 17, &inter);
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_pool_sharded_keys(
        e.ctx, inter, NWATTN_MPI_REDUCTION_AUTO, &e.score, NULL, 1, 6, e.n_local, 2, 2, e.q, 2,
        0, e.k, 2, 0, e.v, 2, 0, e.o, 2, 0, NULL, 0, &err);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    expect_everywhere(&e, s, NWATTN_ERR_UNSUPPORTED, &err, -1, "intercommunicator");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(random_cases),
    cmocka_unit_test(non_finite_rows),
    cmocka_unit_test(error_null_on_last_rank),
    cmocka_unit_test(error_bad_leading_dim_everywhere),
    cmocka_unit_test(error_shape_disagreement),
    cmocka_unit_test(error_score_disagreement),
    cmocka_unit_test(error_query_disagreement),
    cmocka_unit_test(error_valid_length_beyond_global_n),
    cmocka_unit_test(error_alloc_on_last_rank),
    cmocka_unit_test(error_bad_enum),
    cmocka_unit_test(error_null_comm),
    cmocka_unit_test(error_intercommunicator),
};

MT_MAIN(tests)
