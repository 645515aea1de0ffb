/*
 * fastsum_bench — 1-D kernel regression at n = 10^3 .. 10^7: the fast kernel sums
 * (NWATTN_NW_METHOD_FASTSUM) against the direct rows (NWATTN_NW_METHOD_DIRECT, main's path).
 *
 *   fastsum_bench [--max-n N] [--direct-max N] [--gauss-max N] [--threads T]
 *                 [--kernels laplace,matern32,gaussian] [--quick]
 *
 * Data: the noisy sine (nwattn_dataset_generate, NWATTN_DATASET_SINE), h = its
 * normal-reference rule. For each n (powers of 10 up to --max-n, default 10^7), kernel
 * (LAPLACE, MATERN32, GAUSSIAN at the default bound 1e-7) and degree (local constant,
 * linear): one CV evaluation with its gradient (nwattn_nw_cv) by each method, the direct one
 * only up to --direct-max (default 10^5: it is quadratic), the Gaussian only up to
 * --gauss-max (default 10^6), and the fast sums' bandwidth selection
 * (nwattn_nw_select_bandwidth, default options; evals: its CV evaluations), and the fitted values (nwattn_nw_predict at
 * the n training points in the data's order, the fast sums at h). Single runs (one call each, after one warm-up call at n <= 10^5): on a
 * shared machine the times are noisy; ratios are taken within this one run. Prints the CPU,
 * whether it has AVX-512F/AVX2 (the direct rows' vector copy; the fast sums are scalar double)
 * and the peak resident memory. At n = 10^5 also the error of local constant predictions at
 * 200 queries against the exact sums in long double. Nothing here asserts a time.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *simd_flags(void) {
    static char out[32] = "generic";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "flags", 5) == 0) {
            if (strstr(line, " avx512f"))
                snprintf(out, sizeof out, "AVX-512F");
            else if (strstr(line, " avx2"))
                snprintf(out, sizeof out, "AVX2+FMA");
            break;
        }
    if (f != NULL)
        fclose(f);
    return out;
}

/* The exact local constant estimate at q in long double (the kernels' definitions). */
static double exact_lc(nwattn_kernel kernel, size_t n, const float *x, const float *y, float h,
                       float q) {
    long double num = 0.0L, den = 0.0L, near = INFINITY;
    for (size_t j = 0; j < n; j++)
        near = fminl(near, fabsl(((long double)x[j] - q) / h));
    for (size_t j = 0; j < n; j++) {
        const long double r = fabsl(((long double)x[j] - q) / h);
        long double k = kernel == NWATTN_KERNEL_GAUSSIAN ? expl(-(r - near) * (r + near) / 2)
                                                         : expl(near - r);
        if (kernel == NWATTN_KERNEL_MATERN32)
            k *= 1.0L + r;
        num += k * y[j];
        den += k;
    }
    return (double)(num / den);
}

/* Largest |fast - exact| / max|y| of local constant predictions at 200 queries. */
static double prediction_error(nwattn_context *fast, nwattn_kernel kernel, size_t n,
                               const float *x, const float *y, float h) {
    float xq[200], yq[200];
    double ymax = 0.0, worst = 0.0;
    for (size_t j = 0; j < n; j++)
        ymax = fmax(ymax, fabs((double)y[j]));
    for (size_t i = 0; i < 200; i++)
        xq[i] = x[(i * 7919u) % n] + (float)(i % 3) * h * 0.37f;
    nwattn_regression model = {kernel, NWATTN_LOCAL_CONSTANT, 0};
    if (nwattn_nw_predict(fast, &model, &h, 200, n, 1, 1, xq, 1, x, 1, y, 1, yq, 1, NULL, 0,
                          NULL, NULL) != NWATTN_OK)
        return NAN;
    for (size_t i = 0; i < 200; i++)
        worst = fmax(worst, fabs((double)yq[i] - exact_lc(kernel, n, x, y, h, xq[i])) / ymax);
    return worst;
}

