/*
 * nw_experiments — both seed articles' experiments, end to end, with libnwattn's regression API.
 *
 * Seed 2 (d2l.ai, "attention pooling"): 50 training points, x sorted uniform on [0, 5),
 *   y = 2 sin x + x^0.8 + N(0, 0.5^2); queries x = 0.0, 0.1, ..., 4.9. Average pooling,
 *   nonparametric Nadaraya-Watson (Gaussian, h = 1), the learnable-w model trained as d2l does
 *   (leave-one-out keys and values, loss = sum of squared errors / 2, SGD lr 0.5, 5 epochs),
 *   and Nadaraya-Watson with the bandwidth chosen by leave-one-out cross-validation.
 * Seed 1 (the noisy sine): N = 80, x uniform on [0, 10), y = sin x + 0.2 eps; the Gaussian
 *   estimator with the article's bandwidths 0.05, 0.5 and 10, and the CV-chosen one.
 * Then the time bandwidth selection takes at n = 1000 and n = 10000 (1-D), and seed 2's
 * consistency exercise (does the estimator improve with more data?).
 *
 * MSE is against the true, noise-free function. Entropy is each query's weight-row entropy
 * (nats; ln n for uniform weights), n_eff = 1 / sum w^2 its effective number of neighbours.
 *
 * usage: nw_experiments [seed] [quick]   ("quick" skips n = 10000 and the largest sizes)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <nwattn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        nwattn_status check_status_ = (call);                                                      \
        if (check_status_ != NWATTN_OK) {                                                          \
            fprintf(stderr, "%s failed: %s: %s\n", #call, nwattn_status_name(check_status_),       \
                    nwattn_context_last_error(ctx));                                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static nwattn_context *ctx;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double mse(const float *a, const float *b, size_t count) {
    double sum = 0.0;
    for (size_t i = 0; i < count; i++)
        sum += ((double)a[i] - (double)b[i]) * ((double)a[i] - (double)b[i]);
    return sum / (double)count;
}

/* Mean row entropy and n_eff of m×n weights; *near_uniform counts rows above 95% of ln n. */
static void weight_stats(size_t m, size_t n, const float *w, double *entropy, double *n_eff,
                         size_t *near_uniform) {
    float *e = malloc(m * sizeof(float)), *k = malloc(m * sizeof(float));
    if (e == NULL || k == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    CHECK(nwattn_weights_diagnostics(ctx, m, n, w, n, e, k));
    *entropy = *n_eff = 0.0;
    size_t uniform = 0;
    for (size_t i = 0; i < m; i++) {
        *entropy += e[i] / (double)m;
        *n_eff += k[i] / (double)m;
        uniform += e[i] > 0.95 * log((double)n);
    }
    if (near_uniform != NULL)
        *near_uniform = uniform;
    free(e), free(k);
}

static void print_row(const char *method, double h, double err, double entropy, double n_eff) {
    if (isinf(h))
        printf("  %-36s %9s  %9.4f  %8.3f  %7.2f\n", method, "inf", err, entropy, n_eff);
    else
        printf("  %-36s %9.4f  %9.4f  %8.3f  %7.2f\n", method, h, err, entropy, n_eff);
}

/* ---- Seed 2: d2l ------------------------------------------------------------------------------
 */
static void seed2(uint64_t seed) {
    enum { N = 50, M = 50 };
    float x[N], y[N], xq[M], f[M], pred[M], weights[M * N];
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    CHECK(nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, N, x, y));
    for (int i = 0; i < M; i++)
        xq[i] = (float)(0.1 * i);
    CHECK(nwattn_dataset_truth(ctx, NWATTN_DATASET_D2L, M, xq, f));
    const float w0 = (float)nwattn_rng_uniform(&rng); /* d2l: torch.rand((1,)) */

    printf(
        "Seed 2 (d2l.ai attention pooling), seed %llu: n_train = %d, x sorted uniform on [0, 5),\n"
        "  y = 2 sin x + x^0.8 + N(0, 0.5^2); %d queries x = 0.0, 0.1, ..., 4.9\n\n",
        (unsigned long long)seed, N, M);

    /* training the learnable-w model */
    nwattn_sgd sgd = {0.5f, 5};
    double losses[5], final_loss;
    float w = w0;
    CHECK(nwattn_wmodel_train(ctx, &sgd, N, 1, 1, x, 1, y, 1, &w, losses));
    const nwattn_mask loo = {NWATTN_MASK_LEAVE_ONE_OUT, NULL, NULL, 0, 0, NULL, 0, 0};
    CHECK(nwattn_wmodel_evaluate(ctx, w, &loo, N, N, 1, 1, x, 1, x, 1, y, 1, y, 1, NULL, 0, NULL, 0,
                                 &final_loss, NULL));
    printf("  learnable-w model: SGD, lr 0.5, 5 epochs, leave-one-out keys and values,\n"
           "  loss = sum of squared errors / 2\n");
    for (int e = 0; e < 5; e++)
        printf("    epoch %d  loss %9.4f\n", e + 1, losses[e]);
    printf("    after    loss %9.4f\n", final_loss);
    printf("  learned w = %.4f (started at %.4f): a Gaussian bandwidth 1/w = %.4f\n\n", (double)w,
           (double)w0, 1.0 / (double)w);

    printf("  %-36s %9s  %9s  %8s  %7s\n", "method", "bandwidth", "MSE vs f", "entropy", "n_eff");
    double ent, neff;
    /* average pooling: every weight 1/n */
    CHECK(nwattn_average_pool(ctx, NULL, 1, M, N, 1, y, 1, 0, pred, 1, 0));
    for (int i = 0; i < M * N; i++)
        weights[i] = 1.0f / N;
    weight_stats(M, N, weights, &ent, &neff, NULL);
    print_row("average pooling", INFINITY, mse(pred, f, M), ent, neff);
    /* nonparametric Nadaraya-Watson, h = 1 */
    nwattn_regression gauss = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
    const float one = 1.0f;
    CHECK(nwattn_nw_predict(ctx, &gauss, &one, M, N, 1, 1, xq, 1, x, 1, y, 1, pred, 1, weights, N,
                            NULL, NULL));
    const double smooth_entropy = (weight_stats(M, N, weights, &ent, &neff, NULL), ent);
    print_row("nonparametric NW (Gaussian, h = 1)", 1.0, mse(pred, f, M), ent, neff);
    /* the trained model */
    CHECK(nwattn_wmodel_evaluate(ctx, w, NULL, M, N, 1, 1, xq, 1, x, 1, y, 1, NULL, 0, pred, 1,
                                 weights, N, NULL, NULL));
    weight_stats(M, N, weights, &ent, &neff, NULL);
    char label[64];
    snprintf(label, sizeof label, "trained model (w = %.3f)", (double)w);
    print_row(label, 1.0 / fabs((double)w), mse(pred, f, M), ent, neff);
    const double sharp_entropy = ent;
    /* the CV-chosen bandwidths */
    const nwattn_degree degrees[2] = {NWATTN_LOCAL_CONSTANT, NWATTN_LOCAL_LINEAR};
    for (int k = 0; k < 2; k++) {
        nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, degrees[k], NWATTN_EMPTY_NEAREST};
        float h;
        CHECK(nwattn_nw_select_bandwidth(ctx, &model, N, 1, 1, x, 1, y, 1, NULL, &h, NULL, NULL,
                                         NULL));
        CHECK(nwattn_nw_predict(ctx, &model, &h, M, N, 1, 1, xq, 1, x, 1, y, 1, pred, 1, weights, N,
                                NULL, NULL));
        if (k == 0) {
            weight_stats(M, N, weights, &ent, &neff, NULL);
            print_row("NW, CV-chosen h (Gaussian)", h, mse(pred, f, M), ent, neff);
        } else {
            printf("  %-36s %9.4f  %9.4f  %8s  %7s\n", "local linear, CV-chosen h (Gaussian)",
                   (double)h, mse(pred, f, M), "-", "-");
        }
    }
    printf("\n  The loss falls, w ends %s 1 and the trained weights are %s than the\n"
           "  nonparametric ones (mean row entropy %.3f vs %.3f, of at most ln 50 = %.3f).\n\n",
           w > 1.0f ? "above" : "NOT above",
           sharp_entropy < smooth_entropy ? "sharper" : "NOT sharper", sharp_entropy,
           smooth_entropy, log(50.0));
}

