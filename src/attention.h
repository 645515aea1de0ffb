/* The attention-layer driver behind nwattn_attention: projections, the per-head pooling (one
 * nw_pool_args with batch × heads items), the output projection. */
#ifndef NWATTN_ATTENTION_H
#define NWATTN_ATTENTION_H

#include "pool.h"

/* One sequence operand: batch items of rows × width at x + b·stride, row pitch ld. */
typedef struct nw_seq {
    const float *x;
    size_t ld, stride;
} nw_seq;

/* Validated arguments of nwattn_attention. pool has everything but its q, k, v, o pointers
 * (set by the driver inside the working memory); its w fields are the caller's weights. */
typedef struct nw_attention_args {
    const nwattn_attention_params *params;
    size_t batch, t_q, t_kv;
    nw_seq x_q, x_k, x_v;
    float *y;
    size_t ldy, stride_y;
    nw_pool_args pool;
} nw_attention_args;

/* Bytes of working memory: projected Q, K, V, the concatenated heads, the pooling's own. */
size_t nw_attention_workspace(const nw_pooling *pooling, nw_attention_args *args,
                              size_t threads);
/* Runs the layer with that much working memory. Never fails. */
void nw_attention_run(const nw_pooling *pooling, nw_attention_args *args, void *workspace,
                      nw_workers *workers);

#endif /* NWATTN_ATTENTION_H */
