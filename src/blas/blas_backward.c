/* nwattn_pool_backward's fused path: FlashAttention-2's backward over tiles of bt query rows by
 * bt keys, the products through cblas_sgemm.
 *
 * For a tile pair the scores come from the kind's descriptor exactly as the forward's fused
 * tiles form them (score/score.h: prepared keys and rows, exact rows in double), then
 *   P = exp(x - lse) (x = score + additive, masked keys 0), dP = dO V^T,
 *   E = coeff(P o (dP - D)) (score/score_grad.h), D = rowsum(dO o O) per row in double.
 *
 * Five products per tile pair (S, dP, dV += P^T dO, dK += E^T Q~, dQ += E K~). The key blocks
 * of an item are dealt into G groups (block kb to group kb mod G), G a power of two chosen
 * from the item's shape alone (m, n, d, dv and the kind: key_groups), never from the thread
 * count or the batch. A unit is (item, group): it walks its key blocks in order and, for each, every query
 * block in order, adding E K~ into its group's dQ sum (group 0 into dQ itself, the others into
 * partial sums of m×d floats). Then one unit per query block of each item adds the groups' sums
 * in double in group order and finishes the rows. The partial sums cost (G - 1)·m·d floats per
 * item: G keeps them within NW_BACKWARD_GROUP_BYTES, and the items run in phases of as many as
 * fit there. Where even G = 2 does not fit (m·d beyond it) and there are several key blocks,
 * the seven-product units below take over, with O(tile) memory:
 *
 * Seven products per tile pair: a block of keys of one item (dV += P^T dO, dK's sum += E^T Q~,
 * over every query tile) and a block of queries (dQ's sum += E K~, over every key tile), each
 * forming S and dP for itself.
 *
 * Either way each unit's tiles run in order and its share of the parameter gradient goes to its
 * own slot (one per key block and one per query block of each item), added in slot order at
 * the end. Nothing depends on which worker runs a unit, or on how many there are, or on the
 * other items of the batch. dS itself (the additive mask's gradient, when asked for) is
 * written by the unit that forms the tile pair; a dS shared by every item (broadcast mask) is
 * summed in float, item by item in order, by units that take their block (query block, or key
 * group) of every item in item order. */
#include <math.h>
#include <string.h>

#include "backward.h"
#include "blas_kernels.h"
#include "core/range.h"
#include "frame/tiled.h"
#include "mask.h"
#include "ref/ref_kernels.h"
#include "score/score_grad.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

int nw_backward_fusable(const nw_backward_args *a) {
    for (size_t b = 0; b < a->batch; b++) {
        if (nw_max_abs(a->m, a->d, NW_BITEM(a, q, b), a->ldq) < 0.0 ||
            nw_max_abs(a->n, a->d, NW_BITEM(a, k, b), a->ldk) < 0.0)
            return 0;
        const float *lse = NW_BITEM(a, lse, b);
        for (size_t i = 0; i < a->m; i++)
            if (!(lse[i] == -INFINITY || fabs((double)lse[i]) <= NW_BACKWARD_LSE_MAX))
                return 0;
    }
    return 1;
}

/* The key groups' partial dQ sums (and their r sums) may take this much per phase. */
#define NW_BACKWARD_GROUP_BYTES ((size_t)48 << 20)
/* At most this many key groups per item. */
#define NW_BACKWARD_GROUPS_MAX ((size_t)16)

/* How the call is cut and where its shared memory lies. */
typedef struct plan {
    const nw_backward_args *a;
    size_t bt;                 /* query rows and keys per tile */
    size_t kblocks, qblocks;   /* per item */
    size_t groups;             /* key groups per item; 0: the seven-product units */
    size_t phase_items;        /* items per phase of the grouped path */
    size_t first, items;       /* the current phase's items */
    size_t params;
    size_t shared_bytes, unit_bytes;
    nw_keys_info *info;        /* per item */
    double *info_store;        /* items × info_doubles(d) */
    double *centre;            /* items × d */
    double *partial;           /* slots × params */
    float *dq_part;            /* phase_items × (groups - 1) × m × d */
    double *r_part;            /* phase_items × groups × m, for the centred kinds */
    double *dd;                /* phase_items × m: the rows' D */
    unsigned char *exact;      /* phase_items × m: the rows' exact flags */
    unsigned char *scratch;    /* the workers' */
} plan;

/* One worker's tiles. */
typedef struct tiles {
    float *s, *e, *kp, *qs, *xt, *kt; /* s: the scores, then P in place; xt, kt: x~ rows */
    double *sd, *dd, *sums, *row;
    nw_mask_row *mrows;
    unsigned char *exact;
} tiles;

/* Square tiles of 64 (fewer for rows wider than 64, down to 16) so that a product stays within
 * NW_TILE_MNK and OpenBLAS runs it on the calling thread. */
