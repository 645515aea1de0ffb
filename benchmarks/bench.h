/* The benchmark suite's shared pieces: deterministic data (the companion Python script makes
 * the very same floats), timing, the naive loops a user would write, and the JSON report. */
#ifndef NWBENCH_H
#define NWBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nwattn.h>

/* ---- Data -------------------------------------------------------------------------------- */
/* Element i of stream `seed`: splitmix64(seed · 2^32 + i) >> 40, times 2^-24, mapped onto
 * [lo, hi) in double and rounded once to float. benchmarks/companion.py computes the same. */
float bench_uniform(uint64_t seed, uint64_t i, double lo, double hi);
/* count floats of stream `seed` on [lo, hi), from the allocator (NULL if out of memory). */
float *bench_data(uint64_t seed, size_t count, double lo, double hi);
/* count zero floats, touched (the page faults happen here, not in a timed run). */
float *bench_zeros(size_t count);

/* ---- Timing ------------------------------------------------------------------------------ */
double bench_now(void);

/* A context with this backend and thread count (and the tiles of bench_set_tiles), or NULL. */
nwattn_context *bench_context(nwattn_backend backend, size_t threads);
/* Tiles for every later bench_context (nwattn_context_set_tiles; 0, 0: derived). */
void bench_set_tiles(size_t rows, size_t keys);

typedef struct bench_stats {
    int runs;
    double median, min, max; /* seconds */
} bench_stats;

/* With `settle`, pauses 0.25 s (other thread pools go idle); warms up (calls for 20 ms, at
 * least one), then calls fn(arg) `reps` more times (fewer if a run is long, see nwbench.c),
 * and summarises the timed runs. fn returns 0 on success. Returns 0, or -1 if a call failed.
 * A first call longer than `long_run` seconds is kept as the only sample. */
int bench_time(int (*fn)(void *arg), void *arg, int reps, double long_run, int settle,
               bench_stats *out);

/* Paired rounds, for ratios on a machine whose speed drifts (a shared VM: the same cell
 * measured 0.83 and 0.99 of its ceiling in two runs minutes apart): `rounds` rounds of a and
 * b, alternating which goes first; before each timed call (with `settle`) a 0.25 s pause, for
 * the other's thread pool to go idle, and unless a call is longer than long_run seconds
 * bench_time's warm-up.
 * Summarises the per-round ratios time(a) / time(b) (runs: the rounds). Fewer rounds where a
 * round would be long: about 8 · long_run seconds in all, and at least three. Returns 0, or -1
 * if a call failed. */
int bench_paired(int (*a)(void *arg), void *arg_a, int (*b)(void *arg), void *arg_b, int rounds,
                 double long_run, int settle, bench_stats *ratio);

/* ---- Naive loops (bench_naive.c): plain C, expf, two passes, one thread ------------------- */
/* Gaussian Nadaraya-Watson with bandwidth h: q m×d, k n×d, v n (one value per key). */
void naive_nw(size_t m, size_t n, size_t d, float h, const float *q, const float *k,
              const float *v, float *o);
/* Scaled dot-product attention, q m×d, k n×d, v n×dv, o m×dv; causal masks keys j > i. */
void naive_sdpa(size_t m, size_t n, size_t d, size_t dv, int causal, const float *q,
                const float *k, const float *v, float *o);
/* ---- The same loops built with -ffast-math and OpenMP (bench_naive_fast.c) ------------ */
/* naive_nw for d = 1 on `threads` OpenMP threads (contiguous row ranges). Returns 0. */
int naive_fast_nw_1d(size_t m, size_t n, float h, const float *q, const float *k,
                     const float *v, float *o, int threads);
/* y = x·w^T + b: x rows×in, w out×in, b out. */
void naive_linear(size_t rows, size_t out, size_t in, const float *x, const float *w,
                  const float *b, float *y);
/* Multi-head self-attention layer (nwattn_attention's definition, scaled dot, no mask) on
 * batch sequences x (t × e each, contiguous), weights in nn.Linear layout (e × e), biases:
 * projections, heads copied apart, naive_sdpa per head, concatenation, output projection.
 * scratch: (4 · batch + 4) · t · e floats. */
void naive_mha(size_t batch, size_t t, size_t e, size_t heads, const float *x, const float *wq,
               const float *wk, const float *wv, const float *wo, const float *bq,
               const float *bk, const float *bv, const float *bo, float *y, float *scratch);
/* c_i = a_i·b_i for `batch` products of m×k times k×n, contiguous items. */
void naive_bmm(size_t batch, size_t m, size_t n, size_t k, const float *a, const float *b,
               float *c);

/* What a default context runs on (nwattn_context_describe's line; "" if none is created). */
void bench_context_line(char *line, size_t size);

/* ---- JSON report ------------------------------------------------------------------------- */
typedef struct bench_json {
    FILE *file; /* NULL: no report */
    int first;
} bench_json;

int bench_json_open(bench_json *j, const char *path);
/* Writes the machine description and the run's settings. */
void bench_json_header(bench_json *j, const char *threads_list, int reps, int quick);
/* One result: an object literal's members, already formatted ("\"a\": 1, \"b\": 2"). */
void bench_json_result(bench_json *j, const char *members);
int bench_json_close(bench_json *j);

/* "AMD EPYC ..." from /proc/cpuinfo, or "unknown". */
const char *bench_cpu_name(void);

#endif /* NWBENCH_H */
