/*
 * nwbench — the benchmark suite: every workload, every implementation, one process.
 *
 *   nwbench [--threads 1,2] [--reps 5] [--quick] [--json FILE] [--only NAME[,NAME...]]
 *           [--no-memory] [--long-run SECONDS] [--tiles ROWS,KEYS]
 *
 * Workloads (NAME): nw1d (1-D Gaussian Nadaraya-Watson, m = n = 1k .. 64k), nwd (d = 2, 8,
 * 64, m = n = 4096), sdpa (scaled dot-product attention, d = 64, m = n = 1k .. 16k, with and
 * without a causal mask), bmm (d2l's (B, 1, n) × (B, n, 1) with B = 1000, and 1024 products
 * of 64×64×64), bandwidth (Gaussian bandwidth selection by leave-one-out cross-validation,
 * nwattn_nw_select_bandwidth, n = 1000 and 10000, on companion.py's statsmodels data), mha
 * (multi-head self-attention, B = 8, T = 512, d_model = 512, 8 heads),
 * memory (peak resident memory of the fused path at m = n = 65536, d = 64, in a child
 * process). --quick runs every workload at toy sizes, once: CTest's bench-smoke.
 *
 * Implementations: `naive` (the loops a user would write: plain expf, two passes, one
 * thread), `reference`, `blas` and `fused` (nwattn's backends), `ceiling` (the same BLAS
 * products alone, nothing else: the speed limit of an unfused computation on this BLAS), and
 * for bmm `sgemm-loop` (one cblas_sgemm per item), `openmp` (an OpenMP loop over the items of
 * single-threaded sgemm), `sgemv-pass` (for the dot products: one cblas_sgemv over the same
 * bytes, A and B read as one matrix: the cost of the work at BLAS level 2) and `nwattn`. Each
 * starts 0.25 s after the previous one (so that its thread pools have gone idle), is warmed
 * up for 20 ms (at least one call), then timed `reps` times (fewer if runs are long); the median, min and max are reported with the rate (kernel evaluations
 * or GFLOP/s), the ratio to the naive loop (whose time is that of one thread) and the ratio
 * of its rate to the ceiling's at the same thread count.
 *
 * Threads: for each count T, one pool at a time, as docs/threads.md recommends. The BLAS's
 * own threads (openblas_set_num_threads: this program is the caller and may set them; the
 * library never does) are T for the ceilings, the sgemm loops and the unfused `blas` backend,
 * and 1 while nwattn's context workers (T of them) run the `fused` backend, nwattn_bmm or the
 * OpenMP loop. Multi-head attention also runs `fused-blas-T`: the fused pooling with T
 * context workers after projections on T BLAS threads. Naive loops run once, on one thread.
 * Benchmarks are not tests: nothing here asserts a time.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nwattn.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- Options ------------------------------------------------------------------------------ */
#define MAX_THREAD_COUNTS 8

typedef struct options {
    size_t threads[MAX_THREAD_COUNTS];
    int thread_counts;
    int reps;
    int quick;
    int memory;
    double long_run; /* seconds: a longer warm-up is the only sample */
    const char *only;
    const char *json_path;
    const char *self; /* argv[0], for the memory probe */
} options;

static int selected(const options *o, const char *name) {
    if (o->only == NULL)
        return 1;
    size_t len = strlen(name);
    for (const char *p = o->only; (p = strstr(p, name)) != NULL; p += len)
        if ((p == o->only || p[-1] == ',') && (p[len] == '\0' || p[len] == ','))
            return 1;
    return 0;
}

/* ---- Results ------------------------------------------------------------------------------ */
typedef struct result {
    const char *workload, *impl;
    char params[160]; /* JSON members */
    char label[64];   /* for the text table */
    size_t threads;
    bench_stats st;
    double work;      /* evaluations or flops of one run */
    const char *unit; /* "Geval/s" or "GFLOP/s" */
    double naive_s;   /* 0: no naive time */
    double ceiling_rate; /* 0: no ceiling */
    double fast_s;    /* 0: no time of the -ffast-math loop at this thread count */
    double max_diff;  /* largest |output - check output|, NAN if not compared */
    /* Paired rounds against the ceiling and the -ffast-math loop (bench_paired), as x ceil and
     * x fast; runs 0: not measured. */
    bench_stats pair_ceiling, pair_fast;
} result;

static bench_json json;

