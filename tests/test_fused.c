/* The fused backend against the unfused BLAS backend and the reference, for every score kind
 * and mask, on shapes around the tile sizes: ragged tile edges, m or n smaller than a tile,
 * T = 1, dv != d, wide rows that shrink the tiles, padded layouts and broadcast keys. Also:
 * thread counts give identical bits, working memory stays tile-sized, fully masked rows. */
#include "attn_testutil.h"
#include <float.h>

#define SENTINEL 12345.0f

enum {
    MK_CAUSAL = 1 << 0,
    MK_LENS = 1 << 1,     /* per item, some 0 */
    MK_LENS_ROW = 1 << 2, /* per row, some 0 */
    MK_LOO = 1 << 3,
    MK_ADD = 1 << 4,      /* finite in [-2, 2] */
    MK_NEGINF = 1 << 5,   /* with MK_ADD: about 20 % -INFINITY */
    MK_KEEP = 1 << 6,     /* about 30 % zero bytes */
};

typedef struct problem {
    size_t batch, m, n, d, dv;
    size_t ldq, ldk, ldv, ldo, stride_q, stride_k, stride_v, stride_o;
    float *q, *k, *v;
    float *bandwidths;
    nwattn_score score;
    nwattn_mask mask;
    size_t *lens;
    float *additive;
    unsigned char *keep;
} problem;

static size_t buffer_floats(size_t batch, size_t rows, size_t ld, size_t stride) {
    return (batch > 0 ? batch - 1 : 0) * stride + rows * ld + 1;
}

/* A random problem; `layout` pads leading dimensions and strides, and shares K and V between
 * the items (stride 0) when layout is 2. */
static problem make_problem(at_rng *r, nwattn_score_kind kind, int per_dim, unsigned masks,
                            size_t batch, size_t m, size_t n, size_t d, size_t dv, int layout) {
    problem p = {.batch = batch, .m = m, .n = n, .d = d, .dv = dv};
    size_t pad = layout ? 3 : 0;
    p.ldq = d + pad, p.ldk = d + pad / 2, p.ldv = dv + pad, p.ldo = dv + pad;
    p.stride_q = m * p.ldq + pad;
    p.stride_k = layout == 2 ? 0 : n * p.ldk + pad;
    p.stride_v = layout == 2 ? 0 : n * p.ldv + 1;
    p.stride_o = m * p.ldo + pad;
    p.q = at_random(r, buffer_floats(batch, m, p.ldq, p.stride_q), -1.0f, 1.0f);
    p.k = at_random(r, buffer_floats(batch, n, p.ldk, p.stride_k), -1.0f, 1.0f);
    p.v = at_random(r, buffer_floats(batch, n, p.ldv, p.stride_v), -1.0f, 1.0f);
    p.score.kind = kind;
    p.score.scale = (float)(1.0 / sqrt((double)d));
    p.score.bandwidth = kind == NWATTN_SCORE_GAUSSIAN ? 0.25f * sqrtf((float)d) : 0.5f;
    if (per_dim) {
        p.bandwidths = at_random(r, d, 0.3f, 2.0f);
        for (size_t j = 0; j < d; j++)
            p.bandwidths[j] *= sqrtf((float)d) * 0.25f;
        p.score.bandwidths = p.bandwidths;
    }
    if (masks & MK_CAUSAL)
        p.mask.flags |= NWATTN_MASK_CAUSAL;
    if (masks & MK_LOO)
        p.mask.flags |= NWATTN_MASK_LEAVE_ONE_OUT;
    if (masks & (MK_LENS | MK_LENS_ROW)) {
        size_t count = masks & MK_LENS_ROW ? batch * m : batch;
        p.lens = malloc((count ? count : 1) * sizeof(size_t));
        for (size_t i = 0; i < count; i++)
            p.lens[i] = at_below(r, 5) == 0 ? 0 : at_below(r, n + 1);
        p.mask.valid_lens = p.lens;
        if (masks & MK_LENS_ROW)
            p.mask.flags |= NWATTN_MASK_LENS_PER_ROW;
    }
    if (masks & MK_ADD) {
        p.mask.ld_additive = n + 1;
        p.mask.stride_additive = m * (n + 1);
        size_t count = buffer_floats(batch, m, n + 1, p.mask.stride_additive);
        p.additive = at_random(r, count, -2.0f, 2.0f);
        if (masks & MK_NEGINF)
            for (size_t i = 0; i < count; i++)
                if (at_below(r, 5) == 0)
                    p.additive[i] = -INFINITY;
        p.mask.additive = p.additive;
    }
    if (masks & MK_KEEP) {
        p.mask.ld_keep = n + 2;
        p.mask.stride_keep = m * (n + 2) + 1;
        size_t count = batch * p.mask.stride_keep + 1;
        p.keep = malloc(count);
        for (size_t i = 0; i < count; i++)
            p.keep[i] = at_below(r, 10) < 3 ? 0 : (unsigned char)(1 + at_below(r, 255));
        p.mask.keep = p.keep;
    }
    return p;
}

