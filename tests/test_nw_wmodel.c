/* The learnable-w model: the analytic gradient against finite differences, fast against
 * reference, w = 0 as average pooling, w != 0 as Gaussian pooling with h = 1/|w|, and d2l's
 * training run (the loss falls, w grows past 1, the weights sharpen). */
#include "nw_test.h"

typedef struct wcase {
    size_t m, n, d, dv;
    unsigned flags;
    int lens;
} wcase;

static const wcase cases[] = {
    {20, 20, 1, 1, NWATTN_MASK_LEAVE_ONE_OUT, 0},
    {7, 30, 1, 2, 0, 0},
    {12, 15, 2, 1, NWATTN_MASK_LEAVE_ONE_OUT, 1},
    {5, 9, 3, 3, NWATTN_MASK_CAUSAL, 0},
    {1, 1, 1, 1, 0, 0},
};

typedef struct wdata {
    float *q, *x, *y, *t;
    size_t lens[64];
    nwattn_mask mask;
} wdata;

static void make_data(const wcase *c, nwattn_rng *rng, wdata *out) {
    wdata w;
    memset(&w, 0, sizeof w);
    w.q = nt_matrix(rng, c->m, c->d, c->d + 1, 0, 3);
    w.x = c->m == c->n && (c->flags & NWATTN_MASK_LEAVE_ONE_OUT)
              ? w.q
              : nt_matrix(rng, c->n, c->d, c->d + 1, 0, 3);
    w.y = nt_matrix(rng, c->n, c->dv, c->dv, -1, 2);
    w.t = nt_matrix(rng, c->m, c->dv, c->dv + 2, -1, 2);
    w.mask.flags = c->flags | (c->lens ? NWATTN_MASK_LENS_PER_ROW : 0u);
    for (size_t i = 0; c->lens && i < c->m; i++)
        w.lens[i] = (i * 5) % (c->n + 1);
    w.mask.valid_lens = c->lens ? w.lens : NULL;
    *out = w;
    out->mask.valid_lens = c->lens ? out->lens : NULL; /* into out, not the local */
}

static void free_data(const wcase *c, wdata *w) {
    if (w->x != w->q)
        free(w->x);
    free(w->q), free(w->y), free(w->t);
    (void)c;
}

static void evaluate(nwattn_context *ctx, const wcase *c, const wdata *w, float wv, float *yhat,
                     float *weights, double *loss, double *grad) {
    NT_ASSERT_OK(ctx, nwattn_wmodel_evaluate(ctx, wv, &w->mask, c->m, c->n, c->d, c->dv, w->q,
                                             c->d + 1, w->x, c->d + 1, w->y, c->dv, w->t, c->dv + 2,
                                             yhat, c->dv, weights, c->n, loss, grad));
}

static void test_gradient_and_backends(void **state) {
    (void)state;
    nwattn_context *ref = nt_context(NWATTN_BACKEND_REFERENCE),
                   *fast = nt_context(NWATTN_BACKEND_BLAS);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 5);
    const float ws[4] = {0.3f, -1.7f, 2.5f, 0.0f};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const wcase *c = &cases[ci];
        wdata w;
        make_data(c, &rng, &w);
        float *ya = nt_alloc(c->m * c->dv * sizeof(float)),
              *yb = nt_alloc(c->m * c->dv * sizeof(float));
        float *wa = nt_alloc(c->m * c->n * sizeof(float)),
              *wb = nt_alloc(c->m * c->n * sizeof(float));
        for (size_t k = 0; k < 4; k++) {
            double la, ga, lb, gb, lp, lm;
            evaluate(ref, c, &w, ws[k], ya, wa, &la, &ga);
            evaluate(fast, c, &w, ws[k], yb, wb, &lb, &gb);
            for (size_t i = 0; i < c->m * c->dv; i++)
                nt_close("yhat fast", i, yb[i], ya[i], 1e-5, 1e-5);
            for (size_t i = 0; i < c->m * c->n; i++)
                nt_close("weights fast", i, wb[i], wa[i], 1e-6, 1e-5);
            nt_close("loss fast", ci, lb, la, 1e-6, 1e-5);
            nt_close("grad fast", ci, gb, ga, 1e-5 * (1.0 + la), 1e-4);
            /* central differences on the reference (double) loss */
            const float wp = ws[k] + 1e-3f, wm = ws[k] - 1e-3f;
            evaluate(ref, c, &w, wp, NULL, NULL, &lp, NULL);
            evaluate(ref, c, &w, wm, NULL, NULL, &lm, NULL);
            const double fd = (lp - lm) / ((double)wp - (double)wm);
            char what[64];
            snprintf(what, sizeof what, "dL/dw case %zu w %g", ci, (double)ws[k]);
            nt_close(what, k, ga, fd, 1e-6 * (1.0 + la), 1e-4);
            if (ws[k] == 0.0f) /* L is even in w: the gradient vanishes at 0 */
                assert_true(ga == 0.0 && gb == 0.0);
        }
        free(ya), free(yb), free(wa), free(wb);
        free_data(c, &w);
    }
    nwattn_context_destroy(ref);
    nwattn_context_destroy(fast);
}

