/* One unit of the fused path: a block of query rows of one item against all its keys, tile by
 * tile, with the online softmax. Per row it keeps the running maximum M of the masked scores
 * and the running sum L = sum_j exp(s_j - M) (both in double) and the accumulator A = sum_j
 * exp(s_j - M) v_j (in the output rows, or the state's). A tile with a larger maximum M' first
 * rescales L and A by exp(M - M'). At the end O = A / L and lse = M + log L, a single division
 * per row; a row without a live key has L = 0 and gets zeros and -INFINITY.
 *
 * The rows follow the rules of docs/numerics.md (range, non-finite values), like the unfused
 * kernels: scores beyond the float range travel as float times a power of two (`scale`, as
 * the BLAS scores do), NaN or Inf in the data make the unit evaluate its scores by the
 * reference formulas in double (`exact`), and score + additive is formed in double. Rows that
 * need none of this (the common case) take the float fast path. A row that meets a live +inf
 * switches to the limit: M = +inf, every +inf key weighs 1, L counts them. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "blas/blas_distance.h"
#include "blas/blas_kernels.h"
#include "fused_kernels.h"
#include "ref/ref_kernels.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* The unit's place in the problem and its scratch, carved as nw_fused_plan_init sized it. */
typedef struct unit {
    const nw_pool_args *a;
    size_t b, h, i0, rows, bn;
    const float *q, *k, *v;
    float *acc;             /* rows × dv, pitch a->ldo */
    float *s;               /* rows × bn scores, then exponentials */
    double *sd;             /* rows × bn scores in double (exact mode) */
    nw_mask_row *mask_rows; /* one per row */
    double *max, *sum;
    float *qp, *qnorm, *kp, *knorm; /* rescaled rows (distance scores, rescaled dot) */
    const nw_fused_item *item;      /* the item's key statistics */
    const double *centre, *inv_h;   /* distance scores only: the item's mean key, 1/h */
    int exact;     /* scores from the reference formulas (NaN or Inf in the data) */
    int rescaled;  /* dot scores on rescaled copies */
    int exponent;  /* distance coordinates times 2^-exponent; for dot the keys' exponent */
    float dot_alpha; /* sgemm's alpha for rescaled dot scores */
    double scale;  /* score = scale · s */
} unit;

static unsigned char *take(unsigned char **cursor, size_t count, size_t elem) {
    unsigned char *piece = *cursor;
    *cursor += nw_round_up(count * elem);
    return piece;
}

static void unit_init(unit *u, const nw_fused_plan *plan, size_t index, size_t worker) {
    const nw_pool_args *a = plan->a;
    const size_t item = index / plan->blocks, block = index % plan->blocks;
    memset(u, 0, sizeof *u);
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
    u->scale = 1.0;
    u->item = &plan->item[item];
    u->centre = plan->centre != NULL ? plan->centre + item * a->d : NULL;
    u->inv_h = plan->inv_h;

    const size_t bm = plan->bm, bn = plan->bn, d = a->d;
    unsigned char *cursor = plan->scratch + worker * plan->unit_bytes;
    u->s = (float *)(void *)take(&cursor, bm * bn, sizeof(float));
    u->sd = (double *)(void *)take(&cursor, bm * bn, sizeof(double));
    u->mask_rows = (nw_mask_row *)(void *)take(&cursor, bm, sizeof(nw_mask_row));
    u->max = (double *)(void *)take(&cursor, bm, sizeof(double));
    u->sum = (double *)(void *)take(&cursor, bm, sizeof(double));
    if (a->score.kind != NW_SCORE_ZERO) {
        u->qp = (float *)(void *)take(&cursor, bm * d, sizeof(float));
        u->qnorm = (float *)(void *)take(&cursor, bm, sizeof(float));
        u->kp = (float *)(void *)take(&cursor, bn * d, sizeof(float));
        u->knorm = (float *)(void *)take(&cursor, bn, sizeof(float));
    }
}

/* dst (rows×cols, pitch cols) = src · 2^-exponent. */
static void copy_scaled(size_t rows, size_t cols, const float *src, size_t ld, int exponent,
                        float *dst) {
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            dst[i * cols + j] = (float)ldexp((double)src[i * ld + j], -exponent);
}