static void free_problem(problem *p) {
    free(p->q), free(p->k), free(p->v), free(p->bandwidths), free(p->lens), free(p->additive);
    free(p->keep);
}

typedef struct result {
    float *o, *lse, *w;
} result;

/* Pools p on ctx (then destroyed); outputs start as SENTINEL, so untouched padding can be
 * checked. */
static result run_on(nwattn_context *ctx, const problem *p, int weights) {
    result res = {at_filled(buffer_floats(p->batch, p->m, p->ldo, p->stride_o), SENTINEL),
                  at_filled(p->batch * p->m + 1, SENTINEL), NULL};
    const size_t ldw = p->n + 1;
    if (weights)
        res.w = at_filled(buffer_floats(p->batch, p->m, ldw, p->m * ldw), SENTINEL);
    AT_OK(ctx, nwattn_pool(ctx, &p->score, &p->mask, p->batch, p->m, p->n, p->d, p->dv, p->q,
                           p->ldq, p->stride_q, p->k, p->ldk, p->stride_k, p->v, p->ldv,
                           p->stride_v, res.o, p->ldo, p->stride_o, res.w, ldw, p->m * ldw,
                           res.lse, p->m));
    nwattn_context_destroy(ctx);
    return res;
}

/* Pools p with the backend. */
static result run(const problem *p, nwattn_backend backend, size_t threads, int weights) {
    return run_on(at_context(backend, threads), p, weights);
}

static void free_result(result *r) { free(r->o), free(r->lse), free(r->w); }

/* got and want agree; got's output padding still holds the sentinel. */
static void compare(const char *what, const problem *p, const result *got, const result *want,
                    double atol) {
    char name[160];
    snprintf(name, sizeof name, "%s: o", what);
    assert_true(at_close(name, p->batch, p->m, p->dv, got->o, p->ldo, p->stride_o, want->o,
                         p->ldo, p->stride_o, atol, atol));
    snprintf(name, sizeof name, "%s: lse", what);
    assert_true(at_close(name, p->batch, 1, p->m, got->lse, 0, p->m, want->lse, 0, p->m, atol,
                         atol));
    if (got->w != NULL) {
        snprintf(name, sizeof name, "%s: weights", what);
        assert_true(at_close(name, p->batch, p->m, p->n, got->w, p->n + 1, p->m * (p->n + 1),
                             want->w, p->n + 1, p->m * (p->n + 1), atol, atol));
    }
    for (size_t b = 0; b < p->batch; b++)
        for (size_t i = 0; i < p->m; i++)
            for (size_t c = p->dv; c < p->ldo; c++)
                assert_true(got->o[b * p->stride_o + i * p->ldo + c] == SENTINEL);
}

typedef struct shape {
    size_t batch, m, n, d, dv;
} shape;