static void report(const result *r) {
    const double rate = r->work / r->st.median / 1e9;
    char naive[32] = "", ceiling[32] = "", fast[32] = "", pair_c[32] = "", pair_f[32] = "";
    if (r->pair_ceiling.runs > 0)
        snprintf(pair_c, sizeof pair_c, "%.2f", r->pair_ceiling.median);
    if (r->pair_fast.runs > 0)
        snprintf(pair_f, sizeof pair_f, "%.2fx", r->pair_fast.median);
    if (r->naive_s > 0)
        snprintf(naive, sizeof naive, "%.1fx", r->naive_s / r->st.median);
    if (r->fast_s > 0)
        snprintf(fast, sizeof fast, "%.2fx", r->fast_s / r->st.median);
    if (r->ceiling_rate > 0)
        snprintf(ceiling, sizeof ceiling, "%.2f", rate / r->ceiling_rate);
    printf("%-6s %-24s %-10s %2zu %10.3f %10.3f %10.3f %9.2f %-7s %8s %7s %8s %9.2g %2d %7s %7s\n",
           r->workload, r->label, r->impl, r->threads, 1e3 * r->st.median, 1e3 * r->st.min,
           1e3 * r->st.max, rate, r->unit, naive, fast, ceiling, r->max_diff, r->st.runs, pair_f,
           pair_c);
    fflush(stdout);
    char m[1024];
    int len = snprintf(m, sizeof m,
                       "\"workload\": \"%s\", %s, \"impl\": \"%s\", \"threads\": %zu, "
                       "\"runs\": %d, \"median_s\": %.6g, \"min_s\": %.6g, \"max_s\": %.6g, "
                       "\"rate\": %.6g, \"rate_unit\": \"%s\"",
                       r->workload, r->params, r->impl, r->threads, r->st.runs, r->st.median,
                       r->st.min, r->st.max, rate, r->unit);
    if (r->naive_s > 0)
        len += snprintf(m + len, sizeof m - (size_t)len, ", \"vs_naive\": %.4g",
                        r->naive_s / r->st.median);
    if (r->fast_s > 0)
        len += snprintf(m + len, sizeof m - (size_t)len, ", \"vs_naive_fast\": %.4g",
                        r->fast_s / r->st.median);
    if (r->ceiling_rate > 0)
        len += snprintf(m + len, sizeof m - (size_t)len, ", \"vs_ceiling\": %.4g",
                        rate / r->ceiling_rate);
    const bench_stats *pairs[2] = {&r->pair_fast, &r->pair_ceiling};
    const char *pair_names[2] = {"vs_naive_fast_paired", "vs_ceiling_paired"};
    for (int i = 0; i < 2; i++)
        if (pairs[i]->runs > 0)
            len += snprintf(m + len, sizeof m - (size_t)len,
                            ", \"%s\": {\"median\": %.4g, \"min\": %.4g, \"max\": %.4g, "
                            "\"rounds\": %d}",
                            pair_names[i], pairs[i]->median, pairs[i]->min, pairs[i]->max,
                            pairs[i]->runs);
    if (!isnan(r->max_diff))
        snprintf(m + len, sizeof m - (size_t)len, ", \"max_abs_diff\": %.3g", r->max_diff);
    bench_json_result(&json, m);
}

static void header(void) {
    printf("%-6s %-24s %-10s %2s %10s %10s %10s %9s %-7s %8s %7s %8s %9s %2s %7s %7s\n", "load",
           "shape", "impl", "T", "median ms", "min ms", "max ms", "rate", "unit", "x naive",
           "x fast", "x ceil", "max diff", "n", "pr fast", "pr ceil");
}

static double max_abs_diff(const float *a, const float *b, size_t count) {
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > worst || d != d)
            worst = d;
    }
    return worst;
}

static int failed(nwattn_context *ctx, nwattn_status st, const char *what) {
    if (st == NWATTN_OK)
        return 0;
    fprintf(stderr, "%s: %s: %s\n", what, nwattn_status_name(st), nwattn_context_last_error(ctx));
    return -1;
}

/* Runs fn on arg, times it, reports it: the common tail of every measurement. out/check
 * (count floats) give the max_diff column when check is not NULL. */
static int measure(const options *o, result *r, int (*fn)(void *), void *arg, const float *out,
                   const float *check, size_t count) {
    if (bench_time(fn, arg, o->reps, o->long_run, !o->quick, &r->st) != 0)
        return -1;
    r->max_diff = check ? max_abs_diff(out, check, count) : NAN;
    report(r);
    return 0;
}

/* A call with OpenBLAS at a thread count: the ceilings run the BLAS's threads, the fused
 * backend the context's (OpenBLAS at one). */
typedef struct blas_call {
    int (*fn)(void *arg);
    void *arg;
    int blas_threads;
} blas_call;

static int run_blas_call(void *arg) {
    const blas_call *c = arg;
    openblas_set_num_threads(c->blas_threads);
    return c->fn(c->arg);
}

/* Paired rounds of `rival` and `ours` (bench_paired): the per-round time ratio rival / ours,
 * scaled by `scale` (useful work over the rival's where they differ, as x ceil is), into out.
 * The BLAS's thread count is left at ours. */
static int pair(const options *o, blas_call rival, blas_call ours, double scale,
                bench_stats *out) {
    if (bench_paired(run_blas_call, &rival, run_blas_call, &ours, o->reps, o->long_run,
                     !o->quick, out) != 0)
        return -1;
    out->median *= scale, out->min *= scale, out->max *= scale;
    return 0;
}

static const char *backend_name(nwattn_backend b) {
    return b == NWATTN_BACKEND_REFERENCE ? "reference"
           : b == NWATTN_BACKEND_BLAS    ? "blas"
           : b == NWATTN_BACKEND_FUSED   ? "fused"
                                         : "auto";
}

/* The unfused products alone are computed a block of query rows at a time with at most this
 * many scores (16 MiB, the library's unfused block): measured here, the fastest blocking
 * (a 64 MiB block at m = n = 4096 made the two products about 25 % slower). */
#define CEILING_BLOCK_FLOATS ((size_t)1 << 22)

/* ---- Pooling workloads (nw1d, nwd, sdpa) --------------------------------------------------- */
typedef struct pool_case {
    size_t m, n, d, dv;
    int causal;
    nwattn_score score;
    const float *q, *k, *v;
    float *o;
    float *s; /* ceiling: a block of scores */
    nwattn_context *ctx;
    size_t threads; /* of the -ffast-math loop */
} pool_case;

static int run_naive_pool(void *arg) {
    pool_case *c = arg;
    if (c->score.kind == NWATTN_SCORE_GAUSSIAN)
        naive_nw(c->m, c->n, c->d, c->score.bandwidth, c->q, c->k, c->v, c->o);
    else
        naive_sdpa(c->m, c->n, c->d, c->dv, c->causal, c->q, c->k, c->v, c->o);
    return 0;
}

/* The same loop built with -ffast-math and OpenMP (bench_naive_fast.c), 1-D NW only. */
static int run_naive_fast_pool(void *arg) {
    pool_case *c = arg;
    return naive_fast_nw_1d(c->m, c->n, c->score.bandwidth, c->q, c->k, c->v, c->o,
                            (int)c->threads);
}