/* ---- Seed 1: the noisy sine ---------------------------------------------------------------- */
static void seed1(uint64_t seed) {
    enum { N = 80, M = 200 };
    float x[N], y[N], grid[M], inside[M], f_grid[M], f_inside[M], pred[M], weights[M * N];
    nwattn_rng rng;
    nwattn_rng_seed(&rng, seed);
    CHECK(nwattn_dataset_generate(ctx, NWATTN_DATASET_SINE, &rng, N, x, y));
    for (int i = 0; i < M; i++) {
        grid[i] = (float)(-1.0 + 12.0 * i / (M - 1)); /* the article's torch.linspace(-1, 11) */
        inside[i] = (float)(10.0 * i / (M - 1));
    }
    CHECK(nwattn_dataset_truth(ctx, NWATTN_DATASET_SINE, M, grid, f_grid));
    CHECK(nwattn_dataset_truth(ctx, NWATTN_DATASET_SINE, M, inside, f_inside));
    nwattn_regression gauss = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
    float h_cv, scales[16];
    double curve[16];
    nwattn_cv_report report;
    CHECK(nwattn_nw_select_bandwidth(ctx, &gauss, N, 1, 1, x, 1, y, 1, NULL, &h_cv, &report, scales,
                                     curve));
    float start;
    CHECK(nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_NORMAL_REFERENCE, N, 1, x, 1, &start));

    printf("Seed 1 (noisy sine), seed %llu: N = %d, x uniform on [0, 10), y = sin x + 0.2 eps;\n"
           "  Gaussian Nadaraya-Watson on the article's grid x = -1 ... 11 (200 points) and on\n"
           "  [0, 10] (200 points); near-uniform rows: entropy above 95%% of ln %d = %.3f\n\n",
           (unsigned long long)seed, N, N, log((double)N));
    printf("  %9s  %12s  %12s  %8s  %7s  %12s\n", "bandwidth", "MSE [-1,11]", "MSE [0,10]",
           "entropy", "n_eff", "near-uniform");
    const float hs[4] = {0.05f, 0.5f, 10.0f, h_cv};
    for (int k = 0; k < 4; k++) {
        double ent, neff;
        size_t uniform;
        CHECK(nwattn_nw_predict(ctx, &gauss, &hs[k], M, N, 1, 1, inside, 1, x, 1, y, 1, pred, 1,
                                NULL, 0, NULL, NULL));
        const double err_inside = mse(pred, f_inside, M);
        CHECK(nwattn_nw_predict(ctx, &gauss, &hs[k], M, N, 1, 1, grid, 1, x, 1, y, 1, pred, 1,
                                weights, N, NULL, NULL));
        weight_stats(M, N, weights, &ent, &neff, &uniform);
        printf("  %9.4f  %12.4f  %12.4f  %8.3f  %7.2f  %8zu/%d%s\n", (double)hs[k],
               mse(pred, f_grid, M), err_inside, ent, neff, uniform, M,
               k == 3 ? "   <- CV-chosen" : "");
    }
    printf("\n  CV curve (h = scale x %.4f, the normal-reference rule; CV = mean squared\n"
           "  leave-one-out error):\n",
           (double)start);
    for (int g = 0; g < 16; g++)
        printf("    h = %8.4f  CV = %.5f%s\n", (double)(scales[g] * start), curve[g],
               g + 1 < 16 && curve[g] <= curve[g + 1] && (g == 0 || curve[g] <= curve[g - 1])
                   ? "  <- best grid point"
                   : "");
    printf("  refined: h = %.5f, CV = %.5f (%zu CV evaluations, converged: %s)\n\n", (double)h_cv,
           report.cv, report.evaluations, report.converged ? "yes" : "no");
}

