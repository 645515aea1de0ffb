/* The attention layer's backward driver behind nwattn_attention_backward. */
#ifndef NWATTN_ATTENTION_BACKWARD_H
#define NWATTN_ATTENTION_BACKWARD_H

#include "attention.h"
#include "backward.h"

/* Validated arguments: the forward's (f.y unused), dY and the requested gradients. */
typedef struct nw_attention_bwd_args {
    nw_attention_args f;
    const float *dy;
    size_t ldy, stride_dy;
    const nwattn_attention_grads *grads;
    const float *saved; /* nwattn_attention_save's activations, or NULL: the forward again */
} nw_attention_bwd_args;

size_t nw_attention_backward_workspace(const nw_pooling *pooling, nw_attention_bwd_args *a,
                                       size_t threads);
/* Runs with that much working memory. Never fails. */
void nw_attention_backward_run(const nw_pooling *pooling, nw_attention_bwd_args *a,
                               void *workspace, nw_workers *workers);

#endif /* NWATTN_ATTENTION_BACKWARD_H */