static int run_nwattn_pool(void *arg) {
    pool_case *c = arg;
    nwattn_mask mask = {0};
    mask.flags = c->causal ? NWATTN_MASK_CAUSAL : 0;
    nwattn_status st = nwattn_pool(c->ctx, &c->score, &mask, 1, c->m, c->n, c->d, c->dv, c->q,
                                   c->d, 0, c->k, c->d, 0, c->v, c->dv, 0, c->o, c->dv, 0, NULL,
                                   0, 0, NULL, 0);
    return failed(c->ctx, st, "nwattn_pool");
}

/* The BLAS products of an unfused pooling alone: S = Q·K^T (sgemm), O = S·V (sgemm; sgemv
 * for one value column, which is what the library's unfused path calls there too). */
static int run_ceiling_pool(void *arg) {
    pool_case *c = arg;
    const size_t block = c->m * c->n <= CEILING_BLOCK_FLOATS ? c->m : CEILING_BLOCK_FLOATS / c->n;
    for (size_t i0 = 0; i0 < c->m; i0 += block) {
        const int rows = (int)(c->m - i0 < block ? c->m - i0 : block);
        const int n = (int)c->n, d = (int)c->d, dv = (int)c->dv;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, d, 1.0f, c->q + i0 * c->d,
                    d, c->k, d, 0.0f, c->s, n);
        if (dv == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, n, 1.0f, c->s, n, c->v, 1, 0.0f,
                        c->o + i0, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, n, 1.0f, c->s, n,
                        c->v, dv, 0.0f, c->o + i0 * c->dv, dv);
    }
    return 0;
}

/* Kernel evaluations (or flops) of the pooling: all m·n pairs, or the causal triangle. */
static double pool_pairs(const pool_case *c) {
    if (!c->causal)
        return (double)c->m * (double)c->n;
    double pairs = 0.0;
    for (size_t i = 0; i < c->m; i++)
        pairs += (double)(i + 1 < c->n ? i + 1 : c->n);
    return pairs;
}

/* Limits on the slow implementations: work (pairs × d) beyond which they are not run. */
typedef struct pool_limits {
    double naive, reference;
} pool_limits;

static int pool_workload(const options *o, const char *workload, pool_case *c, const char *label,
                         const char *params, int flops, pool_limits limits) {
    const size_t out_count = c->m * c->dv;
    const double pairs = pool_pairs(c);
    /* Useful work: kernel evaluations, or the flops of the two products over live pairs. */
    const double work = flops ? 4.0 * (double)c->d * pairs : pairs;
    const double ceiling_work = flops ? 4.0 * (double)c->d * (double)c->m * (double)c->n
                                      : (double)c->m * (double)c->n;
    float *check = bench_zeros(out_count);
    size_t block = c->m * c->n <= CEILING_BLOCK_FLOATS ? c->m : CEILING_BLOCK_FLOATS / c->n;
    c->s = bench_zeros(block * c->n);
    if (check == NULL || c->s == NULL)
        return -1;
    int have_check = 0;
    result r = {.workload = workload, .unit = flops ? "GFLOP/s" : "Geval/s", .work = work};
    snprintf(r.params, sizeof r.params, "%s", params);
    snprintf(r.label, sizeof r.label, "%s", label);

    double naive_s = 0.0;
    if (pairs * (double)c->d <= limits.naive) {
        r.impl = "naive", r.threads = 1, r.naive_s = 0.0, r.ceiling_rate = 0.0;
        if (measure(o, &r, run_naive_pool, c, c->o, NULL, 0) != 0)
            return -1;
        naive_s = r.st.median;
        memcpy(check, c->o, out_count * sizeof(float));
        have_check = 1;
    }
    for (int t = 0; t < o->thread_counts; t++) {
        const size_t threads = o->threads[t];
        openblas_set_num_threads((int)threads);
        r.threads = threads, r.naive_s = naive_s;
        r.impl = "ceiling", r.ceiling_rate = 0.0, r.work = ceiling_work;
        if (measure(o, &r, run_ceiling_pool, c, NULL, NULL, 0) != 0)
            return -1;
        const double ceiling_rate = ceiling_work / r.st.median / 1e9;
        r.work = work;
        r.fast_s = 0.0;
        double fast_s = 0.0;
        if (c->d == 1 && c->score.kind == NWATTN_SCORE_GAUSSIAN && !c->causal) {
            r.impl = "fastmath", c->threads = threads;
            if (measure(o, &r, run_naive_fast_pool, c, c->o, have_check ? check : NULL,
                        out_count) != 0)
                return -1;
            fast_s = r.st.median;
        }
        const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                           NWATTN_BACKEND_FUSED};
        for (int b = 0; b < 3; b++) {
            if (backends[b] == NWATTN_BACKEND_REFERENCE &&
                (threads != 1 || pairs * (double)c->d > limits.reference))
                continue; /* one thread only: the reference runs on the calling thread */
            c->ctx = bench_context(backends[b], threads);
            if (c->ctx == NULL)
                return -1;
            const int fused = backends[b] == NWATTN_BACKEND_FUSED;
            r.pair_ceiling.runs = r.pair_fast.runs = 0;
            if (fused) { /* c->o is written again by the measurement below */
                const blas_call ours = {run_nwattn_pool, c, 1};
                const blas_call ceiling = {run_ceiling_pool, c, (int)threads};
                const blas_call fast = {run_naive_fast_pool, c, 1};
                if (pair(o, ceiling, ours, work / ceiling_work, &r.pair_ceiling) != 0 ||
                    (fast_s > 0 && pair(o, fast, ours, 1.0, &r.pair_fast) != 0)) {
                    nwattn_context_destroy(c->ctx);
                    return -1;
                }
            }
            openblas_set_num_threads(fused ? 1 : (int)threads);
            r.impl = backend_name(backends[b]), r.ceiling_rate = ceiling_rate;
            r.fast_s = fast_s;
            int rc = measure(o, &r, run_nwattn_pool, c, c->o, have_check ? check : NULL,
                             out_count);
            r.pair_ceiling.runs = r.pair_fast.runs = 0;
            if (rc == 0 && !have_check) {
                memcpy(check, c->o, out_count * sizeof(float));
                have_check = 1;
            }
            nwattn_context_destroy(c->ctx);
            if (rc != 0)
                return -1;
        }
    }
    free(check), free(c->s);
    return 0;
}