static size_t tile_size(const nw_backward_args *a) {
    const size_t width = max_size(max_size(a->d, a->dv), 1);
    size_t bt = 64;
    while (bt > 16 && bt * bt * width > NW_TILE_MNK)
        bt /= 2;
    return bt;
}

static size_t tile_bytes(const nw_backward_args *a, size_t bt) {
    const nw_score_desc *desc = a->score.desc;
    const size_t prep = desc->prep_floats(bt, a->d), rows = desc->row_floats(bt, a->d);
    size_t total = 0, tile, xt;
    const int ok = prep != SIZE_MAX && rows != SIZE_MAX && nw_mul(bt, bt, &tile) &&
                   nw_mul(bt, a->d, &xt) &&
                   nw_tile_piece(&total, tile, sizeof(float)) &&  /* s, then P */
                   nw_tile_piece(&total, tile, sizeof(float)) &&  /* e */
                   nw_tile_piece(&total, prep, sizeof(float)) &&  /* kp */
                   nw_tile_piece(&total, rows, sizeof(float)) &&  /* qs */
                   nw_tile_piece(&total, xt, sizeof(float)) &&    /* xt */
                   nw_tile_piece(&total, xt, sizeof(float)) &&    /* kt */
                   nw_tile_piece(&total, tile, sizeof(double)) && /* sd */
                   nw_tile_piece(&total, bt, sizeof(double)) &&   /* dd */
                   nw_tile_piece(&total, bt, sizeof(double)) &&   /* sums */
                   nw_tile_piece(&total, 3 * a->d, sizeof(double)) && /* row */
                   nw_tile_piece(&total, bt, sizeof(nw_mask_row)) &&
                   nw_tile_piece(&total, bt, 1);
    return ok ? total : SIZE_MAX;
}

static void tiles_carve(const plan *pl, size_t worker, tiles *t) {
    const nw_backward_args *a = pl->a;
    const size_t bt = pl->bt;
    unsigned char *c = pl->scratch + worker * pl->unit_bytes;
    t->s = (float *)(void *)nw_tile_take(&c, bt * bt, sizeof(float));
    t->e = (float *)(void *)nw_tile_take(&c, bt * bt, sizeof(float));
    t->kp = (float *)(void *)nw_tile_take(&c, a->score.desc->prep_floats(bt, a->d),
                                          sizeof(float));
    t->qs = (float *)(void *)nw_tile_take(&c, a->score.desc->row_floats(bt, a->d),
                                          sizeof(float));
    t->xt = (float *)(void *)nw_tile_take(&c, bt * a->d, sizeof(float));
    t->kt = (float *)(void *)nw_tile_take(&c, bt * a->d, sizeof(float));
    t->sd = (double *)(void *)nw_tile_take(&c, bt * bt, sizeof(double));
    t->dd = (double *)(void *)nw_tile_take(&c, bt, sizeof(double));
    t->sums = (double *)(void *)nw_tile_take(&c, bt, sizeof(double));
    t->row = (double *)(void *)nw_tile_take(&c, 3 * a->d, sizeof(double));
    t->mrows = (nw_mask_row *)(void *)nw_tile_take(&c, bt, sizeof(nw_mask_row));
    t->exact = nw_tile_take(&c, bt, 1);
}

/* Slots of the parameter gradient's shares: one per key block and query block of each item. */
static size_t units(const plan *pl) { return pl->a->batch * (pl->kblocks + pl->qblocks); }

/* Seven-product units run: the slots, except that with a shared dS (a broadcast additive mask)
 * one unit takes a query block of every item in item order, as the items' dS rows add up
 * there. */
static size_t runs(const plan *pl) {
    const nw_backward_args *a = pl->a;
    return a->batch * pl->kblocks + (a->gs_shared ? pl->qblocks : a->batch * pl->qblocks);
}

/* Grouped units of a phase of `items` items: one per (item, group), or with a shared dS one
 * per group taking every item of the phase in item order; and the units that add the groups'
 * sums, one per query block of each item. */
static size_t group_runs(const plan *pl, size_t items) {
    return pl->a->gs_shared ? pl->groups : items * pl->groups;
}
static size_t row_runs(const plan *pl, size_t items) { return items * pl->qblocks; }

static int centred(const nw_backward_args *a) { return nw_grad_of(&a->score)->centred; }

/* Bytes of the partial sums of one item with G key groups (SIZE_MAX on overflow). */
static size_t group_bytes(const nw_backward_args *a, size_t groups) {
    size_t floats, doubles = 0, bytes = 0;
    if (!nw_mul(groups - 1, a->m, &floats) || !nw_mul(floats, a->d, &floats) ||
        (centred(a) && !nw_mul(groups, a->m, &doubles)) ||
        !nw_tile_piece(&bytes, floats, sizeof(float)) ||
        !nw_tile_piece(&bytes, doubles, sizeof(double)))
        return SIZE_MAX;
    return bytes;
}

