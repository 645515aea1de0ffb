/* nwattn_pool_backward's reference: the definition in double, one query row at a time.
 * Per row i of item b: the live values x_ij (score + additive) and the weights P_ij by the
 * softmax row contract (core/row_state.h), dP_ij = dO_i . v_j, D_i = sum_j P_ij dP_ij,
 * dS_ij = P_ij (dP_ij - D_i); then the kind's chain rule (score/score_grad.h) with g and r
 * summed in double. Masked pairs are never looked at, so their keys get exactly zero. O and
 * lse are not read: the weights are recomputed in double. dS itself (the additive mask's
 * gradient) is rounded once per item; a shared one adds the items' rows in item order. */
#include <string.h>

#include "backward.h"
#include "core/row_state.h"
#include "mask.h"
#include "ref_kernels.h"
#include "score/score_grad.h"

/* Doubles of one item's working memory: centre, keys as operands, their g and r, dV, and per
 * row the values, scores, weights, dP, the query operand, its g and the gradient. */
static int item_doubles(const nw_backward_args *a, size_t *out) {
    size_t nd, ndv, total;
    const size_t params = nw_grad_params(&a->score, a->d);
    if (!nw_mul(a->n, a->d, &nd) || !nw_mul(a->n, a->dv, &ndv) || !nw_mul(nd, 2, &total) ||
        !nw_add(total, ndv, &total) || !nw_add(total, 5 * (a->n + 1), &total) ||
        !nw_add(total, 4 * a->d + params + 4, &total))
        return 0;
    *out = total;
    return 1;
}

size_t nw_ref_backward_workspace(const nw_backward_args *a) {
    size_t doubles, bytes;
    return item_doubles(a, &doubles) && nw_mul(doubles, sizeof(double), &bytes) ? bytes
                                                                              : SIZE_MAX;
}

typedef struct ref_item {
    double *centre, *kt, *hk, *ck, *dvk; /* d, n·d, n·d, n, n·dv */
    double *x, *s, *p, *dp;              /* n each */
    double *qt, *g, *dx;                 /* d each */
} ref_item;

static double *take(double **cursor, size_t count) {
    double *piece = *cursor;
    *cursor += count;
    return piece;
}

static void item_carve(const nw_backward_args *a, double *scratch, ref_item *it) {
    const size_t n = a->n, d = a->d;
    it->centre = take(&scratch, d);
    it->kt = take(&scratch, n * d);
    it->hk = take(&scratch, n * d);
    it->ck = take(&scratch, n + 1);
    it->dvk = take(&scratch, n * a->dv);
    it->x = take(&scratch, n + 1);
    it->s = take(&scratch, n + 1);
    it->p = take(&scratch, n + 1);
    it->dp = take(&scratch, n + 1);
    it->qt = take(&scratch, d);
    it->g = take(&scratch, d);
    it->dx = take(&scratch, d);
}

