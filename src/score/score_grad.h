/* The chain rules of the score kinds, written once for both backward paths (the reference in
 * double, the fused tiles through sgemm).
 *
 * Backpropagation through a pooling gives dS_ij = P_ij (dP_ij - D_i) for every live pair. Each
 * kind turns that into its gradients in three steps, all of them the kind's own:
 *   1. coeff: the factor E_ij = coeff(dS_ij, s_ij) a pair brings into the products;
 *   2. operand: how a row x enters the products, x~ (the row itself, the row minus the mean
 *      key, or the unit row);
 *   3. finish: a query row's gradient from g_i = sum_j E_ij k~_j and r_i = sum_j E_ij (a key
 *      row's likewise from sum_i E_ij q~_i and sum_i E_ij: every kind is symmetric in q and k),
 *      with the row's share of the parameter gradient.
 * The paths differ only in how they form g and r (double loops, or float tiles of E times
 * tiles of x~ through sgemm).
 *   dot      s = a q.k:        E = dS, x~ = x, dq = a g, da = sum over query rows of q.g
 *   cosine   s = a q^.k^:      E = dS, x~ = x/|x|, dq = (a/|q|)(g - (q^.g) q^), da = sum q^.g
 *   gaussian s = -sum (q-k)^2/(2h^2): E = dS, x~ = x - c, dq_l = (g_l - r q~_l)/h_l^2
 *   laplace  s = -|(q-k)/h|:   E = dS/|(q-k)/h| (0 where q = k), then as gaussian
 * For both distances the scores are unchanged when coordinate l of every q and k and h_l are
 * scaled together, so h_l dL/dh_l = -(sum_i q~_il dq_il + sum_j k~_jl dk_jl): the bandwidth
 * gradient comes from the rows' gradients, with no third product. The centre c (the mean of
 * the finite keys) cancels in exact arithmetic; it keeps data far from the origin from
 * cancelling in float. */
#ifndef NWATTN_SCORE_GRAD_H
#define NWATTN_SCORE_GRAD_H

#include "score.h"

typedef struct nw_score_grad {
    /* E for a live pair from its dS and its score (without the additive mask). */
    double (*coeff)(double ds, double score);
    /* Whether rows enter the products centred on the mean key (distances), unit (cosine). */
    int centred, unit;
    /* coeff is dS itself (every kind but Laplace): the fused tiles' float path applies. */
    int plain;
    /* dx (d doubles) from g (d doubles) and r; adds the row's share to dparam
     * (nw_grad_params entries). query: the row is a query (the scaled kinds count only those). */
    void (*finish)(const nw_score *score, size_t d, const float *x, const double *centre,
                   const double *g, double r, int query, double *dx, double *dparam);
} nw_score_grad;

extern const nw_score_grad nw_grad_dot, nw_grad_cosine, nw_grad_gaussian, nw_grad_laplace;

/* The rule of the score's kind (NULL for the uniform score, which has nothing to learn). */
const nw_score_grad *nw_grad_of(const nw_score *score);

/* Parameter gradients the score has: 1 (scale, or a scalar bandwidth) or d (per dimension). */
size_t nw_grad_params(const nw_score *score, size_t d);

/* The centre of a distance kind: the mean of the keys whose coordinates are all finite (0 if
 * none, and for the other kinds). centre: d doubles. */
void nw_grad_centre(const nw_score *score, size_t n, size_t d, const float *k, size_t ldk,
                    double *centre);

/* out (d doubles) = x~, the row as the products take it. */
void nw_grad_operand(const nw_score *score, size_t d, const float *x, const double *centre,
                     double *out);

/* A row's gradient: exactly 0 (and no parameter share) when g and r are all 0, i.e. the row
 * faced no live pair; else the kind's finish. */
void nw_grad_finish_row(const nw_score *score, size_t d, const float *x, const double *centre,
                        const double *g, double r, int query, double *dx, double *dparam);

#endif /* NWATTN_SCORE_GRAD_H */
