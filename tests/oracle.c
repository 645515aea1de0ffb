#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Scores ------------------------------------------------------------------------------ */
static double or_bandwidth(const nwattn_score *score, size_t l) {
    return score->bandwidths != NULL ? (double)score->bandwidths[l] : (double)score->bandwidth;
}

/* The exact score, and sum_l |q_l k_l| (dot) for the dot bound. */
static double or_score_ex(const nwattn_score *score, size_t d, const float *q, const float *k,
                          double *abs_dot) {
    double acc = 0.0, abs_acc = 0.0, qq = 0.0, kk = 0.0;
    for (size_t l = 0; l < d; l++) {
        qq += (double)q[l] * (double)q[l];
        kk += (double)k[l] * (double)k[l];
        if (score->kind == NWATTN_SCORE_DOT || score->kind == NWATTN_SCORE_COSINE) {
            acc += (double)q[l] * (double)k[l];
            abs_acc += fabs((double)q[l] * (double)k[l]);
        } else {
            double t = ((double)q[l] - (double)k[l]) / or_bandwidth(score, l);
            acc += t * t;
        }
    }
    if (abs_dot != NULL)
        *abs_dot = abs_acc;
    switch (score->kind) {
    case NWATTN_SCORE_DOT:
        return (double)score->scale * acc;
    case NWATTN_SCORE_GAUSSIAN:
        return -0.5 * acc;
    case NWATTN_SCORE_LAPLACE:
        return -sqrt(acc);
    case NWATTN_SCORE_COSINE: /* a zero norm has no direction: score 0 */
        if (abs_dot != NULL && qq > 0.0 && kk > 0.0)
            *abs_dot = abs_acc / (sqrt(qq) * sqrt(kk));
        return qq == 0.0 || kk == 0.0 ? 0.0 : (double)score->scale * (acc / (sqrt(qq) * sqrt(kk)));
    }
    fail_msg("%s", "unknown score kind in the oracle");
    return 0.0;
}

double or_score(const nwattn_score *score, size_t d, const float *q, const float *k) {
    return or_score_ex(score, d, q, k, NULL);
}

/* |x'|^2 with x' = (x - mean key) / h, for the Gaussian/Laplace BLAS bound. */
static double or_centred_norm2(const nwattn_score *score, size_t d, const float *x,
                               const double *mean) {
    double acc = 0.0;
    for (size_t l = 0; l < d; l++) {
        double t = ((double)x[l] - mean[l]) / or_bandwidth(score, l);
        acc += t * t;
    }
    return acc;
}

/* Per-item data for the BLAS bound: centred squared norms of every query and key row. */
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
    if (score->kind == NWATTN_SCORE_DOT || n == 0)
        return;
    for (size_t j = 0; j < n; j++)
        for (size_t l = 0; l < d; l++)
            nm->mean[l] += (double)tu_get(k, b, j, l);
    for (size_t l = 0; l < d; l++)
        nm->mean[l] /= (double)n;
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

static double or_tol_blas_entry(const nwattn_score *score, size_t d, double s, double abs_dot,
                                double qn, double kn) {
    double fin = 4.0 * TU_U * fabs(s);
    double dd = (double)d;
    if (score->kind == NWATTN_SCORE_DOT)
        return (dd + 4.0) * TU_U * fabs((double)score->scale) * abs_dot + fin;
    double e_d = (4.0 * dd + 32.0) * TU_U * (qn + kn);
    if (score->kind == NWATTN_SCORE_GAUSSIAN)
        return 0.5 * e_d + fin;
    double t = sqrt(e_d);
    if (s != 0.0 && e_d / fabs(s) < t)
        t = e_d / fabs(s);
    return t + fin;
}