static const shape shapes[] = {
    {1, 1, 1, 1, 1},    /* the smallest */
    {2, 1, 300, 5, 3},  /* T = 1: one query against ragged key tiles */
    {2, 67, 131, 8, 3}, /* ragged query and key tiles */
    {1, 130, 300, 16, 16},
    {3, 3, 5, 2, 7},    /* smaller than a tile, dv > d */
    {1, 64, 256, 64, 64}, /* exactly one tile each way at d = 64 */
    {1, 70, 40, 300, 20}, /* wide rows: the tiles shrink */
    {2, 9, 0, 4, 3},    /* no keys */
    {2, 70, 600, 1, 1}, /* 1-D Nadaraya-Watson: direct distances, dot products for P·V */
    {1, 65, 300, 1, 4}, /* d = 1 with several values per key */
    {12, 150, 131, 8, 3}, /* 36 row blocks: units of two product groups, the last one partial */
    {40, 70, 40, 20, 5},  /* 80 row blocks: a unit per item, groups of 64 and 6 rows */
};

static const unsigned mask_sets[] = {
    0, MK_CAUSAL, MK_LENS, MK_LENS_ROW, MK_LOO, MK_ADD, MK_ADD | MK_NEGINF, MK_KEEP,
    MK_CAUSAL | MK_LENS | MK_KEEP | MK_ADD, MK_LOO | MK_LENS_ROW | MK_ADD | MK_NEGINF,
};

/* Every score kind × mask × shape: FUSED and BLAS against REFERENCE, FUSED against BLAS.
 * Under test_small_shapes a third of the pairs, rotating with the kind: every shape, every
 * mask and every layout ((s + mk) % 3) still meets each kind. */
static void check_kind(nwattn_score_kind kind, int per_dim) {
    at_rng r = {(uint64_t)kind * 1000 + (uint64_t)per_dim};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t mk = 0; mk < sizeof mask_sets / sizeof mask_sets[0]; mk++) {
            if (test_small_shapes() && (s + 2 * mk + (size_t)kind + (size_t)per_dim) % 3 != 0)
                continue;
            const shape *sh = &shapes[s];
            problem p = make_problem(&r, kind, per_dim, mask_sets[mk], sh->batch, sh->m, sh->n,
                                     sh->d, sh->dv, (int)((s + mk) % 3));
            result ref = run(&p, NWATTN_BACKEND_REFERENCE, 1, 0);
            result blas = run(&p, NWATTN_BACKEND_BLAS, 1, 0);
            result fused = run(&p, NWATTN_BACKEND_FUSED, 2, 0);
            char what[120];
            snprintf(what, sizeof what, "kind %d%s shape %zu masks 0x%x: fused vs ref",
                     (int)kind, per_dim ? " per-dim" : "", s, mask_sets[mk]);
            compare(what, &p, &fused, &ref, 5e-5);
            snprintf(what, sizeof what, "kind %d%s shape %zu masks 0x%x: blas vs ref", (int)kind,
                     per_dim ? " per-dim" : "", s, mask_sets[mk]);
            compare(what, &p, &blas, &ref, 5e-5);
            snprintf(what, sizeof what, "kind %d%s shape %zu masks 0x%x: fused vs blas",
                     (int)kind, per_dim ? " per-dim" : "", s, mask_sets[mk]);
            compare(what, &p, &fused, &blas, 5e-5);
            free_result(&ref), free_result(&blas), free_result(&fused);
            free_problem(&p);
        }
}

static void test_dot(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_DOT, 0);
}
static void test_gaussian(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_GAUSSIAN, 0);
}
static void test_gaussian_per_dimension(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_GAUSSIAN, 1);
}
static void test_laplace(void **state) {
    (void)state;
    check_kind(NWATTN_SCORE_LAPLACE, 0);
}