static int nw1d(const options *o) {
    static const size_t full[] = {1024, 4096, 16384, 65536}, quick[] = {256, 1000};
    const size_t *sizes = o->quick ? quick : full;
    const size_t count = o->quick ? 2 : 4;
    for (size_t s = 0; s < count; s++) {
        const size_t n = sizes[s];
        /* d2l's set-up: inputs on [0, 5), bandwidth 1; values on [-1, 1). */
        pool_case c = {.m = n, .n = n, .d = 1, .dv = 1,
                       .score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL}};
        float *q = bench_data(1, n, 0.0, 5.0), *k = bench_data(2, n, 0.0, 5.0);
        float *v = bench_data(3, n, -1.0, 1.0);
        c.q = q, c.k = k, c.v = v, c.o = bench_zeros(n);
        if (!q || !k || !v || !c.o)
            return -1;
        char label[64], params[160];
        snprintf(label, sizeof label, "m=n=%zu d=1", n);
        snprintf(params, sizeof params, "\"m\": %zu, \"n\": %zu, \"d\": 1, \"dv\": 1", n, n);
        /* The naive loop at 64k takes about 20 s: once. The reference up to 16k. */
        pool_limits limits = {1e12, 3e8};
        if (pool_workload(o, "nw1d", &c, label, params, 0, limits) != 0)
            return -1;
        free(q), free(k), free(v), free(c.o);
    }
    return 0;
}

static int nwd(const options *o) {
    static const size_t dims[] = {2, 8, 64};
    const size_t n = o->quick ? 300 : 4096;
    for (size_t s = 0; s < 3; s++) {
        const size_t d = dims[s];
        pool_case c = {.m = n, .n = n, .d = d, .dv = 1,
                       .score = {NWATTN_SCORE_GAUSSIAN, 0.0f, 0.5f * sqrtf((float)d), NULL}};
        float *q = bench_data(4, n * d, 0.0, 5.0), *k = bench_data(5, n * d, 0.0, 5.0);
        float *v = bench_data(6, n, -1.0, 1.0);
        c.q = q, c.k = k, c.v = v, c.o = bench_zeros(n);
        if (!q || !k || !v || !c.o)
            return -1;
        char label[64], params[160];
        snprintf(label, sizeof label, "m=n=%zu d=%zu", n, d);
        snprintf(params, sizeof params, "\"m\": %zu, \"n\": %zu, \"d\": %zu, \"dv\": 1", n, n, d);
        pool_limits limits = {1e12, 2e8};
        if (pool_workload(o, "nwd", &c, label, params, 0, limits) != 0)
            return -1;
        free(q), free(k), free(v), free(c.o);
    }
    return 0;
}

static int sdpa(const options *o) {
    static const size_t full[] = {1024, 4096, 16384}, quick[] = {200};
    const size_t *sizes = o->quick ? quick : full;
    const size_t count = o->quick ? 1 : 3, d = o->quick ? 16 : 64;
    for (size_t s = 0; s < count; s++)
        for (int causal = 0; causal <= 1; causal++) {
            const size_t n = sizes[s];
            pool_case c = {.m = n, .n = n, .d = d, .dv = d, .causal = causal,
                           .score = {NWATTN_SCORE_DOT, (float)(1.0 / sqrt((double)d)), 0.0f,
                                     NULL}};
            float *q = bench_data(7, n * d, -1.0, 1.0), *k = bench_data(8, n * d, -1.0, 1.0);
            float *v = bench_data(9, n * d, -1.0, 1.0);
            c.q = q, c.k = k, c.v = v, c.o = bench_zeros(n * d);
            if (!q || !k || !v || !c.o)
                return -1;
            char label[64], params[160];
            snprintf(label, sizeof label, "m=n=%zu d=%zu%s", n, d, causal ? " causal" : "");
            snprintf(params, sizeof params,
                     "\"m\": %zu, \"n\": %zu, \"d\": %zu, \"dv\": %zu, \"causal\": %s", n, n, d,
                     d, causal ? "true" : "false");
            /* Naive and reference up to 4096 (about 10 s and 20 s there). */
            pool_limits limits = {1.1e9, 1.1e9};
            if (pool_workload(o, "sdpa", &c, label, params, 1, limits) != 0)
                return -1;
            free(q), free(k), free(v), free(c.o);
        }
    return 0;
}