void nw_fused_prepare_item(const nw_fused_plan *plan, size_t index) {
    const nw_pool_args *a = plan->a;
    nw_fused_item *item = &plan->item[index];
    const float *k = NW_ITEM(a, k, index / a->heads, index % a->heads);
    item->max_k = item->max_rk = 0.0;
    if (a->score.kind == NW_SCORE_ZERO || a->n == 0)
        return;
    item->max_k = nw_max_abs(a->n, a->d, k, a->ldk);
    if (plan->centre != NULL && item->max_k >= 0.0) {
        double *centre = plan->centre + index * a->d;
        nw_mean_key(a->n, a->d, k, a->ldk, centre);
        item->max_rk = nw_max_rescaled(a->n, a->d, k, a->ldk, centre, plan->inv_h);
    }
}

/* Chooses how the unit's scores are formed (see the top of the file) from its queries and the
 * item's key statistics, so that every tile of the unit uses the same scale. */
static void choose_scores(unit *u) {
    const nw_pool_args *a = u->a;
    const size_t d = a->d;
    if (a->score.kind == NW_SCORE_ZERO)
        return;
    const double max_q = nw_max_abs(u->rows, d, u->q, a->ldq);
    const double max_k = u->item->max_k;
    if (max_q < 0.0 || max_k < 0.0) {
        u->exact = 1;
        return;
    }
    if (a->score.kind == NWATTN_SCORE_DOT) {
        if (nw_dot_in_range(max_q, max_k, d, a->score.scale))
            return;
        int eq, es;
        (void)frexp(max_q, &eq);
        (void)frexp(max_k, &u->exponent);
        u->dot_alpha = (float)frexp((double)a->score.scale, &es);
        u->rescaled = 1;
        u->scale = ldexp(1.0, eq + u->exponent + es);
        copy_scaled(u->rows, d, u->q, a->ldq, eq, u->qp);
        return;
    }
    u->exponent = nw_distance_exponent(
        fmax(u->item->max_rk, nw_max_rescaled(u->rows, d, u->q, a->ldq, u->centre, u->inv_h)));
    u->scale = nw_distance_scale(a->score.kind, u->exponent);
    nw_rescale_rows(u->rows, d, u->q, a->ldq, u->centre, u->inv_h, u->exponent, u->qp,
                    u->qnorm);
}

/* With d = 1 the distance scores of a row are computed just before the row is used (direct_row),
 * while it is in cache; score_tile only rescales the keys then, unless rows_too says so. */
static int is_direct(const unit *u) {
    return !u->exact && u->a->d == 1 &&
           (u->a->score.kind == NWATTN_SCORE_GAUSSIAN || u->a->score.kind == NWATTN_SCORE_LAPLACE);
}

/* Row r's direct 1-D scores (q' - k', as nw_distance_scores_1d rounds them) into s. */
static void direct_row(const unit *u, size_t r, size_t cols, float *s) {
    const int gaussian = u->a->score.kind == NWATTN_SCORE_GAUSSIAN;
    u->a->simd->dist1(gaussian, u->qp[r], 1.0f, u->kp, cols, s);
}

/* Scores of the unit's rows against keys j0 .. j0+cols-1 into s (pitch lds), as `scale`
 * multiples; in exact mode into sd (pitch bn) in double instead. */
