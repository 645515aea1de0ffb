/* Every status path of the regression API: each error leaves the outputs untouched and the
 * context's message names the status. */
#include "nw_test.h"

#define SENTINEL 12345.0f

/* Inputs (valid unless a case spoils them) and sentinel-filled outputs. */
typedef struct bufs {
    float x[40], y[40], xq[10], h[2];
    float yq[10], w[400];
    unsigned char flags[10];
    size_t flagged;
    double cv[4], grad[8];
    nwattn_cv_report report;
    float bw_out[2], scales[16];
    double curve[16];
} bufs;

static void fill(bufs *b) {
    for (int i = 0; i < 40; i++) {
        b->x[i] = (float)(i % 7) * 0.3f + (float)i * 0.01f;
        b->y[i] = (float)(i % 5);
    }
    for (int i = 0; i < 10; i++) {
        b->xq[i] = (float)i * 0.2f;
        b->yq[i] = SENTINEL;
        b->flags[i] = 77;
    }
    for (int i = 0; i < 400; i++)
        b->w[i] = SENTINEL;
    b->h[0] = b->h[1] = 0.5f;
    b->flagged = 999;
    for (int i = 0; i < 4; i++)
        b->cv[i] = SENTINEL;
    for (int i = 0; i < 8; i++)
        b->grad[i] = SENTINEL;
    memset(&b->report, 0x5a, sizeof b->report);
    b->bw_out[0] = b->bw_out[1] = SENTINEL;
    for (int i = 0; i < 16; i++) {
        b->scales[i] = SENTINEL;
        b->curve[i] = SENTINEL;
    }
}

static void untouched(const bufs *b) {
    for (int i = 0; i < 10; i++) {
        assert_true(b->yq[i] == SENTINEL);
        assert_int_equal(b->flags[i], 77);
    }
    for (int i = 0; i < 400; i++)
        assert_true(b->w[i] == SENTINEL);
    assert_int_equal(b->flagged, 999);
    for (int i = 0; i < 4; i++)
        assert_true(b->cv[i] == SENTINEL);
    for (int i = 0; i < 8; i++)
        assert_true(b->grad[i] == SENTINEL);
    nwattn_cv_report fresh;
    memset(&fresh, 0x5a, sizeof fresh);
    assert_memory_equal(&b->report, &fresh, sizeof fresh);
    assert_true(b->bw_out[0] == SENTINEL && b->bw_out[1] == SENTINEL);
    for (int i = 0; i < 16; i++)
        assert_true(b->scales[i] == SENTINEL && b->curve[i] == SENTINEL);
}

#define EXPECT(ctx, b, call, want)                                                                 \
    do {                                                                                           \
        NT_ASSERT_STATUS(ctx, call, want);                                                         \
        untouched(&(b));                                                                           \
    } while (0)

static const nwattn_regression gauss = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
static const nwattn_regression epan_ll = {NWATTN_KERNEL_EPANECHNIKOV, NWATTN_LOCAL_LINEAR, 0};

/* The usual call with one argument changed. */
#define PREDICT(ctx, model, h, m, n, d, dv, xq, ldq, x, ldx, y, ldy, yq, ldyq, w, ldw)             \
    nwattn_nw_predict(ctx, model, h, m, n, d, dv, xq, ldq, x, ldx, y, ldy, yq, ldyq, w, ldw,       \
                      b.flags, &b.flagged)