/* Fused with a weights output (second pass exp(s - lse)) against the reference's weights. */
static void test_weights_output(void **state) {
    (void)state;
    at_rng r = {7};
    for (unsigned mk = 0; mk < sizeof mask_sets / sizeof mask_sets[0]; mk++) {
        problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, mask_sets[mk], 2, 70, 300, 8, 5, 1);
        result ref = run(&p, NWATTN_BACKEND_REFERENCE, 1, 1);
        result fused = run(&p, NWATTN_BACKEND_FUSED, 1, 1);
        compare("fused weights", &p, &fused, &ref, 1e-5);
        free_result(&ref), free_result(&fused);
        free_problem(&p);
    }
}

/* Units are independent, so any thread count gives the very same bits. */
static void test_threads_same_bits(void **state) {
    (void)state;
    at_rng r = {11};
    problem p = make_problem(&r, NWATTN_SCORE_GAUSSIAN, 0, MK_CAUSAL | MK_ADD, 3, 200, 333, 12,
                             9, 1);
    result one = run(&p, NWATTN_BACKEND_FUSED, 1, 0);
    const size_t counts[] = {2, 3, 5, 64};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        result many = run(&p, NWATTN_BACKEND_FUSED, counts[t], 0);
        assert_true(at_same_bits(one.o, many.o, buffer_floats(p.batch, p.m, p.ldo, p.stride_o)));
        assert_true(at_same_bits(one.lse, many.lse, p.batch * p.m));
        free_result(&many);
    }
    free_result(&one);
    free_problem(&p);
}

/* Pools p with FUSED on two threads, the tiles set (rows, keys; 0: derived). */
static result run_tiles(const problem *p, size_t rows, size_t keys, int weights) {
    nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 2);
    AT_OK(ctx, nwattn_context_set_tiles(ctx, rows, keys));
    return run_on(ctx, p, weights);
}

/* Units of several product groups (derived tiles with many row blocks, frame/tiles.h
 * nw_tile_groups) give the very bits of one-group units (the rows set to 64, the derived
 * product rows at these widths): the groups run the same products. Every score kind, masks,
 * padded layouts, exact rows (queries beyond the fast range), weights and lse. */
static void test_groups_same_bits(void **state) {
    (void)state;
    at_rng r = {29};
    const nwattn_score_kind kinds[] = {NWATTN_SCORE_DOT, NWATTN_SCORE_GAUSSIAN,
                                       NWATTN_SCORE_LAPLACE, NWATTN_SCORE_COSINE};
    const unsigned masks[] = {0, MK_CAUSAL | MK_ADD, MK_LENS_ROW | MK_KEEP | MK_ADD | MK_NEGINF};
    for (size_t kd = 0; kd < sizeof kinds / sizeof kinds[0]; kd++)
        for (size_t mk = 0; mk < sizeof masks / sizeof masks[0]; mk++) {
            problem p = make_problem(&r, kinds[kd], kd == 1, masks[mk], 9, 230, 150, 24, 7,
                                     (int)((kd + mk) % 3));
            if (kinds[kd] == NWATTN_SCORE_DOT) /* rows whose products leave the float range */
                for (size_t b = 0; b < p.batch; b++)
                    for (size_t l = 0; l < p.d; l++)
                        p.q[b * p.stride_q + 100 * p.ldq + l] *= 1e30f;
            result grouped = run_tiles(&p, 0, 0, 1), single = run_tiles(&p, 64, 0, 1);
            assert_true(at_same_bits(grouped.o, single.o,
                                     buffer_floats(p.batch, p.m, p.ldo, p.stride_o)));
            assert_true(at_same_bits(grouped.lse, single.lse, p.batch * p.m));
            assert_true(at_same_bits(grouped.w, single.w,
                                     buffer_floats(p.batch, p.m, p.n + 1, p.m * (p.n + 1))));
            result ref = run(&p, NWATTN_BACKEND_REFERENCE, 1, 1);
            compare("grouped units vs ref", &p, &grouped, &ref, 5e-5);
            free_result(&grouped), free_result(&single), free_result(&ref);
            free_problem(&p);
        }
}

