/* The attention-layer driver behind nwattn_attention: projections, the per-head pooling (one
 * nw_pool_args with batch × heads items), the output projection. */
#ifndef NWATTN_ATTENTION_H
#define NWATTN_ATTENTION_H

#include "checks.h"
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

/* The activations nwattn_attention_save keeps (nwattn.h): floats of Q, K, V, the concatenated
 * heads C and the heads' lse, contiguous in this order. Returns 0 if a count overflows. */
typedef struct nw_saved_layout {
    size_t q, k, v, c, lse, total;
} nw_saved_layout;
int nw_attention_saved_layout(const nwattn_attention_params *p, size_t batch, size_t t_q,
                              size_t t_kv, nw_saved_layout *out);
/* The saved activations as the buffers they are. */
typedef struct nw_saved_view {
    const float *q, *k, *v, *c, *lse;
} nw_saved_view;
nw_saved_view nw_attention_saved_view(const nw_saved_layout *layout, const float *saved);

/* Bytes of working memory of nwattn_attention_save: the pooling's alone. */
size_t nw_attention_save_workspace(const nw_pooling *pooling, nw_attention_args *args,
                                   size_t threads);
/* Runs the layer as nw_attention_run, with Q, K, V, C and lse in saved. Never fails. */
void nw_attention_run_saved(const nw_pooling *pooling, nw_attention_args *args, float *saved,
                            void *workspace, nw_workers *workers);

/* The projections Q, K, V of the three sequences, head by head (attention.c): heads ×
 * (batch·t) × width/heads; temp holds nw_attention_temp_floats floats for workers->threads. */
void nw_attention_project_inputs(const nw_kernels *kernels, nw_workers *workers,
                                 const nw_attention_args *a, float *q, float *k, float *v,
                                 float *temp);
/* Floats of the working buffer projections and pooled heads pass through: the largest of the
 * three projections and the concatenated heads, and at least a block of projection rows per
 * worker (nw_heads_out). SIZE_MAX if that overflows (the projections are known to fit). */
size_t nw_attention_temp_floats(const nwattn_attention_params *p, size_t batch, size_t t_q,
                                size_t t_kv, size_t threads);
/* rows × width (heads side by side) to heads × rows × width/heads, and back. */
void nw_attention_to_heads(size_t rows, size_t heads, size_t width, const float *src,
                           float *dst);
void nw_attention_from_heads(size_t rows, size_t heads, size_t width, const float *src,
                             float *dst);
/* Points pool at those buffers (head h of item b: a dense block) with the output at o
 * (rows × heads·dvh, heads side by side, row pitch ldo). */
void nw_attention_aim_pool(const nw_attention_args *a, nw_pool_args *pool, const float *q,
                           const float *k, const float *v, float *o, size_t ldo,
                           size_t stride_o);

/* The checks nwattn_attention and nwattn_attention_backward share (api_attention.c): the
 * layer's widths, the three sequences (a->x_*, t_q, t_kv set), the weights and biases, and the
 * score (NULL: scaled dot, 1/sqrt(d_qk/heads)) into a->pool.score. */
nwattn_status nw_attention_check_inputs(nw_call *call, const nwattn_attention_params *params,
                                        const nwattn_score *score, nw_attention_args *a);
/* saved of nwattn_attention_save (output) or nwattn_attention_backward_saved (input): at least
 * the layout's floats (api_attention.c). */
nwattn_status nw_attention_check_saved(nw_call *call, const nw_attention_args *a,
                                       const float *saved, size_t saved_floats, int output);
/* Whether every leading dimension of the call and every width fits the BLAS integer. */
int nw_attention_blas_ok(const nw_call *call, const nwattn_attention_params *p);

#endif /* NWATTN_ATTENTION_H */