/* G from the item's shape alone: the largest power of two up to the key blocks and
 * NW_BACKWARD_GROUPS_MAX whose partial sums fit NW_BACKWARD_GROUP_BYTES (a power of two
 * divides the work evenly over 2, 4, ... threads). 0 where there are several key blocks and
 * not even two groups fit: the seven-product units. */
static size_t key_groups(const nw_backward_args *a, size_t kblocks) {
    size_t groups = 1;
    while (groups * 2 <= min_size(kblocks, NW_BACKWARD_GROUPS_MAX) &&
           group_bytes(a, groups * 2) <= NW_BACKWARD_GROUP_BYTES)
        groups *= 2;
    return groups == 1 && (kblocks > 1 || group_bytes(a, 1) > NW_BACKWARD_GROUP_BYTES) ? 0
                                                                                        : groups;
}

static int plan_init(plan *pl, const nw_backward_args *a) {
    memset(pl, 0, sizeof *pl);
    pl->a = a;
    pl->bt = tile_size(a);
    pl->kblocks = (a->n + pl->bt - 1) / pl->bt;
    pl->qblocks = (a->m + pl->bt - 1) / pl->bt;
    pl->params = nw_grad_params(&a->score, a->d);
    pl->unit_bytes = tile_bytes(a, pl->bt);
    pl->groups = key_groups(a, pl->kblocks);
    size_t dq_floats = 0, r_doubles = 0, rows = 0;
    size_t per_item = pl->groups > 0 ? group_bytes(a, pl->groups) : 0; /* <= the budget */
    if (!nw_tile_piece(&per_item, a->m, sizeof(double)) || !nw_tile_piece(&per_item, a->m, 1))
        return 0;
    if (pl->groups > 0) { /* every product below is at most the budget, or m·9 bytes */
        pl->phase_items = per_item == 0 ? a->batch /* m == 0: nothing to keep */
                                        : min_size(a->batch, NW_BACKWARD_GROUP_BYTES / per_item);
        pl->phase_items = max_size(pl->phase_items, 1);
        dq_floats = pl->phase_items * (pl->groups - 1) * a->m * a->d;
        r_doubles = centred(a) ? pl->phase_items * pl->groups * a->m : 0;
        rows = pl->phase_items * a->m;
    }
    size_t shared = 0, doubles, centres, slots, partials;
    const int ok = pl->unit_bytes != SIZE_MAX &&
                   nw_add(pl->kblocks, pl->qblocks, &slots) &&
                   nw_mul(slots, a->batch, &slots) && nw_mul(slots, pl->params, &partials) &&
                   nw_tile_piece(&shared, a->batch, sizeof(nw_keys_info)) &&
                   nw_mul(a->batch, a->score.desc->info_doubles(a->d), &doubles) &&
                   nw_tile_piece(&shared, doubles, sizeof(double)) &&
                   nw_mul(a->batch, a->d, &centres) &&
                   nw_tile_piece(&shared, centres, sizeof(double)) &&
                   nw_tile_piece(&shared, partials, sizeof(double)) &&
                   nw_tile_piece(&shared, dq_floats, sizeof(float)) &&
                   nw_tile_piece(&shared, r_doubles, sizeof(double)) &&
                   nw_tile_piece(&shared, rows, sizeof(double)) && nw_tile_piece(&shared, rows, 1);
    pl->shared_bytes = shared;
    return ok;
}

/* Workers (and scratch tiles) a call uses: never more than it has units at a time. */
static size_t n_workers(const plan *pl, size_t threads) {
    const size_t most = pl->groups == 0
                            ? runs(pl)
                            : max_size(group_runs(pl, pl->phase_items),
                                       row_runs(pl, pl->phase_items));
    return max_size(min_size(threads, most), 1);
}

size_t nw_fused_backward_workspace(const nw_backward_args *a, size_t threads) {
    plan pl;
    size_t bytes;
    if (!plan_init(&pl, a) || !nw_mul(pl.unit_bytes, n_workers(&pl, threads), &bytes) ||
        !nw_add(bytes, pl.shared_bytes, &bytes))
        return SIZE_MAX;
    return bytes;
}

/* ---- One tile pair ---------------------------------------------------------------------- */
/* D_r = dO_r . O_r of query rows i0 .. i0+rows-1 of item b, in double. */
static void row_d(const nw_backward_args *a, size_t b, size_t i0, size_t rows, double *dd) {
    for (size_t r = 0; r < rows; r++) {
        const float *d_o = NW_BITEM(a, d_o, b) + (i0 + r) * a->ld_do;
        const float *o = NW_BITEM(a, o, b) + (i0 + r) * a->ldo;
        double lane[4] = {0}; /* four fixed lanes, added in order: vectorises */
        size_t c = 0;
        for (; c + 4 <= a->dv; c += 4)
            for (size_t l = 0; l < 4; l++)
                lane[l] += (double)d_o[c + l] * (double)o[c + l];
        double sum = (lane[0] + lane[1]) + (lane[2] + lane[3]);
        for (; c < a->dv; c++)
            sum += (double)d_o[c] * (double)o[c];
        dd[r] = sum;
    }
}