/* Rows with every key masked: exactly zero outputs and weights, lse -INFINITY, like unfused. */
static void test_fully_masked_rows(void **state) {
    (void)state;
    at_rng r = {13};
    problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, 0, 2, 70, 300, 4, 6, 0);
    size_t lens[2] = {0, 300};
    unsigned char *keep = calloc(70 * 300, 1);
    for (size_t j = 0; j < 300; j++)
        keep[5 * 300 + j] = 1; /* item 1: only row 5 keeps anything */
    p.mask.valid_lens = lens;
    p.mask.keep = keep, p.mask.ld_keep = 300, p.mask.stride_keep = 0;
    const nwattn_backend backends[] = {NWATTN_BACKEND_FUSED, NWATTN_BACKEND_BLAS};
    for (int bk = 0; bk < 2; bk++) {
        result res = run(&p, backends[bk], 2, 1);
        for (size_t b = 0; b < 2; b++)
            for (size_t i = 0; i < 70; i++) {
                if (b == 1 && i == 5)
                    continue;
                assert_true(res.lse[b * 70 + i] == -INFINITY);
                for (size_t c = 0; c < 6; c++)
                    assert_true(res.o[b * p.stride_o + i * p.ldo + c] == 0.0f);
                for (size_t j = 0; j < 300; j++)
                    assert_true(res.w[b * 70 * 301 + i * 301 + j] == 0.0f);
            }
        assert_true(isfinite(res.lse[70 + 5]));
        free_result(&res);
    }
    p.mask.valid_lens = NULL, p.mask.keep = NULL;
    free(keep);
    free_problem(&p);
}

/* The one-pass 1-D row (simd.h dist1_exp_dot) shifts each tile by a bound from its keys'
 * range: 0 for queries inside it. Keys far apart against h put every score of such a query
 * thousands below 0, where the bound alone would leave only clamped terms: the row must find
 * the tile's true maximum instead. Query 50 against keys 0 and 90 (h = 1): all weight on the
 * nearer key, 90 (scores -1250 and -800); the reference agrees. Both kinds, 1 and 2 threads,
 * and a tile of many such keys around a cluster far from every query. */
static void test_dist1_far_keys(void **state) {
    (void)state;
    const nwattn_score_kind kinds[] = {NWATTN_SCORE_GAUSSIAN, NWATTN_SCORE_LAPLACE};
    for (int kind = 0; kind < 2; kind++)
        for (size_t threads = 1; threads <= 2; threads++) {
            nwattn_score sc = {kinds[kind], 0.0f, kind == 0 ? 1.0f : 0.05f, NULL};
            float q[3] = {50.0f, 47.0f, 89.0f}, k[2] = {0.0f, 90.0f}, v[2] = {-1.0f, 3.0f};
            float o[3], w[6], lse[3];
            nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, threads);
            AT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, 3, 2, 1, 1, q, 1, 0, k, 1, 0, v, 1, 0,
                                   o, 1, 0, NULL, 0, 0, lse, 0));
            for (int i = 0; i < 3; i++) /* a few ulp: the base-2 exponent's rounding */
                assert_true(fabsf(o[i] - 3.0f) <= 4.0f * 3.0f * FLT_EPSILON && isfinite(lse[i]));
            nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
            float o_ref[3], lse_ref[3];
            AT_OK(ref, nwattn_pool(ref, &sc, NULL, 1, 3, 2, 1, 1, q, 1, 0, k, 1, 0, v, 1, 0,
                                   o_ref, 1, 0, w, 2, 0, lse_ref, 0));
            for (int i = 0; i < 3; i++)
                assert_true(fabsf(lse[i] - lse_ref[i]) <= 1e-6f * fabsf(lse_ref[i]));
            /* 600 keys: a cluster at 10 and one key at 0; queries between them, every score
             * below -86 (h = 0.3 or 0.02) but small enough that float scores (about 3 ulp of
             * 300) keep the outputs within 1e-4 of the reference on every table, FMA or not.
             * Without the fallback the clamped terms average all 600 values. */
            sc.bandwidth = kind == 0 ? 0.3f : 0.02f;
            at_rng r = {31 + (uint64_t)threads};
            float *kk = at_random(&r, 600, 9.9f, 10.1f), *vv = at_random(&r, 600, -1.0f, 1.0f);
            kk[300] = 0.0f;
            float *qq = at_random(&r, 70, 4.0f, 6.0f), *oo = at_filled(70, 0.0f);
            float *oo_ref = at_filled(70, 0.0f);
            AT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, 70, 600, 1, 1, qq, 1, 0, kk, 1, 0, vv, 1,
                                   0, oo, 1, 0, NULL, 0, 0, NULL, 0));
            AT_OK(ref, nwattn_pool(ref, &sc, NULL, 1, 70, 600, 1, 1, qq, 1, 0, kk, 1, 0, vv, 1,
                                   0, oo_ref, 1, 0, NULL, 0, 0, NULL, 0));
            for (size_t i = 0; i < 70; i++)
                assert_true(fabsf(oo[i] - oo_ref[i]) <= 1e-4f);
            free(kk), free(vv), free(qq), free(oo), free(oo_ref);
            nwattn_context_destroy(ctx);
            nwattn_context_destroy(ref);
        }
}

