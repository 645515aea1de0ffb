/* The BLAS tile provider of the tiled driver (frame/tiled.h), the fused path: one unit is a
 * block of query rows of one item against all its keys, tile by tile (each key tile prepared
 * once, then scored, softmaxed and multiplied group by group of bp rows, the product size the
 * BLAS runs best: frame/tiles.h), with the online softmax
 * of core/row_state.h: per row the running shift M and sum L (in
 * double) and the accumulator A = sum_j exp(s_j - M) v_j (in the output rows, or the state's).
 * At the end O = A / L and lse = M + log L, a single division per row.
 *
 * Scores come from the kind's descriptor (score/), the same block the unfused BLAS path uses.
 * Per row, as there: a row whose query the fast form cannot hold, or that faces non-finite keys,
 * is exact (scores by the reference formulas in double); the others take float scores times
 * the item's power of two (`scale`, 1 unless the keys need it). Rows with plain float values
 * and no additive mask take the float fast path; the rest form score + additive in double. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "blas_kernels.h"
#include "frame/tiled.h"
#include "frame/tiles.h"
#include "ref/ref_kernels.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* The unit's place in the problem and its scratch, carved as unit_bytes sized it. */
typedef struct unit {
    const nw_pool_args *a;
    size_t b, h, i0, rows, bn;
    size_t bp, row_floats;  /* rows per product group; prepared floats per group */
    size_t bc, key_floats;  /* keys per product chunk; prepared floats per chunk */
    size_t prepared;        /* keys of the current tile in kp */
    size_t group_keys[NW_TILE_MAX_GROUPS]; /* each group's live keys (live_keys of its rows) */
    const float *q, *k, *v;
    float *acc;             /* rows × dv, pitch a->ldo */
    float *s;               /* rows × bn scores, then exponentials */
    double *sd;             /* rows × bn scores in double (exact rows) */
    nw_mask_row *mask_rows; /* one per row */
    nw_row *row;            /* one softmax row state per query row */
    unsigned char *exact;   /* per row: scores from the reference formulas */
    float *kp, *scratch;    /* the key tile and the query rows as the score prepares them
                             * (group by group, row_floats apart) */
    const nw_keys_info *info; /* the item's keys */
    int any_exact;
    double scale; /* fast scores = scale · s */
} unit;

/* Product groups of a unit of `rows` rows. */
static size_t groups_of(size_t rows, size_t bp) { return (rows + bp - 1) / bp; }

static size_t unit_bytes(const nw_tiled_plan *plan) {
    const nw_pool_args *a = plan->a;
    const nw_score_desc *desc = a->score.desc;
    const size_t bm = plan->bm, bn = plan->bn, group = desc->row_floats(plan->bp, a->d);
    const size_t chunk = desc->prep_floats(plan->bc, a->d);
    size_t total = 0, tile, rows, prep;
    const int ok = chunk != SIZE_MAX && group != SIZE_MAX &&
                   nw_mul(groups_of(bn, plan->bc), chunk, &prep) &&
                   nw_mul(groups_of(bm, plan->bp), group, &rows) && nw_mul(bm, bn, &tile) &&
                   nw_tile_piece(&total, tile, sizeof(float)) &&     /* scores, then P */
                   nw_tile_piece(&total, tile, sizeof(double)) &&    /* exact rows' scores */
                   nw_tile_piece(&total, bm, sizeof(nw_mask_row)) && /* mask rows */
                   nw_tile_piece(&total, bm, sizeof(nw_row)) &&      /* row states */
                   nw_tile_piece(&total, bm, 1) &&                   /* exact flags */
                   nw_tile_piece(&total, prep, sizeof(float)) &&     /* the key tile */
                   nw_tile_piece(&total, rows, sizeof(float));       /* the query rows */
    return ok ? total : SIZE_MAX;
}