static double or_tol_ref_entry(const nwattn_score *score, size_t d, double s, double abs_dot) {
    double tol = 4.0 * TU_U * fabs(s);
    if (score->kind == NWATTN_SCORE_DOT)
        tol += ((double)d + 4.0) * 0x1p-52 * fabs((double)score->scale) * abs_dot;
    return tol;
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
                double x = or_score_ex(score, d, tu_at(q, b, i, 0), tu_at(k, b, j, 0), &abs_dot);
                *tu_at(s, b, i, j) = (float)x;
                double tb = or_tol_blas_entry(score, d, x, abs_dot, nm.qn[i], nm.kn[j]);
                if (tb > worst)
                    worst = tb;
                if (tol_blas != NULL)
                    *tu_at(tol_blas, b, i, j) = (float)tb;
                if (tol_ref != NULL)
                    *tu_at(tol_ref, b, i, j) = (float)or_tol_ref_entry(score, d, x, abs_dot);
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

int or_masked(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i, size_t j) {
    (void)n;
    if (mask == NULL)
        return 0;
    if ((mask->flags & NWATTN_MASK_LEAVE_ONE_OUT) && j == i)
        return 1;
    if ((mask->flags & NWATTN_MASK_CAUSAL) && j > i)
        return 1;
    if (mask->valid_lens != NULL) {
        size_t len = (mask->flags & NWATTN_MASK_LENS_PER_ROW) ? mask->valid_lens[b * m + i]
                                                               : mask->valid_lens[b];
        if (j >= len)
            return 1;
    }
    if (mask->keep != NULL && mask->keep[b * mask->stride_keep + i * mask->ld_keep + j] == 0)
        return 1;
    return 0;
}

double or_additive(const nwattn_mask *mask, size_t b, size_t i, size_t j) {
    if (mask == NULL || mask->additive == NULL)
        return 0.0;
    return (double)mask->additive[b * mask->stride_additive + i * mask->ld_additive + j];
}

/* ---- Softmax ----------------------------------------------------------------------------- */
double or_softmax_row(const nwattn_mask *mask, size_t b, size_t m, size_t n, size_t i,
                      const double *s, double *w, double *range) {
    double mx = -INFINITY, r = 0.0;
    for (size_t j = 0; j < n; j++) {
        double x = s[j] + or_additive(mask, b, i, j);
        w[j] = (or_masked(mask, b, m, n, i, j) || x == -INFINITY) ? NAN : x;
        if (!isnan(w[j])) {
            if (x > mx)
                mx = x;
            if (fabs(x) > r)
                r = fabs(x);
        }
    }
    if (range != NULL)
        *range = r;
    if (mx == -INFINITY) {
        for (size_t j = 0; j < n; j++)
            w[j] = 0.0;
        return -INFINITY;
    }
    double sum = 0.0;
    for (size_t j = 0; j < n; j++) {
        w[j] = isnan(w[j]) ? 0.0 : exp(w[j] - mx);
        sum += w[j];
    }
    for (size_t j = 0; j < n; j++)
        w[j] /= sum;
    return mx + log(sum);
}

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
    size_t m = o->rows, n = v->rows, dv = v->cols;
    double *srow = calloc(n + 1, sizeof(double));
    double *wrow = calloc(n + 1, sizeof(double));
    assert_true(srow && wrow);
    or_pool_info acc = {0.0, 0.0, tu_mat_maxabs(v)};
    for (size_t b = 0; b < o->batch; b++) {
        or_item_norms nm = {NULL, NULL, NULL};
        if (score != NULL)
            or_item_norms_make(&nm, score, q, k, b);
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                if (score == NULL) {
                    srow[j] = 0.0;
                    continue;
                }
                double abs_dot;
                size_t d = q->cols;
                srow[j] = or_score_ex(score, d, tu_at(q, b, i, 0), tu_at(k, b, j, 0), &abs_dot);
                double tb = or_tol_blas_entry(score, d, srow[j], abs_dot, nm.qn[i], nm.kn[j]);
                if (tb > acc.score_err_blas)
                    acc.score_err_blas = tb;
            }
            double r;
            double l = or_softmax_row(mask, b, m, n, i, srow, wrow, &r);
            if (r > acc.range)
                acc.range = r;
            for (size_t c = 0; c < dv; c++) {
                double sum = 0.0;
                for (size_t j = 0; j < n; j++)
                    sum += wrow[j] * (double)tu_get(v, b, j, c);
                *tu_at(o, b, i, c) = (float)sum;
            }
            if (w != NULL)
                for (size_t j = 0; j < n; j++)
                    *tu_at(w, b, i, j) = (float)wrow[j];
            if (lse != NULL)
                *tu_at(lse, b, 0, i) = (float)l;
        }
        if (score != NULL)
            or_item_norms_free(&nm);
    }
    free(srow);
    free(wrow);
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
                double sum = 0.0, abs_sum = 0.0;
                for (size_t l = 0; l < k; l++) {
                    double p = (double)tu_get(a, t, i, l) * (double)tu_get(b, t, l, j);
                    sum += p;
                    abs_sum += fabs(p);
                }
                *tu_at(c, t, i, j) = (float)sum;
                double kk = (double)k + 4.0;
                if (tol_blas != NULL)
                    *tu_at(tol_blas, t, i, j) = (float)(kk * TU_U * abs_sum + TU_U * fabs(sum));
                if (tol_ref != NULL)
                    *tu_at(tol_ref, t, i, j) =
                        (float)(4.0 * TU_U * fabs(sum) + kk * 0x1p-52 * abs_sum);
            }
}

/* ---- Tolerances -------------------------------------------------------------------------- */
double or_rtol_weights_ref(double range) {
    return (8.0 + 4.0 * range) * TU_U;
}

double or_rtol_weights_blas(size_t n, double range, double score_err) {
    return expm1(2.0 * score_err) + ((double)n + 16.0 + 8.0 * range) * TU_U;
}

double or_atol_lse_ref(double range) {
    return (8.0 + 4.0 * range) * TU_U;
}

double or_atol_lse_blas(size_t n, double range, double score_err) {
    return score_err + ((double)n + 16.0 + 8.0 * range) * TU_U;
}

double or_atol_out_blas(size_t n, double rtol_w, double vmax) {
    return (rtol_w + ((double)n + 4.0) * TU_U) * vmax;
}

double or_atol_out_ref(size_t n, double rtol_w, double vmax) {
    return (rtol_w + 4.0 * TU_U + (double)n * 0x1p-50) * vmax;
}