/* CPU seconds of the process (all threads): on a loaded machine wall times of a niced run
 * include the time it waited; the CPU time does not. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv) {
    size_t max_n = 10000000, direct_max = 100000, gauss_max = 1000000, threads = 2;
    const char *only = "laplace,matern32,gaussian";
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--max-n") == 0 && a + 1 < argc)
            max_n = (size_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--direct-max") == 0 && a + 1 < argc)
            direct_max = (size_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--gauss-max") == 0 && a + 1 < argc)
            gauss_max = (size_t)strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc)
            threads = (size_t)strtoul(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--kernels") == 0 && a + 1 < argc)
            only = argv[++a];
        else if (strcmp(argv[a], "--quick") == 0)
            max_n = 1000, direct_max = 1000;
        else {
            fprintf(stderr,
                    "usage: %s [--max-n N] [--direct-max N] [--gauss-max N] [--threads T] "
                    "[--kernels laplace,matern32,gaussian] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    printf("# fastsum_bench: CPU %s, %s, %zu context threads; single runs (noisy machine)\n",
           bench_cpu_name(), simd_flags(), threads);
    printf("%-9s %-9s %-3s %12s %12s %10s %12s %10s %10s %10s %10s %10s %6s\n", "n", "kernel",
           "deg", "cv_direct_s", "cv_fastsum_s", "speedup", "select_fs_s", "h_chosen", "fit_fs_s",
           "cv_cpu_s", "select_cpu", "fit_cpu_s", "evals");
    const nwattn_kernel kernels[] = {NWATTN_KERNEL_LAPLACE, NWATTN_KERNEL_MATERN32,
                                     NWATTN_KERNEL_GAUSSIAN};
    const char *names[] = {"laplace", "matern32", "gaussian"};
    enum { KERNELS = 3 };
    nwattn_context *direct = bench_context(NWATTN_BACKEND_AUTO, threads);
    nwattn_context *fast = bench_context(NWATTN_BACKEND_AUTO, threads);
    if (direct == NULL || fast == NULL ||
        nwattn_context_set_nw_method(direct, NWATTN_NW_METHOD_DIRECT) != NWATTN_OK ||
        nwattn_context_set_nw_method(fast, NWATTN_NW_METHOD_FASTSUM) != NWATTN_OK)
        return 1;
    double cv_time[8][KERNELS][2] = {{{0}}}, sel_time[8][KERNELS][2] = {{{0}}},
           fit_time[8][KERNELS][2] = {{{0}}}, cpu_time[8][KERNELS][2][3] = {{{{0}}}};
    size_t level = 0;
    for (size_t n = 1000; n <= max_n; n *= 10, level++) {
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)),
              *yfit = malloc(n * sizeof(float)), h;
        nwattn_rng rng;
        nwattn_rng_seed(&rng, 42);
        if (x == NULL || y == NULL || yfit == NULL ||
            nwattn_dataset_generate(fast, NWATTN_DATASET_SINE, &rng, n, x, y) != NWATTN_OK ||
            nwattn_bandwidth_rule_of_thumb(fast, NWATTN_RULE_NORMAL_REFERENCE, n, 1, x, 1, &h) !=
                NWATTN_OK)
            return 1;
        for (size_t k = 0; k < KERNELS; k++)
            for (int deg = 0; deg < 2 && strstr(only, names[k]) != NULL &&
                              !(kernels[k] == NWATTN_KERNEL_GAUSSIAN && n > gauss_max);
                 deg++) {
                nwattn_regression model = {kernels[k], (nwattn_degree)deg, 0};
                double cv_d = NAN, cv_f, g, t_d = NAN, t0;
                if (n <= 100000) /* warm-up: page faults, thread start */
                    nwattn_nw_cv(fast, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv_f, &g, 1, NULL);
                if (n <= direct_max) {
                    t0 = bench_now();
                    nwattn_nw_cv(direct, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv_d, &g, 1, NULL);
                    t_d = bench_now() - t0;
                }
                double c0 = cpu_now();
                t0 = bench_now();
                if (nwattn_nw_cv(fast, &model, n, 1, 1, x, 1, y, 1, 1, &h, 1, &cv_f, &g, 1, NULL) !=
                    NWATTN_OK)
                    return 1;
                const double t_f = bench_now() - t0, c_f = cpu_now() - c0;
                float chosen;
                nwattn_cv_report report;
                c0 = cpu_now();
                t0 = bench_now();
                if (nwattn_nw_select_bandwidth(fast, &model, n, 1, 1, x, 1, y, 1, NULL, &chosen,
                                               &report, NULL, NULL) != NWATTN_OK)
                    return 1;
                const double t_s = bench_now() - t0, c_s = cpu_now() - c0;
                c0 = cpu_now();
                t0 = bench_now();
                if (nwattn_nw_predict(fast, &model, &h, n, n, 1, 1, x, 1, x, 1, y, 1, yfit, 1, NULL,
                                      0, NULL, NULL) != NWATTN_OK)
                    return 1;
                const double t_p = bench_now() - t0, c_p = cpu_now() - c0;
                cv_time[level][k][deg] = t_f;
                sel_time[level][k][deg] = t_s;
                fit_time[level][k][deg] = t_p;
                cpu_time[level][k][deg][0] = c_f;
                cpu_time[level][k][deg][1] = c_s;
                cpu_time[level][k][deg][2] = c_p;
                printf("%-9zu %-9s %-3s %12.4g %12.4g %10.3g %12.4g %10.4g %10.4g %10.4g %10.4g "
                       "%10.4g %6zu",
                       n, names[k], deg ? "ll" : "lc", t_d, t_f, t_d / t_f, t_s, (double)chosen, t_p,
                       c_f, c_s, c_p, report.evaluations);
                if (n <= direct_max)
                    printf("   cv rel diff %.2g", fabs(cv_d - cv_f) / cv_f);
                printf("\n");
                fflush(stdout);
            }
        if (n == 100000)
            for (size_t k = 0; k < KERNELS; k++)
                printf("# n = %zu %s local constant predictions: max |fast - exact| / max|y| = "
                       "%.2g (float output; Gaussian bound 2e-7)\n",
                       n, names[k], prediction_error(fast, kernels[k], n, x, y, h));
        free(x), free(y), free(yfit);
    }
    for (size_t l = 2; l < level; l++)
        for (size_t k = 0; k < KERNELS; k++)
            for (int deg = 0; deg < 2 && cv_time[l][k][deg] > 0.0; deg++) {
                const double *c1 = cpu_time[l][k][deg], *c0 = cpu_time[l - 1][k][deg];
                printf("# ratio time(10^%zu)/time(10^%zu) %s %s: cv %.3g, select %.3g, fit %.3g "
                       "(wall); %.3g, %.3g, %.3g (CPU)\n",
                       l + 3, l + 2, names[k], deg ? "ll" : "lc",
                       cv_time[l][k][deg] / cv_time[l - 1][k][deg],
                       sel_time[l][k][deg] / sel_time[l - 1][k][deg],
                       fit_time[l][k][deg] / fit_time[l - 1][k][deg], c1[0] / c0[0], c1[1] / c0[1],
                       c1[2] / c0[2]);
            }
    printf("# peak resident memory %.0f MiB\n", peak_mib());
    nwattn_context_destroy(direct);
    nwattn_context_destroy(fast);
    return 0;
}
