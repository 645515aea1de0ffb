/* The oracle over tu_mat matrices (testutil.h): batched scores with per-entry bounds, random
 * masks, softmax, pooling and products. Every value comes from the core (oracle.c). */
#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Scores ------------------------------------------------------------------------------ */
/* Per-item data for the BLAS bound: centred squared norms of every query and key row (only
 * where the expansion applies: Gaussian and Laplace with d > OR_DIRECT_MAX_D). */
typedef struct or_item_norms {
    double *qn, *kn, *mean;
} or_item_norms;

static void or_item_norms_make(or_item_norms *nm, const nwattn_score *score, const tu_mat *q,
                               const tu_mat *k, size_t b) {
    size_t d = q->cols, m = q->rows, n = k->rows;
    nm->qn = calloc(m + 1, sizeof(double));
    nm->kn = calloc(n + 1, sizeof(double));
    nm->mean = calloc(d + 1, sizeof(double));
    assert_true(nm->qn && nm->kn && nm->mean);
    if ((score->kind != NWATTN_SCORE_GAUSSIAN && score->kind != NWATTN_SCORE_LAPLACE) ||
        d <= OR_DIRECT_MAX_D || n == 0)
        return;
    or_key_mean(n, d, tu_at(k, b, 0, 0), k->ld, nm->mean);
    for (size_t i = 0; i < m; i++)
        nm->qn[i] = or_centred_norm2(score, d, tu_at(q, b, i, 0), nm->mean);
    for (size_t j = 0; j < n; j++)
        nm->kn[j] = or_centred_norm2(score, d, tu_at(k, b, j, 0), nm->mean);
}

static void or_item_norms_free(or_item_norms *nm) {
    free(nm->qn);
    free(nm->kn);
    free(nm->mean);
}

double or_scores(const nwattn_score *score, const tu_mat *q, const tu_mat *k, tu_mat *s,
                 tu_mat *tol_blas, tu_mat *tol_ref) {
    size_t d = q->cols;
    double worst = 0.0;
    assert_int_equal(k->cols, d);
    for (size_t b = 0; b < s->batch; b++) {
        or_item_norms nm;
        or_item_norms_make(&nm, score, q, k, b);
        for (size_t i = 0; i < s->rows; i++)
            for (size_t j = 0; j < s->cols; j++) {
                double abs_dot;
                double x =
                    (double)or_score_ex(score, d, tu_at(q, b, i, 0), tu_at(k, b, j, 0), &abs_dot);
                assert_false(isnan(x) && score->kind > NWATTN_SCORE_COSINE);
                *tu_at(s, b, i, j) = (float)x;
                double tb = or_bound_score_blas(score, d, x, abs_dot, nm.qn[i], nm.kn[j]);
                if (tb > worst)
                    worst = tb;
                if (tol_blas != NULL)
                    *tu_at(tol_blas, b, i, j) = (float)tb;
                if (tol_ref != NULL)
                    *tu_at(tol_ref, b, i, j) = (float)or_bound_score_ref(score, d, x, abs_dot);
            }
        or_item_norms_free(&nm);
    }
    return worst;
}

/* ---- Masks ------------------------------------------------------------------------------- */
void or_mask_make(or_mask *mk, unsigned parts, size_t batch, size_t m, size_t n, tu_rng *rng) {
    memset(mk, 0, sizeof *mk);
    mk->parts = parts;
    int broadcast = (parts & OR_BROADCAST) != 0;
    if (parts & OR_LOO)
        mk->mask.flags |= NWATTN_MASK_LEAVE_ONE_OUT;
    if (parts & OR_CAUSAL)
        mk->mask.flags |= NWATTN_MASK_CAUSAL;
    if (parts & (OR_LENS_ITEM | OR_LENS_ROW)) {
        size_t count = (parts & OR_LENS_ROW) ? batch * m : batch;
        if (parts & OR_LENS_ROW)
            mk->mask.flags |= NWATTN_MASK_LENS_PER_ROW;
        mk->lens = calloc(count + 1, sizeof(size_t));
        assert_non_null(mk->lens);
        for (size_t t = 0; t < count; t++) {
            double r = tu_rng_unit(rng);
            mk->lens[t] = r < 0.15 ? 0 : r < 0.3 ? n : tu_rng_below(rng, n + 1);
        }
        mk->mask.valid_lens = mk->lens;
    }
    if (parts & OR_ADDITIVE) {
        mk->additive = broadcast ? tu_mat_new_broadcast(batch, m, n, 2)
                                 : tu_mat_new(batch, m, n, 2, 3);
        for (size_t b = 0; b < batch; b++)
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++) {
                    float a = tu_rng_range(rng, -2.0f, 2.0f);
                    if ((parts & OR_ADDITIVE_NEGINF) && tu_rng_unit(rng) < 0.2)
                        a = -INFINITY;
                    *tu_at(&mk->additive, b, i, j) = a;
                }
        mk->mask.additive = mk->additive.data;
        mk->mask.ld_additive = mk->additive.ld;
        mk->mask.stride_additive = mk->additive.stride;
    }
    if (parts & OR_KEEP) {
        size_t ld = n + 3, stride = broadcast ? 0 : m * ld + 5;
        size_t bytes = (batch > 0 ? (batch - 1) * stride : 0) + m * ld + 8;
        mk->keep = calloc(bytes, 1); /* padding 0: reading it would mask a key */
        assert_non_null(mk->keep);
        static const unsigned char kept[3] = {1, 7, 255};
        for (size_t b = 0; b < batch; b++)
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++)
                    mk->keep[b * stride + i * ld + j] =
                        tu_rng_unit(rng) < 0.3 ? 0 : kept[tu_rng_below(rng, 3)];
        mk->mask.keep = mk->keep;
        mk->mask.ld_keep = ld;
        mk->mask.stride_keep = stride;
    }
}