static void test_predict_errors(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    bufs b;
    for (int which = 0; which < 2; which++) {
        fill(&b);
        const nwattn_regression *model = which ? &epan_ll : &gauss;
        assert_int_equal(
            PREDICT(NULL, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
            NWATTN_ERR_NULL_POINTER);
        untouched(&b);
        EXPECT(ctx, b,
               PREDICT(ctx, NULL, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_NULL_POINTER);
        nwattn_regression bad = *model;
        bad.kernel = (nwattn_kernel)99;
        EXPECT(ctx, b,
               PREDICT(ctx, &bad, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_ENUM);
        bad = *model;
        bad.degree = (nwattn_degree)2;
        EXPECT(ctx, b,
               PREDICT(ctx, &bad, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_ENUM);
        bad = *model;
        bad.empty = (nwattn_empty)3;
        EXPECT(ctx, b,
               PREDICT(ctx, &bad, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_ENUM);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 0, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_DIMENSION);
        EXPECT(ctx, b,
               PREDICT(ctx, model, NULL, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_NULL_POINTER);
        const float bad_h[4] = {0.0f, -1.0f, NAN, INFINITY};
        for (int i = 0; i < 4; i++)
            EXPECT(ctx, b,
                   PREDICT(ctx, model, &bad_h[i], 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1,
                           b.w, 20),
                   NWATTN_ERR_BAD_PARAMETER);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, NULL, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_NULL_POINTER);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, NULL, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_NULL_POINTER);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, NULL, 1, b.w, 20),
               NWATTN_ERR_NULL_POINTER);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 2, 1, b.xq, 1, b.x, 2, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_LEADING_DIM);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 2, b.xq, 1, b.x, 1, b.y, 1, b.yq, 2, b.w, 20),
               NWATTN_ERR_BAD_LEADING_DIM);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 19),
               NWATTN_ERR_BAD_LEADING_DIM);
        /* non-finite data */
        b.x[3] = NAN;
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_PARAMETER);
        fill(&b);
        b.y[19] = INFINITY;
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_PARAMETER);
        fill(&b);
        b.xq[4] = -INFINITY;
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_BAD_PARAMETER);
        fill(&b);
        /* no training points */
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 0, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 1),
               NWATTN_ERR_DEGENERATE_DATA);
        /* aliasing: an output on an input, two outputs on each other */
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.x + 2, 1, b.w, 20),
               NWATTN_ERR_ALIASING);
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.w, 1, b.w + 2, 20),
               NWATTN_ERR_ALIASING);
        EXPECT(ctx, b,
               nwattn_nw_predict(ctx, model, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1,
                                 b.w, 20, (unsigned char *)(void *)b.yq, NULL),
               NWATTN_ERR_ALIASING);
        /* a bandwidth array overlapping an output */
        EXPECT(ctx, b,
               nwattn_nw_predict(ctx, model, b.h + 1, 2, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.h, 1,
                                 NULL, 0, NULL, NULL),
               NWATTN_ERR_ALIASING);
        /* sizes that overflow */
        EXPECT(ctx, b,
               PREDICT(ctx, model, b.h, SIZE_MAX / 2, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1,
                       b.w, 20),
               NWATTN_ERR_OVERFLOW);
    }
    nwattn_context_destroy(ctx);
}

/* Empty problems succeed and write only the counters. */
static void test_predict_empty(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    bufs b;
    fill(&b);
    NT_ASSERT_OK(
        ctx, PREDICT(ctx, &epan_ll, b.h, 0, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20));
    assert_int_equal(b.flagged, 0);
    assert_true(b.yq[0] == SENTINEL && b.w[0] == SENTINEL && b.flags[0] == 77);
    assert_string_equal(nwattn_context_last_error(ctx), "");
    nwattn_context_destroy(ctx);
}

/* An explicit BLAS backend refuses leading dimensions beyond the BLAS integer on the pooled
 * path; AUTO falls back to the reference. */
static void test_predict_too_large(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_BLAS);
    bufs b;
    fill(&b);
    const size_t huge = (size_t)1 << 31;
    EXPECT(ctx, b,
           nwattn_nw_predict(ctx, &gauss, b.h, 1, 1, 1, 1, b.xq, huge, b.x, huge, b.y, 1, b.yq, 1,
                             NULL, 0, NULL, NULL),
           NWATTN_ERR_TOO_LARGE);
    NT_ASSERT_OK(ctx, nwattn_context_set_backend(ctx, NWATTN_BACKEND_AUTO));
    NT_ASSERT_OK(ctx, nwattn_nw_predict(ctx, &gauss, b.h, 1, 1, 1, 1, b.xq, huge, b.x, huge, b.y, 1,
                                        b.yq, 1, NULL, 0, NULL, NULL));
    assert_true(b.yq[0] == b.y[0]);
    nwattn_context_destroy(ctx);
}

