/* Data, timing and the JSON report of the benchmark suite (see bench.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "bench.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nwattn.h>

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

float bench_uniform(uint64_t seed, uint64_t i, double lo, double hi) {
    double unit = (double)(splitmix64((seed << 32) + i) >> 40) * 0x1.0p-24;
    return (float)(lo + (hi - lo) * unit);
}

float *bench_data(uint64_t seed, size_t count, double lo, double hi) {
    float *x = malloc((count ? count : 1) * sizeof(float));
    for (size_t i = 0; x != NULL && i < count; i++)
        x[i] = bench_uniform(seed, i, lo, hi);
    return x;
}

float *bench_zeros(size_t count) { return calloc(count ? count : 1, sizeof(float)); }

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The tile override of every context bench_context makes (nwbench --tiles; 0: derived). */
static size_t tile_rows, tile_keys;

void bench_set_tiles(size_t rows, size_t keys) { tile_rows = rows, tile_keys = keys; }

nwattn_context *bench_context(nwattn_backend backend, size_t threads) {
    nwattn_context *ctx = NULL;
    if (nwattn_context_create(&ctx) != NWATTN_OK)
        return NULL;
    if (nwattn_context_set_backend(ctx, backend) != NWATTN_OK ||
        nwattn_context_set_threads(ctx, threads) != NWATTN_OK ||
        nwattn_context_set_tiles(ctx, tile_rows, tile_keys) != NWATTN_OK) {
        nwattn_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define MAX_REPS 64

/* Before each measurement: long enough for the thread pools of the previous one to go to sleep
 * (OpenBLAS's workers spin for between 0.05 and 0.2 s after their last call, measured here;
 * while they do, another pool's threads get half a core: d2l's bmm on two context threads
 * measured 0.095 ms instead of 0.051). */
#define SETTLE_S 0.25
/* Warm-up: calls until this much time has passed (at least one). The first calls after a pause
 * run several times slower (0.4 ms instead of 0.09 for d2l's bmm on one thread, for the
 * first 3 to 5 calls), so one warm-up call is not enough for short workloads. */
#define WARMUP_S 0.02

int bench_time(int (*fn)(void *arg), void *arg, int reps, double long_run, int settle,
               bench_stats *out) {
    double times[MAX_REPS];
    const struct timespec pause = {0, (long)(SETTLE_S * 1e9)};
    if (settle)
        nanosleep(&pause, NULL);
    double t0 = bench_now();
    if (fn(arg) != 0)
        return -1;
    double warm = bench_now() - t0;
    if (warm <= long_run)
        for (double start = t0; bench_now() - start < WARMUP_S;)
            if (fn(arg) != 0)
                return -1;
    int runs = 0;
    if (warm > long_run) { /* too long to repeat: the warm-up is the sample */
        times[runs++] = warm;
    } else {
        /* At most about 4 · long_run seconds of timed runs, and at least one. */
        int budget = warm > 0.0 ? (int)(4.0 * long_run / warm) : reps;
        int count = reps < budget ? reps : (budget > 0 ? budget : 1);
        if (count > MAX_REPS)
            count = MAX_REPS;
        for (; runs < count; runs++) {
            double t = bench_now();
            if (fn(arg) != 0)
                return -1;
            times[runs] = bench_now() - t;
        }
    }
    qsort(times, (size_t)runs, sizeof times[0], compare_doubles);
    out->runs = runs;
    out->min = times[0];
    out->max = times[runs - 1];
    out->median = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
    return 0;
}

/* One timed call after the pause and (unless calls are long) the warm-up of bench_time: the
 * first calls after a pause run slower, several of them for calls of a few ms (one warm-up
 * call left the fused 1024² SDPA on two threads at half its speed). -1 if a call failed. */
static double paired_call(int (*fn)(void *arg), void *arg, double long_run, int settle,
                          double last) {
    const struct timespec pause = {0, (long)(SETTLE_S * 1e9)};
    if (settle)
        nanosleep(&pause, NULL);
    if (last <= long_run) {
        const double start = bench_now();
        do
            if (fn(arg) != 0)
                return -1.0;
        while (bench_now() - start < WARMUP_S);
    }
    const double t = bench_now();
    if (fn(arg) != 0)
        return -1.0;
    return bench_now() - t;
}

int bench_paired(int (*a)(void *arg), void *arg_a, int (*b)(void *arg), void *arg_b, int rounds,
                 double long_run, int settle, bench_stats *ratio) {
    double ratios[MAX_REPS], last_a = 0.0, last_b = 0.0;
    int done = 0, limit = rounds < MAX_REPS ? rounds : MAX_REPS;
    for (double spent = 0.0; done < limit; done++) {
        if (done >= 3 && spent > 8.0 * long_run)
            break;
        const double start = bench_now();
        if (done % 2 == 0) {
            last_a = paired_call(a, arg_a, long_run, settle, last_a);
            last_b = last_a < 0.0 ? -1.0 : paired_call(b, arg_b, long_run, settle, last_b);
        } else {
            last_b = paired_call(b, arg_b, long_run, settle, last_b);
            last_a = last_b < 0.0 ? -1.0 : paired_call(a, arg_a, long_run, settle, last_a);
        }
        if (last_a < 0.0 || last_b < 0.0)
            return -1;
        ratios[done] = last_a / last_b;
        spent += bench_now() - start;
    }
    qsort(ratios, (size_t)done, sizeof ratios[0], compare_doubles);
    ratio->runs = done;
    ratio->min = ratios[0];
    ratio->max = ratios[done - 1];
    ratio->median =
        done % 2 ? ratios[done / 2] : 0.5 * (ratios[done / 2 - 1] + ratios[done / 2]);
    return 0;
}

const char *bench_cpu_name(void) {
    static char name[128] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return name;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon != NULL) {
                colon += colon[1] == ' ' ? 2 : 1;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(name, sizeof name, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
    return name;
}

/* The JSON strings written here come from the program or /proc: escape quotes and
 * backslashes only. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

int bench_json_open(bench_json *j, const char *path) {
    j->first = 1;
    j->file = NULL;
    if (path == NULL)
        return 0;
    j->file = fopen(path, "w");
    return j->file ? 0 : -1;
}

void bench_context_line(char *line, size_t size) {
    nwattn_context *ctx = NULL;
    line[0] = '\0';
    if (nwattn_context_create(&ctx) == NWATTN_OK &&
        nwattn_context_set_tiles(ctx, tile_rows, tile_keys) == NWATTN_OK)
        nwattn_context_describe(ctx, line, size);
    nwattn_context_destroy(ctx);
}

void bench_json_header(bench_json *j, const char *threads_list, int reps, int quick) {
    if (j->file == NULL)
        return;
    FILE *f = j->file;
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fputs("{\n  \"machine\": {\"cpu\": ", f);
    json_string(f, bench_cpu_name());
    fprintf(f, ", \"cores_online\": %ld, \"blas\": ", sysconf(_SC_NPROCESSORS_ONLN));
    json_string(f, openblas_get_config());
    fputs(", \"blas_core\": ", f);
    json_string(f, openblas_get_corename());
    char line[512], kernels[32] = "unknown";
    bench_context_line(line, sizeof line);
    if (strncmp(line, "simd=", 5) == 0)
        snprintf(kernels, sizeof kernels, "%.*s", (int)strcspn(line + 5, " "), line + 5);
    fprintf(f, ", \"vector_kernels\": \"%s\", \"nwattn\": \"%s\", \"context\": ", kernels,
            nwattn_version_string());
    json_string(f, line);
    fputs("},\n", f);
    fprintf(f, "  \"date\": \"%s\",\n  \"config\": {\"threads\": [%s], \"reps\": %d, "
               "\"quick\": %s},\n  \"results\": [\n",
            date, threads_list, reps, quick ? "true" : "false");
}

void bench_json_result(bench_json *j, const char *members) {
    if (j->file == NULL)
        return;
    fprintf(j->file, "%s    {%s}", j->first ? "" : ",\n", members);
    j->first = 0;
}

int bench_json_close(bench_json *j) {
    if (j->file == NULL)
        return 0;
    fputs("\n  ]\n}\n", j->file);
    return fclose(j->file) == 0 ? 0 : -1;
}