/* ---- Peak memory of the fused path (a child process of this program) ---------------------- */
static int memory_probe_child(size_t n, size_t d, size_t threads) {
    float *q = bench_data(10, n * d, -1.0, 1.0), *k = bench_data(11, n * d, -1.0, 1.0);
    float *v = bench_data(12, n * d, -1.0, 1.0), *out = bench_zeros(n * d);
    nwattn_context *ctx = bench_context(NWATTN_BACKEND_FUSED, threads);
    if (!q || !k || !v || !out || !ctx)
        return 1;
    openblas_set_num_threads((int)threads);
    struct rusage before;
    getrusage(RUSAGE_SELF, &before);
    nwattn_score dot = {NWATTN_SCORE_DOT, (float)(1.0 / sqrt((double)d)), 0.0f, NULL};
    double t0 = bench_now();
    nwattn_status st = nwattn_pool(ctx, &dot, NULL, 1, n, n, d, d, q, d, 0, k, d, 0, v, d, 0,
                                   out, d, 0, NULL, 0, 0, NULL, 0);
    double t = bench_now() - t0;
    if (failed(ctx, st, "nwattn_pool"))
        return 1;
    struct rusage after;
    getrusage(RUSAGE_SELF, &after);
    const double io_mib = 4.0 * 4.0 * (double)(n * d) / 1048576.0;
    printf("%.6f %.3f %.3f %.3f %.4f\n", t, (double)before.ru_maxrss / 1024.0,
           (double)after.ru_maxrss / 1024.0, io_mib,
           (double)nwattn_context_workspace_bytes(ctx) / 1048576.0);
    nwattn_context_destroy(ctx);
    free(q), free(k), free(v), free(out);
    return 0;
}

static int memory_workload(const options *o) {
    const size_t n = o->quick ? 1024 : 65536, d = 64;
    const size_t threads = o->threads[o->thread_counts - 1];
    char command[512];
    snprintf(command, sizeof command, "'%s' --memory-probe %zu %zu %zu", o->self, n, d, threads);
    FILE *p = popen(command, "r");
    if (p == NULL)
        return -1;
    double t = 0, rss_before = 0, rss_after = 0, io = 0, ws = 0;
    int got = fscanf(p, "%lf %lf %lf %lf %lf", &t, &rss_before, &rss_after, &io, &ws);
    if (pclose(p) != 0 || got != 5) {
        fprintf(stderr, "memory probe failed\n");
        return -1;
    }
    const double beyond = rss_after - io;
    printf("memory m=n=%zu d=dv=%zu fused, %zu threads: %.2f s, peak RSS %.1f MiB "
           "(%.1f MiB before the call), inputs+outputs %.1f MiB, beyond them %.1f MiB, "
           "working memory %.3f MiB\n",
           n, d, threads, t, rss_after, rss_before, io, beyond, ws);
    char m[512];
    snprintf(m, sizeof m,
             "\"workload\": \"memory\", \"m\": %zu, \"n\": %zu, \"d\": %zu, \"dv\": %zu, "
             "\"impl\": \"fused\", \"threads\": %zu, \"runs\": 1, \"median_s\": %.6g, "
             "\"peak_rss_mib\": %.2f, \"rss_before_call_mib\": %.2f, \"io_mib\": %.2f, "
             "\"beyond_io_mib\": %.2f, \"workspace_mib\": %.4f",
             n, n, d, d, threads, t, rss_after, rss_before, io, beyond, ws);
    bench_json_result(&json, m);
    return 0;
}

/* ---- Batched products (bmm) ----------------------------------------------------------------- */
typedef struct bmm_case {
    size_t batch, m, n, k;
    const float *a, *b;
    float *c;
    nwattn_context *ctx;
    size_t threads;
    float *sgemv_out; /* 2 · batch floats */
} bmm_case;

static int run_naive_bmm(void *arg) {
    bmm_case *x = arg;
    naive_bmm(x->batch, x->m, x->n, x->k, x->a, x->b, x->c);
    return 0;
}

static void sgemm_item(const bmm_case *x, size_t t) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)x->m, (int)x->n, (int)x->k, 1.0f,
                x->a + t * x->m * x->k, (int)x->k, x->b + t * x->k * x->n, (int)x->n, 0.0f,
                x->c + t * x->m * x->n, (int)x->n);
}

static int run_sgemm_loop(void *arg) {
    bmm_case *x = arg;
    for (size_t t = 0; t < x->batch; t++)
        sgemm_item(x, t);
    return 0;
}

#ifdef _OPENMP
static int run_openmp_loop(void *arg) {
    bmm_case *x = arg;
    const long batch = (long)x->batch;
#pragma omp parallel for num_threads((int)x->threads) schedule(static)
    for (long t = 0; t < batch; t++)
        sgemm_item(x, (size_t)t);
    return 0;
}
#endif

/* One cblas_sgemv pass over the same data: A and B (adjacent in one buffer) as one
 * (2B × k) matrix times one vector, which reads as many bytes as the B dot products do. */
static int run_sgemv_pass(void *arg) {
    bmm_case *x = arg;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(2 * x->batch), (int)x->k, 1.0f, x->a,
                (int)x->k, x->b, 1, 0.0f, x->sgemv_out, 1);
    return 0;
}

static int run_nwattn_bmm(void *arg) {
    bmm_case *x = arg;
    nwattn_status st = nwattn_bmm(x->ctx, x->batch, x->m, x->n, x->k, x->a, x->k, x->m * x->k,
                                  x->b, x->n, x->k * x->n, x->c, x->n, x->m * x->n);
    return failed(x->ctx, st, "nwattn_bmm");
}

