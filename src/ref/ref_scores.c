/* Reference scores: the definitions evaluated directly in double, (q - k)^2 included, so that
 * cancellation in the BLAS path's |q|^2 + |k|^2 - 2 q·k expansion shows up against it. */
#include <math.h>

#include "ref_kernels.h"

/* Scores up to this magnitude are stored as plain floats (row scale 1); larger rows are scaled
 * so that their largest score becomes 2^SAFE_EXPONENT, far from float overflow, while the
 * scores below it keep 2^(SAFE_EXPONENT + 149) of dynamic range before they underflow. */
#define SAFE_EXPONENT 100

static double inverse_bandwidth(const nw_score *score, size_t j) {
    return 1.0 / (double)(score->bandwidths ? score->bandwidths[j] : score->bandwidth);
}

/* sum_j ((q_j - k_j) / h_j)^2; cannot overflow double for float data: each term is at most
 * (2·FLT_MAX / FLT_TRUE_MIN)^2 < 2^560. */
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
    (void)score, (void)m, (void)d;
    size_t bytes;
    return nw_mul(n, sizeof(double), &bytes) ? bytes : SIZE_MAX; /* one row of double scores */
}

/* The power of two that brings the row's largest finite |score| down to 2^SAFE_EXPONENT, or 1. */
static double row_scale_of(size_t n, const double *row) {
    double largest = 0.0;
    for (size_t j = 0; j < n; j++)
        if (isfinite(row[j]) && fabs(row[j]) > largest)
            largest = fabs(row[j]);
    int exponent;
    (void)frexp(largest, &exponent); /* largest < 2^exponent */
    return exponent > SAFE_EXPONENT ? ldexp(1.0, exponent - SAFE_EXPONENT) : 1.0;
}

void nw_ref_scores(const nw_score *score, size_t m, size_t n, size_t d, const float *q,
                   size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                   double *row_scale, void *scratch) {
    double *row = scratch;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            row[j] = nw_ref_score(score, d, q + i * ldq, k + j * ldk);
        const double scale = row_scale_of(n, row);
        for (size_t j = 0; j < n; j++)
            t[i * ldt + j] = (float)(row[j] / scale); /* exact: scale is a power of two */
        row_scale[i] = scale;
    }
}