/* Whether any key j0 .. can be live for the tile's rows (their mask rows in t->mrows). */
static int tile_live(const tiles *t, size_t rows, size_t j0) {
    for (size_t r = 0; r < rows; r++)
        if (t->mrows[r].limit > j0)
            return 1;
    return 0;
}

/* Whether query rows i0 .. i0+rows-1 of item b take exact scores (score.h). */
static void row_exact(const plan *pl, size_t b, size_t i0, size_t rows, unsigned char *exact) {
    const nw_backward_args *a = pl->a;
    const float *q = NW_BITEM(a, q, b) + i0 * a->ldq;
    for (size_t r = 0; r < rows; r++)
        exact[r] = (unsigned char)nw_score_row_exact(&a->score, a->d, q + r * a->ldq,
                                                     &pl->info[b]);
}

/* What tile_prepare makes: the prepared rows (and their exact flags unless PREP_NO_EXACT:
 * found before), the prepared keys. A unit prepares the side it keeps fixed once. */
enum { PREP_ROWS = 1, PREP_KEYS = 2, PREP_NO_EXACT = 4 };

/* The descriptor's forms of the tile's rows and keys (score.h), as `prep` asks. */
static void tile_prepare(const plan *pl, const tiles *t, size_t b, size_t i0, size_t rows,
                         size_t j0, size_t cols, unsigned prep) {
    const nw_backward_args *a = pl->a;
    const nw_score_desc *desc = a->score.desc;
    const nw_keys_info *info = &pl->info[b];
    const float *q = NW_BITEM(a, q, b) + i0 * a->ldq, *k = NW_BITEM(a, k, b) + j0 * a->ldk;
    if (prep & PREP_ROWS) {
        if (!(prep & PREP_NO_EXACT))
            row_exact(pl, b, i0, rows, t->exact);
        desc->prepare_rows(&a->score, info, rows, a->d, q, a->ldq, t->qs);
    }
    if (prep & PREP_KEYS)
        desc->prepare(&a->score, info, a->simd, cols, a->d, k, a->ldk, t->kp);
}

/* Whether row r's tile takes the float path: fast scores at scale 1, no additive mask, every
 * key of the tile live by position, leave-one-out and keep bytes. */
static int plain_row(const plan *pl, const tiles *t, size_t r, size_t j0, size_t cols,
                     double scale) {
    const nw_mask_row *rm = &t->mrows[r];
    return !t->exact[r] && scale == 1.0 && rm->additive == NULL && rm->keep == NULL &&
           j0 + cols <= rm->limit && (rm->excluded < j0 || rm->excluded >= j0 + cols) &&
           nw_grad_of(&pl->a->score)->plain;
}

/* P (in t->s) and E (pitch bt) of query rows i0 .. i0+rows-1 against keys j0 .. j0+cols-1 of item b,
 * with t->dd holding the rows' D, t->mrows their masks and tile_prepare done. With `gs` (the
 * unit that owns these dS entries) dS = P o (dP - D) of the tile's live pairs is added to the
 * rows of dS. */
