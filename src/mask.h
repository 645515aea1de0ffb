/* Per-row mask evaluation shared by the reference and BLAS softmax kernels, so that both
 * backends agree exactly on which keys are masked. */
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

/* ---- One row's softmax ----------------------------------------------------------------- */
/* The value key j brings to the row's softmax, in double: -INFINITY when the key is masked (by
 * position, the keep bytes, an additive -inf or a score of -inf: a masked key's other inputs
 * are never looked at), else scale·s + additive, which may be +inf or NaN. */
static inline double nw_row_value(const nw_mask_row *rm, double scale, const float *srow,
                                  size_t j) {
    if (j >= rm->limit || nw_mask_row_drops(rm, j))
        return -INFINITY;
    const double add = rm->additive != NULL ? (double)rm->additive[j] : 0.0;
    const double s = (double)srow[j];
    if (add == -INFINITY || s == -INFINITY)
        return -INFINITY;
    return scale * s + add;
}

/* What a row holds: live (unmasked) keys, how many are +inf, whether one is NaN, and the
 * largest finite value. */
typedef struct nw_row_scan {
    size_t live, pos_inf;
    int nan;
    double max;
} nw_row_scan;

static inline nw_row_scan nw_row_scan_of(const nw_mask_row *rm, double scale,
                                         const float *srow) {
    nw_row_scan rs = {0, 0, 0, -INFINITY};
    for (size_t j = 0; j < rm->limit; j++) {
        const double v = nw_row_value(rm, scale, srow, j);
        if (v == -INFINITY)
            continue;
        rs.live++;
        if (isnan(v))
            rs.nan = 1;
        else if (v == INFINITY)
            rs.pos_inf++;
        else if (v > rs.max)
            rs.max = v;
    }
    return rs;
}

/* Writes the rows whose weights need no exponentials and returns 1; returns 0 for an ordinary
 * row (some live key, all live values finite). The rules (documented in nwattn.h):
 *   no live key         -> all weights 0, lse -inf;
 *   a live NaN          -> live weights NaN, masked weights 0, lse NaN;
 *   c live +inf values  -> weight 1/c on each of them, 0 elsewhere, lse +inf (the limit).
 * w may be s itself: each w[j] is written after s[j] was read. */
static inline int nw_softmax_special_row(const nw_mask_row *rm, const nw_row_scan *rs,
                                         double scale, size_t n, const float *srow,
                                         float *wrow, float *lse) {
    float lse_value;
    if (rs->live == 0) {
        for (size_t j = 0; j < n; j++)
            wrow[j] = 0.0f;
        lse_value = -INFINITY;
    } else if (rs->nan) {
        for (size_t j = 0; j < n; j++)
            wrow[j] = nw_row_value(rm, scale, srow, j) == -INFINITY ? 0.0f : NAN;
        lse_value = NAN;
    } else if (rs->pos_inf > 0) {
        const float share = (float)(1.0 / (double)rs->pos_inf);
        for (size_t j = 0; j < n; j++)
            wrow[j] = nw_row_value(rm, scale, srow, j) == INFINITY ? share : 0.0f;
        lse_value = INFINITY;
    } else {
        return 0;
    }
    if (lse != NULL)
        *lse = lse_value;
    return 1;
}

#endif /* NWATTN_MASK_H */
