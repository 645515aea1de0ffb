/* The pooling driver shared by nwattn_pool and nwattn_average_pool: scores, masked softmax and
 * weighted sum, a block of query rows at a time. */
#ifndef NWATTN_POOL_H
#define NWATTN_POOL_H

#include "internal.h"

/* Validated arguments of one pooling call (see nwattn_pool). */
typedef struct nw_pool_args {
    nw_score score;
    nw_mask mask;
    size_t batch, m, n, d, dv;
    const float *q;
    size_t ldq, stride_q;
    const float *k;
    size_t ldk, stride_k;
    const float *v;
    size_t ldv, stride_v;
    float *o;
    size_t ldo, stride_o;
    float *w; /* optional */
    size_t ldw, stride_w;
    float *lse; /* optional */
    size_t stride_lse;
} nw_pool_args;

/* Runs the pooling; fails only if working memory cannot be had (outputs then untouched). */
nwattn_status nw_pool_run(nwattn_context *ctx, const nw_kernels *kernels,
                          const nw_pool_args *args);

#endif /* NWATTN_POOL_H */
