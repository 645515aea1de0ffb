/* Reference scores: the definitions evaluated directly in double, (q - k)^2 included, so that
 * cancellation in the BLAS path's |q|^2 + |k|^2 - 2 q·k expansion shows up against it. */
#include <math.h>

#include "ref_kernels.h"

static double inverse_bandwidth(const nw_score *score, size_t j) {
    return 1.0 / (double)(score->bandwidths ? score->bandwidths[j] : score->bandwidth);
}

/* sum_j ((q_j - k_j) / h_j)^2 */
static double scaled_squared_distance(const nw_score *score, size_t d, const float *q,
                                      const float *k) {
    double sum = 0.0;
    for (size_t j = 0; j < d; j++) {
        double u = ((double)q[j] - (double)k[j]) * inverse_bandwidth(score, j);
        sum += u * u;
    }
    return sum;
}

static double dot(size_t d, const float *q, const float *k) {
    double sum = 0.0;
    for (size_t j = 0; j < d; j++)
        sum += (double)q[j] * (double)k[j];
    return sum;
}

double nw_ref_score(const nw_score *score, size_t d, const float *q, const float *k) {
    switch ((int)score->kind) { /* int: NW_SCORE_ZERO is outside the public enum */
    case NWATTN_SCORE_DOT:
        return (double)score->scale * dot(d, q, k);
    case NWATTN_SCORE_GAUSSIAN:
        return -0.5 * scaled_squared_distance(score, d, q, k);
    case NWATTN_SCORE_LAPLACE:
        return -sqrt(scaled_squared_distance(score, d, q, k));
    case NW_SCORE_ZERO:
        return 0.0;
    }
    return NAN; /* unreachable: kinds are validated before dispatch */
}

size_t nw_ref_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    (void)score, (void)m, (void)n, (void)d;
    return 0;
}

void nw_ref_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                   size_t ldq, const float *k, size_t ldk, float *s, size_t lds, void *scratch) {
    (void)scratch;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            s[i * lds + j] = (float)nw_ref_score(score, d, q + i * ldq, k + j * ldk);
}
