/* The portable vector kernels: plain C that compilers can vectorise for the baseline ISA,
 * with the same exponential algorithm as the AVX2 kernels (see simd.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simd.h"
#include "vexp_constants.h"

static float from_bits(uint32_t bits) {
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* 2^e for -126 <= e <= 127. */
static float pow2(int32_t e) { return from_bits((uint32_t)(e + 127) << 23); }

static float exp1(float x) {
    const float round = 12582912.0f; /* 1.5 · 2^23: adding it rounds to an integer */
    float xc = x > NW_VEXP_LO ? x : NW_VEXP_LO; /* NaN becomes NW_VEXP_LO here */
    xc = xc < NW_VEXP_HI ? xc : NW_VEXP_HI;
    const float n = (xc * NW_VEXP_LOG2E + round) - round;
    float r = xc - n * NW_VEXP_C1;
    r = r - n * NW_VEXP_C2;
    float p = NW_VEXP_P0;
    p = p * r + NW_VEXP_P1;
    p = p * r + NW_VEXP_P2;
    p = p * r + NW_VEXP_P3;
    p = p * r + NW_VEXP_P4;
    p = p * r + NW_VEXP_P5;
    p = p * r + 1.0f; /* Horner to the end */
    p = p * r + 1.0f;
    const int32_t e = (int32_t)n, e1 = e / 2, e2 = e - e1; /* both in -76 .. 64 */
    const float y = (p * pow2(e1)) * pow2(e2);
    return x != x ? x : y; /* NaN in, NaN out */
}

static double exp_sum(float *x, size_t n, float shift) {
    double sum = 0.0;
    for (size_t j = 0; j < n; j++) {
        float e = exp1(x[j] - shift);
        x[j] = e;
        sum += (double)e;
    }
    return sum;
}

static float exp_sumf(float *x, size_t n, float shift) {
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (size_t l = 0; l < 4; l++) {
            float e = exp1(x[j + l] - shift);
            x[j + l] = e;
            sum[l] += e;
        }
    for (; j < n; j++) {
        x[j] = exp1(x[j] - shift);
        sum[0] += x[j];
    }
    return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

static float exp_sum_dot(const float *x, size_t n, float shift, const float *v, float *dot) {
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f}, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (size_t l = 0; l < 4; l++) {
            float e = exp1(x[j + l] - shift);
            sum[l] += e;
            acc[l] += e * v[j + l];
        }
    for (; j < n; j++) {
        float e = exp1(x[j] - shift);
        sum[0] += e;
        acc[0] += e * v[j];
    }
    *dot = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

static float max(const float *x, size_t n) {
    float m = -INFINITY;
    for (size_t j = 0; j < n; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

static float dist1(int gaussian, float u, float inv_h, const float *k, size_t n, float *s) {
    float m = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        float t = (u - k[j]) * inv_h;
        float v = gaussian ? -0.5f * t * t : -fabsf(t);
        s[j] = v;
        m = v > m ? v : m;
    }
    return m;
}

static float dot(const float *x, const float *y, size_t n) {
    float part[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (size_t l = 0; l < 8; l++)
            part[l] += x[j + l] * y[j + l];
    for (; j < n; j++)
        part[0] += x[j] * y[j];
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

const nw_simd nw_simd_generic = {"generic", exp_sum, exp_sumf, exp_sum_dot, max, dist1, dot};
