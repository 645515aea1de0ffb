/*
 * fused_vs_unfused — times nwattn_pool under NWATTN_BACKEND_BLAS (unfused) and
 * NWATTN_BACKEND_FUSED. Not a test: it asserts nothing about time.
 *
 *   fused_vs_unfused crossover [threads] [reps] [d] [m]
 *       m = n in 16 .. 8192, d = dv = 64 (or d), scaled dot product, no mask: the median wall
 *       time of `reps` runs (default 5) of each backend, and their ratio. With m > 0: that many
 *       queries against n = 64 .. 65536 keys (m = 1 is incremental decoding).
 *   fused_vs_unfused single BACKEND m n d dv [threads] [causal|weights]
 *       one call (BACKEND: blas, fused, auto, reference) on random data, with its wall time
 *       (the first call: it includes allocating the working memory); `weights` also asks for
 *       the m×n weights, `causal` masks keys after the query;
 *       run it under /usr/bin/time -v for the peak RSS. Inputs and output take
 *       the output line also gives the inputs and output in MiB, and the working memory.
 *
 * The BLAS's own threads are whatever OPENBLAS_NUM_THREADS says; the program never changes
 * them. `threads` is the context's worker count (nwattn_context_set_threads).
 */
#define _POSIX_C_SOURCE 200809L
#include <nwattn.h>

#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *random_floats(size_t count, uint64_t seed) {
    float *x = malloc(count * sizeof(float));
    if (x == NULL)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((double)(seed >> 40) * 0x1.0p-24 * 2.0 - 1.0);
    }
    return x;
}

typedef struct problem {
    size_t m, n, d, dv;
    float *q, *k, *v, *o, *w; /* w: optional m×n weights output */
    nwattn_mask mask;
} problem;

static int make(problem *p, size_t m, size_t n, size_t d, size_t dv) {
    memset(p, 0, sizeof *p);
    p->m = m, p->n = n, p->d = d, p->dv = dv;
    p->q = random_floats(m * d, 1);
    p->k = random_floats(n * d, 2);
    p->v = random_floats(n * dv, 3);
    p->o = calloc(m * dv, sizeof(float));
    return p->q && p->k && p->v && p->o;
}

static void release(problem *p) { free(p->q), free(p->k), free(p->v), free(p->o), free(p->w); }

/* One nwattn_pool call; returns seconds, or -1 on error (printed). */
static double run(nwattn_context *ctx, const problem *p) {
    nwattn_score dot = {NWATTN_SCORE_DOT, (float)(1.0 / sqrt((double)p->d)), 0.0f, NULL};
    double t0 = bench_now();
    nwattn_status st = nwattn_pool(ctx, &dot, &p->mask, 1, p->m, p->n, p->d, p->dv, p->q, p->d,
                                   0, p->k, p->d, 0, p->v, p->dv, 0, p->o, p->dv, 0, p->w, p->n,
                                   0, NULL, 0);
    double t = bench_now() - t0;
    if (st != NWATTN_OK) {
        fprintf(stderr, "nwattn_pool: %s: %s\n", nwattn_status_name(st),
                nwattn_context_last_error(ctx));
        return -1.0;
    }
    return t;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_time(nwattn_context *ctx, const problem *p, int reps) {
    double times[64];
    if (run(ctx, p) < 0) /* warm-up: working memory, BLAS buffers */
        return -1.0;
    for (int r = 0; r < reps; r++)
        if ((times[r] = run(ctx, p)) < 0)
            return -1.0;
    qsort(times, (size_t)reps, sizeof times[0], compare_doubles);
    return times[reps / 2];
}

static int crossover(size_t threads, int reps, size_t d, size_t m_fixed) {
    nwattn_context *blas = bench_context(NWATTN_BACKEND_BLAS, threads);
    nwattn_context *fused = bench_context(NWATTN_BACKEND_FUSED, threads);
    if (!blas || !fused)
        return 1;
    printf("# d = dv = %zu, scaled dot, no mask, context threads %zu, OPENBLAS_NUM_THREADS=%s\n",
           d, threads, getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "(unset)");
    printf("%8s %8s %12s %12s %14s\n", "m", "n", "unfused ms", "fused ms", "fused/unfused");
    for (size_t n = m_fixed ? 64 : 16; n <= (m_fixed ? 65536 : 8192); n *= 2) {
        problem p;
        size_t m = m_fixed ? m_fixed : n;
        if (!make(&p, m, n, d, d))
            return 1;
        double tb = median_time(blas, &p, reps), tf = median_time(fused, &p, reps);
        if (tb < 0 || tf < 0)
            return 1;
        printf("%8zu %8zu %12.3f %12.3f %14.2f\n", m, n, 1e3 * tb, 1e3 * tf, tf / tb);
        fflush(stdout);
        release(&p);
    }
    nwattn_context_destroy(blas), nwattn_context_destroy(fused);
    return 0;
}

static int single(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s single BACKEND m n d dv [threads] [causal|weights]\n",
                argv[0]);
        return 2;
    }
    const char *names[] = {"auto", "reference", "blas", "fused"};
    int backend = -1;
    for (int b = 0; b < 4; b++)
        if (strcmp(argv[2], names[b]) == 0)
            backend = b;
    if (backend < 0) {
        fprintf(stderr, "unknown backend %s\n", argv[2]);
        return 2;
    }
    size_t m = strtoull(argv[3], NULL, 10), n = strtoull(argv[4], NULL, 10);
    size_t d = strtoull(argv[5], NULL, 10), dv = strtoull(argv[6], NULL, 10);
    size_t threads = argc > 7 ? strtoull(argv[7], NULL, 10) : 1;
    int causal = argc > 8 && strcmp(argv[8], "causal") == 0;
    int weights = argc > 8 && strcmp(argv[8], "weights") == 0;
    nwattn_context *ctx = bench_context((nwattn_backend)backend, threads);
    problem p;
    if (!ctx || !make(&p, m, n, d, dv))
        return 1;
    p.mask.flags = causal ? NWATTN_MASK_CAUSAL : 0;
    if (weights && (p.w = malloc(m * n * sizeof(float))) == NULL)
        return 1;
    double io_mib = (double)(m * d + n * d + n * dv + m * dv) * 4.0 / 1048576.0;
    double t = run(ctx, &p);
    if (t < 0)
        return 1;
    double checksum = 0.0;
    for (size_t i = 0; i < m * dv; i++)
        checksum += p.o[i];
    printf("backend %s m %zu n %zu d %zu dv %zu threads %zu%s: %.3f s, inputs+outputs %.1f MiB, "
           "working memory %.2f MiB, checksum %.6g\n",
           names[backend], m, n, d, dv, threads, causal ? " causal" : weights ? " weights" : "",
           t, io_mib,
           (double)nwattn_context_workspace_bytes(ctx) / 1048576.0, checksum);
    release(&p);
    nwattn_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "crossover") == 0) {
        size_t threads = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
        int reps = argc > 3 ? atoi(argv[3]) : 5;
        size_t d = argc > 4 ? strtoull(argv[4], NULL, 10) : 64;
        size_t m = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
        if (reps < 1 || reps > 63)
            reps = 5;
        return crossover(threads, reps, d, m);
    }
    if (argc >= 2 && strcmp(argv[1], "single") == 0)
        return single(argc, argv);
    fprintf(stderr, "usage: %s crossover [threads] [reps] [d] [m]\n"
                    "       %s single BACKEND m n d dv [threads] [causal|weights]\n",
            argv[0], argv[0]);
    return 2;
}
