/*
 * d2l_pooling — the attention-pooling experiment of d2l.ai ("Attention Pooling by Similarity",
 * Nadaraya-Watson kernel regression), done with libnwattn.
 *
 *   50 training points: x sorted uniform on [0, 5), y = 2 sin x + x^0.8 + noise, noise ~ N(0, 0.5)
 *   50 queries x = 0.0, 0.1, ..., 4.9
 *   average pooling  (nwattn_average_pool: every training y counts the same)
 *   Gaussian pooling (nwattn_pool: softmax(-(x - x_i)^2 / 2) · y, bandwidth h = 1)
 *
 * It prints a few predictions, the mean squared error of both against the true function, how
 * closely the BLAS and the reference backends agree, and a text heatmap of the attention weights.
 *
 * usage: d2l_pooling [seed]      (the default seed makes every run print the same)
 */
#include <nwattn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N_TRAIN 50
#define N_TEST 50

/* ---- A small deterministic random number generator (splitmix64) -------------------------- */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform on [0, 1). */
static double rng_uniform(void)
{
    return (double)(rng_next() >> 11) * 0x1.0p-53;
}

/* Normal with mean 0 and standard deviation sigma (Box-Muller). */
static double rng_normal(double sigma)
{
    const double two_pi = 6.283185307179586;
    double u1 = 1.0 - rng_uniform(); /* (0, 1]: log(u1) is finite */
    double u2 = rng_uniform();
    return sigma * sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The function the noisy samples come from. */
static double truth(double x)
{
    return 2.0 * sin(x) + pow(x, 0.8);
}

static double mse(const float *y_hat, const float *y, size_t count)
{
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        double e = (double)y_hat[i] - (double)y[i];
        sum += e * e;
    }
    return sum / (double)count;
}

/* Prints what went wrong on ctx and makes main return 1. */
#define CHECK(call)                                                                          \
    do {                                                                                     \
        nwattn_status check_status_ = (call);                                                \
        if (check_status_ != NWATTN_OK) {                                                    \
            fprintf(stderr, "%s failed: %s: %s\n", #call, nwattn_status_name(check_status_), \
                    nwattn_context_last_error(ctx));                                         \
            nwattn_context_destroy(ctx);                                                     \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    rng_state = argc > 1 ? strtoull(argv[1], NULL, 0) : 2024u;

    /* ---- The data set ---- */
    static float x_train[N_TRAIN], y_train[N_TRAIN], x_test[N_TEST], y_truth[N_TEST];
    for (size_t j = 0; j < N_TRAIN; j++) {
        x_train[j] = (float)(5.0 * rng_uniform());
    }
    qsort(x_train, N_TRAIN, sizeof x_train[0], compare_floats);
    for (size_t j = 0; j < N_TRAIN; j++) {
        y_train[j] = (float)(truth((double)x_train[j]) + rng_normal(0.5));
    }
    for (size_t i = 0; i < N_TEST; i++) {
        x_test[i] = (float)((double)i * 0.1);
        y_truth[i] = (float)truth((double)x_test[i]);
    }

    nwattn_context *ctx = NULL;
    CHECK(nwattn_context_create(&ctx));

    /* ---- Average pooling: every key gets weight 1/n ---- */
    static float y_average[N_TEST];
    CHECK(nwattn_average_pool(ctx, NULL, 1, N_TEST, N_TRAIN, 1, y_train, 1, 0,
                              y_average, 1, 0));

    /* ---- Nadaraya-Watson with the Gaussian kernel: queries x_test, keys x_train, values
     * y_train, all with d = dv = 1. The weights are asked for to draw the heatmap. ---- */
    const nwattn_score gaussian = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    static float y_gaussian[N_TEST], weights[N_TEST * N_TRAIN];
    CHECK(nwattn_pool(ctx, &gaussian, NULL, 1, N_TEST, N_TRAIN, 1, 1,
                      x_test, 1, 0,           /* Q: N_TEST x 1 */
                      x_train, 1, 0,          /* K: N_TRAIN x 1 */
                      y_train, 1, 0,          /* V: N_TRAIN x 1 */
                      y_gaussian, 1, 0,       /* O: N_TEST x 1 */
                      weights, N_TRAIN, 0,    /* W: N_TEST x N_TRAIN */
                      NULL, 0));

    /* ---- The same with the reference backend (double accumulation), to compare ---- */
    static float y_reference[N_TEST];
    CHECK(nwattn_context_set_backend(ctx, NWATTN_BACKEND_REFERENCE));
    CHECK(nwattn_pool(ctx, &gaussian, NULL, 1, N_TEST, N_TRAIN, 1, 1, x_test, 1, 0,
                      x_train, 1, 0, y_train, 1, 0, y_reference, 1, 0, NULL, 0, 0, NULL, 0));
    CHECK(nwattn_context_set_backend(ctx, NWATTN_BACKEND_AUTO));
    double max_diff = 0.0;
    for (size_t i = 0; i < N_TEST; i++) {
        max_diff = fmax(max_diff, fabs((double)y_gaussian[i] - (double)y_reference[i]));
    }

    /* ---- Report ---- */
    printf("libnwattn %s: d2l's attention pooling experiment (Nadaraya-Watson regression)\n",
           nwattn_version_string());
    printf("%d training points: x sorted uniform on [0, 5), y = 2 sin x + x^0.8 + N(0, 0.5)\n",
           N_TRAIN);
    printf("%d queries: x = 0.0, 0.1, ..., 4.9\n\n", N_TEST);

    printf("    x    truth  average  Gaussian (h = 1)\n");
    for (size_t i = 0; i < N_TEST; i += 7) {
        printf("  %3.1f  %7.3f  %7.3f  %7.3f\n", (double)x_test[i], (double)y_truth[i],
               (double)y_average[i], (double)y_gaussian[i]);
    }

    printf("\nMean squared error against the true function:\n");
    printf("  average pooling          %.4f\n", mse(y_average, y_truth, N_TEST));
    printf("  Gaussian kernel, h = 1   %.4f\n", mse(y_gaussian, y_truth, N_TEST));
    printf("BLAS and reference backends differ by at most %.2g\n\n", max_diff);

    /* Rows: every second query; columns: the training points in increasing x. The darker the
     * character, the larger the weight relative to the largest one. */
    static const char shades[] = " .:-=+*#%@";
    const int levels = (int)(sizeof shades - 2);
    float w_max = 0.0f;
    for (size_t i = 0; i < N_TEST * N_TRAIN; i++) {
        w_max = fmaxf(w_max, weights[i]);
    }
    printf("Attention weights (rows: queries x; columns: training inputs, sorted;\n");
    printf("'%c' is the largest weight, %.3f, and ' ' less than a tenth of it)\n",
           shades[levels], (double)w_max);
    for (size_t i = 0; i < N_TEST; i += 2) {
        printf("  %3.1f |", (double)x_test[i]);
        for (size_t j = 0; j < N_TRAIN; j++) {
            int level = (int)((double)weights[i * N_TRAIN + j] / (double)w_max * 10.0);
            putchar(shades[level < 0 ? 0 : level > levels ? levels : level]);
        }
        printf("|\n");
    }
    printf("  (columns from x_train = %.2f to x_train = %.2f)\n", (double)x_train[0],
           (double)x_train[N_TRAIN - 1]);

    nwattn_context_destroy(ctx);
    return 0;
}