static void unit_init(unit *u, const nw_tiled_plan *plan, size_t index, size_t worker) {
    const nw_pool_args *a = plan->a;
    const nw_score_desc *desc = a->score.desc;
    memset(u, 0, sizeof *u);
    u->a = a;
    nw_tile_unit_rows(plan, index, &u->b, &u->h, &u->i0, &u->rows);
    u->bn = plan->bn;
    u->bp = plan->bp;
    u->row_floats = desc->row_floats(plan->bp, a->d);
    u->bc = plan->bc;
    u->key_floats = desc->prep_floats(plan->bc, a->d);
    u->q = NW_ITEM(a, q, u->b, u->h) + u->i0 * a->ldq;
    u->k = NW_ITEM(a, k, u->b, u->h);
    u->v = NW_ITEM(a, v, u->b, u->h);
    u->acc = NW_ITEM(a, o, u->b, u->h) + u->i0 * a->ldo;
    u->info = &plan->item[index / plan->blocks];
    u->scale = desc->scale(&a->score, u->info);

    const size_t bm = plan->bm, bn = plan->bn;
    unsigned char *cursor = plan->scratch + worker * plan->unit_bytes;
    u->s = (float *)(void *)nw_tile_take(&cursor, bm * bn, sizeof(float));
    u->sd = (double *)(void *)nw_tile_take(&cursor, bm * bn, sizeof(double));
    u->mask_rows = (nw_mask_row *)(void *)nw_tile_take(&cursor, bm, sizeof(nw_mask_row));
    u->row = (nw_row *)(void *)nw_tile_take(&cursor, bm, sizeof(nw_row));
    u->exact = nw_tile_take(&cursor, bm, 1);
    u->kp = (float *)(void *)nw_tile_take(&cursor, groups_of(bn, u->bc) * u->key_floats,
                                          sizeof(float));
    u->scratch = (float *)(void *)nw_tile_take(&cursor, groups_of(bm, u->bp) * u->row_floats,
                                               sizeof(float));
}

/* Rows of the group starting at row g0. */
static size_t group_rows(const unit *u, size_t g0) { return min_size(u->bp, u->rows - g0); }
/* The prepared rows of the group starting at row g0 (a multiple of bp). */
static float *group_scratch(const unit *u, size_t g0) {
    return u->scratch + g0 / u->bp * u->row_floats;
}

/* Which rows of the unit are exact (score.h): decided from each row's query and the item's
 * keys alone. */
static void choose_rows(unit *u) {
    const nw_pool_args *a = u->a;
    for (size_t r = 0; r < u->rows; r++) {
        u->exact[r] =
            (unsigned char)nw_score_row_exact(&a->score, a->d, u->q + r * a->ldq, u->info);
        u->any_exact |= u->exact[r];
    }
    if (u->info->finite) /* the rows as the score's block wants them, for every tile */
        for (size_t g0 = 0; g0 < u->rows; g0 += u->bp)
            a->score.desc->prepare_rows(&a->score, u->info, group_rows(u, g0), a->d,
                                        u->q + g0 * a->ldq, a->ldq, group_scratch(u, g0));
}

/* Rows scored one at a time, while in cache (frame/tiled.h). */
static int is_direct(const unit *u) { return nw_tile_rows_direct(u->a); }

/* Row r's fast scores against the prepared key tile (cols keys) into s (direct rows: the
 * prepared rows are the score's parameters, the same for every row). */
static void score_row(const unit *u, size_t r, size_t cols, float *s) {
    const nw_pool_args *a = u->a;
    a->score.desc->block(&a->score, u->info, a->simd, 1, cols, a->d, u->q + r * a->ldq, a->ldq,
                         group_scratch(u, r - r % u->bp), NULL, 0, u->kp, u->prepared, s, cols);
}

/* Keys of the tile's chunk starting at its key c0 (a multiple of bc), prepared. */
static float *chunk_keys(const unit *u, size_t c0) { return u->kp + c0 / u->bc * u->key_floats; }

/* Keys j0 .. j0+cols-1 as the score's block wants them, chunk by chunk, once for all the
 * unit's groups. */
