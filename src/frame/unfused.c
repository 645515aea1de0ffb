/* The unfused pooling driver. Without a weights output the m×n weights exist only one block of
 * query rows at a time (about POOL_BLOCK_FLOATS floats), so memory stays bounded for large m. */
#include <string.h>

#include "pool.h"
#include "score/score.h"

#define POOL_BLOCK_FLOATS ((size_t)1 << 22) /* 16 MiB of scores per block */

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Every row of item b's output is the same when the mask does not depend on the row and the
 * scores do not depend on the query (average pooling): compute one, copy it. */
static int rows_identical(const nw_pool_args *a) {
    const nw_mask *mk = &a->mask;
    return a->score.desc->constant && a->w == NULL &&
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

/* Query rows per block and the floats of the score block (none when scores go straight into
 * the caller's weights): a block of rows at a time bounds the working memory. */
static size_t block_rows(const nw_pool_args *a, size_t m_eff, size_t *s_floats) {
    size_t block = min_size(m_eff, a->n > 0 ? POOL_BLOCK_FLOATS / a->n : m_eff);
    if (block == 0)
        block = 1;
    *s_floats = a->w == NULL ? block * a->n : 0; /* <= max(POOL_BLOCK_FLOATS, n) */
    return block;
}

/* Working memory, in this order: the block's row scales (doubles, see nw_kernels), the
 * kernels' scratch (a multiple of 8 bytes), the block of scores. */
typedef struct unfused_layout {
    size_t block, s_floats, scale_bytes, scratch_bytes, total;
} unfused_layout;

static unfused_layout layout_of(const nw_kernels *self, const nw_pool_args *a) {
    unfused_layout l;
    l.block = block_rows(a, rows_identical(a) ? 1 : a->m, &l.s_floats);
    l.scratch_bytes = self->scores_workspace(&a->score, l.block, a->n, a->d);
    size_t s_bytes;
    if (l.scratch_bytes == SIZE_MAX || !nw_mul(l.block, sizeof(double), &l.scale_bytes) ||
        !nw_mul(l.s_floats, sizeof(float), &s_bytes) ||
        !nw_add(l.scale_bytes, l.scratch_bytes, &l.total) || !nw_add(l.total, s_bytes, &l.total))
        l.total = SIZE_MAX;
    return l;
}

size_t nw_pool_unfused_workspace(const nw_kernels *self, const nw_pool_args *a) {
    return layout_of(self, a).total;
}

void nw_pool_unfused(const nw_kernels *self, const nw_pool_args *a, void *ws) {
    if (nw_pool_is_empty(a))
        return;
    const int identical = rows_identical(a);
    const size_t m_eff = identical ? 1 : a->m;
    const unfused_layout l = layout_of(self, a);
    double *row_scale = ws;
    void *scratch = (char *)ws + l.scale_bytes;
    float *s_block = (float *)(void *)((char *)scratch + l.scratch_bytes);

    for (size_t b = 0; b < a->batch; b++)
        for (size_t h = 0; h < a->heads; h++) {
            const float *q = NW_ITEM(a, q, b, h);
            const float *k = NW_ITEM(a, k, b, h);
            const float *v = NW_ITEM(a, v, b, h);
            float *o = NW_ITEM(a, o, b, h);
            float *w = a->w ? NW_ITEM(a, w, b, h) : NULL;
            float *lse = a->lse ? NW_ITEM(a, lse, b, h) : NULL;
            for (size_t i0 = 0; i0 < m_eff; i0 += l.block) {
                size_t rows = min_size(l.block, m_eff - i0);
                float *s = w ? w + i0 * a->ldw : s_block;
                size_t lds = w ? a->ldw : (a->n > 0 ? a->n : 1);
                self->scores(a->simd, &a->score, rows, a->n, a->d, q + i0 * a->ldq, a->ldq, k, a->ldk, s,
                             lds, row_scale, scratch);
                self->softmax(a->simd, &a->mask, b, i0, rows, a->n, s, lds, row_scale, s, lds,
                              lse ? lse + i0 : NULL);
                self->gemm(rows, a->dv, a->n, s, lds, v, a->ldv, o + i0 * a->ldo, a->ldo);
            }
            if (identical)
                copy_first_row(a, o, lse);
        }
}