static int bmm_shape(const options *o, const char *label, const char *params, size_t batch,
                     size_t m, size_t n, size_t k, int ceiling_is_sgemv) {
    bmm_case x = {.batch = batch, .m = m, .n = n, .k = k};
    /* A then B in one buffer, so that the sgemv pass can read both as one matrix. */
    const size_t a_count = batch * m * k, b_count = batch * k * n;
    float *ab = malloc((a_count + b_count) * sizeof(float));
    float *a = bench_data(13, a_count, -1.0, 1.0), *b = bench_data(14, b_count, -1.0, 1.0);
    x.c = bench_zeros(batch * m * n), x.sgemv_out = bench_zeros(2 * batch);
    float *check = bench_zeros(batch * m * n);
    if (!ab || !a || !b || !x.c || !x.sgemv_out || !check)
        return -1;
    memcpy(ab, a, a_count * sizeof(float));
    memcpy(ab + a_count, b, b_count * sizeof(float));
    free(a), free(b);
    x.a = ab, x.b = ab + a_count;
    const size_t count = batch * m * n;
    result r = {.workload = "bmm", .unit = "GFLOP/s",
                .work = 2.0 * (double)batch * (double)m * (double)n * (double)k};
    snprintf(r.params, sizeof r.params, "%s", params);
    snprintf(r.label, sizeof r.label, "%s", label);
    r.impl = "naive", r.threads = 1;
    if (measure(o, &r, run_naive_bmm, &x, NULL, NULL, 0) != 0)
        return -1;
    const double naive_s = r.st.median;
    memcpy(check, x.c, count * sizeof(float));
    for (int t = 0; t < o->thread_counts; t++) {
        x.threads = o->threads[t];
        openblas_set_num_threads((int)x.threads);
        r.threads = x.threads, r.naive_s = naive_s, r.ceiling_rate = 0.0;
        double ceiling_rate;
        if (ceiling_is_sgemv) {
            r.impl = "sgemv-pass";
            if (measure(o, &r, run_sgemv_pass, &x, NULL, NULL, 0) != 0)
                return -1;
            ceiling_rate = r.work / r.st.median / 1e9;
            r.impl = "sgemm-loop", r.ceiling_rate = ceiling_rate;
            if (measure(o, &r, run_sgemm_loop, &x, x.c, check, count) != 0)
                return -1;
        } else {
            r.impl = "sgemm-loop";
            if (measure(o, &r, run_sgemm_loop, &x, x.c, check, count) != 0)
                return -1;
            ceiling_rate = r.work / r.st.median / 1e9;
#ifdef _OPENMP
            openblas_set_num_threads(1);
            r.impl = "openmp";
            if (measure(o, &r, run_openmp_loop, &x, x.c, check, count) != 0)
                return -1;
            ceiling_rate = r.work / r.st.median / 1e9;
#endif
            r.ceiling_rate = ceiling_rate;
        }
        x.ctx = bench_context(NWATTN_BACKEND_AUTO, x.threads);
        if (x.ctx == NULL)
            return -1;
        openblas_set_num_threads(1);
        r.impl = "nwattn", r.ceiling_rate = ceiling_rate;
        int rc = measure(o, &r, run_nwattn_bmm, &x, x.c, check, count);
        nwattn_context_destroy(x.ctx);
        if (rc != 0)
            return -1;
    }
    free(ab), free(x.c), free(x.sgemv_out), free(check);
    return 0;
}

static int bmm(const options *o) {
    const size_t batch = o->quick ? 50 : 1000;
    char label[64], params[160];
    /* d2l's training set-up with n_train = B: each item weighs B - 1 values. */
    snprintf(label, sizeof label, "(%zu,1,%zu)x(%zu,%zu,1)", batch, batch - 1, batch, batch - 1);
    snprintf(params, sizeof params, "\"shape\": \"d2l\", \"batch\": %zu, \"m\": 1, \"n\": 1, "
             "\"k\": %zu", batch, batch - 1);
    if (bmm_shape(o, label, params, batch, 1, 1, batch - 1, 1) != 0)
        return -1;
    const size_t count = o->quick ? 16 : 1024, side = o->quick ? 16 : 64;
    snprintf(label, sizeof label, "%zu x %zu^3", count, side);
    snprintf(params, sizeof params, "\"shape\": \"cubes\", \"batch\": %zu, \"m\": %zu, "
             "\"n\": %zu, \"k\": %zu", count, side, side, side);
    return bmm_shape(o, label, params, count, side, side, side, 0);
}

/* ---- Multi-head self-attention (mha) -------------------------------------------------------- */
typedef struct mha_case {
    size_t batch, t, e, heads;
    const float *x, *w, *bias; /* w: the four e×e matrices q, k, v, o; bias: 4·e */
    float *y, *scratch;
    nwattn_context *ctx;
} mha_case;

static int run_naive_mha(void *arg) {
    mha_case *c = arg;
    const size_t ee = c->e * c->e;
    naive_mha(c->batch, c->t, c->e, c->heads, c->x, c->w, c->w + ee, c->w + 2 * ee,
              c->w + 3 * ee, c->bias, c->bias + c->e, c->bias + 2 * c->e, c->bias + 3 * c->e,
              c->y, c->scratch);
    return 0;
}

static int run_nwattn_mha(void *arg) {
    mha_case *c = arg;
    const size_t e = c->e, ee = e * e, te = c->t * e;
    nwattn_attention_params p = {
        .heads = c->heads, .d_q_in = e, .d_k_in = e, .d_v_in = e, .d_qk = e, .d_v = e,
        .d_out = e, .w_q = c->w, .w_k = c->w + ee, .w_v = c->w + 2 * ee, .w_o = c->w + 3 * ee,
        .b_q = c->bias, .b_k = c->bias + e, .b_v = c->bias + 2 * e, .b_o = c->bias + 3 * e,
    };
    nwattn_status st = nwattn_attention(c->ctx, &p, NULL, NULL, c->batch, c->t, c->t, c->x, e,
                                        te, c->x, e, te, c->x, e, te, c->y, e, te, NULL, 0, 0);
    return failed(c->ctx, st, "nwattn_attention");
}