/* ---- Timing of bandwidth selection --------------------------------------------------------- */
static void timing(size_t n, int repeats) {
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    if (x == NULL || y == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    nwattn_rng rng;
    nwattn_rng_seed(&rng, 1);
    CHECK(nwattn_dataset_generate(ctx, NWATTN_DATASET_SINE, &rng, n, x, y));
    for (int k = 0; k < 2; k++) {
        nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN,
                                   k ? NWATTN_LOCAL_LINEAR : NWATTN_LOCAL_CONSTANT, 0};
        double best = INFINITY;
        float h = 0.0f;
        nwattn_cv_report report;
        for (int r = 0; r < repeats; r++) {
            double t0 = now();
            CHECK(nwattn_nw_select_bandwidth(ctx, &model, n, 1, 1, x, 1, y, 1, NULL, &h, &report,
                                             NULL, NULL));
            best = fmin(best, now() - t0);
        }
        printf("  n = %5zu  %-15s %9.1f ms   h = %.5f   CV = %.6f   %zu CV evaluations\n", n,
               k ? "local linear" : "local constant", best * 1e3, (double)h, report.cv,
               report.evaluations);
    }
    free(x), free(y);
}

/* ---- Seed 2's exercise: more data ---------------------------------------------------------- */
static void consistency(int quick) {
    enum { M = 50 };
    const size_t sizes[4] = {50, 200, 1000, 5000};
    float xq[M], f[M], pred[M];
    for (int i = 0; i < M; i++)
        xq[i] = (float)(0.1 * i);
    CHECK(nwattn_dataset_truth(ctx, NWATTN_DATASET_D2L, M, xq, f));
    nwattn_regression gauss = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, 0};
    printf(
        "Seed 2's exercise: more training data (d2l's data, MSE vs f on its 50 queries,\n"
        "  mean of 5 draws): the CV bandwidth keeps improving; d2l's fixed h = 1 stays biased\n");
    printf("  %7s  %10s  %12s  %12s\n", "n_train", "mean CV h", "MSE (CV h)", "MSE (h = 1)");
    for (int s = 0; s < (quick ? 3 : 4); s++) {
        const size_t n = sizes[s];
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (x == NULL || y == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        double err_cv = 0.0, err_one = 0.0, mean_h = 0.0;
        for (uint64_t draw = 0; draw < 5; draw++) {
            nwattn_rng rng;
            nwattn_rng_seed(&rng, 100 + draw);
            CHECK(nwattn_dataset_generate(ctx, NWATTN_DATASET_D2L, &rng, n, x, y));
            float h;
            const float one = 1.0f;
            CHECK(nwattn_nw_select_bandwidth(ctx, &gauss, n, 1, 1, x, 1, y, 1, NULL, &h, NULL, NULL,
                                             NULL));
            CHECK(nwattn_nw_predict(ctx, &gauss, &h, M, n, 1, 1, xq, 1, x, 1, y, 1, pred, 1, NULL,
                                    0, NULL, NULL));
            err_cv += mse(pred, f, M) / 5.0;
            mean_h += (double)h / 5.0;
            CHECK(nwattn_nw_predict(ctx, &gauss, &one, M, n, 1, 1, xq, 1, x, 1, y, 1, pred, 1, NULL,
                                    0, NULL, NULL));
            err_one += mse(pred, f, M) / 5.0;
        }
        printf("  %7zu  %10.4f  %12.5f  %12.5f\n", n, mean_h, err_cv, err_one);
        free(x), free(y);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1u;
    const int quick = argc > 2 && strcmp(argv[2], "quick") == 0;
    if (nwattn_context_create(&ctx) != NWATTN_OK) {
        fprintf(stderr, "nwattn_context_create failed\n");
        return 1;
    }
    printf("libnwattn %s: Nadaraya-Watson regression, both seeds' experiments\n\n",
           nwattn_version_string());
    seed2(seed);
    seed1(seed);
    printf("Bandwidth selection by exact leave-one-out CV (Gaussian kernel, 1-D, seed 1's data,\n"
           "  16-point grid + derivative refinement; best of several runs, one thread):\n");
    timing(1000, 5);
    if (!quick)
        timing(10000, 3);
    printf("\n");
    consistency(quick);
    nwattn_context_destroy(ctx);
    return 0;
}
