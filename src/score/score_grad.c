/* The chain rules of the score kinds (score_grad.h). */
#include <math.h>

#include "score_grad.h"

static double plain_coeff(double ds, double score) {
    (void)score;
    return ds;
}

/* Laplace: ds/dq = -(q - k)/(h^2 |(q-k)/h|): the Gaussian's rule with dS / distance. At q = k
 * the score has no derivative; its subgradient 0 is used (as torch.norm's backward does). */
static double laplace_coeff(double ds, double score) {
    return score < 0.0 ? ds / -score : 0.0;
}

static void dot_finish(const nw_score *score, size_t d, const float *x, const double *centre,
                       const double *g, double r, int query, double *dx, double *dparam) {
    (void)centre, (void)r;
    double xg = 0.0;
    for (size_t l = 0; l < d; l++) {
        dx[l] = (double)score->scale * g[l];
        xg += (double)x[l] * g[l];
    }
    if (query)
        dparam[0] += xg;
}

static void cosine_finish(const nw_score *score, size_t d, const float *x, const double *centre,
                          const double *g, double r, int query, double *dx, double *dparam) {
    (void)centre, (void)r;
    double norm = 0.0;
    for (size_t l = 0; l < d; l++)
        norm += (double)x[l] * (double)x[l];
    if (norm == 0.0) { /* a zero row has a constant score 0 */
        for (size_t l = 0; l < d; l++)
            dx[l] = 0.0;
        return;
    }
    const double inv = 1.0 / sqrt(norm);
    double ug = 0.0; /* x^.g = sum_j E_ij cos_ij */
    for (size_t l = 0; l < d; l++)
        ug += (double)x[l] * inv * g[l];
    const double factor = (double)score->scale * inv;
    for (size_t l = 0; l < d; l++)
        dx[l] = factor * (g[l] - ug * (double)x[l] * inv);
    if (query)
        dparam[0] += ug;
}

static double inv_bandwidth(const nw_score *score, size_t l) {
    return 1.0 / (double)(score->bandwidths ? score->bandwidths[l] : score->bandwidth);
}

static void distance_finish(const nw_score *score, size_t d, const float *x,
                            const double *centre, const double *g, double r, int query,
                            double *dx, double *dparam) {
    (void)query;
    for (size_t l = 0; l < d; l++) {
        const double inv_h = inv_bandwidth(score, l), xc = (double)x[l] - centre[l];
        dx[l] = (g[l] - r * xc) * inv_h * inv_h;
        dparam[score->bandwidths ? l : 0] -= xc * dx[l] * inv_h;
    }
}

const nw_score_grad nw_grad_dot = {.coeff = plain_coeff, .plain = 1, .finish = dot_finish};
const nw_score_grad nw_grad_cosine = {
    .coeff = plain_coeff, .unit = 1, .plain = 1, .finish = cosine_finish};
const nw_score_grad nw_grad_gaussian = {
    .coeff = plain_coeff, .centred = 1, .plain = 1, .finish = distance_finish};
const nw_score_grad nw_grad_laplace = {
    .coeff = laplace_coeff, .centred = 1, .finish = distance_finish};

const nw_score_grad *nw_grad_of(const nw_score *score) {
    switch (score->desc->constant ? -1 : (int)score->kind) {
    case NWATTN_SCORE_DOT:
        return &nw_grad_dot;
    case NWATTN_SCORE_COSINE:
        return &nw_grad_cosine;
    case NWATTN_SCORE_GAUSSIAN:
        return &nw_grad_gaussian;
    case NWATTN_SCORE_LAPLACE:
        return &nw_grad_laplace;
    }
    return NULL;
}

size_t nw_grad_params(const nw_score *score, size_t d) {
    return score->bandwidths != NULL && nw_grad_of(score)->centred ? d : 1;
}

static int row_finite(size_t d, const float *x) {
    for (size_t l = 0; l < d; l++)
        if (!isfinite(x[l]))
            return 0;
    return 1;
}

void nw_grad_centre(const nw_score *score, size_t n, size_t d, const float *k, size_t ldk,
                    double *centre) {
    for (size_t l = 0; l < d; l++)
        centre[l] = 0.0;
    if (!nw_grad_of(score)->centred)
        return;
    size_t count = 0;
    for (size_t j = 0; j < n; j++) {
        const float *row = k + j * ldk;
        if (!row_finite(d, row))
            continue;
        count++;
        for (size_t l = 0; l < d; l++)
            centre[l] += (double)row[l];
    }
    for (size_t l = 0; count > 0 && l < d; l++)
        centre[l] /= (double)count;
}

void nw_grad_operand(const nw_score *score, size_t d, const float *x, const double *centre,
                     double *out) {
    const nw_score_grad *rule = nw_grad_of(score);
    double inv = 1.0;
    if (rule->unit) {
        double norm = 0.0;
        for (size_t l = 0; l < d; l++)
            norm += (double)x[l] * (double)x[l];
        inv = norm > 0.0 ? 1.0 / sqrt(norm) : 0.0;
    }
    for (size_t l = 0; l < d; l++)
        out[l] = rule->centred ? (double)x[l] - centre[l] : (double)x[l] * inv;
}

void nw_grad_finish_row(const nw_score *score, size_t d, const float *x, const double *centre,
                        const double *g, double r, int query, double *dx, double *dparam) {
    int any = r != 0.0;
    for (size_t l = 0; !any && l < d; l++)
        any = g[l] != 0.0;
    if (!any) {
        for (size_t l = 0; l < d; l++)
            dx[l] = 0.0;
        return;
    }
    nw_grad_of(score)->finish(score, d, x, centre, g, r, query, dx, dparam);
}