/* w = 0 is average pooling; w != 0 is nwattn_pool with the Gaussian score, h = 1/|w|. */
static void test_equivalences(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_REFERENCE);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 6);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const wcase *c = &cases[ci];
        wdata w;
        make_data(c, &rng, &w);
        float *a = nt_alloc(c->m * c->dv * sizeof(float)),
              *b = nt_alloc(c->m * c->dv * sizeof(float));
        evaluate(ctx, c, &w, 0.0f, a, NULL, NULL, NULL);
        NT_ASSERT_OK(ctx, nwattn_average_pool(ctx, &w.mask, 1, c->m, c->n, c->dv, w.y, c->dv, 0, b,
                                              c->dv, 0));
        for (size_t i = 0; i < c->m * c->dv; i++)
            nt_close("w = 0 vs average pooling", i, a[i], b[i], 1e-6, 1e-6);
        const float wv = -2.0f;
        evaluate(ctx, c, &w, wv, a, NULL, NULL, NULL);
        nwattn_score score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.5f, NULL};
        NT_ASSERT_OK(ctx, nwattn_pool(ctx, &score, &w.mask, 1, c->m, c->n, c->d, c->dv, w.q,
                                      c->d + 1, 0, w.x, c->d + 1, 0, w.y, c->dv, 0, b, c->dv, 0,
                                      NULL, 0, 0, NULL, 0));
        for (size_t i = 0; i < c->m * c->dv; i++)
            nt_close("w vs Gaussian pooling", i, a[i], b[i], 1e-6, 1e-6);
        free(a), free(b);
        free_data(c, &w);
    }
    nwattn_context_destroy(ctx);
}

/* Mean row entropy of the test weights at w. */
static double mean_entropy(nwattn_context *ctx, float w, const float *xt, size_t m, const float *x,
                           const float *y, size_t n) {
    float *weights = nt_alloc(m * n * sizeof(float)), *ent = nt_alloc(m * sizeof(float));
    NT_ASSERT_OK(ctx, nwattn_wmodel_evaluate(ctx, w, NULL, m, n, 1, 1, xt, 1, x, 1, y, 1, NULL, 0,
                                             NULL, 0, weights, n, NULL, NULL));
    NT_ASSERT_OK(ctx, nwattn_weights_diagnostics(ctx, m, n, weights, n, ent, NULL));
    double mean = 0.0;
    for (size_t i = 0; i < m; i++)
        mean += ent[i];
    free(weights), free(ent);
    return mean / (double)m;
}

