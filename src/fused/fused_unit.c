/* One unit of the fused path: a block of query rows of one item against all its keys, tile by
 * tile, with the online softmax. Per row it keeps the running maximum M of the masked scores,
 * the running sum L = sum_j exp(s_j - M) (in double) and the accumulator A = sum_j
 * exp(s_j - M) v_j (in the output rows, or the state's). A tile with a larger maximum M' first
 * rescales L and A by exp(M - M'). At the end O = A / L and lse = M + log L, a single division
 * per row; a row without a live key has L = 0 and gets zeros and -INFINITY. */
#include <math.h>
#include <string.h>

#include "blas/blas_distance.h"
#include "blas/blas_kernels.h"
#include "fused_kernels.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* The unit's place in the problem and its scratch, carved as nw_fused_plan_init sized it. */
typedef struct unit {
    const nw_pool_args *a;
    size_t b, h, i0, rows, bn;
    const float *q, *k, *v;
    float *acc;                   /* rows × dv, pitch a->ldo */
    float *s;                     /* rows × bn scores, then exponentials */
    nw_mask_row *mask_rows;       /* one per row */
    float *max;
    double *sum;
    float *qp, *qnorm, *kp, *knorm, *centre, *inv_h; /* distance scores only */
} unit;

static unsigned char *take(unsigned char **cursor, size_t count, size_t elem) {
    unsigned char *piece = *cursor;
    *cursor += nw_round_up(count * elem);
    return piece;
}

static int is_distance(const nw_score *score) {
    return score->kind == NWATTN_SCORE_GAUSSIAN || score->kind == NWATTN_SCORE_LAPLACE;
}

static void unit_init(unit *u, const nw_fused_plan *plan, size_t index, size_t worker) {
    const nw_pool_args *a = plan->a;
    const size_t item = index / plan->blocks, block = index % plan->blocks;
    u->a = a;
    u->b = item / a->heads;
    u->h = item % a->heads;
    u->i0 = block * plan->bm;
    u->rows = min_size(plan->bm, a->m - u->i0);
    u->bn = plan->bn;
    u->q = NW_ITEM(a, q, u->b, u->h) + u->i0 * a->ldq;
    u->k = NW_ITEM(a, k, u->b, u->h);
    u->v = NW_ITEM(a, v, u->b, u->h);
    u->acc = NW_ITEM(a, o, u->b, u->h) + u->i0 * a->ldo;

    const size_t bm = plan->bm, bn = plan->bn, d = a->d;
    unsigned char *cursor = plan->scratch + worker * plan->unit_bytes;
    u->s = (float *)(void *)take(&cursor, bm * bn, sizeof(float));
    u->mask_rows = (nw_mask_row *)(void *)take(&cursor, bm, sizeof(nw_mask_row));
    u->max = (float *)(void *)take(&cursor, bm, sizeof(float));
    u->sum = (double *)(void *)take(&cursor, bm, sizeof(double));
    if (is_distance(&a->score)) {
        u->qp = (float *)(void *)take(&cursor, bm * d, sizeof(float));
        u->qnorm = (float *)(void *)take(&cursor, bm, sizeof(float));
        u->kp = (float *)(void *)take(&cursor, bn * d, sizeof(float));
        u->knorm = (float *)(void *)take(&cursor, bn, sizeof(float));
        u->centre = (float *)(void *)take(&cursor, d, 2 * sizeof(float));
        u->inv_h = u->centre + d;
    }
}