static void tile_pe(const plan *pl, const tiles *t, size_t b, size_t i0, size_t rows,
                    size_t j0, size_t cols, int gs) {
    const nw_backward_args *a = pl->a;
    const nw_score_desc *desc = a->score.desc;
    const nw_keys_info *info = &pl->info[b];
    const size_t bt = pl->bt, d = a->d;
    const float *q = NW_BITEM(a, q, b) + i0 * a->ldq, *k = NW_BITEM(a, k, b) + j0 * a->ldk;
    const float *lse = NW_BITEM(a, lse, b) + i0;
    const double scale = desc->scale(&a->score, info);
    desc->block(&a->score, info, a->simd, rows, cols, d, q, a->ldq, t->qs, k, a->ldk, t->kp, cols,
                t->s, bt);
    if (a->dv > 0)
        nw_blas_sgemm(1, rows, cols, a->dv, 1.0f, NW_BITEM(a, d_o, b) + i0 * a->ld_do, a->ld_do,
                      NW_BITEM(a, v, b) + j0 * a->ldv, a->ldv, 0.0f, t->e, bt);
    const nw_score_grad *rule = nw_grad_of(&a->score);
    for (size_t r = 0; r < rows; r++) {
        const nw_mask_row *rm = &t->mrows[r];
        float *s = t->s + r * bt, *p = s, *e = t->e + r * bt; /* P replaces the scores */
        double *sd = t->sd + r * bt;
        if (lse[r] == -INFINITY || j0 >= rm->limit || a->dv == 0) { /* nothing live, or dP = 0 */
            memset(p, 0, cols * sizeof(float));
            memset(e, 0, cols * sizeof(float));
            continue;
        }
        if (plain_row(pl, t, r, j0, cols, scale)) {
            /* the forward's float path: P = exp(s - lse) with a float shift, E = P (dP - D) */
            a->simd->exp_sumf(p, cols, lse[r]);
            const float big_d = (float)t->dd[r];
            for (size_t j = 0; j < cols; j++)
                e[j] = p[j] == 0.0f ? 0.0f : p[j] * (e[j] - big_d);
            continue;
        }
        for (size_t j = 0; j < cols; j++) {
            const size_t key = j0 + j;
            double x = -INFINITY;
            if (key < rm->limit && !nw_mask_row_drops(rm, key)) {
                const double score = t->exact[r] ? nw_ref_score(&a->score, d, q + r * a->ldq,
                                                                k + j * a->ldk)
                                                 : scale * (double)s[j];
                sd[j] = score;
                x = nw_mask_value_d(rm, score, key);
            }
            p[j] = x == -INFINITY ? -INFINITY : (float)(x - (double)lse[r]);
        }
        a->simd->exp_sumf(p, cols, 0.0f);
        const double big_d = t->dd[r];
        float *gs_row = gs ? nw_backward_gs_row(a, b, i0 + r) + j0 : NULL;
        for (size_t j = 0; j < cols; j++) {
            if (p[j] == 0.0f) {
                e[j] = 0.0f;
                continue;
            }
            const double ds = (double)p[j] * ((double)e[j] - big_d);
            if (gs_row != NULL)
                gs_row[j] += (float)ds;
            e[j] = (float)rule->coeff(ds, sd[j]);
        }
    }
}

/* x~ of rows x (count × d, pitch ldx) for the products: x itself when the kind takes rows as
 * they are (*ld = ldx), else converted into buf (count × d floats, *ld = d). */
static const float *operand_tile(const plan *pl, const tiles *t, size_t b, const float *x,
                                 size_t ldx, size_t count, float *buf, size_t *ld) {
    const nw_backward_args *a = pl->a;
    const nw_score_grad *rule = nw_grad_of(&a->score);
    if (!rule->centred && !rule->unit) {
        *ld = ldx;
        return x;
    }
    for (size_t i = 0; i < count; i++) {
        nw_grad_operand(&a->score, a->d, x + i * ldx, pl->centre + b * a->d, t->row);
        for (size_t l = 0; l < a->d; l++)
            buf[i * a->d + l] = (float)t->row[l];
    }
    *ld = a->d;
    return buf;
}

/* Row x's gradient into out (d floats) from its sum g, in t->row (d doubles), and r. */
static void finish_sum(const plan *pl, const tiles *t, size_t b, const float *x, float *out,
                       double r, int query, double *dparam) {
    const nw_backward_args *a = pl->a;
    double *gd = t->row, *dx = t->row + a->d;
    nw_grad_finish_row(&a->score, a->d, x, pl->centre + b * a->d, gd, r, query, dx, dparam);
    for (size_t l = 0; l < a->d; l++)
        out[l] = (float)dx[l];
}

/* Row x's gradient from its float sum g (d floats, overwritten with the gradient) and r. */
static void finish(const plan *pl, const tiles *t, size_t b, const float *x, float *g,
                   double r, int query, double *dparam) {
    for (size_t l = 0; l < pl->a->d; l++)
        t->row[l] = (double)g[l];
    finish_sum(pl, t, b, x, g, r, query, dparam);
}

/* sums[j] += sum_r e[r·lde + j], in double, rows in order (the loop over j vectorises). */
static void add_column_sums(const float *restrict e, size_t lde, size_t rows, size_t cols,
                            double *restrict sums) {
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++)
            sums[j] += (double)e[r * lde + j];
}

/* sum_j e[j] in double, in eight fixed lanes added in order at the end. */
static double row_sum(const float *e, size_t cols) {
    double lane[8] = {0};
    size_t j = 0;
    for (; j + 8 <= cols; j += 8)
        for (size_t l = 0; l < 8; l++)
            lane[l] += (double)e[j + l];
    double sum = 0.0;
    for (size_t l = 0; l < 8; l++)
        sum += lane[l];
    for (; j < cols; j++)
        sum += (double)e[j];
    return sum;
}

/* ---- Units ------------------------------------------------------------------------------ */
static void mask_rows(const nw_backward_args *a, const tiles *t, size_t b, size_t i0,
                      size_t rows) {
    for (size_t r = 0; r < rows; r++)
        t->mrows[r] = nw_mask_row_get(&a->mask, b, i0 + r, a->n);
}

