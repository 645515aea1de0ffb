/*
 * call_floor — the bare C time of the calls the Python benchmark (python_calls.py) times, at
 * the seeds' sizes: what a binding cannot go below. A small shared library that the benchmark
 * loads (ctypes) and calls between its own batches, so that the C floor and the Python calls
 * are timed alternately under the same load. One context, outputs allocated once; the data are
 * fixed uniform [0, 5) values (they do not change the work).
 *
 *   double call_floor_seconds(const char *name, size_t calls): seconds per call of `calls`
 *   calls of the case `name` (see PROBLEMS), or -1 for an unknown name or a failed call.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nwattn.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct problem {
    const char *name;
    size_t m, n;
    float h;
    int what; /* 0 pool, 1 softmax, 2 bmm, 3 nw_predict, 4 scores */
} problem;

static const problem PROBLEMS[] = {
    {"pool d2l 50x50", 50, 50, 1.0f, 0},       {"pool seed1 200x80", 200, 80, 0.5f, 0},
    {"softmax d2l 50x50", 50, 50, 1.0f, 1},    {"softmax seed1 200x80", 200, 80, 0.5f, 1},
    {"bmm d2l 50x50", 50, 50, 1.0f, 2},        {"bmm seed1 200x80", 200, 80, 0.5f, 2},
    {"nw_predict d2l 50x50", 50, 50, 1.0f, 3}, {"nw_predict seed1 200x80", 200, 80, 0.5f, 3},
    {"scores d2l 50x50", 50, 50, 1.0f, 4},     {"scores seed1 200x80", 200, 80, 0.5f, 4},
};

static float buf_q[200], buf_k[80], buf_v[80], buf_s[200 * 80], buf_o[200 * 80];

static nwattn_status run(nwattn_context *ctx, const problem *p)
{
    size_t m = p->m, n = p->n;
    nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, p->h, NULL};
    nwattn_regression model = {NWATTN_KERNEL_GAUSSIAN, NWATTN_LOCAL_CONSTANT, NWATTN_EMPTY_NEAREST};
    switch (p->what) {
    case 0: /* (m, 1) queries, (n, 1) keys and values */
        return nwattn_pool(ctx, &sc, NULL, 1, m, n, 1, 1, buf_q, 1, 0, buf_k, 1, 0, buf_v, 1, 0,
                           buf_o, 1, 0, NULL, 0, 0, NULL, 0);
    case 1: /* m × n scores */
        return nwattn_softmax(ctx, NULL, 1, m, n, buf_s, n, 0, buf_o, n, 0, NULL, 0);
    case 2: /* (m × n weights) · (n × 1 values) */
        return nwattn_bmm(ctx, 1, m, 1, n, buf_s, n, 0, buf_v, 1, 0, buf_o, 1, 0);
    case 3:
        return nwattn_nw_predict(ctx, &model, &p->h, m, n, 1, 1, buf_q, 1, buf_k, 1, buf_v, 1,
                                 buf_o, 1, NULL, 0, NULL, NULL);
    default:
        return nwattn_scores(ctx, &sc, 1, m, n, 1, buf_q, 1, 0, buf_k, 1, 0, buf_o, n, 0);
    }
}

static nwattn_context *floor_ctx;

static int setup(void)
{
    if (floor_ctx)
        return 1;
    srand(1);
    for (size_t i = 0; i < 200; ++i)
        buf_q[i] = 5.0f * (float)rand() / (float)RAND_MAX;
    for (size_t i = 0; i < 80; ++i) {
        buf_k[i] = 5.0f * (float)rand() / (float)RAND_MAX;
        buf_v[i] = 5.0f * (float)rand() / (float)RAND_MAX;
    }
    for (size_t i = 0; i < 200 * 80; ++i)
        buf_s[i] = 5.0f * (float)rand() / (float)RAND_MAX;
    return nwattn_context_create(&floor_ctx) == NWATTN_OK;
}

double call_floor_seconds(const char *name, size_t calls);
double call_floor_seconds(const char *name, size_t calls)
{
    if (!setup() || calls == 0)
        return -1.0;
    for (size_t c = 0; c < sizeof PROBLEMS / sizeof PROBLEMS[0]; ++c) {
        if (strcmp(PROBLEMS[c].name, name))
            continue;
        double t0 = now();
        for (size_t i = 0; i < calls; ++i)
            if (run(floor_ctx, &PROBLEMS[c]) != NWATTN_OK)
                return -1.0;
        return (now() - t0) / (double)calls;
    }
    return -1.0;
}