/* Scores of the unit's rows against keys j0 .. j0+cols-1 into s (pitch lds). */
static void score_tile(const unit *u, size_t j0, size_t cols, float *s, size_t lds) {
    const nw_pool_args *a = u->a;
    const float *k = u->k + j0 * a->ldk;
    switch ((int)a->score.kind) {
    case NWATTN_SCORE_DOT:
        nw_blas_sgemm(1, u->rows, cols, a->d, a->score.scale, u->q, a->ldq, k, a->ldk, 0.0f, s,
                      lds);
        return;
    case NW_SCORE_ZERO:
        for (size_t r = 0; r < u->rows; r++)
            memset(s + r * lds, 0, cols * sizeof(float));
        return;
    default:
        if (a->d == 1) { /* as nw_blas_scores: directly */
            nw_distance_scores_1d(a->score.kind, u->rows, cols, u->q, a->ldq, k, a->ldk,
                                  u->inv_h[0], s, lds);
            return;
        }
        nw_rescale_rows(cols, a->d, k, a->ldk, u->centre, u->inv_h, u->kp, u->knorm);
        nw_blas_sgemm(1, u->rows, cols, a->d, -2.0f, u->qp, a->d, u->kp, a->d, 0.0f, s, lds);
        nw_distance_scores(a->score.kind, u->rows, cols, u->qnorm, u->knorm, s, lds);
    }
}

/* Replaces a row's scores of keys j0 .. j0+cols-1 by their masked values (-INFINITY where
 * masked, the additive mask added) and returns their maximum (-INFINITY if none is live; NaN
 * never wins a comparison, it propagates through the exponentials instead). */
static float mask_row(const nw_mask_row *row, size_t j0, size_t cols, float *s) {
    float max = -INFINITY;
    const int plain = row->keep == NULL && row->additive == NULL && j0 + cols <= row->limit &&
                      (row->excluded < j0 || row->excluded >= j0 + cols);
    if (plain) {
        for (size_t j = 0; j < cols; j++)
            max = s[j] > max ? s[j] : max;
        return max;
    }
    for (size_t j = 0; j < cols; j++) {
        size_t key = j0 + j;
        float x = key >= row->limit || nw_mask_row_drops(row, key)
                      ? -INFINITY
                      : s[j] + (row->additive ? row->additive[key] : 0.0f);
        s[j] = x;
        max = x > max ? x : max;
    }
    return max;
}

/* One row's online-softmax step for a tile: s becomes exp(s - M'), L and M are updated, and
 * the factor the row's accumulator must be multiplied by is returned. Masked keys hold
 * -INFINITY, whose exponential is exactly 0. The tile's sum goes into eight float partial
 * sums (no serial dependency chain; at most 256 terms each tile), then into L in double. */
