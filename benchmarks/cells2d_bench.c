/*
 * cells2d_bench — 2-D kernel regression at n = 10^3 .. --max-n (powers of 10, and 3·10^k):
 * nwattn_nw_predict at the n training points and one nwattn_nw_cv evaluation with its gradient,
 * local constant, Gaussian and Epanechnikov kernels, h = the normal-reference rule per
 * dimension (∝ n^-1/6), on the context's default threads. Each time is the median of --reps
 * calls (default 3). The rows are whichever the loaded library has: run it once against this
 * build (the d == 2 strips) and once with LD_LIBRARY_PATH pointing at a build without them
 * (the plain rows), and compare. Data: x uniform on [0, 1)^2, y = sin(6 x1) + x2^2 + noise.
 *
 *   cells2d_bench [--max-n N] [--reps R] [--kernels gaussian,epanechnikov]
 *
 * Nothing here asserts a time.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nwattn.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t max_n = 100000;
    int reps = 3;
    const char *kernels = "gaussian,epanechnikov";
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--max-n") == 0 && a + 1 < argc)
            max_n = (size_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--reps") == 0 && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (strcmp(argv[a], "--kernels") == 0 && a + 1 < argc)
            kernels = argv[++a];
        else {
            fprintf(stderr, "usage: %s [--max-n N] [--reps R] [--kernels LIST]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 99)
        reps = 3;
    nwattn_context *ctx = NULL;
    if (nwattn_context_create(&ctx) != NWATTN_OK)
        return 1;
    printf("# cells2d_bench: d = 2, local constant, h = normal reference, median of %d\n", reps);
    printf("%-13s %9s %10s %10s %12s %12s\n", "kernel", "n", "h1", "h2", "predict_s", "cv_s");
    for (size_t n = 1000; n <= max_n; n = n % 3 == 0 ? n / 3 * 10 : n * 3) {
        float *x = malloc(2 * n * sizeof(float)), *y = malloc(n * sizeof(float)),
              *yq = malloc(n * sizeof(float));
        if (x == NULL || y == NULL || yq == NULL)
            return 1;
        nwattn_rng rng;
        nwattn_rng_seed(&rng, 2026);
        for (size_t j = 0; j < n; j++) {
            x[2 * j] = (float)nwattn_rng_uniform(&rng);
            x[2 * j + 1] = (float)nwattn_rng_uniform(&rng);
            y[j] = (float)(sin(6.0 * x[2 * j]) + x[2 * j + 1] * x[2 * j + 1] +
                           0.1 * nwattn_rng_normal(&rng));
        }
        float h[2];
        if (nwattn_bandwidth_rule_of_thumb(ctx, NWATTN_RULE_NORMAL_REFERENCE, n, 2, x, 2, h) !=
            NWATTN_OK)
            return 1;
        static const struct {
            const char *name;
            nwattn_kernel kernel;
        } table[] = {{"gaussian", NWATTN_KERNEL_GAUSSIAN},
                     {"epanechnikov", NWATTN_KERNEL_EPANECHNIKOV}};
        for (size_t k = 0; k < 2; k++) {
            if (strstr(kernels, table[k].name) == NULL)
                continue;
            nwattn_regression model = {table[k].kernel, NWATTN_LOCAL_CONSTANT,
                                       NWATTN_EMPTY_NEAREST};
            double tp[99], tc[99], cv, grad[2];
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                if (nwattn_nw_predict(ctx, &model, h, n, n, 2, 1, x, 2, x, 2, y, 1, yq, 1, NULL, 0,
                                      NULL, NULL) != NWATTN_OK)
                    return 1;
                tp[r] = now() - t0;
                t0 = now();
                if (nwattn_nw_cv(ctx, &model, n, 2, 1, x, 2, y, 1, 1, h, 2, &cv, grad, 2, NULL) !=
                    NWATTN_OK)
                    return 1;
                tc[r] = now() - t0;
            }
            qsort(tp, (size_t)reps, sizeof(double), cmp_double);
            qsort(tc, (size_t)reps, sizeof(double), cmp_double);
            printf("%-13s %9zu %10.4g %10.4g %12.4g %12.4g   (CV %.9g)\n", table[k].name, n,
                   (double)h[0], (double)h[1], tp[reps / 2], tc[reps / 2], cv);
            fflush(stdout);
        }
        free(x);
        free(y);
        free(yq);
    }
    nwattn_context_destroy(ctx);
    return 0;
}
