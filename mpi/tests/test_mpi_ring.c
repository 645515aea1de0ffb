/* nwattn_mpi_ring_attention against the one-process nwattn_pool over the whole sequence:
 * contiguous shards of random sizes (empty ones included) and zigzag chunks, no mask, causal,
 * leave-one-out and both, every score kind, blocks longer than a tile (512 keys) and more query
 * rows than a tile (2048); collective errors, also a rank whose core fails in mid-ring. */
#include "mpi_testutil.h"

#define TOL_FAST 2e-5
#define TOL_REF 1e-6

/* This rank's global positions, in local row order. */
static size_t my_positions(nwattn_mpi_layout layout, size_t n, size_t offset, size_t count,
                           size_t *pos) {
    if (layout == NWATTN_MPI_LAYOUT_CONTIGUOUS) {
        for (size_t i = 0; i < count; i++)
            pos[i] = offset + i;
        return count;
    }
    size_t offs[2], cnt[2], rows = 0;
    assert_int_equal(nwattn_mpi_zigzag_chunks(n, mt_size(), mt_rank(), offs, cnt), NWATTN_OK);
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < cnt[c]; i++)
            pos[rows++] = offs[c] + i;
    return rows;
}

static double worst[2];

static void one_case(int c, size_t n, size_t d, size_t dv, nwattn_score_kind kind,
                     unsigned flags, nwattn_mpi_layout layout, int on_ref) {
    at_rng rng = {0xa11ce000u + (uint64_t)c};
    const size_t ld = d + 1, ldv = dv + 2;
    float *q = at_random(&rng, n * ld + 1, -1.5f, 1.5f);
    float *k = at_random(&rng, n * ld + 1, -1.5f, 1.5f);
    float *v = at_random(&rng, n * ldv + 1, -1.0f, 1.0f);
    nwattn_score score = {kind, 1.0f / sqrtf((float)d), at_uniform(&rng, 0.4f, 2.0f), NULL};
    nwattn_mask mask = {0};
    mask.flags = flags;
    nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
    nwattn_context *ctx = on_ref ? ref : at_context(NWATTN_BACKEND_AUTO, 1);
    float *o1 = at_filled(n * dv + 1, 0.0f), *lse1 = at_filled(n + 1, 0.0f);
    assert_int_equal(nwattn_pool(ref, &score, &mask, 1, n, n, d, dv, q, ld, 0, k, ld, 0, v, ldv,
                                 0, o1, dv, 0, NULL, 0, 0, lse1, 0),
                     NWATTN_OK);
    size_t counts[64];
    const size_t offset = mt_split(&rng, n, counts, c % 4 == 1 ? c % mt_size() : -1);
    size_t *pos = malloc((n + 1) * sizeof *pos);
    const size_t rows = my_positions(layout, n, offset, counts[mt_rank()], pos);
    /* local copies with their own padding: ldq d + 2, ldo dv + 1 */
    const size_t lq = d + 2, lo = dv + 1;
    float *lq_buf = at_filled(rows * lq + 1, 0), *lk = at_filled(rows * lq + 1, 0);
    float *lv = at_filled(rows * ldv + 1, 0), *o = at_filled(rows * lo + 1, 0);
    float *lse = at_filled(rows + 1, 0);
    for (size_t i = 0; i < rows; i++) {
        memcpy(lq_buf + i * lq, q + pos[i] * ld, d * sizeof(float));
        memcpy(lk + i * lq, k + pos[i] * ld, d * sizeof(float));
        memcpy(lv + i * ldv, v + pos[i] * ldv, dv * sizeof(float));
    }
    nwattn_mpi_error err;
    nwattn_status s = nwattn_mpi_ring_attention(ctx, MPI_COMM_WORLD, &score, flags, layout,
                                                rows, d, dv, rows ? lq_buf : NULL, lq,
                                                rows ? lk : NULL, lq, rows ? lv : NULL, ldv,
                                                rows ? o : NULL, lo, rows ? lse : NULL, &err);
    double e = 0.0;
    for (size_t i = 0; s == NWATTN_OK && i < rows; i++) {
        double ei = mt_diff(o + i * lo, lo, o1 + pos[i] * dv, dv, 1, dv);
        const double x = lse[i], y = lse1[pos[i]];
        double el = x == y ? 0.0 : fabs(x - y) / (1.0 + fabs(y));
        if (isnan(el))
            el = INFINITY;
        e = fmax(e, fmax(ei, el));
    }
    e = s == NWATTN_OK ? mt_max(e) : INFINITY;
    worst[on_ref] = fmax(worst[on_ref], e);
    const int ok = mt_all(s == NWATTN_OK && e <= (on_ref ? TOL_REF : TOL_FAST));
    if (!ok && mt_rank() == 0)
        fprintf(stderr, "case %d (n %zu d %zu dv %zu kind %d flags %x layout %d%s): status %d "
                "'%s', difference %.3g\n", c, n, d, dv, (int)kind, flags, (int)layout,
                on_ref ? ", REFERENCE" : "", (int)s, err.message, e);
    assert_true(ok);
    free(q);
    free(k);
    free(v);
    free(o1);
    free(lse1);
    free(pos);
    free(lq_buf);
    free(lk);
    free(lv);
    free(o);
    free(lse);
    if (ctx != ref)
        nwattn_context_destroy(ctx);
    nwattn_context_destroy(ref);
}

