/* The pooling drivers' shared arguments, and the unfused driver used by nwattn_pool,
 * nwattn_average_pool and nwattn_attention: scores, masked softmax and weighted sum, a block of
 * query rows at a time. */
#ifndef NWATTN_POOL_H
#define NWATTN_POOL_H

#include "internal.h"

/* Validated arguments of one pooling. The problem has batch × heads items; operand X of item
 * (b, h) starts at x + b·stride_x + h·hstride_x (heads == 1 and hstride 0 outside multi-head
 * attention). The mask depends on b only: all heads of an item share it. */
typedef struct nw_pool_args {
    const nw_simd *simd; /* the context's vector kernels */
    const struct nw_tiles *tiles; /* the context's tile sizes (frame/tiles.h); NULL: defaults */
    nw_score score;
    nw_mask mask;
    size_t batch, heads, m, n, d, dv;
    const float *q;
    size_t ldq, stride_q, hstride_q;
    const float *k;
    size_t ldk, stride_k, hstride_k;
    const float *v;
    size_t ldv, stride_v, hstride_v;
    float *o; /* the output, or a partial state's accumulator */
    size_t ldo, stride_o, hstride_o;
    float *w; /* optional weights */
    size_t ldw, stride_w, hstride_w;
    float *lse; /* optional log-sum-exp, [b·stride_lse + h·hstride_lse + i] */
    size_t stride_lse, hstride_lse;
    /* Partial states only: row maxima and sums, laid out like lse. */
    float *state_max, *state_sum;
    size_t stride_stats, hstride_stats;
} nw_pool_args;

/* Operand pointers of item (b, h). */
#define NW_ITEM(a, x, b, h) ((a)->x + (b) * (a)->stride_##x + (h) * (a)->hstride_##x)

/* Whether the pooling has anything to write. */
static inline int nw_pool_is_empty(const nw_pool_args *a) {
    return a->batch == 0 || a->heads == 0 || a->m == 0 ||
           (a->dv == 0 && a->w == NULL && a->lse == NULL && a->state_max == NULL);
}

/* The unfused driver (frame/unfused.c) over a provider whose scores, softmax and gemm it
 * composes. Runs on the calling thread. */
size_t nw_pool_unfused_workspace(const nw_kernels *self, const nw_pool_args *args);
void nw_pool_unfused(const nw_kernels *self, const nw_pool_args *args, void *scratch);

/* A pooling's driver over its provider (frame/pooling.c): the scratch for `threads` workers,
 * and the run. Partial states (args->state_max set) always take the tiled driver. */
size_t nw_pooling_workspace(const nw_pooling *p, const nw_pool_args *args, size_t threads);
void nw_pooling_exec(const nw_pooling *p, const nw_pool_args *args, void *scratch,
                     nw_workers *workers);

/* Checks nothing: acquires the working memory from ctx and runs the pooling. Fails only if
 * the memory cannot be had. */
nwattn_status nw_pool_run(nwattn_context *ctx, const nw_pooling *p, const nw_pool_args *args);

#endif /* NWATTN_POOL_H */