/* Keys j0 .. j0+cols-1 of item b: dV, and dK from sum_i E_ij q~_i, over every query block in
 * order. With dq (the grouped path) also the key block's part of dQ: dq's rows (pitch ldq,
 * m of them) += E K~, and r[i] += sum_j E_ij for the centred kinds; with gs also dS, whose
 * columns j0 .. are zeroed first unless they add to what is there. */
static void key_unit(const plan *pl, const tiles *tiles_in, size_t b, size_t kb, float *dq,
                     size_t ldq, double *r, int gs, double *dparam) {
    const nw_backward_args *a = pl->a;
    tiles own = *tiles_in, *t = &own; /* the grouped path points dd and exact at the item's */
    double *item_dd = dq == NULL ? NULL : pl->dd + (b - pl->first) * a->m;
    unsigned char *item_exact = dq == NULL ? NULL : pl->exact + (b - pl->first) * a->m;
    const size_t bt = pl->bt, j0 = kb * bt, cols = min_size(bt, a->n - j0);
    const int sums = centred(a); /* r: only the distances' chain rule reads it */
    float *dk = NW_BITEM(a, gk, b) + j0 * a->ld_gk, *dv = NW_BITEM(a, gv, b) + j0 * a->ld_gv;
    for (size_t j = 0; j < cols; j++) {
        memset(dk + j * a->ld_gk, 0, a->d * sizeof(float));
        memset(dv + j * a->ld_gv, 0, a->dv * sizeof(float));
        t->sums[j] = 0.0;
    }
    if (gs && !nw_backward_gs_adds(a, b)) /* tiles add to it; some are skipped */
        for (size_t i = 0; i < a->m; i++)
            memset(nw_backward_gs_row(a, b, i) + j0, 0, cols * sizeof(float));
    tile_prepare(pl, t, b, 0, 0, j0, cols, PREP_KEYS);
    size_t ldk = 0;
    const float *kt = dq == NULL ? NULL
                                 : operand_tile(pl, t, b, NW_BITEM(a, k, b) + j0 * a->ldk,
                                                a->ldk, cols, t->kt, &ldk);
    for (size_t i0 = 0; i0 < a->m; i0 += bt) {
        const size_t rows = min_size(bt, a->m - i0);
        mask_rows(a, t, b, i0, rows);
        if (!tile_live(t, rows, j0))
            continue;
        if (item_dd != NULL) {
            own.dd = item_dd + i0;
            own.exact = item_exact + i0;
            tile_prepare(pl, t, b, i0, rows, j0, cols, PREP_ROWS | PREP_NO_EXACT);
        } else {
            row_d(a, b, i0, rows, t->dd);
            tile_prepare(pl, t, b, i0, rows, j0, cols, PREP_ROWS);
        }
        tile_pe(pl, t, b, i0, rows, j0, cols, gs);
        const float *d_o = NW_BITEM(a, d_o, b) + i0 * a->ld_do;
        if (a->dv > 0)
            nw_blas_sgemm_tn(cols, a->dv, rows, 1.0f, t->s, bt, d_o, a->ld_do, 1.0f, dv,
                             a->ld_gv);
        size_t ldx;
        const float *qt =
            operand_tile(pl, t, b, NW_BITEM(a, q, b) + i0 * a->ldq, a->ldq, rows, t->xt, &ldx);
        nw_blas_sgemm_tn(cols, a->d, rows, 1.0f, t->e, bt, qt, ldx, 1.0f, dk, a->ld_gk);
        if (sums)
            add_column_sums(t->e, bt, rows, cols, t->sums);
        if (dq == NULL)
            continue;
        nw_blas_sgemm(0, rows, a->d, cols, 1.0f, t->e, bt, kt, ldk, 1.0f, dq + i0 * ldq, ldq);
        for (size_t i = 0; i < rows && sums; i++)
            r[i0 + i] += row_sum(t->e + i * bt, cols);
    }
    const float *k = NW_BITEM(a, k, b) + j0 * a->ldk;
    for (size_t j = 0; j < cols; j++)
        finish(pl, t, b, k + j * a->ldk, dk + j * a->ld_gk, t->sums[j], 0, dparam);
}

