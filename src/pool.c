/* The unfused pooling driver. Without a weights output the m×n weights exist only one block of
 * query rows at a time (about POOL_BLOCK_FLOATS floats), so memory stays bounded for large m. */
#include <string.h>

#include "pool.h"

#define POOL_BLOCK_FLOATS ((size_t)1 << 22) /* 16 MiB of scores per block */

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Every row of item b's output is the same when the mask does not depend on the row and the
 * scores do not depend on the query (average pooling): compute one, copy it. */
static int rows_identical(const nw_pool_args *a) {
    const nw_mask *mk = &a->mask;
    return a->score.kind == NW_SCORE_ZERO && a->w == NULL &&
           !(mk->flags & (NWATTN_MASK_LEAVE_ONE_OUT | NWATTN_MASK_CAUSAL |
                          NWATTN_MASK_LENS_PER_ROW)) &&
           mk->additive == NULL && mk->keep == NULL;
}

static void copy_first_row(const nw_pool_args *a, size_t b) {
    float *o = a->o + b * a->stride_o;
    for (size_t i = 1; i < a->m; i++)
        memcpy(o + i * a->ldo, o, a->dv * sizeof(float));
    if (a->lse != NULL)
        for (size_t i = 1; i < a->m; i++)
            a->lse[b * a->stride_lse + i] = a->lse[b * a->stride_lse];
}

nwattn_status nw_pool_run(nwattn_context *ctx, const nw_kernels *kernels,
                          const nw_pool_args *a) {
    if (a->batch == 0 || a->m == 0 || (a->dv == 0 && a->w == NULL && a->lse == NULL))
        return NWATTN_OK;
    const int identical = rows_identical(a);
    const size_t m_eff = identical ? 1 : a->m;

    /* A block of query rows at a time bounds the working memory. Scores go straight into the
     * caller's weights if given, else into the workspace. */
    size_t block = min_size(m_eff, a->n > 0 ? POOL_BLOCK_FLOATS / a->n : m_eff);
    if (block == 0)
        block = 1;
    const size_t s_floats = a->w == NULL ? block * a->n : 0; /* <= max(BLOCK_FLOATS, n) */
    /* Workspace: the block's row scales (doubles), the kernels' scratch (8-byte multiple),
     * then the scores block. */
    const size_t scratch_bytes = kernels->scores_workspace(&a->score, block, a->n, a->d);
    size_t scale_bytes = 0, s_bytes = 0, total;
    if (scratch_bytes == SIZE_MAX || !nw_mul(block, sizeof(double), &scale_bytes) ||
        !nw_mul(s_floats, sizeof(float), &s_bytes) ||
        !nw_add(scale_bytes, scratch_bytes, &total) || !nw_add(total, s_bytes, &total))
        total = SIZE_MAX;
    void *ws;
    NW_TRY(nw_workspace(ctx, total, &ws));
    double *row_scale = ws;
    void *scratch = (char *)ws + scale_bytes;
    float *s_block = (float *)(void *)((char *)scratch + scratch_bytes);

    for (size_t b = 0; b < a->batch; b++) {
        const float *q = a->q + b * a->stride_q;
        const float *k = a->k + b * a->stride_k;
        const float *v = a->v + b * a->stride_v;
        float *o = a->o + b * a->stride_o;
        float *w = a->w ? a->w + b * a->stride_w : NULL;
        float *lse = a->lse ? a->lse + b * a->stride_lse : NULL;
        for (size_t i0 = 0; i0 < m_eff; i0 += block) {
            size_t rows = min_size(block, m_eff - i0);
            float *s = w ? w + i0 * a->ldw : s_block;
            size_t lds = w ? a->ldw : (a->n > 0 ? a->n : 1);
            kernels->scores(&a->score, rows, a->n, a->d, q + i0 * a->ldq, a->ldq, k, a->ldk, s,
                            lds, row_scale, scratch);
            kernels->softmax(&a->mask, b, i0, rows, a->n, s, lds, row_scale, s, lds,
                             lse ? lse + i0 : NULL);
            kernels->gemm(rows, a->dv, a->n, s, lds, v, a->ldv, o + i0 * a->ldo, a->ldo);
        }
        if (identical)
            copy_first_row(a, b);
    }
    return NWATTN_OK;
}