/* d2l's experiment: 50 sorted points, lr 0.5, 5 epochs, leave-one-out. */
static void test_d2l_training(void **state) {
    (void)state;
    for (size_t b = 0; b < 2; b++) {
        nwattn_context *ctx = nt_context(b ? NWATTN_BACKEND_AUTO : NWATTN_BACKEND_REFERENCE);
        for (uint64_t seed = 1; seed <= 4; seed++) {
            nwattn_rng rng;
            nwattn_rng_seed(&rng, seed);
            float x[50], y[50], xt[50];
            NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 50, x, y));
            for (int i = 0; i < 50; i++)
                xt[i] = 0.1f * (float)i;
            const float w0 = (float)nwattn_rng_uniform(&rng);
            float w = w0;
            double losses[5];
            nwattn_sgd sgd = {0.5f, 5};
            NT_ASSERT_OK(ctx, nwattn_wmodel_train(ctx, &sgd, 50, 1, 1, x, 1, y, 1, &w, losses));
            /* the same steps by hand */
            float manual = w0;
            nwattn_mask loo = {NWATTN_MASK_LEAVE_ONE_OUT, NULL, NULL, 0, 0, NULL, 0, 0};
            for (int e = 0; e < 5; e++) {
                double loss, grad;
                NT_ASSERT_OK(ctx,
                             nwattn_wmodel_evaluate(ctx, manual, &loo, 50, 50, 1, 1, x, 1, x, 1, y,
                                                    1, y, 1, NULL, 0, NULL, 0, &loss, &grad));
                nt_close("loss per epoch", (size_t)e, losses[e], loss, 0, 0);
                manual = (float)((double)manual - 0.5 * grad);
            }
            assert_true(manual == w);
            /* the loss falls, w exceeds 1, the weights are sharper than the nonparametric ones */
            double final;
            NT_ASSERT_OK(ctx, nwattn_wmodel_evaluate(ctx, w, &loo, 50, 50, 1, 1, x, 1, x, 1, y, 1,
                                                     y, 1, NULL, 0, NULL, 0, &final, NULL));
            for (int e = 1; e < 5; e++)
                assert_true(losses[e] <= losses[e - 1]);
            assert_true(final < 0.5 * losses[0]);
            assert_true(w > 1.0f);
            const double sharp = mean_entropy(ctx, w, xt, 50, x, y, 50);
            const double smooth = mean_entropy(ctx, 1.0f, xt, 50, x, y, 50);
            if (!(sharp < smooth))
                fail_msg("seed %u: entropy %g (trained w %g) not below %g (w = 1)", (unsigned)seed,
                         sharp, (double)w, smooth);
        }
        nwattn_context_destroy(ctx);
    }
}

/* A learning rate that throws w out of float's range fails, leaving w and the losses alone. */
static void test_divergence(void **state) {
    (void)state;
    nwattn_context *ctx = nt_context(NWATTN_BACKEND_AUTO);
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 3);
    float x[50], y[50];
    NT_ASSERT_OK(ctx, nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, 50, x, y));
    float w = 0.5f;
    double losses[3] = {-1, -1, -1};
    nwattn_sgd sgd = {3e38f, 3};
    NT_ASSERT_STATUS(ctx, nwattn_wmodel_train(ctx, &sgd, 50, 1, 1, x, 1, y, 1, &w, losses),
                     NWATTN_ERR_BAD_PARAMETER);
    assert_true(w == 0.5f);
    assert_true(losses[0] == -1 && losses[1] == -1 && losses[2] == -1);
    /* zero epochs: nothing moves */
    sgd.epochs = 0;
    NT_ASSERT_OK(ctx, nwattn_wmodel_train(ctx, &sgd, 50, 1, 1, x, 1, y, 1, &w, NULL));
    assert_true(w == 0.5f);
    nwattn_context_destroy(ctx);
}

/* No keys and no value columns: no working memory at all. A fresh reference context has no
 * workspace either, which once made the reference path offset a NULL pointer (UBSan, found by
 * the fuzzer). Every row is fully masked: loss 0, gradient 0. */
static void test_empty_problem(void **state) {
    (void)state;
    for (int b = 0; b < 2; b++) {
        nwattn_context *ctx =
            nt_context(b == 0 ? NWATTN_BACKEND_REFERENCE : NWATTN_BACKEND_BLAS);
        const float xq[2] = {0.5f, 1.5f};
        double loss = -1.0, grad = -1.0;
        NT_ASSERT_OK(ctx, nwattn_wmodel_evaluate(ctx, 1.0f, NULL, 2, 0, 1, 0, xq, 1, xq, 1, xq,
                                                 1, xq, 1, NULL, 0, NULL, 0, &loss, &grad));
        assert_true(loss == 0.0 && grad == 0.0);
        nwattn_context_destroy(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_problem),
        cmocka_unit_test(test_gradient_and_backends),
        cmocka_unit_test(test_equivalences),
        cmocka_unit_test(test_d2l_training),
        cmocka_unit_test(test_divergence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