static void prepare_keys(unit *u, size_t j0, size_t cols) {
    const nw_pool_args *a = u->a;
    u->prepared = cols;
    if (u->info->finite)
        for (size_t c0 = 0; c0 < cols; c0 += u->bc)
            a->score.desc->prepare(&a->score, u->info, a->simd, min_size(u->bc, cols - c0),
                                   a->d, u->k + (j0 + c0) * a->ldk, a->ldk, chunk_keys(u, c0));
}

/* Scores of the group of rows from g0 against keys j0 .. j0+cols-1 (of the u->prepared keys
 * from j0): fast rows into s (the group's first row; pitch lds, as `scale` multiples; with
 * is_direct only when rows_too is set), exact rows into sd (pitch bn) in double. */
static void score_group(const unit *u, size_t g0, size_t j0, size_t cols, float *s,
                        size_t lds, int rows_too) {
    const nw_pool_args *a = u->a;
    const nw_score_desc *desc = a->score.desc;
    const float *k = u->k + j0 * a->ldk;
    const size_t rows = group_rows(u, g0);
    if (u->info->finite) {
        if (!is_direct(u))
            for (size_t c0 = 0; c0 < cols; c0 += u->bc)
                desc->block(&a->score, u->info, a->simd, rows, min_size(u->bc, cols - c0), a->d,
                            u->q + g0 * a->ldq, a->ldq, group_scratch(u, g0), k + c0 * a->ldk,
                            a->ldk, chunk_keys(u, c0), min_size(u->bc, u->prepared - c0),
                            s + c0, lds);
        else
            for (size_t r = g0; rows_too && r < g0 + rows; r++)
                if (!u->exact[r])
                    score_row(u, r, cols, s + (r - g0) * lds);
    }
    for (size_t r = g0; u->any_exact && r < g0 + rows; r++)
        if (u->exact[r])
            for (size_t j = 0; j < cols; j++)
                u->sd[r * u->bn + j] =
                    nw_ref_score(&a->score, a->d, u->q + r * a->ldq, k + j * a->ldk);
}

/* ---- The float fast path ---------------------------------------------------------------- */
/* Whether row r's tile can take the float path: plain float scores, no additive mask, and a
 * row not in the +inf limit. */
static int fast_row(const unit *u, size_t r) {
    return !u->exact[r] && u->scale == 1.0 && u->mask_rows[r].additive == NULL &&
           u->row[r].max != INFINITY;
}

/* Whether the mask keeps every key j0 .. j0+cols-1 of the row. */
static int plain_tile(const nw_mask_row *row, size_t j0, size_t cols) {
    return row->keep == NULL && j0 + cols <= row->limit &&
           (row->excluded < j0 || row->excluded >= j0 + cols);
}

/* Sets the masked scores of keys j0 .. j0+cols-1 to -INFINITY and returns the maximum
 * (-INFINITY if none is live; NaN never wins a comparison, it propagates through the
 * exponentials instead). */
static float mask_row(const nw_simd *simd, const nw_mask_row *row, size_t j0, size_t cols,
                      float *s) {
    float max = -INFINITY;
    if (plain_tile(row, j0, cols)) /* +inf wins here, and sends the row to the general path */
        return simd->max(s, cols);
    for (size_t j = 0; j < cols; j++) {
        size_t key = j0 + j;
        if (key >= row->limit || nw_mask_row_drops(row, key))
            s[j] = -INFINITY;
        max = s[j] > max ? s[j] : max;
    }
    return max;
}

