/* Range handling (range.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "range.h"

/* Rows of double scores are stored with their largest magnitude at 2^ROW_EXPONENT: far from
 * float overflow, with 2^(ROW_EXPONENT + 149) of dynamic range below it. */
#define ROW_EXPONENT 100

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

int nw_in_range(double x, int exponent) {
    return x >= ldexp(1.0, -exponent) && x <= ldexp(1.0, exponent);
}

int nw_dot_in_range(double max_q, double max_k, size_t d, double scale) {
    const double product = max_q * max_k; /* the largest |q_j k_j| */
    const double largest = product * (double)d * fmax(1.0, fabs(scale));
    return product == 0.0 ||
           (nw_in_range(product, NW_DOT_SAFE) && largest <= ldexp(1.0, NW_DOT_SAFE));
}

int nw_safe_exponent(double largest) {
    int exponent = 0;
    if (largest > 0.0 && !nw_in_range(largest, NW_SAFE_EXPONENT))
        (void)frexp(largest, &exponent);
    return exponent;
}

double nw_row_pow2_scale(size_t n, const double *x) {
    double largest = 0.0;
    for (size_t j = 0; j < n; j++)
        if (isfinite(x[j]) && fabs(x[j]) > largest)
            largest = fabs(x[j]);
    int exponent;
    (void)frexp(largest, &exponent); /* largest < 2^exponent */
    return exponent > ROW_EXPONENT ? ldexp(1.0, exponent - ROW_EXPONENT) : 1.0;
}