static float update_row(float *s, size_t cols, float tile_max, float *max, double *sum) {
    const float old = *max;
    const float new_max = tile_max > old ? tile_max : old;
    if (new_max == -INFINITY) { /* nothing live yet: masked keys give 0, NaN stays NaN */
        double tile_sum = 0.0;
        for (size_t j = 0; j < cols; j++) {
            s[j] = s[j] == -INFINITY ? 0.0f : s[j];
            tile_sum += (double)s[j];
        }
        *sum += tile_sum;
        return 1.0f;
    }
    float part[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    size_t j = 0;
    for (; j + 8 <= cols; j += 8)
        for (size_t l = 0; l < 8; l++) {
            float e = expf(s[j + l] - new_max);
            s[j + l] = e;
            part[l] += e;
        }
    for (; j < cols; j++) {
        s[j] = expf(s[j] - new_max);
        part[0] += s[j];
    }
    double tile_sum = 0.0;
    for (size_t l = 0; l < 8; l++)
        tile_sum += (double)part[l];
    const float alpha = old == new_max ? 1.0f : expf(old - new_max); /* old = -inf: 0 */
    *sum = *sum * (double)alpha + tile_sum;
    *max = new_max;
    return alpha;
}

static void scale_row(float *x, size_t count, float factor) {
    for (size_t j = 0; j < count; j++)
        x[j] *= factor;
}

/* Keys at or beyond the largest row limit are masked for every row of the unit. */
static size_t live_keys(const unit *u) {
    size_t limit = 0;
    for (size_t r = 0; r < u->rows; r++)
        limit = u->mask_rows[r].limit > limit ? u->mask_rows[r].limit : limit;
    return limit;
}

/* Second pass, when the caller wants the weights: w = exp(masked s - lse), tile by tile. */
static void write_weights(const unit *u, const float *lse, size_t keys) {
    const nw_pool_args *a = u->a;
    float *w = NW_ITEM(a, w, u->b, u->h) + u->i0 * a->ldw;
    for (size_t j0 = 0; j0 < a->n; j0 += u->bn) {
        size_t cols = min_size(u->bn, a->n - j0);
        if (j0 < keys)
            score_tile(u, j0, cols, w + j0, a->ldw);
        for (size_t r = 0; r < u->rows; r++) {
            float *row = w + r * a->ldw + j0;
            if (j0 >= keys || lse[r] == -INFINITY) {
                memset(row, 0, cols * sizeof(float));
                continue;
            }
            mask_row(&u->mask_rows[r], j0, cols, row);
            for (size_t j = 0; j < cols; j++)
                row[j] = row[j] == -INFINITY ? 0.0f : expf(row[j] - lse[r]);
        }
    }
}

/* O = A / L and lse = M + log L; a row with L = 0 had no live key. */
static void finish_rows(const unit *u, float *lse) {
    const nw_pool_args *a = u->a;
    for (size_t r = 0; r < u->rows; r++) {
        float *acc = u->acc + r * a->ldo;
        double l = u->sum[r];
        if (l == 0.0) {
            memset(acc, 0, a->dv * sizeof(float));
            lse[r] = -INFINITY;
            continue;
        }
        scale_row(acc, a->dv, (float)(1.0 / l));
        lse[r] = (float)((double)u->max[r] + log(l));
    }
}

void nw_fused_unit(const nw_fused_plan *plan, size_t index, size_t worker) {
    unit u;
    unit_init(&u, plan, index, worker);
    const nw_pool_args *a = u.a;
    for (size_t r = 0; r < u.rows; r++) {
        u.mask_rows[r] = nw_mask_row_get(&a->mask, u.b, u.i0 + r, a->n);
        u.max[r] = -INFINITY;
        u.sum[r] = 0.0;
        memset(u.acc + r * a->ldo, 0, a->dv * sizeof(float));
    }
    const size_t keys = live_keys(&u);
    if (is_distance(&a->score) && keys > 0) {
        nw_inverse_bandwidths(&a->score, a->d, u.inv_h);
        nw_mean_key(a->n, a->d, u.k, a->ldk, u.centre); /* all keys: one centre per item */
        nw_rescale_rows(u.rows, a->d, u.q, a->ldq, u.centre, u.inv_h, u.qp, u.qnorm);
    }

    for (size_t j0 = 0; j0 < keys; j0 += u.bn) {
        const size_t cols = min_size(u.bn, keys - j0);
        score_tile(&u, j0, cols, u.s, u.bn);
        for (size_t r = 0; r < u.rows; r++) {
            float *s = u.s + r * u.bn;
            float tile_max = mask_row(&u.mask_rows[r], j0, cols, s);
            float alpha = update_row(s, cols, tile_max, &u.max[r], &u.sum[r]);
            if (alpha != 1.0f)
                scale_row(u.acc + r * a->ldo, a->dv, alpha);
        }
        nw_blas_sgemm(0, u.rows, a->dv, cols, 1.0f, u.s, u.bn, u.v + j0 * a->ldv, a->ldv, 1.0f,
                      u.acc, a->ldo);
    }

    if (plan->partial) {
        const size_t at = u.b * a->stride_stats + u.h * a->hstride_stats + u.i0;
        float *max = a->state_max + at, *sum = a->state_sum + at;
        for (size_t r = 0; r < u.rows; r++) {
            max[r] = u.max[r];
            sum[r] = (float)u.sum[r];
        }
        return;
    }
    /* lse goes to the caller's array, or to the unit's max slots, which are no longer needed
     * once read: finish_rows reads max[r] before writing lse[r]. */
    float *lse = a->lse ? NW_ITEM(a, lse, u.b, u.h) + u.i0 : u.max;
    finish_rows(&u, lse);
    if (a->w != NULL)
        write_weights(&u, lse, keys);
}