/* ---- The general path, in double ------------------------------------------------------------ */
/* The value of key j0 + j for row r (nw_mask_value's rule on the unit's scores). */
static double tile_value(const unit *u, size_t r, size_t j0, size_t j, const float *s) {
    const nw_mask_row *row = &u->mask_rows[r];
    const size_t key = j0 + j;
    if (key >= row->limit || nw_mask_row_drops(row, key))
        return -INFINITY;
    const double add = row->additive != NULL ? (double)row->additive[key] : 0.0;
    const int exact = u->exact[r];
    const double x = exact ? u->sd[r * u->bn + j] : (double)s[j];
    if (add == -INFINITY || x == -INFINITY)
        return -INFINITY;
    return (exact ? x : u->scale * x) + add;
}

/* The general online-softmax step for row r's tile s (the row of u->s): values in double,
 * float factors (core/row_state.h); returns alpha for the row's accumulator. */
static float update_row_general(const unit *u, size_t r, size_t j0, size_t cols, float *s) {
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < cols; j++)
        nw_tile_see(&tile, tile_value(u, r, j0, j, s));
    nw_row *row = &u->row[r];
    const double alpha = nw_row_rescale(row, &tile);
    double tile_sum = 0.0;
    for (size_t j = 0; j < cols; j++) {
        s[j] = nw_row_factorf(row, tile_value(u, r, j0, j, s));
        tile_sum += (double)s[j];
    }
    nw_row_add(row, tile_sum);
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
    nw_row *row = &u->row[r];
    if (tile_max == INFINITY || (tile_max == -INFINITY && row->max == -INFINITY))
        return 0;
    const float alpha = nw_row_rescalef(row, tile_max);
    float dot;
    nw_row_add(row, (double)a->simd->exp_sum_dot(s, cols, (float)row->max, u->v + j0, &dot));
    float *acc = u->acc + r * a->ldo;
    acc[0] = acc[0] * alpha + dot;
    return 1;
}

/* The one-dimensional distance row (score.h dist1: d = 1, direct scores, one contiguous value
 * per key) on a tile the mask keeps whole, whose keys lie within [lo, hi]: one pass of simd.h
 * dist1_exp_dot shifted by the tile's bound on the row's scores (nw_dist1_bound: exact when
 * the query lies outside the keys' range, 0 inside), nothing stored. A bound far above every
 * score would leave the row's sum resting on tiny terms: below 2^-40 the tile is done again
 * with its exact maximum (dist1, through s), so that the dropped terms (simd.h) stay below
 * 2^-84 of the row's largest. Returns 0 (nothing done) when the row needs the other paths. */
static int dist1_row(const unit *u, size_t r, size_t j0, size_t cols, float lo, float hi,
                     float *s) {
    const nw_pool_args *a = u->a;
    if (!plain_tile(&u->mask_rows[r], j0, cols))
        return 0;
    const nw_simd *simd = a->simd;
    const int gaussian = a->score.desc->dist1 == NW_DIST1_GAUSSIAN;
    const float q = u->q[r * a->ldq], inv_h = u->scratch[0]; /* prepare_rows: 1/h */
    /* The Gaussian's d · c must stay finite (row_fast bounded d / h, not d / h^2). */
    if (gaussian && !((fabs((double)q) + u->info->max_abs) * fabs((double)nw_dist1_coefficient(inv_h)) <= FLT_MAX))
        return 0;
    const float *v = u->v + j0;
    nw_row *row = &u->row[r];
    const nw_row before = *row;
    float alpha = nw_row_rescalef(row, nw_dist1_bound(gaussian, q, inv_h, lo, hi));
    float dot, sum = simd->dist1_exp_dot(gaussian, q, inv_h, u->kp, v, cols, (float)row->max, &dot);
    if (row->sum + (double)sum < 0x1p-40) {
        *row = before;
        alpha = nw_row_rescalef(row, simd->dist1(gaussian, q, inv_h, u->kp, cols, s));
        sum = simd->dist1_exp_dot(gaussian, q, inv_h, u->kp, v, cols, (float)row->max, &dot);
    }
    nw_row_add(row, (double)sum);
    float *acc = u->acc + r * a->ldo;
    acc[0] = acc[0] * alpha + dot;
    return 1;
}

