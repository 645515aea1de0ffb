/*
 * backward — times nwattn_pool_backward's fused path against its five sgemm products alone.
 * Not a test: it asserts nothing about time.
 *
 *   backward [m] [d] [threads] [reps] [mode]  (defaults 4096 64 1 3 full; n = m, dv = d,
 *                                              scaled dot)
 *
 * mode: full (no mask), causal (NWATTN_MASK_CAUSAL), or memory (no mask, the backward alone:
 * no m×n products, so m = 65536 fits).
 * Prints the median wall time of the forward (fused, with lse), of the fused backward, and of
 * the five products of FlashAttention-2's backward done as five whole cblas_sgemm calls
 * (Q K^T, dO V^T, P^T dO, dS K, dS^T Q on m×n matrices in memory: the GEMM ceiling), with
 * their GFLOP/s (2·m·n·(3d + 2dv) flops) and the ratio backward / products; and the context's
 * working memory after the backward (nwattn_context_workspace_bytes: what the call needs
 * beyond its inputs, outputs and gradients). Causal: the backward's GFLOP/s count only the
 * live pairs (m(m+1)/2), the products stay whole (the ceiling's rate). Run it with
 * OPENBLAS_NUM_THREADS equal to `threads` so that both sides have the same cores.
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct run {
    nwattn_context *ctx;
    size_t m, d;
    nwattn_score score;
    const nwattn_mask *mask;
    float *q, *k, *v, *o, *lse, *d_o, *dq, *dk, *dv, *s, *ds, dscale;
} run;

static int forward(void *arg) {
    run *r = arg;
    const size_t m = r->m, d = r->d;
    return nwattn_pool(r->ctx, &r->score, r->mask, 1, m, m, d, d, r->q, d, 0, r->k, d, 0, r->v, d,
                       0, r->o, d, 0, NULL, 0, 0, r->lse, 0) != NWATTN_OK;
}

static int backward(void *arg) {
    run *r = arg;
    const size_t m = r->m, d = r->d;
    const nwattn_pool_upstream up = {r->o, d, 0, r->lse, 0, r->d_o, d, 0};
    const nwattn_pool_grads g = {r->dq, d, 0, r->dk, d, 0, r->dv, d, 0,
                                 &r->dscale, NULL, NULL, NULL, 0, 0};
    return nwattn_pool_backward(r->ctx, &r->score, r->mask, 1, m, m, d, d, r->q, d, 0, r->k, d, 0,
                                r->v, d, 0, &up, &g) != NWATTN_OK;
}

static int products(void *arg) {
    run *r = arg;
    const int m = (int)r->m, d = (int)r->d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, d, 1.0f, r->q, d, r->k, d, 0.0f,
                r->s, m);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, d, 1.0f, r->d_o, d, r->v, d,
                0.0f, r->ds, m);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, d, m, 1.0f, r->s, m, r->d_o, d,
                0.0f, r->dv, d);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, m, 1.0f, r->ds, m, r->k, d,
                0.0f, r->dq, d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, d, m, 1.0f, r->ds, m, r->q, d, 0.0f,
                r->dk, d);
    return 0;
}

int main(int argc, char **argv) {
    run r = {0};
    r.m = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    r.d = argc > 2 ? (size_t)atol(argv[2]) : 64;
    const size_t threads = argc > 3 ? (size_t)atol(argv[3]) : 1;
    const int reps = argc > 4 ? atoi(argv[4]) : 3;
    const char *mode = argc > 5 ? argv[5] : "full";
    const int causal = strcmp(mode, "causal") == 0, memory = strcmp(mode, "memory") == 0;
    if (!causal && !memory && strcmp(mode, "full") != 0) {
        fprintf(stderr, "mode: full, causal or memory\n");
        return 1;
    }
    const nwattn_mask causal_mask = {.flags = NWATTN_MASK_CAUSAL};
    r.mask = causal ? &causal_mask : NULL;
    const size_t m = r.m, d = r.d;
    r.ctx = bench_context(NWATTN_BACKEND_FUSED, threads);
    r.score = (nwattn_score){.kind = NWATTN_SCORE_DOT, .scale = (float)(1.0 / sqrt((double)d))};
    r.q = bench_data(1, m * d, -1, 1), r.k = bench_data(2, m * d, -1, 1);
    r.v = bench_data(3, m * d, -1, 1), r.d_o = bench_data(4, m * d, -1, 1);
    r.o = bench_zeros(m * d), r.lse = bench_zeros(m), r.dq = bench_zeros(m * d);
    r.dk = bench_zeros(m * d), r.dv = bench_zeros(m * d);
    if (!memory)
        r.s = bench_zeros(m * m), r.ds = bench_zeros(m * m);
    if (r.ctx == NULL || !r.q || !r.k || !r.v || !r.d_o || !r.o || !r.lse || !r.dq || !r.dk ||
        !r.dv || (!memory && (!r.s || !r.ds))) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    bench_stats f, b, p = {0};
    const int failed = bench_time(forward, &r, reps, 60.0, 1, &f);
    nwattn_context_release_workspace(r.ctx); /* what remains is the backward's */
    if (failed || bench_time(backward, &r, reps, 60.0, 1, &b) ||
        (!memory && bench_time(products, &r, reps, 60.0, 1, &p))) {
        fprintf(stderr, "a call failed: %s\n", nwattn_context_last_error(r.ctx));
        return 1;
    }
    const double flops = 2.0 * (double)m * (double)m * (double)(3 * d + 2 * d);
    const double live = causal ? 0.5 * (1.0 + 1.0 / (double)m) : 1.0; /* m(m+1)/2 of m^2 */
    printf("m = n = %zu, d = dv = %zu, %zu context thread(s), %s\n", m, d, threads, mode);
    printf("forward (fused, lse)   %8.4f s\n", f.median);
    printf("backward (fused)       %8.4f s  %7.1f GFLOP/s\n", b.median,
           live * flops / b.median * 1e-9);
    if (!memory) {
        printf("five sgemm products    %8.4f s  %7.1f GFLOP/s\n", p.median,
               flops / p.median * 1e-9);
        printf("backward / products    %8.3f of the products' GFLOP/s\n",
               live * p.median / b.median);
    }
    printf("working memory         %8.2f MiB (context workspace after the backward)\n",
           (double)nwattn_context_workspace_bytes(r.ctx) / (1024.0 * 1024.0));
    nwattn_context_destroy(r.ctx);
    return 0;
}