/* An allocator that fails on demand. */
static int fail_allocations;
static void *failing_alloc(void *user, size_t bytes) {
    (void)user;
    return fail_allocations ? NULL : malloc(bytes);
}
static void plain_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

static void test_allocation_failure(void **state) {
    (void)state;
    nwattn_allocator allocator = {failing_alloc, plain_free, NULL};
    nwattn_context *ctx = NULL;
    fail_allocations = 0;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &allocator), NWATTN_OK);
    fail_allocations = 1;
    bufs b;
    fill(&b);
    for (int backend = 0; backend < 2; backend++) {
        NT_ASSERT_OK(ctx, nwattn_context_set_backend(ctx, backend ? NWATTN_BACKEND_REFERENCE
                                                                  : NWATTN_BACKEND_AUTO));
        EXPECT(ctx, b,
               PREDICT(ctx, &epan_ll, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, b.w, 20),
               NWATTN_ERR_ALLOC);
        EXPECT(ctx, b,
               PREDICT(ctx, &gauss, b.h, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, b.yq, 1, NULL, 0),
               NWATTN_ERR_ALLOC);
        EXPECT(
            ctx, b,
            nwattn_nw_cv(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 1, b.h, 1, b.cv, b.grad, 1, NULL),
            NWATTN_ERR_ALLOC);
        EXPECT(ctx, b,
               nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, NULL, b.bw_out,
                                          &b.report, b.scales, b.curve),
               NWATTN_ERR_ALLOC);
        EXPECT(ctx, b,
               nwattn_wmodel_evaluate(ctx, 1.0f, NULL, 5, 20, 1, 1, b.xq, 1, b.x, 1, b.y, 1, NULL,
                                      0, b.yq, 1, NULL, 0, NULL, NULL),
               NWATTN_ERR_ALLOC);
        float w = 1.0f;
        nwattn_sgd sgd = {0.1f, 2};
        NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 20, 1, 1, b.x, 1, b.y, 1, &w, b.cv),
                         NWATTN_ERR_ALLOC);
        assert_true(w == 1.0f);
        untouched(&b);
        float h = SENTINEL;
        NT_ASSERT_STATUS(ctx,
                         nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_SCOTT, 20, 1, b.x, 1, &h),
                         NWATTN_ERR_ALLOC);
        assert_true(h == SENTINEL);
        nwattn_rng rng = {5};
        NT_ASSERT_STATUS(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 10, b.yq, b.w),
                         NWATTN_ERR_ALLOC);
        assert_true(rng.state == 5);
        untouched(&b);
    }
    fail_allocations = 0;
    nwattn_context_destroy(ctx);
}

static void test_cv_errors(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    bufs b;
    fill(&b);
    const float grid[4] = {0.5f, 0.7f, -0.1f, 0.9f};
#define CV(ctx, model, n, d, dv, x, ldx, y, ldy, nbw, bw, ldb, cv, g, ldg)                         \
    nwattn_nw_cv(ctx, model, n, d, dv, x, ldx, y, ldy, nbw, bw, ldb, cv, g, ldg, NULL)
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 4, grid, 1, b.cv, b.grad, 1),
           NWATTN_ERR_BAD_PARAMETER); /* the third bandwidth */
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 1, 0, b.x, 1, b.y, 1, 2, grid, 1, b.cv, b.grad, 1),
           NWATTN_ERR_BAD_DIMENSION);
    EXPECT(ctx, b, CV(ctx, &gauss, 2, 1, 1, b.x, 1, b.y, 1, 2, grid, 1, b.cv, b.grad, 1),
           NWATTN_ERR_DEGENERATE_DATA);
    float same[40];
    for (int i = 0; i < 40; i++)
        same[i] = i % 2 ? 3.0f : (float)i; /* column 1 of the n×2 matrix is constant */
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 2, 1, same, 2, b.y, 1, 1, b.h, 2, b.cv, b.grad, 2),
           NWATTN_ERR_DEGENERATE_DATA);
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 2, 1, b.x, 2, b.y, 1, 2, b.h, 1, b.cv, b.grad, 2),
           NWATTN_ERR_BAD_LEADING_DIM);
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 2, 1, b.x, 2, b.y, 1, 1, b.h, 2, b.cv, b.grad, 1),
           NWATTN_ERR_BAD_LEADING_DIM);
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 2, grid, 1, NULL, b.grad, 1),
           NWATTN_ERR_NULL_POINTER);
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 2, grid, 1, b.cv, b.cv + 1, 1),
           NWATTN_ERR_ALIASING);
    b.y[7] = NAN;
    EXPECT(ctx, b, CV(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 2, grid, 1, b.cv, b.grad, 1),
           NWATTN_ERR_BAD_PARAMETER);
    fill(&b);
    nwattn_regression bad = {NWATTN_KERNEL_GAUSSIAN, (nwattn_degree)9, 0};
    EXPECT(ctx, b, CV(ctx, &bad, 20, 1, 1, b.x, 1, b.y, 1, 2, grid, 1, b.cv, b.grad, 1),
           NWATTN_ERR_BAD_ENUM);
    /* no bandwidths: nothing to do */
    NT_ASSERT_OK(ctx, CV(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, 0, grid, 1, b.cv, b.grad, 1));
    untouched(&b);