/* Row i of item b: its weights, dS and chain rule; accumulates the keys' sums. */
static void ref_row(const nw_backward_args *a, const ref_item *it, size_t b, size_t i,
                    double *dparam) {
    const size_t n = a->n, d = a->d, dv = a->dv;
    const float *q = NW_BITEM(a, q, b) + i * a->ldq, *k = NW_BITEM(a, k, b);
    const float *v = NW_BITEM(a, v, b), *d_o = NW_BITEM(a, d_o, b) + i * a->ld_do;
    float *dq = NW_BITEM(a, gq, b) + i * a->ld_gq;
    const nw_mask_row rm = nw_mask_row_get(&a->mask, b, i, n);
    nw_tile tile = nw_tile_empty();
    for (size_t j = 0; j < n; j++) {
        const int live = j < rm.limit && !nw_mask_row_drops(&rm, j);
        it->s[j] = live ? nw_ref_score(&a->score, d, q, k + j * a->ldk) : -INFINITY;
        it->x[j] = live ? nw_mask_value_d(&rm, it->s[j], j) : -INFINITY;
        nw_tile_see(&tile, it->x[j]);
    }
    nw_row row = nw_row_empty();
    nw_row_rescale(&row, &tile);
    double sum = 0.0;
    for (size_t j = 0; j < n; j++)
        sum += nw_row_factor(&row, it->x[j]);
    nw_row_add(&row, sum);
    double big_d = 0.0;
    for (size_t j = 0; j < n; j++) {
        it->p[j] = 0.0;
        if (it->x[j] == -INFINITY)
            continue;
        it->p[j] = nw_row_weight(&row, it->x[j]);
        double dp = 0.0;
        for (size_t c = 0; c < dv; c++)
            dp += (double)d_o[c] * (double)v[j * a->ldv + c];
        it->dp[j] = dp;
        big_d += it->p[j] * dp;
    }
    if (a->gs != NULL) { /* dS itself: the additive mask's gradient */
        float *gs = nw_backward_gs_row(a, b, i);
        const int adds = nw_backward_gs_adds(a, b);
        for (size_t j = 0; j < n; j++) {
            const double ds = it->x[j] == -INFINITY ? 0.0 : it->p[j] * (it->dp[j] - big_d);
            gs[j] = adds ? (float)((double)gs[j] + ds) : (float)ds;
        }
    }
    nw_grad_operand(&a->score, d, q, it->centre, it->qt);
    const nw_score_grad *rule = nw_grad_of(&a->score);
    double r = 0.0;
    memset(it->g, 0, d * sizeof(double));
    for (size_t j = 0; j < n; j++) {
        if (it->x[j] == -INFINITY)
            continue;
        const double e = rule->coeff(it->p[j] * (it->dp[j] - big_d), it->s[j]);
        r += e;
        it->ck[j] += e;
        for (size_t l = 0; l < d; l++) {
            it->g[l] += e * it->kt[j * d + l];
            it->hk[j * d + l] += e * it->qt[l];
        }
        for (size_t c = 0; c < dv; c++)
            it->dvk[j * dv + c] += it->p[j] * (double)d_o[c];
    }
    nw_grad_finish_row(&a->score, d, q, it->centre, it->g, r, 1, it->dx, dparam);
    for (size_t l = 0; l < d; l++)
        dq[l] = (float)it->dx[l];
}

void nw_ref_backward(const nw_backward_args *a, void *scratch) {
    const size_t n = a->n, d = a->d, dv = a->dv, params = nw_grad_params(&a->score, d);
    ref_item it;
    item_carve(a, scratch, &it);
    double *dparam = it.dx + d;
    memset(dparam, 0, params * sizeof(double));
    for (size_t b = 0; b < a->batch; b++) {
        const float *k = NW_BITEM(a, k, b);
        nw_grad_centre(&a->score, n, d, k, a->ldk, it.centre);
        for (size_t j = 0; j < n; j++)
            nw_grad_operand(&a->score, d, k + j * a->ldk, it.centre, it.kt + j * d);
        memset(it.hk, 0, n * d * sizeof(double));
        memset(it.ck, 0, n * sizeof(double));
        memset(it.dvk, 0, n * dv * sizeof(double));
        for (size_t i = 0; i < a->m; i++)
            ref_row(a, &it, b, i, dparam);
        float *dk = NW_BITEM(a, gk, b), *dvo = NW_BITEM(a, gv, b);
        for (size_t j = 0; j < n; j++) {
            nw_grad_finish_row(&a->score, d, k + j * a->ldk, it.centre, it.hk + j * d, it.ck[j],
                               0, it.dx, dparam);
            for (size_t l = 0; l < d; l++)
                dk[j * a->ld_gk + l] = (float)it.dx[l];
            for (size_t c = 0; c < dv; c++)
                dvo[j * a->ld_gv + c] = (float)it.dvk[j * dv + c];
        }
    }
    for (size_t l = 0; a->dparam != NULL && l < params; l++)
        a->dparam[l] = (float)dparam[l];
}

void nw_backward_zero(const nw_backward_args *a) {
    for (size_t b = 0; b < a->batch; b++) {
        for (size_t i = 0; i < a->m; i++)
            memset(NW_BITEM(a, gq, b) + i * a->ld_gq, 0, a->d * sizeof(float));
        for (size_t j = 0; j < a->n; j++) {
            memset(NW_BITEM(a, gk, b) + j * a->ld_gk, 0, a->d * sizeof(float));
            memset(NW_BITEM(a, gv, b) + j * a->ld_gv, 0, a->dv * sizeof(float));
        }
    }
    for (size_t l = 0; a->dparam != NULL && l < nw_grad_params(&a->score, a->d); l++)
        a->dparam[l] = 0.0f;
}