static void score_tile(const unit *u, size_t j0, size_t cols, float *s, size_t lds,
                       int rows_too) {
    const nw_pool_args *a = u->a;
    const float *k = u->k + j0 * a->ldk;
    if (u->exact) {
        for (size_t r = 0; r < u->rows; r++)
            for (size_t j = 0; j < cols; j++)
                u->sd[r * u->bn + j] =
                    nw_ref_score(&a->score, a->d, u->q + r * a->ldq, k + j * a->ldk);
        return;
    }
    switch ((int)a->score.kind) {
    case NWATTN_SCORE_DOT:
        if (u->rescaled) {
            copy_scaled(cols, a->d, k, a->ldk, u->exponent, u->kp);
            nw_blas_sgemm(1, u->rows, cols, a->d, u->dot_alpha, u->qp, a->d, u->kp, a->d, 0.0f,
                          s, lds);
        } else {
            /* Q·(K^T) on a transposed copy of the key tile: OpenBLAS runs small untransposed
             * products without packing them (about a third faster here than Q·K^T), and the
             * copy is one pass over a tile of keys that is in cache anyway. */
            for (size_t j = 0; j < cols; j++)
                for (size_t p = 0; p < a->d; p++)
                    u->kp[p * u->bn + j] = k[j * a->ldk + p];
            nw_blas_sgemm(0, u->rows, cols, a->d, a->score.scale, u->q, a->ldq, u->kp, u->bn,
                          0.0f, s, lds);
        }
        return;
    case NW_SCORE_ZERO:
        for (size_t r = 0; r < u->rows; r++)
            memset(s + r * lds, 0, cols * sizeof(float));
        return;
    default:
        nw_rescale_rows(cols, a->d, k, a->ldk, u->centre, u->inv_h, u->exponent, u->kp,
                        u->knorm);
        if (a->d == 1) { /* as nw_blas_scores: directly, the same roundings (simd.h) */
            for (size_t r = 0; rows_too && r < u->rows; r++)
                direct_row(u, r, cols, s + r * lds);
            return;
        }
        nw_blas_sgemm(1, u->rows, cols, a->d, -2.0f, u->qp, a->d, u->kp, a->d, 0.0f, s, lds);
        nw_distance_scores(a->score.kind, u->rows, cols, u->qnorm, u->knorm, s, lds);
    }
}

/* ---- The float fast path ---------------------------------------------------------------- */
/* Whether row r's tile can take the float path: plain float scores, no additive mask, and a
 * row not in the +inf limit. */
static int fast_row(const unit *u, size_t r) {
    return !u->exact && u->scale == 1.0 && u->mask_rows[r].additive == NULL &&
           u->max[r] != INFINITY;
}

/* Sets the masked scores of keys j0 .. j0+cols-1 to -INFINITY and returns the maximum
 * (-INFINITY if none is live; NaN never wins a comparison, it propagates through the
 * exponentials instead). */
static float mask_row(const nw_simd *simd, const nw_mask_row *row, size_t j0, size_t cols,
                      float *s) {
    float max = -INFINITY;
    const int plain = row->keep == NULL && j0 + cols <= row->limit &&
                      (row->excluded < j0 || row->excluded >= j0 + cols);
    if (plain) /* +inf wins here, and sends the row to the general path */
        return simd->max(s, cols);
    for (size_t j = 0; j < cols; j++) {
        size_t key = j0 + j;
        if (key >= row->limit || nw_mask_row_drops(row, key))
            s[j] = -INFINITY;
        max = s[j] > max ? s[j] : max;
    }
    return max;
}

/* One row's online-softmax step for a tile (finite or -inf tile maximum): s becomes
 * exp(s - M'), L and M are updated, and the factor the row's accumulator must be multiplied by
 * is returned. Masked keys hold -INFINITY, whose exponential is exactly 0. The exponentials
 * come from the context's vector kernels (simd.h), their tile sum in float lanes (at most 256
 * terms each tile), then into L in double. */
static float update_row(const nw_simd *simd, float *s, size_t cols, float tile_max, double *max,
                        double *sum) {
    const float old = (float)*max; /* a float value or -inf on this path */
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
    const double tile_sum = (double)simd->exp_sumf(s, cols, new_max);
    const float alpha = old == new_max ? 1.0f : expf(old - new_max); /* old = -inf: 0 */
    *sum = *sum * (double)alpha + tile_sum;
    *max = (double)new_max;
    return alpha;
}

/* ---- The general path, in double ------------------------------------------------------------ */
/* The value of key j0 + j for row r (nw_row_value's rule on the unit's scores). */
static double tile_value(const unit *u, size_t r, size_t j0, size_t j, const float *s) {
    const nw_mask_row *row = &u->mask_rows[r];
    const size_t key = j0 + j;
    if (key >= row->limit || nw_mask_row_drops(row, key))
        return -INFINITY;
    const double add = row->additive != NULL ? (double)row->additive[key] : 0.0;
    const double x = u->exact ? u->sd[r * u->bn + j] : (double)s[j];
    if (add == -INFINITY || x == -INFINITY)
        return -INFINITY;
    return (u->exact ? x : u->scale * x) + add;
}

/* The general online-softmax step for row r's tile s (the row of u->s): like update_row, with
 * values in double and the +inf limit. */