#undef CV
    nwattn_context_destroy(ctx);
}

static void test_select_errors(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    bufs b;
    fill(&b);
#define SELECT(opt)                                                                                \
    nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, opt, b.bw_out, &b.report,    \
                               b.scales, b.curve)
    const float zero = 0.0f;
    const nwattn_cv_options bad[] = {
        {1, 0, 0, NULL, 0, 0},        /* one grid point */
        {0, 2.0f, 1.0f, NULL, 0, 0},  /* scale_min > scale_max */
        {0, -1.0f, 0, NULL, 0, 0},    /* negative scale */
        {0, 0, INFINITY, NULL, 0, 0}, /* infinite scale */
        {0, 0, 0, NULL, 5, 0},        /* fewer evaluations than grid points */
        {0, 0, 0, NULL, 0, -1.0},     /* negative tolerance */
        {0, 0, 0, NULL, 0, NAN},      /* NaN tolerance */
        {0, 0, 0, &zero, 0, 0},       /* a zero start */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT(ctx, b, SELECT(&bad[i]), NWATTN_ERR_BAD_PARAMETER);
    const nwattn_cv_options large = {32, 0, 0, NULL, 0, 0}; /* curve arrays hold 16 only: fine */
    (void)large;
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, NULL, NULL, NULL, NULL,
                                      NULL),
           NWATTN_ERR_NULL_POINTER);
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 2, 1, 1, b.x, 1, b.y, 1, NULL, b.bw_out,
                                      &b.report, b.scales, b.curve),
           NWATTN_ERR_DEGENERATE_DATA);
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 0, b.x, 1, b.y, 1, NULL, b.bw_out,
                                      &b.report, b.scales, b.curve),
           NWATTN_ERR_BAD_DIMENSION);
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, NULL, b.bw_out,
                                      &b.report, b.scales, (double *)(void *)b.scales),
           NWATTN_ERR_ALIASING);
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, b.x, 1, b.y, 1, NULL, b.x + 3,
                                      &b.report, b.scales, b.curve),
           NWATTN_ERR_ALIASING);
    float flat[20];
    for (int i = 0; i < 20; i++)
        flat[i] = 2.5f;
    EXPECT(ctx, b,
           nwattn_nw_select_bandwidth(ctx, &gauss, 20, 1, 1, flat, 1, b.y, 1, NULL, b.bw_out,
                                      &b.report, b.scales, b.curve),
           NWATTN_ERR_DEGENERATE_DATA);
#undef SELECT
    nwattn_context_destroy(ctx);
}