void or_mask_free(or_mask *mk) {
    if (mk->additive.data != NULL)
        tu_mat_free(&mk->additive);
    free(mk->keep);
    free(mk->lens);
    memset(mk, 0, sizeof *mk);
}

const nwattn_mask *or_mask_get(const or_mask *mk) {
    return mk->parts == 0 ? NULL : &mk->mask;
}

/* ---- Softmax ----------------------------------------------------------------------------- */
double or_softmax(const nwattn_mask *mask, const tu_mat *s, tu_mat *w, tu_mat *lse) {
    size_t m = s->rows, n = s->cols;
    double *srow = calloc(n + 1, sizeof(double));
    double *wrow = calloc(n + 1, sizeof(double));
    double range = 0.0;
    assert_true(srow && wrow);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t i = 0; i < m; i++) {
            double r;
            for (size_t j = 0; j < n; j++)
                srow[j] = (double)tu_get(s, b, i, j);
            double l = or_softmax_row(mask, b, m, n, i, srow, wrow, &r);
            if (r > range)
                range = r;
            if (w != NULL)
                for (size_t j = 0; j < n; j++)
                    *tu_at(w, b, i, j) = (float)wrow[j];
            if (lse != NULL)
                *tu_at(lse, b, 0, i) = (float)l;
        }
    free(srow);
    free(wrow);
    return range;
}

/* ---- Pooling ----------------------------------------------------------------------------- */
void or_pool(const nwattn_score *score, const nwattn_mask *mask, const tu_mat *q,
             const tu_mat *k, const tu_mat *v, tu_mat *o, tu_mat *w, tu_mat *lse,
             or_pool_info *info) {
    size_t m = o->rows, n = v->rows, dv = v->cols, d = score != NULL ? q->cols : 0;
    double *add = calloc(n + 1, sizeof(double)), *wrow = calloc(n + 1, sizeof(double));
    double *orow = calloc(dv + 1, sizeof(double));
    unsigned char *live = calloc(n + 1, 1);
    assert_true(add && wrow && orow && live);
    or_pool_info acc = {0.0, 0.0, tu_mat_maxabs(v)};
    for (size_t b = 0; b < o->batch; b++) {
        or_item_norms nm = {NULL, NULL, NULL};
        if (score != NULL)
            or_item_norms_make(&nm, score, q, k, b);
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; score != NULL && j < n; j++) { /* the bound: every key */
                double abs_dot;
                double s =
                    (double)or_score_ex(score, d, tu_at(q, b, i, 0), tu_at(k, b, j, 0), &abs_dot);
                double tb = or_bound_score_blas(score, d, s, abs_dot, nm.qn[i], nm.kn[j]);
                if (tb > acc.score_err_blas)
                    acc.score_err_blas = tb;
            }
            for (size_t j = 0; j < n; j++) {
                live[j] = !or_masked(mask, b, m, n, i, j);
                add[j] = or_additive(mask, b, i, j);
            }
            double r;
            const int keys = score != NULL && n > 0;
            double l = or_pool_row(score, d, dv, n, score != NULL ? tu_at(q, b, i, 0) : NULL,
                                   keys ? tu_at(k, b, 0, 0) : NULL, keys ? k->ld : 0,
                                   n > 0 ? tu_at(v, b, 0, 0) : NULL, v->ld, add, live, wrow,
                                   orow, &r);
            if (r > acc.range)
                acc.range = r;
            for (size_t c = 0; c < dv; c++)
                *tu_at(o, b, i, c) = (float)orow[c];
            if (w != NULL)
                for (size_t j = 0; j < n; j++)
                    *tu_at(w, b, i, j) = (float)wrow[j];
            if (lse != NULL)
                *tu_at(lse, b, 0, i) = (float)l;
        }
        if (score != NULL)
            or_item_norms_free(&nm);
    }
    free(add);
    free(wrow);
    free(orow);
    free(live);
    if (info != NULL)
        *info = acc;
}

/* ---- Batched product --------------------------------------------------------------------- */
void or_bmm(const tu_mat *a, const tu_mat *b, tu_mat *c, tu_mat *tol_blas, tu_mat *tol_ref) {
    size_t k = a->cols;
    assert_int_equal(b->rows, k);
    for (size_t t = 0; t < c->batch; t++)
        for (size_t i = 0; i < c->rows; i++)
            for (size_t j = 0; j < c->cols; j++) {
                double abs_sum;
                double sum = 0.0;
                abs_sum = 0.0;
                if (k > 0)
                    sum = (double)or_dot(k, tu_at(a, t, i, 0), 1, tu_at(b, t, 0, j), b->ld,
                                         &abs_sum);
                *tu_at(c, t, i, j) = (float)sum;
                double kk = (double)k + 4.0;
                if (tol_blas != NULL)
                    *tu_at(tol_blas, t, i, j) = (float)(kk * TU_U * abs_sum + TU_U * fabs(sum));
                if (tol_ref != NULL)
                    *tu_at(tol_ref, t, i, j) =
                        (float)(4.0 * TU_U * fabs(sum) + kk * 0x1p-52 * abs_sum);
            }
}