/* Query rows i0 .. i0+rows-1 of item b: dQ from sum_j E_ij k~_j. */
static void query_unit(const plan *pl, const tiles *t, size_t b, size_t qb, double *dparam) {
    const nw_backward_args *a = pl->a;
    const size_t bt = pl->bt, i0 = qb * bt, rows = min_size(bt, a->m - i0);
    float *dq = NW_BITEM(a, gq, b) + i0 * a->ld_gq;
    double *r_sums = t->sums;
    for (size_t r = 0; r < rows; r++) {
        memset(dq + r * a->ld_gq, 0, a->d * sizeof(float));
        r_sums[r] = 0.0;
    }
    if (a->gs != NULL && !nw_backward_gs_adds(a, b)) /* tiles add to it; some are skipped */
        for (size_t r = 0; r < rows; r++)
            memset(nw_backward_gs_row(a, b, i0 + r), 0, a->n * sizeof(float));
    mask_rows(a, t, b, i0, rows);
    row_d(a, b, i0, rows, t->dd);
    tile_prepare(pl, t, b, i0, rows, 0, 0, PREP_ROWS);
    for (size_t j0 = 0; j0 < a->n && tile_live(t, rows, j0); j0 += bt) {
        const size_t cols = min_size(bt, a->n - j0);
        tile_prepare(pl, t, b, i0, rows, j0, cols, PREP_KEYS);
        tile_pe(pl, t, b, i0, rows, j0, cols, a->gs != NULL);
        size_t ldx;
        const float *kt =
            operand_tile(pl, t, b, NW_BITEM(a, k, b) + j0 * a->ldk, a->ldk, cols, t->xt, &ldx);
        nw_blas_sgemm(0, rows, a->d, cols, 1.0f, t->e, bt, kt, ldx, 1.0f, dq, a->ld_gq);
        for (size_t r = 0; r < rows && nw_grad_of(&a->score)->centred; r++)
            r_sums[r] += row_sum(t->e + r * bt, cols);
    }
    const float *q = NW_BITEM(a, q, b) + i0 * a->ldq;
    for (size_t r = 0; r < rows; r++)
        finish(pl, t, b, q + r * a->ldq, dq + r * a->ld_gq, r_sums[r], 1, dparam);
}

static void run_unit(void *arg, size_t unit, size_t worker) {
    const plan *pl = arg;
    const size_t key_units = pl->a->batch * pl->kblocks;
    tiles t;
    tiles_carve(pl, worker, &t);
    if (unit < key_units) {
        double *dparam = pl->partial + unit * pl->params;
        memset(dparam, 0, pl->params * sizeof(double));
        key_unit(pl, &t, unit / pl->kblocks, unit % pl->kblocks, NULL, 0, NULL, 0, dparam);
        return;
    }
    const size_t u = unit - key_units;
    const size_t first = pl->a->gs_shared ? 0 : u / pl->qblocks;
    const size_t last = pl->a->gs_shared ? pl->a->batch : first + 1;
    const size_t qb = pl->a->gs_shared ? u : u % pl->qblocks;
    for (size_t b = first; b < last; b++) { /* the slot of (b, qb) whichever unit runs it */
        double *dparam = pl->partial + (key_units + b * pl->qblocks + qb) * pl->params;
        memset(dparam, 0, pl->params * sizeof(double));
        query_unit(pl, &t, b, qb, dparam);
    }
}

/* ---- The grouped path ------------------------------------------------------------------ */
/* Group g's dQ sum of item b (in the current phase) and its pitch; its r sums. */
static float *group_dq(const plan *pl, size_t b, size_t g, size_t *ld) {
    const nw_backward_args *a = pl->a;
    if (g == 0) {
        *ld = a->ld_gq;
        return NW_BITEM(a, gq, b);
    }
    *ld = a->d;
    return pl->dq_part + ((b - pl->first) * (pl->groups - 1) + g - 1) * a->m * a->d;
}
static double *group_r(const plan *pl, size_t b, size_t g) {
    return centred(pl->a) ? pl->r_part + ((b - pl->first) * pl->groups + g) * pl->a->m : NULL;
}

/* Key blocks g, g + G, ... of item b, in order, into group g's sums. */
static void group_unit(const plan *pl, const tiles *t, size_t b, size_t g) {
    const nw_backward_args *a = pl->a;
    size_t ld;
    float *dq = group_dq(pl, b, g, &ld);
    double *r = group_r(pl, b, g);
    for (size_t i = 0; i < a->m; i++)
        memset(dq + i * ld, 0, a->d * sizeof(float));
    if (r != NULL)
        memset(r, 0, a->m * sizeof(double));
    for (size_t kb = g; kb < pl->kblocks; kb += pl->groups) {
        double *dparam = pl->partial + (b * pl->kblocks + kb) * pl->params;
        memset(dparam, 0, pl->params * sizeof(double));
        key_unit(pl, t, b, kb, dq, ld, r, a->gs != NULL, dparam);
    }
}

static void run_group(void *arg, size_t unit, size_t worker) {
    const plan *pl = arg;
    tiles t;
    tiles_carve(pl, worker, &t);
    if (pl->a->gs_shared) { /* dS adds up over the items: every item of the phase in order */
        for (size_t b = pl->first; b < pl->first + pl->items; b++)
            group_unit(pl, &t, b, unit);
        return;
    }
    group_unit(pl, &t, pl->first + unit / pl->groups, unit % pl->groups);
}

