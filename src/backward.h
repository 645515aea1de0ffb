/* nwattn_pool_backward's validated arguments and its two paths: the reference in double
 * (ref/ref_backward.c) and the fused tiles (blas/blas_backward.c). */
#ifndef NWATTN_BACKWARD_H
#define NWATTN_BACKWARD_H

#include "checks.h"
#include "internal.h"

typedef struct nw_backward_args {
    const nw_simd *simd;
    nw_score score;
    nw_mask mask;
    size_t batch, m, n, d, dv;
    const float *q;
    size_t ldq, stride_q;
    const float *k;
    size_t ldk, stride_k;
    const float *v;
    size_t ldv, stride_v;
    const float *o; /* the forward's output (the fused path's D = rowsum(dO ∘ O)) */
    size_t ldo, stride_o;
    const float *lse; /* the forward's log-sum-exp (the fused path rebuilds P from it) */
    size_t stride_lse;
    const float *d_o;
    size_t ld_do, stride_d_o;
    float *gq; /* the gradients dQ, dK, dV */
    size_t ld_gq, stride_gq;
    float *gk;
    size_t ld_gk, stride_gk;
    float *gv;
    size_t ld_gv, stride_gv;
    float *dparam; /* NULL, or nw_grad_params entries: summed over the batch */
    float *gs;     /* NULL, or dS = dL/d(additive), m×n per item (grads.d_additive) */
    size_t ld_gs, stride_gs;
    int gs_shared; /* gs is one matrix, the sum over the items (a broadcast additive mask) */
    int gs_adds;   /* every row adds to gs (the attention layer's heads after the first) */
} nw_backward_args;

/* Row i of item b of dS (gs must be set), and whether the row adds to what earlier items
 * wrote (a shared gs after item 0) rather than overwriting it. */
static inline float *nw_backward_gs_row(const nw_backward_args *a, size_t b, size_t i) {
    return a->gs + (a->gs_shared ? 0 : b * a->stride_gs) + i * a->ld_gs;
}
static inline int nw_backward_gs_adds(const nw_backward_args *a, size_t b) {
    return a->gs_adds || (a->gs_shared && b > 0);
}

/* Registers the d_additive output (name) of a call whose checked mask is a->mask, and sets
 * a->gs from it: one m×n matrix where the mask is one matrix for every item. */
nwattn_status nw_backward_check_gs(nw_call *call, const char *name, float *gs, size_t ld,
                                   size_t stride, nw_backward_args *a);

/* Operand x of item b. */
#define NW_BITEM(a, x, b) ((a)->x + (b) * (a)->stride_##x)

/* The reference: bytes of working memory, and the run (on the calling thread). */
size_t nw_ref_backward_workspace(const nw_backward_args *a);
void nw_ref_backward(const nw_backward_args *a, void *scratch);

/* The fused path: bytes for `threads` workers, and the run. Needs finite Q and K, and every
 * lse finite with |lse| <= NW_BACKWARD_LSE_MAX or -INFINITY (nw_backward_fusable). */
#define NW_BACKWARD_LSE_MAX 1024.0
int nw_backward_fusable(const nw_backward_args *a);
size_t nw_fused_backward_workspace(const nw_backward_args *a, size_t threads);
void nw_fused_backward(const nw_backward_args *a, void *scratch, nw_workers *workers);

/* Writes zeros to every gradient (m == 0 or n == 0 problems, and nothing else). */
void nw_backward_zero(const nw_backward_args *a);

#endif /* NWATTN_BACKWARD_H */