static float update_row_general(const unit *u, size_t r, size_t j0, size_t cols, float *s) {
    double tile_max = -INFINITY;
    size_t tile_inf = 0;
    for (size_t j = 0; j < cols; j++) {
        const double x = tile_value(u, r, j0, j, s);
        if (x == INFINITY)
            tile_inf++;
        else if (x > tile_max) /* NaN and -inf never win */
            tile_max = x;
    }
    double *max = &u->max[r], *sum = &u->sum[r];
    const double old = *max;
    double tile_sum = 0.0;
    if (tile_inf > 0 || old == INFINITY) { /* the limit: the +inf keys share the weight */
        for (size_t j = 0; j < cols; j++) {
            const double x = tile_value(u, r, j0, j, s);
            s[j] = x == INFINITY ? 1.0f : isnan(x) ? NAN : 0.0f;
            tile_sum += (double)s[j];
        }
        const float alpha = old == INFINITY ? 1.0f : 0.0f; /* finite keys drop to weight 0 */
        *sum = *sum * (double)alpha + tile_sum;
        *max = INFINITY;
        return alpha;
    }
    const double new_max = tile_max > old ? tile_max : old;
    for (size_t j = 0; j < cols; j++) {
        const double x = tile_value(u, r, j0, j, s);
        /* nothing live yet (new_max = -inf): masked keys give 0, NaN stays NaN */
        s[j] = x == -INFINITY ? 0.0f : new_max == -INFINITY ? (float)x : expf((float)(x - new_max));
        tile_sum += (double)s[j];
    }
    if (new_max == -INFINITY) {
        *sum += tile_sum;
        return 1.0f;
    }
    const double alpha = old == new_max ? 1.0 : exp(old - new_max); /* old = -inf: 0 */
    *sum = *sum * alpha + tile_sum;
    *max = new_max;
    return (float)alpha;
}

static void scale_row(float *x, size_t count, float factor) {
    for (size_t j = 0; j < count; j++)
        x[j] *= factor;
}

/* The float path's step for a row with one contiguous value per key: exponentials, their sum
 * and the weighted sum in one pass (simd.h exp_sum_dot), nothing stored. Returns 0 (and does
 * nothing but mask s) when the row needs update_row or the general path instead: nothing live
 * yet, or a live +inf. */
static int dot_row(const unit *u, size_t r, size_t j0, size_t cols, float *s) {
    const nw_pool_args *a = u->a;
    const float tile_max = mask_row(a->simd, &u->mask_rows[r], j0, cols, s);
    const float old = (float)u->max[r];
    const float new_max = tile_max > old ? tile_max : old;
    if (tile_max == INFINITY || new_max == -INFINITY)
        return 0;
    float dot;
    const float tile_sum = a->simd->exp_sum_dot(s, cols, new_max, u->v + j0, &dot);
    const float alpha = old == new_max ? 1.0f : expf(old - new_max); /* old = -inf: 0 */
    u->sum[r] = u->sum[r] * (double)alpha + (double)tile_sum;
    u->max[r] = (double)new_max;
    float *acc = u->acc + r * a->ldo;
    acc[0] = acc[0] * alpha + dot;
    return 1;
}

/* Keys at or beyond the largest row limit are masked for every row of the unit. */
static size_t live_keys(const unit *u) {
    size_t limit = 0;
    for (size_t r = 0; r < u->rows; r++)
        limit = u->mask_rows[r].limit > limit ? u->mask_rows[r].limit : limit;
    return limit;
}

/* Second pass, when the caller wants the weights: w = exp(value - M) / L tile by tile, or the
 * rules' special rows (see nw_softmax_special_row). */
static void write_weights(unit *u, size_t keys) {
    const nw_pool_args *a = u->a;
    float *w = NW_ITEM(a, w, u->b, u->h) + u->i0 * a->ldw;
    for (size_t j0 = 0; j0 < a->n; j0 += u->bn) {
        size_t cols = min_size(u->bn, a->n - j0);
        if (j0 < keys)
            score_tile(u, j0, cols, w + j0, a->ldw, 1);
        for (size_t r = 0; r < u->rows; r++) {
            float *row = w + r * a->ldw + j0;
            const double m = u->max[r], l = u->sum[r];
            if (j0 >= keys || l == 0.0) {
                memset(row, 0, cols * sizeof(float));
                continue;
            }
            const float inv = (float)(1.0 / l);
            for (size_t j = 0; j < cols; j++) {
                const double x = tile_value(u, r, j0, j, row);
                float e;
                if (x == -INFINITY)
                    e = 0.0f;
                else if (isnan(l) || isnan(x))
                    e = NAN;
                else if (m == INFINITY)
                    e = x == INFINITY ? inv : 0.0f;
                else
                    e = expf((float)(x - m)) * inv;
                row[j] = e;
            }
        }
    }
}

