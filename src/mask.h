/* Per-row mask evaluation shared by every path, so that all backends agree exactly on which keys
 * are masked and what value a live key brings to its row (row_state.h takes it from there). */
#ifndef NWATTN_MASK_H
#define NWATTN_MASK_H

#include <math.h>

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

/* The value key j brings to the row's softmax, in double: -INFINITY when the key is masked (by
 * position, the keep bytes, an additive -inf or a score of -inf: a masked key's other inputs
 * are never looked at), else scale·s + additive, which may be +inf or NaN (row_state.h). */
static inline double nw_mask_value(const nw_mask_row *rm, double scale, const float *srow,
                                   size_t j) {
    if (j >= rm->limit || nw_mask_row_drops(rm, j))
        return -INFINITY;
    const double add = rm->additive != NULL ? (double)rm->additive[j] : 0.0;
    const double s = (double)srow[j];
    if (add == -INFINITY || s == -INFINITY)
        return -INFINITY;
    return scale * s + add;
}

/* The same for a score already in double (the reference path). */
static inline double nw_mask_value_d(const nw_mask_row *rm, double s, size_t j) {
    if (j >= rm->limit || nw_mask_row_drops(rm, j))
        return -INFINITY;
    const double add = rm->additive != NULL ? (double)rm->additive[j] : 0.0;
    if (add == -INFINITY || s == -INFINITY)
        return -INFINITY;
    return s + add;
}

#endif /* NWATTN_MASK_H */
