/* The centred distance expansion's pieces and range checks (see blas_distance.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "blas_distance.h"

/* Rescaled coordinates of magnitude 2^-DISTANCE_SAFE .. 2^DISTANCE_SAFE are used as they are:
 * their squares, and sums of d of them, neither overflow nor underflow a float. */
#define DISTANCE_SAFE 40
/* Dot products whose largest term and sum stay within 2^-DOT_SAFE .. 2^DOT_SAFE go straight to
 * sgemm. */
#define DOT_SAFE 100

static int in_range(double x, int exponent) {
    return x >= ldexp(1.0, -exponent) && x <= ldexp(1.0, exponent);
}

void nw_inverse_bandwidths(const nw_score *score, size_t d, double *inv_h) {
    for (size_t j = 0; j < d; j++)
        inv_h[j] = 1.0 / (double)(score->bandwidths ? score->bandwidths[j] : score->bandwidth);
}

void nw_mean_key(size_t n, size_t d, const float *k, size_t ldk, double *centre) {
    for (size_t j = 0; j < d; j++) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += (double)k[i * ldk + j];
        centre[j] = n > 0 ? sum / (double)n : 0.0;
    }
}

double nw_max_rescaled(size_t rows, size_t d, const float *x, size_t ldx, const double *centre,
                       const double *inv_h) {
    double largest = 0.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < d; j++)
            largest = fmax(largest, fabs(((double)x[i * ldx + j] - centre[j]) * inv_h[j]));
    return largest;
}

int nw_distance_exponent(double largest) {
    int exponent = 0;
    if (largest > 0.0 && !in_range(largest, DISTANCE_SAFE))
        (void)frexp(largest, &exponent);
    return exponent;
}

void nw_rescale_rows(size_t rows, size_t d, const float *x, size_t ldx, const double *centre,
                     const double *inv_h, int exponent, float *out, float *norms) {
    for (size_t i = 0; i < rows; i++) {
        double norm = 0.0;
        for (size_t j = 0; j < d; j++) {
            double u = ((double)x[i * ldx + j] - centre[j]) * inv_h[j];
            float stored = (float)(exponent != 0 ? ldexp(u, -exponent) : u);
            out[i * d + j] = stored;
            norm += (double)stored * (double)stored;
        }
        norms[i] = (float)norm;
    }
}

void nw_distance_scores(nwattn_score_kind kind, size_t m, size_t n, const float *qnorm,
                        const float *knorm, float *s, size_t lds) {
    const int gaussian = kind == NWATTN_SCORE_GAUSSIAN;
    for (size_t i = 0; i < m; i++) {
        float *row = s + i * lds;
        for (size_t j = 0; j < n; j++) {
            float dist2 = qnorm[i] + knorm[j] + row[j];
            dist2 = dist2 > 0.0f ? dist2 : 0.0f; /* rounding can make it slightly negative */
            row[j] = gaussian ? -0.5f * dist2 : -sqrtf(dist2);
        }
    }
}

double nw_distance_scale(nwattn_score_kind kind, int exponent) {
    /* Gaussian scores scale with the square of the coordinates, Laplace ones linearly. */
    return ldexp(1.0, kind == NWATTN_SCORE_GAUSSIAN ? 2 * exponent : exponent);
}

double nw_max_abs(size_t rows, size_t cols, const float *x, size_t ldx) {
    /* On the bits: |x| orders like its bit pattern without the sign, and Inf and NaN are the
     * patterns from 0x7f800000 up. An integer max the compiler vectorises. */
    uint32_t largest = 0;
    for (size_t i = 0; i < rows; i++) {
        const float *row = x + i * ldx;
        for (size_t j = 0; j < cols; j++) {
            uint32_t bits;
            memcpy(&bits, &row[j], sizeof bits);
            bits &= 0x7fffffffu;
            largest = bits > largest ? bits : largest;
        }
    }
    if (largest >= 0x7f800000u)
        return -1.0;
    float value;
    memcpy(&value, &largest, sizeof value);
    return (double)value;
}

int nw_dot_in_range(double max_q, double max_k, size_t d, float scale) {
    const double product = max_q * max_k; /* the largest |q_j k_j| */
    const double largest = product * (double)d * fmax(1.0, fabs((double)scale));
    return product == 0.0 || (in_range(product, DOT_SAFE) && largest <= ldexp(1.0, DOT_SAFE));
}

void nw_distance_scores_1d(nwattn_score_kind kind, size_t m, size_t n, const float *qp,
                           const float *kp, float *s, size_t lds) {
    const int gaussian = kind == NWATTN_SCORE_GAUSSIAN;
    for (size_t i = 0; i < m; i++) {
        float *row = s + i * lds;
        for (size_t j = 0; j < n; j++) {
            float u = qp[i] - kp[j];
            row[j] = gaussian ? -0.5f * u * u : -fabsf(u);
        }
    }
}