/* nwattn_context_set_tiles: refused beyond the limits with the context unchanged; any
 * override changes results only by rounding (against the derived tiles), never with the
 * thread count; describe follows snprintf's contract and names the override. */
static void test_tiles(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 1);
    size_t rows = 99, keys = 99;
    AT_OK(ctx, nwattn_context_get_tiles(ctx, &rows, &keys));
    assert_true(rows == 0 && keys == 0);
    assert_int_equal(nwattn_context_set_tiles(ctx, NWATTN_MAX_TILE_ROWS + 1, 8),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(strstr(nwattn_context_last_error(ctx), "tiles") != NULL);
    assert_int_equal(nwattn_context_set_tiles(ctx, 8, NWATTN_MAX_TILE_KEYS + 1),
                     NWATTN_ERR_BAD_PARAMETER);
    AT_OK(ctx, nwattn_context_get_tiles(ctx, &rows, &keys));
    assert_true(rows == 0 && keys == 0);
    assert_int_equal(nwattn_context_get_tiles(ctx, NULL, &keys), NWATTN_ERR_NULL_POINTER);
    char line[256], small[10];
    const size_t len = nwattn_context_describe(ctx, line, sizeof line);
    assert_true(len > 0 && len == strlen(line) && strstr(line, "simd=") == line);
    assert_true(nwattn_context_describe(ctx, NULL, 0) == len);
    assert_true(nwattn_context_describe(ctx, small, sizeof small) == len);
    assert_true(strlen(small) == sizeof small - 1 && strncmp(small, line, 9) == 0);
    assert_true(nwattn_context_describe(NULL, line, sizeof line) == 0);

    at_rng r = {41};
    const size_t m = 70, n = 333;
    const nwattn_score_kind kinds[] = {NWATTN_SCORE_GAUSSIAN, NWATTN_SCORE_DOT};
    for (int kind = 0; kind < 2; kind++) {
        const size_t d = kind == 0 ? 1 : 8;
        nwattn_score sc = {kinds[kind], 0.35f, 0.4f, NULL};
        float *q = at_random(&r, m * d, -1.0f, 1.0f), *k = at_random(&r, n * d, -1.0f, 1.0f);
        float *v = at_random(&r, n, -1.0f, 1.0f), *want = at_filled(m, 0.0f);
        float *got = at_filled(m, 0.0f), *got2 = at_filled(m, 0.0f);
        AT_OK(ctx, nwattn_context_set_tiles(ctx, 0, 0));
        AT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, m, n, d, 1, q, d, 0, k, d, 0, v, 1, 0, want,
                               1, 0, NULL, 0, 0, NULL, 0));
        static const size_t overrides[][2] = {{1, 1}, {3, 7}, {64, 5000}, {200, 16}, {0, 40}};
        for (size_t t = 0; t < 5; t++) {
            AT_OK(ctx, nwattn_context_set_tiles(ctx, overrides[t][0], overrides[t][1]));
            AT_OK(ctx, nwattn_context_set_threads(ctx, 1));
            AT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, m, n, d, 1, q, d, 0, k, d, 0, v, 1, 0,
                                   got, 1, 0, NULL, 0, 0, NULL, 0));
            AT_OK(ctx, nwattn_context_set_threads(ctx, 3));
            AT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, m, n, d, 1, q, d, 0, k, d, 0, v, 1, 0,
                                   got2, 1, 0, NULL, 0, 0, NULL, 0));
            for (size_t i = 0; i < m; i++) {
                assert_true(fabsf(got[i] - want[i]) <= 2e-6f);
                assert_true(memcmp(&got[i], &got2[i], sizeof(float)) == 0);
            }
        }
        AT_OK(ctx, nwattn_context_describe(ctx, line, sizeof line) > 0 ? NWATTN_OK : NWATTN_ERR_BAD_PARAMETER);
        assert_true(strstr(line, "override=0x40") != NULL);
        free(q), free(k), free(v), free(want), free(got), free(got2);
    }
    nwattn_context_destroy(ctx);
}