/* Keys at or beyond the largest row limit are masked for every one of the rows. */
static size_t live_keys(const nw_mask_row *mask_rows, size_t rows) {
    size_t limit = 0;
    for (size_t r = 0; r < rows; r++)
        limit = mask_rows[r].limit > limit ? mask_rows[r].limit : limit;
    return limit;
}

/* Second pass, when the caller wants the weights: w = exp(value - M) / L tile by tile, or the
 * row contract's special rows (core/row_state.h). */
static void write_weights(unit *u, size_t keys) {
    const nw_pool_args *a = u->a;
    float *w = NW_ITEM(a, w, u->b, u->h) + u->i0 * a->ldw;
    size_t cols;
    for (size_t j0 = 0; j0 < a->n; j0 += cols) {
        /* The tiles of the first pass, so that every score is the one L was summed from. */
        cols = j0 < keys ? min_size(u->bn, keys - j0) : min_size(u->bn, a->n - j0);
        if (j0 < keys)
            prepare_keys(u, j0, cols);
        for (size_t g0 = 0; g0 < u->rows; g0 += u->bp) {
            /* As run_group: the group's own live keys, the rest of the tile masked (0). */
            const size_t rows = group_rows(u, g0), group_keys = u->group_keys[g0 / u->bp];
            const size_t live = j0 < group_keys ? min_size(cols, group_keys - j0) : 0;
            if (live > 0)
                score_group(u, g0, j0, live, w + g0 * a->ldw + j0, a->ldw, 1);
            for (size_t r = g0; r < g0 + rows; r++) {
                float *wrow = w + r * a->ldw + j0;
                const nw_row *row = &u->row[r];
                const size_t done = row->sum == 0.0 ? 0 : live;
                if (done < cols)
                    memset(wrow + done, 0, (cols - done) * sizeof(float));
                if (done == 0)
                    continue;
                const float inv = (float)nw_row_inverse(row);
                for (size_t j = 0; j < done; j++) {
                    const double x = tile_value(u, r, j0, j, wrow);
                    wrow[j] = isnan(row->sum) ? (float)nw_row_weight(row, x)
                                              : nw_row_factorf(row, x) * inv;
                }
            }
        }
    }
}

/* O = A / L and lse = M + log L; a row with L = 0 had no live key. */
static void finish_rows(const unit *u, float *lse) {
    const nw_pool_args *a = u->a;
    for (size_t r = 0; r < u->rows; r++) {
        float *acc = u->acc + r * a->ldo;
        const nw_row *row = &u->row[r];
        if (row->sum == 0.0) /* no live key: zeros, whatever the values held */
            memset(acc, 0, a->dv * sizeof(float));
        else
            scale_row(acc, a->dv, (float)nw_row_inverse(row));
        if (lse != NULL)
            lse[r] = (float)nw_row_lse(row);
    }
}

/* The state of each row as nwattn_pool_state stores it (core/row_state.h nw_row_store). */
static void write_states(const unit *u) {
    const nw_pool_args *a = u->a;
    const size_t at = u->b * a->stride_stats + u->h * a->hstride_stats + u->i0;
    for (size_t r = 0; r < u->rows; r++) {
        const double factor = nw_row_store(&u->row[r], a->state_max + at + r,
                                           a->state_sum + at + r);
        if (factor != 1.0)
            scale_row(u->acc + r * a->ldo, a->dv, (float)factor);
    }
}

/* One key tile for the group of rows from g0 (keys prepared): its scores, each row's softmax
 * step, then P·V into the group's accumulator rows (one product of at most bp rows, so that
 * the BLAS runs it as it would a unit of bp rows). */
