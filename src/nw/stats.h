/* Internal declarations of the regression statistics (src/nw/stats_*.c, api_nw_inference.c,
 * api_nw_bootstrap.c): the smoother weights of one row in double, with observation weights,
 * and the training-set pass every statistic needs. Never installed. */
#ifndef NWATTN_NW_STATS_H
#define NWATTN_NW_STATS_H

#include <math.h>

#include "nw.h"

/* One response (dv = 1), the reference engine, observation weights. */
typedef struct nw_smoother {
    nw_model model;    /* dv = 1 */
    nw_model constant; /* the same with degree local constant: the singular fallback */
    size_t n;
    const float *x, *y, *obs; /* obs: NULL for unit weights */
    size_t ldx;
    double *inv_h;    /* d */
    double *sums_mem; /* nw_sums_doubles */
    double *work;     /* nw_finish_work_doubles */
    double *coef;     /* p×p */
} nw_smoother;

/* Doubles of nw_smoother_init's memory (SIZE_MAX on overflow). */
size_t nw_smoother_doubles(const nw_model *model);
void nw_smoother_init(nw_smoother *sm, const nw_model *model, size_t n, const float *x,
                      size_t ldx, const float *y, const float *obs, const float *h, double *mem);

/* The observation weight of point j (1 without weights). */
static inline double nw_obs_weight(const float *obs, size_t j) {
    return obs != NULL ? (double)obs[j] : 1.0;
}
static inline double nw_obs(const nw_smoother *sm, size_t j) { return nw_obs_weight(sm->obs, j); }
/* The total observation weight of n points (n for unit weights). */
static inline double nw_obs_weight_total(const float *obs, size_t n) {
    double total = 0.0;
    for (size_t j = 0; j < n; j++)
        total += nw_obs_weight(obs, j);
    return total;
}

/* The N(0, h^2) density at distance diff: the continuous kernel of every density here. */
static inline double nw_gauss_density(double diff, double h) {
    const double u = diff / h;
    return 0.3989422804014327 / h * exp(-0.5 * u * u); /* 1 / sqrt(2 pi) */
}

/* The smoother weights at q (n doubles in ell; dell: d×n, optional) with point skip weighing
 * keep (SIZE_MAX: none). Returns the row's flags: EMPTY rows get all-zero weights, SINGULAR
 * rows the local constant's (fit and derivative). */
unsigned nw_smoother_row(nw_smoother *sm, const float *q, size_t skip, double keep, double *ell,
                         double *dell);

/* Sum of l_j^2 / w_j over the points of positive weight. */
double nw_smoother_sq(const nw_smoother *sm, const double *ell);

/* The training-set pass: fit, leave-one-out CV, traces, residuals. */
typedef struct nw_training_pass {
    nwattn_fit_summary summary;
    double *fitted;   /* n */
    double *leverage; /* n: l_ii / w_i (0 for weight 0) */
    double *resid2;   /* n: (r_i / (1 - L_ii))^2, HC3 (the heteroscedastic variances) */
} nw_training_pass;

/* Fills the pass, with ell (n doubles) as scratch; with_cv also the leave-one-out CV (twice
 * the work; summary.cv is NaN without it). */
void nw_training_run(nw_smoother *sm, nw_training_pass *pass, double *ell, int with_cv);

/* Shared argument checks of the inference functions: the model (dv = 1), x, y, obs_weights,
 * bandwidths registered on call; after nw_check_disjoint, nw_check_stats_values. */
nwattn_status nw_check_stats_inputs(nw_call *call, const nwattn_regression *model,
                                    const float *bandwidths, size_t n, size_t d, const float *x,
                                    size_t ldx, const float *y, const float *obs, nw_model *mod);
nwattn_status nw_check_stats_values(nwattn_context *ctx, const float *bandwidths, size_t n,
                                    size_t d, const float *x, size_t ldx, const float *obs);
/* Every observation weight finite and >= 0 (NULL: all 1), and at least `need` of them > 0. */
nwattn_status nw_check_obs_weights(nwattn_context *ctx, const float *obs, size_t n, size_t need);


#endif /* NWATTN_NW_STATS_H */