/* The fused path's working memory is a few tiles, whatever m and n: once there are enough
 * row blocks for the largest units (frame/tiles.h nw_tile_groups), it stops growing. */
static void test_workspace_tile_sized(void **state) {
    (void)state;
    at_rng r = {17};
    size_t bytes[2];
    const size_t batch[2] = {16, 16}, sizes[2] = {256, test_small_shapes() ? 384 : 2048};
    for (int s = 0; s < 2; s++) {
        const size_t n = sizes[s], count = batch[s] * n * 64;
        float *q = at_random(&r, count, -1.0f, 1.0f), *o = at_filled(count, 0.0f);
        nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 1);
        nwattn_score dot = {NWATTN_SCORE_DOT, 0.125f, 0.0f, NULL};
        AT_OK(ctx, nwattn_pool(ctx, &dot, NULL, batch[s], n, n, 64, 64, q, 64, n * 64, q, 64,
                               n * 64, q, 64, n * 64, o, 64, n * 64, NULL, 0, 0, NULL, 0));
        bytes[s] = nwattn_context_workspace_bytes(ctx);
        nwattn_context_destroy(ctx);
        free(q), free(o);
    }
    assert_true(bytes[0] == bytes[1]);
    assert_true(bytes[1] < ((size_t)1 << 20));
}

/* Average pooling through the fused driver. */
static void test_average_pool(void **state) {
    (void)state;
    at_rng r = {19};
    for (unsigned mk = 0; mk < sizeof mask_sets / sizeof mask_sets[0]; mk++) {
        problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, mask_sets[mk], 2, 70, 300, 1, 5, 1);
        float *want = at_filled(buffer_floats(2, 70, p.ldo, p.stride_o), SENTINEL);
        float *got = at_filled(buffer_floats(2, 70, p.ldo, p.stride_o), SENTINEL);
        nwattn_context *ref = at_context(NWATTN_BACKEND_REFERENCE, 1);
        nwattn_context *fused = at_context(NWATTN_BACKEND_FUSED, 2);
        AT_OK(ref, nwattn_average_pool(ref, &p.mask, 2, 70, 300, 5, p.v, p.ldv, p.stride_v, want,
                                       p.ldo, p.stride_o));
        AT_OK(fused, nwattn_average_pool(fused, &p.mask, 2, 70, 300, 5, p.v, p.ldv, p.stride_v,
                                         got, p.ldo, p.stride_o));
        assert_true(at_close("average pool fused vs ref", 2, 70, 5, got, p.ldo, p.stride_o, want,
                             p.ldo, p.stride_o, 1e-5, 1e-5));
        nwattn_context_destroy(ref), nwattn_context_destroy(fused);
        free(want), free(got);
        free_problem(&p);
    }
}