/* The layer's BLAS products alone: four projections and two products per head. */
static int run_ceiling_mha(void *arg) {
    mha_case *c = arg;
    const int rows = (int)(c->batch * c->t), e = (int)c->e, t = (int)c->t;
    const int dh = (int)(c->e / c->heads);
    const size_t ee = c->e * c->e, re = (size_t)rows * c->e;
    float *q = c->scratch, *k = q + re, *v = k + re, *cat = v + re, *s = cat + re;
    float *proj[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, e, e, 1.0f, c->x, e,
                    c->w + (size_t)i * ee, e, 0.0f, proj[i], e);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t h = 0; h < c->heads; h++) {
            const size_t at = b * c->t * c->e + h * (size_t)dh;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, dh, 1.0f, q + at, e,
                        k + at, e, 0.0f, s, t);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, dh, t, 1.0f, s, t, v + at,
                        e, 0.0f, cat + at, e);
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, e, e, 1.0f, cat, e, c->w + 3 * ee,
                e, 0.0f, c->y, e);
    return 0;
}

static int mha(const options *o) {
    mha_case c = {.batch = o->quick ? 2 : 8, .t = o->quick ? 32 : 512, .e = o->quick ? 64 : 512,
                  .heads = 8};
    const size_t rows = c.batch * c.t, e = c.e, count = rows * e;
    const double scale = 1.0 / sqrt((double)e);
    float *x = bench_data(15, count, -1.0, 1.0), *w = bench_data(16, 4 * e * e, -scale, scale);
    float *bias = bench_data(17, 4 * e, -0.1, 0.1);
    c.x = x, c.w = w, c.bias = bias, c.y = bench_zeros(count);
    /* naive: 4·rows·e + 4·t·e; ceiling: 4·rows·e + t·t */
    c.scratch = bench_zeros(4 * count + 4 * c.t * e + c.t * c.t);
    float *check = bench_zeros(count);
    if (!x || !w || !bias || !c.y || !c.scratch || !check)
        return -1;
    const double dh = (double)(e / c.heads);
    const double flops = 4.0 * 2.0 * (double)rows * (double)e * (double)e +
                         (double)(c.batch * c.heads) * 4.0 * (double)c.t * (double)c.t * dh;
    result r = {.workload = "mha", .unit = "GFLOP/s", .work = flops};
    snprintf(r.label, sizeof r.label, "B=%zu T=%zu E=%zu H=%zu", c.batch, c.t, e, c.heads);
    snprintf(r.params, sizeof r.params,
             "\"batch\": %zu, \"t\": %zu, \"d_model\": %zu, \"heads\": %zu", c.batch, c.t, e,
             c.heads);
    r.impl = "naive", r.threads = 1;
    if (measure(o, &r, run_naive_mha, &c, NULL, NULL, 0) != 0)
        return -1;
    const double naive_s = r.st.median;
    memcpy(check, c.y, count * sizeof(float));
    for (int ti = 0; ti < o->thread_counts; ti++) {
        const size_t threads = o->threads[ti];
        openblas_set_num_threads((int)threads);
        r.threads = threads, r.naive_s = naive_s, r.ceiling_rate = 0.0;
        r.impl = "ceiling";
        if (measure(o, &r, run_ceiling_mha, &c, NULL, NULL, 0) != 0)
            return -1;
        const double ceiling_rate = flops / r.st.median / 1e9;
        const nwattn_backend backends[] = {NWATTN_BACKEND_BLAS, NWATTN_BACKEND_FUSED,
                                           NWATTN_BACKEND_FUSED};
        for (int b = 0; b < 3; b++) {
            if (b == 2 && threads == 1)
                continue; /* the same as `fused` */
            c.ctx = bench_context(backends[b], threads);
            if (c.ctx == NULL)
                return -1;
            r.pair_ceiling.runs = 0;
            if (b == 1) { /* c.y is written again by the measurement below */
                const blas_call ours = {run_nwattn_mha, &c, 1};
                const blas_call ceiling = {run_ceiling_mha, &c, (int)threads};
                if (pair(o, ceiling, ours, 1.0, &r.pair_ceiling) != 0) {
                    nwattn_context_destroy(c.ctx);
                    return -1;
                }
            }
            openblas_set_num_threads(b == 1 ? 1 : (int)threads);
            r.impl = b == 2 ? "fused-blas-T" : backend_name(backends[b]);
            r.ceiling_rate = ceiling_rate;
            int rc = measure(o, &r, run_nwattn_mha, &c, c.y, check, count);
            r.pair_ceiling.runs = 0;
            nwattn_context_destroy(c.ctx);
            if (rc != 0)
                return -1;
        }
    }
    free(x), free(w), free(bias), free(c.y), free(c.scratch), free(check);
    return 0;
}

/* ---- Bandwidth selection by leave-one-out CV (bandwidth) ----------------------------------- */
/* The data of companion.py's statsmodels run: x on [0, 5), y = 2 sin x + x^0.8 + noise on
 * [-0.5, 0.5), evaluated in double and rounded once. */
typedef struct bandwidth_case {
    size_t n;
    const float *x, *y;
    float h;
    nwattn_cv_report report;
    nwattn_context *ctx;
} bandwidth_case;

static int run_select(void *arg) {
    bandwidth_case *c = arg;
    const nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT,
                                     NWATTN_EMPTY_NEAREST};
    nwattn_status st = nwattn_nw_select_bandwidth(c->ctx, &model, c->n, 1, 1, c->x, 1, c->y, 1,
                                                  NULL, &c->h, &c->report, NULL, NULL);
    return failed(c->ctx, st, "nwattn_nw_select_bandwidth");
}