/* Query block qb of item b: its rows' D and exact flags, for every key group. */
static void run_prep(void *arg, size_t unit, size_t worker) {
    (void)worker;
    const plan *pl = arg;
    const size_t b = pl->first + unit / pl->qblocks, i0 = (unit % pl->qblocks) * pl->bt;
    const size_t rows = min_size(pl->bt, pl->a->m - i0), at = (b - pl->first) * pl->a->m + i0;
    row_d(pl->a, b, i0, rows, pl->dd + at);
    row_exact(pl, b, i0, rows, pl->exact + at);
}

/* Query block qb of item b: dQ = the groups' sums added in double in group order, finished. */
static void run_rows(void *arg, size_t unit, size_t worker) {
    const plan *pl = arg;
    const nw_backward_args *a = pl->a;
    const size_t b = pl->first + unit / pl->qblocks, qb = unit % pl->qblocks;
    const size_t i0 = qb * pl->bt, rows = min_size(pl->bt, a->m - i0);
    tiles t;
    tiles_carve(pl, worker, &t);
    double *dparam =
        pl->partial + (a->batch * pl->kblocks + b * pl->qblocks + qb) * pl->params;
    memset(dparam, 0, pl->params * sizeof(double));
    const float *q = NW_BITEM(a, q, b);
    for (size_t i = i0; i < i0 + rows; i++) {
        double r = 0.0;
        for (size_t g = 0; g < pl->groups; g++) {
            size_t ld;
            const float *dq = group_dq(pl, b, g, &ld) + i * ld;
            for (size_t l = 0; l < a->d; l++)
                t.row[l] = g == 0 ? (double)dq[l] : t.row[l] + (double)dq[l];
            const double *rg = group_r(pl, b, g);
            r += rg != NULL ? rg[i] : 0.0;
        }
        finish_sum(pl, &t, b, q + i * a->ldq, NW_BITEM(a, gq, b) + i * a->ld_gq, r, 1, dparam);
    }
}

static void run_item(void *arg, size_t b, size_t worker) {
    (void)worker;
    const plan *pl = arg;
    const nw_backward_args *a = pl->a;
    const nw_score_desc *desc = a->score.desc;
    const float *k = NW_BITEM(a, k, b);
    desc->keys_info(&a->score, a->n, a->d, k, a->ldk,
                    pl->info_store + b * desc->info_doubles(a->d), &pl->info[b]);
    nw_grad_centre(&a->score, a->n, a->d, k, a->ldk, pl->centre + b * a->d);
}

void nw_fused_backward(const nw_backward_args *a, void *scratch, nw_workers *workers) {
    plan pl;
    plan_init(&pl, a);
    unsigned char *c = scratch;
    pl.info = (nw_keys_info *)(void *)nw_tile_take(&c, a->batch, sizeof(nw_keys_info));
    pl.info_store = (double *)(void *)nw_tile_take(
        &c, a->batch * a->score.desc->info_doubles(a->d), sizeof(double));
    pl.centre = (double *)(void *)nw_tile_take(&c, a->batch * a->d, sizeof(double));
    pl.partial = (double *)(void *)nw_tile_take(&c, units(&pl) * pl.params, sizeof(double));
    if (pl.groups > 0) {
        pl.dq_part = (float *)(void *)nw_tile_take(
            &c, pl.phase_items * (pl.groups - 1) * a->m * a->d, sizeof(float));
        pl.r_part = (double *)(void *)nw_tile_take(
            &c, centred(a) ? pl.phase_items * pl.groups * a->m : 0, sizeof(double));
        pl.dd = (double *)(void *)nw_tile_take(&c, pl.phase_items * a->m, sizeof(double));
        pl.exact = nw_tile_take(&c, pl.phase_items * a->m, 1);
    }
    pl.scratch = (unsigned char *)scratch + pl.shared_bytes;
    const size_t count = n_workers(&pl, workers->threads);
    nw_parallel_for(workers, count, a->batch, run_item, &pl);
    if (pl.groups == 0)
        nw_parallel_for(workers, count, runs(&pl), run_unit, &pl);
    for (pl.first = 0; pl.groups > 0 && pl.first < a->batch; pl.first += pl.items) {
        pl.items = min_size(pl.phase_items, a->batch - pl.first);
        nw_parallel_for(workers, count, row_runs(&pl, pl.items), run_prep, &pl);
        nw_parallel_for(workers, count, group_runs(&pl, pl.items), run_group, &pl);
        nw_parallel_for(workers, count, row_runs(&pl, pl.items), run_rows, &pl);
    }
    if (a->dparam == NULL)
        return;
    for (size_t l = 0; l < pl.params; l++) {
        double sum = 0.0;
        for (size_t u = 0; u < units(&pl); u++)
            sum += pl.partial[u * pl.params + l];
        a->dparam[l] = (float)sum;
    }
}