static void test_wmodel_errors(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    bufs b;
    fill(&b);
    double loss = SENTINEL, grad = SENTINEL;
#define EVAL(wv, mask, d, target, yhat, lossp)                                                     \
    nwattn_wmodel_evaluate(ctx, wv, mask, 5, 20, d, 1, b.xq, 1, b.x, 1, b.y, 1, target, 1, yhat,   \
                           1, b.w, 20, lossp, &grad)
    EXPECT(ctx, b, EVAL(NAN, NULL, 1, b.xq, b.yq, &loss), NWATTN_ERR_BAD_PARAMETER);
    EXPECT(ctx, b, EVAL(1.0f, NULL, 0, b.xq, b.yq, &loss), NWATTN_ERR_BAD_DIMENSION);
    EXPECT(ctx, b, EVAL(1.0f, NULL, 1, NULL, b.yq, &loss), NWATTN_ERR_NULL_POINTER);
    nwattn_mask mask = {1u << 7, NULL, NULL, 0, 0, NULL, 0, 0};
    EXPECT(ctx, b, EVAL(1.0f, &mask, 1, b.xq, b.yq, &loss), NWATTN_ERR_BAD_ENUM);
    size_t lens[1] = {21};
    nwattn_mask long_mask = {0, lens, NULL, 0, 0, NULL, 0, 0};
    EXPECT(ctx, b, EVAL(1.0f, &long_mask, 1, b.xq, b.yq, &loss), NWATTN_ERR_BAD_MASK);
    EXPECT(ctx, b, EVAL(1.0f, NULL, 1, b.xq, b.x, &loss), NWATTN_ERR_ALIASING);
    EXPECT(ctx, b, EVAL(1.0f, NULL, 1, b.xq, b.yq, (double *)(void *)b.yq), NWATTN_ERR_ALIASING);
    assert_true(loss == SENTINEL && grad == SENTINEL);
#undef EVAL
    float w = 0.5f;
    nwattn_sgd sgd = {0.5f, 3};
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, NULL, 20, 1, 1, b.x, 1, b.y, 1, &w, b.cv),
                     NWATTN_ERR_NULL_POINTER);
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 20, 1, 1, b.x, 1, b.y, 1, NULL, b.cv),
                     NWATTN_ERR_NULL_POINTER);
    const float rates[3] = {0.0f, -1.0f, NAN};
    for (int i = 0; i < 3; i++) {
        nwattn_sgd bad = {rates[i], 3};
        NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &bad, 20, 1, 1, b.x, 1, b.y, 1, &w, b.cv),
                         NWATTN_ERR_BAD_PARAMETER);
    }
    float nan_w = NAN;
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 20, 1, 1, b.x, 1, b.y, 1, &nan_w, b.cv),
                     NWATTN_ERR_BAD_PARAMETER);
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 1, 1, 1, b.x, 1, b.y, 1, &w, b.cv),
                     NWATTN_ERR_DEGENERATE_DATA);
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 20, 1, 1, b.x, 1, b.y, 1, b.x + 4, b.cv),
                     NWATTN_ERR_ALIASING);
    NT_ASSERT_STATUS(
        ctx,
        nwattn_wmodel_train(ctx, &sgd, 20, 1, 1, b.x, 1, b.y, 1, &w, (double *)(void *)(b.y + 2)),
        NWATTN_ERR_ALIASING);
    assert_true(w == 0.5f);
    untouched(&b);
    nwattn_context_destroy(ctx);
}

/* The new status has a name and a description. */
static void test_status_text(void **state) {
    (void)state;
    assert_string_equal(nwattn_status_name(NWATTN_ERR_DEGENERATE_DATA),
                        "NWATTN_ERR_DEGENERATE_DATA");
    assert_int_equal(NWATTN_ERR_DEGENERATE_DATA, 13);
    assert_true(strlen(nwattn_status_describe(NWATTN_ERR_DEGENERATE_DATA)) > 10);
    assert_string_equal(nwattn_status_name((nwattn_status)14), "NWATTN_ERR_UNKNOWN");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_errors),    cmocka_unit_test(test_predict_empty),
        cmocka_unit_test(test_predict_too_large), cmocka_unit_test(test_allocation_failure),
        cmocka_unit_test(test_cv_errors),         cmocka_unit_test(test_select_errors),
        cmocka_unit_test(test_wmodel_errors),     cmocka_unit_test(test_status_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
