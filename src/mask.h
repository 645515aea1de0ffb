/* Per-row mask evaluation shared by the reference and BLAS softmax kernels, so that both
 * backends agree exactly on which keys are masked. */
#ifndef NWATTN_MASK_H
#define NWATTN_MASK_H

#include "internal.h"

/* Keys j >= the returned limit are masked for query row i of item b (causal, valid lengths). */
static inline size_t nw_mask_row_limit(const nw_mask *mask, size_t b, size_t i, size_t n) {
    size_t limit = n;
    if (mask == NULL)
        return limit;
    if ((mask->flags & NWATTN_MASK_CAUSAL) && i + 1 < limit)
        limit = i + 1;
    if (mask->valid_lens != NULL) {
        size_t len = (mask->flags & NWATTN_MASK_LENS_PER_ROW) ? mask->valid_lens[b * mask->m + i]
                                                               : mask->valid_lens[b];
        if (len < limit)
            limit = len;
    }
    return limit;
}

/* The additive row of (b, i), or NULL. */
static inline const float *nw_mask_additive_row(const nw_mask *mask, size_t b, size_t i) {
    if (mask == NULL || mask->additive == NULL)
        return NULL;
    return mask->additive + b * mask->stride_additive + i * mask->ld_additive;
}

/* The keep row of (b, i), or NULL. */
static inline const unsigned char *nw_mask_keep_row(const nw_mask *mask, size_t b, size_t i) {
    if (mask == NULL || mask->keep == NULL)
        return NULL;
    return mask->keep + b * mask->stride_keep + i * mask->ld_keep;
}

/* The key excluded by leave-one-out for row i, or SIZE_MAX. */
static inline size_t nw_mask_excluded_key(const nw_mask *mask, size_t i) {
    return (mask != NULL && (mask->flags & NWATTN_MASK_LEAVE_ONE_OUT)) ? i : SIZE_MAX;
}

/* Everything a kernel needs to mask one row: keys j >= limit are masked, and so is key j < limit
 * when nw_mask_row_drops says so. The additive row (or NULL) is added to the scores. */
typedef struct nw_mask_row {
    size_t limit;
    size_t excluded;
    const float *additive;
    const unsigned char *keep;
} nw_mask_row;

static inline nw_mask_row nw_mask_row_get(const nw_mask *mask, size_t b, size_t i, size_t n) {
    nw_mask_row row = {nw_mask_row_limit(mask, b, i, n), nw_mask_excluded_key(mask, i),
                       nw_mask_additive_row(mask, b, i), nw_mask_keep_row(mask, b, i)};
    const size_t offset = mask != NULL ? mask->key_offset : 0;
    if (offset != 0) { /* a shard: limits and the excluded key move to the shard's numbering */
        size_t limit = nw_mask_row_limit(mask, b, i, offset + n);
        row.limit = limit > offset ? limit - offset : 0;
        row.excluded = row.excluded != SIZE_MAX && row.excluded >= offset
                           ? row.excluded - offset
                           : SIZE_MAX;
    }
    return row;
}

/* Whether key j < limit is masked by leave-one-out or the keep bytes. */
static inline int nw_mask_row_drops(const nw_mask_row *row, size_t j) {
    return j == row->excluded || (row->keep != NULL && row->keep[j] == 0);
}

#endif /* NWATTN_MASK_H */