/* AUTO on both sides of its thresholds (few keys, wide rows), also with a weights output,
 * with and without threads, agrees with the reference. */
static void test_auto(void **state) {
    (void)state;
    at_rng r = {23};
    const size_t cases[][3] = {{16, 8, 0}, {300, 8, 0}, {300, 8, 1}, {300, 200, 0}};
    for (int c = 0; c < 4; c++)
        for (size_t threads = 1; threads <= 2; threads++) {
            problem p = make_problem(&r, NWATTN_SCORE_DOT, 0, MK_CAUSAL, 1, 130, cases[c][0],
                                     cases[c][1], 4, 0);
            result ref = run(&p, NWATTN_BACKEND_REFERENCE, 1, (int)cases[c][2]);
            result aut = run(&p, NWATTN_BACKEND_AUTO, threads, (int)cases[c][2]);
            compare("auto vs ref", &p, &aut, &ref, 5e-5);
            free_result(&ref), free_result(&aut);
            free_problem(&p);
        }
}

/* The other primitives run under FUSED like under BLAS; the thread setting is checked. */
static void test_context_settings(void **state) {
    (void)state;
    nwattn_context *ctx = at_context(NWATTN_BACKEND_FUSED, 1);
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_FUSED);
    assert_int_equal(nwattn_context_set_threads(ctx, 0), NWATTN_ERR_BAD_PARAMETER);
    assert_true(strstr(nwattn_context_last_error(ctx), "threads") != NULL);
    assert_int_equal(nwattn_context_set_threads(ctx, NWATTN_MAX_THREADS + 1),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_int_equal(nwattn_context_get_threads(ctx), 1);
    assert_int_equal(nwattn_context_set_threads(ctx, 4), NWATTN_OK);
    assert_int_equal(nwattn_context_get_threads(ctx), 4);
    assert_int_equal(nwattn_context_get_threads(NULL), 1);
    assert_int_equal(nwattn_context_set_threads(NULL, 2), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_context_set_backend(ctx, (nwattn_backend)4), NWATTN_ERR_BAD_ENUM);

    const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
    float c[4] = {0};
    AT_OK(ctx, nwattn_bmm(ctx, 1, 2, 2, 3, a, 3, 0, b, 2, 0, c, 2, 0));
    assert_true(c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11);
    nwattn_score dot = {NWATTN_SCORE_DOT, 1.0f, 0.0f, NULL};
    float s[4];
    AT_OK(ctx, nwattn_scores(ctx, &dot, 1, 2, 2, 3, a, 3, 0, a, 3, 0, s, 2, 0));
    assert_true(s[0] == 14 && s[1] == 32 && s[3] == 77);
    float w[4];
    AT_OK(ctx, nwattn_softmax(ctx, NULL, 1, 2, 2, s, 2, 0, w, 2, 0, NULL, 0));
    assert_true(fabsf(w[0] + w[1] - 1.0f) < 1e-6f);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_gaussian),
        cmocka_unit_test(test_gaussian_per_dimension),
        cmocka_unit_test(test_laplace),
        cmocka_unit_test(test_weights_output),
        cmocka_unit_test(test_threads_same_bits),
        cmocka_unit_test(test_groups_same_bits),
        cmocka_unit_test(test_fully_masked_rows),
        cmocka_unit_test(test_dist1_far_keys),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_workspace_tile_sized),
        cmocka_unit_test(test_average_pool),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_context_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