static void run_group(unit *u, size_t g0, size_t j0, size_t cols, int dot_values, int direct,
                      int dist1, float lo, float hi) {
    const nw_pool_args *a = u->a;
    const size_t rows = group_rows(u, g0), keys = u->group_keys[g0 / u->bp];
    if (j0 >= keys) /* every key from j0 on is masked for these rows (causal units) */
        return;
    cols = min_size(cols, keys - j0); /* the tile a unit of just these rows would take */
    score_group(u, g0, j0, cols, u->s + g0 * u->bn, u->bn, 0);
    for (size_t r = g0; r < g0 + rows; r++) {
        float *s = u->s + r * u->bn;
        float alpha;
        if (dist1 && fast_row(u, r) && dist1_row(u, r, j0, cols, lo, hi, s))
            continue;
        if (direct && !u->exact[r] && u->info->finite)
            score_row(u, r, cols, s);
        if (dot_values && fast_row(u, r) && dot_row(u, r, j0, cols, s))
            continue;
        if (fast_row(u, r)) {
            const float tile_max = mask_row(a->simd, &u->mask_rows[r], j0, cols, s);
            alpha = tile_max == INFINITY
                        ? update_row_general(u, r, j0, cols, s)
                        : nw_row_update_fast(&u->row[r], a->simd, s, cols, tile_max, 0);
        } else {
            alpha = update_row_general(u, r, j0, cols, s);
        }
        float *acc = u->acc + r * a->ldo;
        if (dot_values)
            acc[0] = acc[0] * alpha + a->simd->dot(s, u->v + j0, cols);
        else if (alpha != 1.0f)
            scale_row(acc, a->dv, alpha);
    }
    for (size_t c0 = 0; !dot_values && c0 < cols; c0 += u->bc)
        nw_blas_sgemm(0, rows, a->dv, min_size(u->bc, cols - c0), 1.0f, u->s + g0 * u->bn + c0,
                      u->bn, u->v + (j0 + c0) * a->ldv, a->ldv, 1.0f, u->acc + g0 * a->ldo,
                      a->ldo);
}

static void run_unit(const nw_tiled_plan *plan, size_t index, size_t worker) {
    unit u;
    unit_init(&u, plan, index, worker);
    const nw_pool_args *a = u.a;
    for (size_t r = 0; r < u.rows; r++) {
        u.mask_rows[r] = nw_mask_row_get(&a->mask, u.b, u.i0 + r, a->n);
        u.row[r] = nw_row_empty();
        memset(u.acc + r * a->ldo, 0, a->dv * sizeof(float));
    }
    size_t keys = 0; /* the unit's live keys: its groups' largest */
    for (size_t g0 = 0; g0 < u.rows; g0 += u.bp) {
        u.group_keys[g0 / u.bp] = live_keys(u.mask_rows + g0, group_rows(&u, g0));
        keys = u.group_keys[g0 / u.bp] > keys ? u.group_keys[g0 / u.bp] : keys;
    }
    if (keys > 0)
        choose_rows(&u);

    /* One value per key in a contiguous column: P·V is a dot product per row, done while the
     * row is in cache (a one-column sgemm is several times slower than that). */
    const int dot_values = a->dv == 1 && a->ldv == 1;
    const int direct = is_direct(&u);
    const int dist1 = plan->one_pass && direct && u.info->finite && u.scale == 1.0;
    for (size_t j0 = 0; j0 < keys; j0 += u.bn) {
        const size_t cols = min_size(u.bn, keys - j0);
        prepare_keys(&u, j0, cols);
        float lo = 0.0f, hi = 0.0f;
        if (dist1)
            a->simd->range(u.kp, cols, &lo, &hi);
        for (size_t g0 = 0; g0 < u.rows; g0 += u.bp)
            run_group(&u, g0, j0, cols, dot_values, direct, dist1, lo, hi);
    }

    if (plan->partial) {
        write_states(&u);
        return;
    }
    finish_rows(&u, a->lse ? NW_ITEM(a, lse, u.b, u.h) + u.i0 : NULL);
    if (a->w != NULL)
        write_weights(&u, keys);
}

const nw_tile_provider nw_blas_tiles = {
    .name = "blas",
    .unit_bytes = unit_bytes,
    .key_info = 1,
    .unit = run_unit,
};