/* O = A / L and lse = M + log L; a row with L = 0 had no live key. */
static void finish_rows(const unit *u, float *lse) {
    const nw_pool_args *a = u->a;
    for (size_t r = 0; r < u->rows; r++) {
        float *acc = u->acc + r * a->ldo;
        const double l = u->sum[r];
        if (l == 0.0) {
            memset(acc, 0, a->dv * sizeof(float));
            if (lse != NULL)
                lse[r] = -INFINITY;
            continue;
        }
        scale_row(acc, a->dv, (float)(1.0 / l));
        if (lse != NULL)
            lse[r] = (float)(u->max[r] + log(l));
    }
}

/* The state of each row: the shift is stored as a float, so L and A are brought to the stored
 * shift; a row whose shift lies beyond the float range cannot be held and becomes NaN, as does
 * a row with a live NaN (nwattn.h, partial states). */
static void write_states(const unit *u) {
    const nw_pool_args *a = u->a;
    const size_t at = u->b * a->stride_stats + u->h * a->hstride_stats + u->i0;
    float *max = a->state_max + at, *sum = a->state_sum + at;
    for (size_t r = 0; r < u->rows; r++) {
        float *acc = u->acc + r * a->ldo;
        const double m = u->max[r], l = u->sum[r];
        if (isnan(l) || (isfinite(m) && fabs(m) > FLT_MAX)) {
            max[r] = sum[r] = NAN;
            for (size_t c = 0; c < a->dv; c++)
                acc[c] = NAN;
            continue;
        }
        const float stored = (float)m;
        if (isfinite(m) && (double)stored != m) {
            const double factor = exp(m - (double)stored);
            scale_row(acc, a->dv, (float)factor);
            max[r] = stored;
            sum[r] = (float)(l * factor);
        } else {
            max[r] = stored;
            sum[r] = (float)l;
        }
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
    if (keys > 0)
        choose_scores(&u);

    /* One value per key in a contiguous column: P·V is a dot product per row, done while the
     * row is in cache (a one-column sgemm is several times slower than that). */
    const int dot_values = a->dv == 1 && a->ldv == 1;
    const int direct = is_direct(&u);
    for (size_t j0 = 0; j0 < keys; j0 += u.bn) {
        const size_t cols = min_size(u.bn, keys - j0);
        score_tile(&u, j0, cols, u.s, u.bn, 0);
        for (size_t r = 0; r < u.rows; r++) {
            float *s = u.s + r * u.bn;
            float alpha;
            if (direct)
                direct_row(&u, r, cols, s);
            if (dot_values && fast_row(&u, r) && dot_row(&u, r, j0, cols, s))
                continue;
            if (fast_row(&u, r)) {
                const float tile_max = mask_row(a->simd, &u.mask_rows[r], j0, cols, s);
                alpha = tile_max == INFINITY
                            ? update_row_general(&u, r, j0, cols, s)
                            : update_row(a->simd, s, cols, tile_max, &u.max[r], &u.sum[r]);
            } else {
                alpha = update_row_general(&u, r, j0, cols, s);
            }
            float *acc = u.acc + r * a->ldo;
            if (dot_values)
                acc[0] = acc[0] * alpha + a->simd->dot(s, u.v + j0, cols);
            else if (alpha != 1.0f)
                scale_row(acc, a->dv, alpha);
        }
        if (!dot_values)
            nw_blas_sgemm(0, u.rows, a->dv, cols, 1.0f, u.s, u.bn, u.v + j0 * a->ldv, a->ldv,
                          1.0f, u.acc, a->ldo);
    }

    if (plan->partial) {
        write_states(&u);
        return;
    }
    finish_rows(&u, a->lse ? NW_ITEM(a, lse, u.b, u.h) + u.i0 : NULL);
    if (a->w != NULL)
        write_weights(&u, keys);
}