static int bandwidth(const options *o) {
    static const size_t full[] = {1000, 10000}, quick[] = {100};
    const size_t *sizes = o->quick ? quick : full;
    const size_t count = o->quick ? 1 : 2;
    for (size_t s = 0; s < count; s++) {
        const size_t n = sizes[s];
        float *x = bench_data(20, n, 0.0, 5.0), *noise = bench_data(21, n, -0.5, 0.5);
        float *y = bench_zeros(n);
        if (!x || !noise || !y)
            return -1;
        for (size_t i = 0; i < n; i++)
            y[i] = (float)(2.0 * sin((double)x[i]) + pow((double)x[i], 0.8) + (double)noise[i]);
        bandwidth_case c = {.n = n, .x = x, .y = y};
        for (int t = 0; t < o->thread_counts; t++) {
            const size_t threads = o->threads[t];
            const nwattn_backend backends[] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_AUTO};
            for (int b = 0; b < 2; b++) {
                /* The reference evaluates every weight in double: n = 1000, one thread only. */
                if (b == 0 && (threads != 1 || n > 1000))
                    continue;
                c.ctx = bench_context(backends[b], threads);
                if (c.ctx == NULL)
                    return -1;
                openblas_set_num_threads(1);
                result r = {.workload = "bandwidth", .unit = "Geval/s", .threads = threads,
                            .impl = b == 0 ? "reference" : "nwattn", .max_diff = NAN};
                snprintf(r.label, sizeof r.label, "n=%zu d=1 gaussian lc", n);
                bench_stats st;
                int rc = bench_time(run_select, &c, o->reps, o->long_run, !o->quick, &st);
                nwattn_context_destroy(c.ctx);
                if (rc != 0)
                    return -1;
                r.st = st;
                /* kernel evaluations: n^2 per CV evaluation */
                r.work = (double)n * (double)n * (double)c.report.evaluations;
                snprintf(r.params, sizeof r.params,
                         "\"n\": %zu, \"d\": 1, \"bandwidth\": %.9g, \"cv\": %.9g, "
                         "\"cv_evaluations\": %zu",
                         n, (double)c.h, c.report.cv, c.report.evaluations);
                report(&r);
                printf("       chosen h = %.7g, CV = %.7g, %zu CV evaluations\n", (double)c.h,
                       c.report.cv, c.report.evaluations);
            }
        }
        free(x), free(noise), free(y);
    }
    return 0;
}

/* ---- Main ----------------------------------------------------------------------------------- */
static int parse_threads(options *o, const char *list) {
    o->thread_counts = 0;
    for (const char *p = list; *p;) {
        char *end;
        unsigned long t = strtoul(p, &end, 10);
        if (end == p || t == 0 || t > NWATTN_MAX_THREADS || o->thread_counts == MAX_THREAD_COUNTS)
            return -1;
        o->threads[o->thread_counts++] = (size_t)t;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return o->thread_counts > 0 ? 0 : -1;
}

static int usage(const char *self) {
    fprintf(stderr,
            "usage: %s [--threads 1,2] [--reps N] [--quick] [--json FILE] [--only NAMES]\n"
            "          [--no-memory] [--long-run SECONDS] [--tiles ROWS,KEYS]\n"
            "  NAMES: comma-separated among nw1d, nwd, sdpa, bmm, bandwidth, mha, memory\n",
            self);
    return 2;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--memory-probe") == 0)
        return memory_probe_child(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10),
                                  strtoull(argv[4], NULL, 10));
    options o = {.reps = 5, .memory = 1, .long_run = 5.0, .self = argv[0]};
    const char *threads_list = "1,2";
    int reps_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--quick") == 0) {
            o.quick = 1;
        } else if (strcmp(arg, "--no-memory") == 0) {
            o.memory = 0;
        } else if (value != NULL && strcmp(arg, "--threads") == 0) {
            threads_list = value, i++;
        } else if (value != NULL && strcmp(arg, "--reps") == 0) {
            o.reps = atoi(value), i++, reps_given = 1;
        } else if (value != NULL && strcmp(arg, "--json") == 0) {
            o.json_path = value, i++;
        } else if (value != NULL && strcmp(arg, "--only") == 0) {
            o.only = value, i++;
        } else if (value != NULL && strcmp(arg, "--long-run") == 0) {
            o.long_run = atof(value), i++;
        } else if (value != NULL && strcmp(arg, "--tiles") == 0) {
            unsigned long rows, keys;
            if (sscanf(value, "%lu,%lu", &rows, &keys) != 2)
                return usage(argv[0]);
            bench_set_tiles(rows, keys), i++;
        } else {
            return usage(argv[0]);
        }
    }
    if (parse_threads(&o, threads_list) != 0 || o.reps < 1 || o.reps > 64 || !(o.long_run > 0))
        return usage(argv[0]);
    if (o.quick && !reps_given)
        o.reps = 1;
    if (bench_json_open(&json, o.json_path) != 0) {
        fprintf(stderr, "cannot write %s\n", o.json_path);
        return 1;
    }
    bench_json_header(&json, threads_list, o.reps, o.quick);
    printf("# nwbench: %s, %ld cores online, %s (%s), libnwattn %s\n", bench_cpu_name(),
           sysconf(_SC_NPROCESSORS_ONLN), openblas_get_config(), openblas_get_corename(),
           nwattn_version_string());
    char line[512];
    bench_context_line(line, sizeof line);
    printf("# %s\n", line);
    header();
    const struct {
        const char *name;
        int (*run)(const options *);
    } workloads[] = {{"nw1d", nw1d}, {"nwd", nwd},        {"sdpa", sdpa},
                     {"bmm", bmm},   {"bandwidth", bandwidth}, {"mha", mha}};
    int status = 0;
    for (size_t w = 0; w < sizeof workloads / sizeof workloads[0] && status == 0; w++)
        if (selected(&o, workloads[w].name) && workloads[w].run(&o) != 0) {
            fprintf(stderr, "workload %s failed\n", workloads[w].name);
            status = 1;
        }
    if (status == 0 && o.memory && selected(&o, "memory") && memory_workload(&o) != 0)
        status = 1;
    if (bench_json_close(&json) != 0)
        status = 1;
    return status;
}
