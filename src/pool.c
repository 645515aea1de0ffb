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

static void copy_first_row(const nw_pool_args *a, float *o, float *lse) {
    for (size_t i = 1; i < a->m; i++)
        memcpy(o + i * a->ldo, o, a->dv * sizeof(float));
    if (lse != NULL)
        for (size_t i = 1; i < a->m; i++)
            lse[i] = lse[0];
}

/* Query rows per block, and the floats of the score block (none when scores go straight into
 * the caller's weights). */
static size_t block_rows(const nw_pool_args *a, size_t m_eff, size_t *s_floats) {
    *s_floats = 0;
    if (a->w != NULL)
        return m_eff;
    size_t block = min_size(m_eff, a->n > 0 ? POOL_BLOCK_FLOATS / a->n : m_eff);
    if (block == 0)
        block = 1;
    *s_floats = block * a->n; /* <= max(POOL_BLOCK_FLOATS, n): no overflow */
    return block;
}

size_t nw_pool_unfused_workspace(const nw_kernels *self, const nw_pool_args *a) {
    size_t s_floats;
    size_t block = block_rows(a, rows_identical(a) ? 1 : a->m, &s_floats);
    size_t scratch_bytes = self->scores_workspace(&a->score, block, a->n, a->d);
    size_t total;
    if (scratch_bytes == SIZE_MAX || !nw_add(s_floats * sizeof(float), scratch_bytes, &total))
        return SIZE_MAX;
    return total;
}

void nw_pool_unfused(const nw_kernels *self, const nw_pool_args *a, void *ws) {
    if (nw_pool_is_empty(a))
        return;
    const int identical = rows_identical(a);
    const size_t m_eff = identical ? 1 : a->m;
    size_t s_floats;
    const size_t block = block_rows(a, m_eff, &s_floats);
    float *s_block = ws;
    void *scratch = (float *)ws + s_floats;

    for (size_t b = 0; b < a->batch; b++)
        for (size_t h = 0; h < a->heads; h++) {
            const float *q = NW_ITEM(a, q, b, h);
            const float *k = NW_ITEM(a, k, b, h);
            const float *v = NW_ITEM(a, v, b, h);
            float *o = NW_ITEM(a, o, b, h);
            float *w = a->w ? NW_ITEM(a, w, b, h) : NULL;
            float *lse = a->lse ? NW_ITEM(a, lse, b, h) : NULL;
            for (size_t i0 = 0; i0 < m_eff; i0 += block) {
                size_t rows = min_size(block, m_eff - i0);
                float *s = w ? w + i0 * a->ldw : s_block;
                size_t lds = w ? a->ldw : (a->n > 0 ? a->n : 1);
                self->scores(&a->score, rows, a->n, a->d, q + i0 * a->ldq, a->ldq, k, a->ldk, s,
                             lds, scratch);
                self->softmax(&a->mask, b, i0, rows, a->n, s, lds, s, lds,
                              lse ? lse + i0 : NULL);
                self->gemm(rows, a->dv, a->n, s, lds, v, a->ldv, o + i0 * a->ldo, a->ldo);
            }
            if (identical)
                copy_first_row(a, o, lse);
        }
}

nwattn_status nw_pool_run(nwattn_context *ctx, const nw_kernels *kernels,
                          const nw_pool_args *a) {
    if (nw_pool_is_empty(a))
        return NWATTN_OK;
    const int partial = a->state_max != NULL;
    size_t bytes = partial ? kernels->partial_workspace(a, ctx->threads)
                           : kernels->pool_workspace(a, ctx->threads);
    void *ws;
    NW_TRY(nw_workspace(ctx, bytes, &ws));
    if (partial)
        kernels->partial(a, ws, ctx->threads);
    else
        kernels->pool(a, ws, ctx->threads);
    return NWATTN_OK;
}