static void random_cases(void **state) {
    (void)state;
    for (int c = 0; c < 40; c++) {
        at_rng rng = {0xbeef00u + (uint64_t)c};
        size_t n = c < 34 ? at_below(&rng, 160) : 520 + at_below(&rng, 600);
        if (c % 13 == 0)
            n = at_below(&rng, 3);
        const size_t d = at_below(&rng, 4) == 0 ? 1 : 1 + at_below(&rng, 12);
        const size_t dv = at_below(&rng, 6) == 0 ? 0 : 1 + at_below(&rng, 5);
        one_case(c, n, d, dv, (nwattn_score_kind)at_below(&rng, 4), (unsigned)(c % 4),
                 (nwattn_mpi_layout)(c / 4 % 2), c % 3 == 2);
    }
    if (mt_rank() == 0)
        fprintf(stderr, "largest difference from nwattn_pool on %d ranks: %.3g (default "
                "backend), %.3g (REFERENCE)\n", mt_size(), worst[0], worst[1]);
}

/* More query rows than a tile (2048) and several key tiles, causal, both layouts. */
static void long_sequence(void **state) {
    (void)state;
    one_case(1001, 2300, 2, 1, NWATTN_SCORE_GAUSSIAN, NWATTN_MASK_CAUSAL,
             NWATTN_MPI_LAYOUT_ZIGZAG, 0);
    one_case(1002, 2200, 2, 1, NWATTN_SCORE_DOT, NWATTN_MASK_CAUSAL | NWATTN_MASK_LEAVE_ONE_OUT,
             NWATTN_MPI_LAYOUT_CONTIGUOUS, 0);
}

static void zigzag_chunks(void **state) {
    (void)state;
    size_t off[2], cnt[2];
    assert_int_equal(nwattn_mpi_zigzag_chunks(10, 2, 0, off, cnt), NWATTN_OK);
    assert_true(off[0] == 0 && cnt[0] == 3 && off[1] == 8 && cnt[1] == 2);
    assert_int_equal(nwattn_mpi_zigzag_chunks(10, 2, 1, off, cnt), NWATTN_OK);
    assert_true(off[0] == 3 && cnt[0] == 3 && off[1] == 6 && cnt[1] == 2);
    assert_int_equal(nwattn_mpi_zigzag_chunks(10, 2, 2, off, cnt), NWATTN_ERR_BAD_DIMENSION);
    assert_int_equal(nwattn_mpi_zigzag_chunks(10, 0, 0, off, cnt), NWATTN_ERR_BAD_DIMENSION);
    assert_int_equal(nwattn_mpi_zigzag_chunks(10, 2, 0, NULL, cnt), NWATTN_ERR_NULL_POINTER);
    /* the chunks tile the sequence */
    for (size_t n = 0; n < 40; n++) {
        size_t covered = 0, next = 0;
        for (int r = 0; r < 3; r++) {
            assert_int_equal(nwattn_mpi_zigzag_chunks(n, 3, r, off, cnt), NWATTN_OK);
            covered += cnt[0] + cnt[1];
        }
        for (int ch = 0; ch < 6; ch++) { /* chunk ch belongs to rank min(ch, 5 - ch) */
            int r = ch < 3 ? ch : 5 - ch;
            nwattn_mpi_zigzag_chunks(n, 3, r, off, cnt);
            const int which = ch < 3 ? 0 : 1;
            assert_int_equal(off[which], next);
            next += cnt[which];
        }
        assert_int_equal(covered, n);
        assert_int_equal(next, n);
    }
}

/* ---- Collective errors -------------------------------------------------------------------- */
static void *arm_alloc(void *user, size_t bytes) {
    return *(int *)user ? NULL : malloc(bytes);
}
static void arm_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

static void errors(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_AUTO, 1);
    const size_t d = 64, dv = 64, rows = 300;
    float *x = at_filled(rows * d, 0.25f), *o = at_filled(rows * dv, -7.0f);
    nwattn_score score = {NWATTN_SCORE_DOT, 0.125f, 1.0f, NULL};
    nwattn_mpi_error err;
    const int last = mt_size() - 1;

    /* ZIGZAG with a count that is not the rank's two chunks */
    size_t off[2], cnt[2];
    nwattn_mpi_zigzag_chunks(rows * (size_t)mt_size(), mt_size(), mt_rank(), off, cnt);
    nwattn_status s = nwattn_mpi_ring_attention(ctx, MPI_COMM_WORLD, &score, 0,
                                                NWATTN_MPI_LAYOUT_ZIGZAG, rows, d, dv, x, d, x,
                                                d, x, dv, o, dv, NULL, &err);
    const int zig_ok = cnt[0] + cnt[1] == rows; /* equal counts happen to fit when 2p | ... */
    if (!zig_ok)
        assert_true(mt_all(s == NWATTN_ERR_BAD_DIMENSION && strstr(err.message, "ZIGZAG")));
    else
        assert_true(mt_all(s == NWATTN_OK));
    size_t n_bad = mt_rank() == last ? rows - 1 : rows + (mt_size() > 1);
    s = nwattn_mpi_ring_attention(ctx, MPI_COMM_WORLD, &score, 0, NWATTN_MPI_LAYOUT_ZIGZAG,
                                  n_bad, d, dv, x, d, x, d, x, dv, o, dv, NULL, &err);
    if (mt_size() == 1) /* one rank holds both chunks, whatever the count */
        assert_true(mt_all(s == NWATTN_OK));
    else
        assert_true(mt_all(s == NWATTN_ERR_BAD_DIMENSION && strstr(err.message, "ZIGZAG") &&
                           err.rank >= 0));
    assert_true(mt_same_everywhere(err.message, strlen(err.message) + 1));

    for (size_t i = 0; i < rows * dv; i++)
        o[i] = -7.0f;
    /* an unknown mask bit on the last rank only */
    s = nwattn_mpi_ring_attention(ctx, MPI_COMM_WORLD, &score,
                                  mt_rank() == last ? NWATTN_MASK_LENS_PER_ROW : 0,
                                  NWATTN_MPI_LAYOUT_CONTIGUOUS, rows, d, dv, x, d, x, d, x, dv,
                                  o, dv, NULL, &err);
    assert_true(mt_all(s == NWATTN_ERR_BAD_ENUM && err.rank == last));

    /* the last rank's core cannot allocate while the ring runs: no hang, ALLOC everywhere */
    int armed = 0;
    nwattn_context *weak = NULL;
    const nwattn_allocator allocator = {arm_alloc, arm_free, &armed};
    assert_int_equal(nwattn_context_create_with_allocator(&weak, &allocator), NWATTN_OK);
    armed = mt_rank() == last;
    s = nwattn_mpi_ring_attention(weak, MPI_COMM_WORLD, &score, NWATTN_MASK_CAUSAL,
                                  NWATTN_MPI_LAYOUT_CONTIGUOUS, rows, d, dv, x, d, x, d, x, dv,
                                  o, dv, NULL, &err);
    armed = 0;
    int untouched = 1;
    for (size_t i = 0; i < rows * dv; i++)
        untouched = untouched && o[i] == -7.0f;
    if (!mt_all(s == NWATTN_ERR_ALLOC && err.rank == last && untouched))
        fprintf(stderr, "rank %d: status %d, rank %d, '%s'\n", mt_rank(), (int)s, err.rank,
                err.message);
    assert_true(mt_all(s == NWATTN_ERR_ALLOC && err.rank == last && untouched));
    assert_true(mt_same_everywhere(err.message, strlen(err.message) + 1));
    nwattn_context_destroy(weak);
    free(x);
    free(o);
    nwattn_context_destroy(ctx);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(zigzag_chunks),
    cmocka_unit_test(random_cases),
    cmocka_unit_test(long_sequence),
    cmocka_unit_test(errors),
};

MT_MAIN(tests)
