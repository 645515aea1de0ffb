/* The AVX2 + FMA vector kernels, eight floats at a time. This file alone is compiled with
 * -mavx2 -mfma; nw_simd_select hands its table out only on CPUs that have both. The
 * exponential is the generic one's algorithm (see simd.h), with fused multiply-adds. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "simd.h"
#include "vexp_constants.h"

static inline __m256 exp8(__m256 x) {
    /* max/min return their second operand if either is NaN: NaN stays NaN, and every step
     * below keeps it (a NaN times any scale factor is NaN). */
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(NW_VEXP_LO), x);
    xc = _mm256_min_ps(_mm256_set1_ps(NW_VEXP_HI), xc);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(NW_VEXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(NW_VEXP_C1), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(NW_VEXP_C2), r);
    __m256 p = _mm256_set1_ps(NW_VEXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(NW_VEXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(NW_VEXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(NW_VEXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(NW_VEXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(NW_VEXP_P5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f)); /* Horner to the end */
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n = 2^e1 · 2^e2 with e1 = n >> 1, both factors normal for n in -151 .. 128. */
    const __m256i e = _mm256_cvtps_epi32(n);
    const __m256i e1 = _mm256_srai_epi32(e, 1), e2 = _mm256_sub_epi32(e, e1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* Lanes j < count of a partial vector: a mask for maskload/maskstore. */
static inline __m256i tail_mask(size_t count) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), lanes);
}

static inline __m256d add_widened(__m256d sum, __m256 v) {
    sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

static inline double hsum_pd(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

static inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

static inline float hmax_ps(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

static double exp_sum(float *x, size_t n, float shift) {
    const __m256 sh = _mm256_set1_ps(shift);
    __m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 a = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), sh));
        __m256 b = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), sh));
        _mm256_storeu_ps(x + j, a);
        _mm256_storeu_ps(x + j + 8, b);
        sum0 = add_widened(sum0, a);
        sum1 = add_widened(sum1, b);
    }
    for (; j < n; j += 8) {
        const __m256i mask = tail_mask(n - j);
        /* Masked-off lanes load 0, whose exponential is never stored; zero them for the sum. */
        __m256 a = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + j, mask), sh));
        a = _mm256_and_ps(a, _mm256_castsi256_ps(mask));
        _mm256_maskstore_ps(x + j, mask, a);
        sum0 = add_widened(sum0, a);
    }
    return hsum_pd(_mm256_add_pd(sum0, sum1));
}

static float exp_sumf(float *x, size_t n, float shift) {
    const __m256 sh = _mm256_set1_ps(shift);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 a = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), sh));
        __m256 b = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), sh));
        _mm256_storeu_ps(x + j, a);
        _mm256_storeu_ps(x + j + 8, b);
        s0 = _mm256_add_ps(s0, a);
        s1 = _mm256_add_ps(s1, b);
    }
    for (; j < n; j += 8) {
        const __m256i mask = tail_mask(n - j);
        __m256 a = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + j, mask), sh));
        a = _mm256_and_ps(a, _mm256_castsi256_ps(mask));
        _mm256_maskstore_ps(x + j, mask, a);
        s0 = _mm256_add_ps(s0, a);
    }
    return hsum_ps(_mm256_add_ps(s0, s1));
}

static float exp_sum_dot(const float *x, size_t n, float shift, const float *v, float *dot) {
    const __m256 sh = _mm256_set1_ps(shift);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, a0 = s0, a1 = s0;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), sh));
        __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), sh));
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
        a0 = _mm256_fmadd_ps(e0, _mm256_loadu_ps(v + j), a0);
        a1 = _mm256_fmadd_ps(e1, _mm256_loadu_ps(v + j + 8), a1);
    }
    for (; j < n; j += 8) {
        const __m256i mask = tail_mask(n - j);
        __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + j, mask), sh));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
        s0 = _mm256_add_ps(s0, e);
        a0 = _mm256_fmadd_ps(e, _mm256_maskload_ps(v + j, mask), a0);
    }
    *dot = hsum_ps(_mm256_add_ps(a0, a1));
    return hsum_ps(_mm256_add_ps(s0, s1));
}

/* max_ps(v, m) returns m when v is NaN: NaN never wins, as in the scalar loops. */
static float max(const float *x, size_t n) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + j), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + j + 8), m1);
    }
    float m = hmax_ps(_mm256_max_ps(m0, m1));
    for (; j < n; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

static inline __m256 distance8(int gaussian, __m256 u, __m256 inv_h, __m256 k) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(u, k), inv_h);
    if (gaussian) /* (-0.5 t) t, the scalar evaluation order */
        return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), t), t);
    return _mm256_or_ps(t, _mm256_set1_ps(-0.0f)); /* -|t|: set the sign bit */
}

static float dist1(int gaussian, float u, float inv_h, const float *k, size_t n, float *s) {
    const __m256 uu = _mm256_set1_ps(u), ih = _mm256_set1_ps(inv_h);
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256 t0 = distance8(gaussian, uu, ih, _mm256_loadu_ps(k + j));
        const __m256 t1 = distance8(gaussian, uu, ih, _mm256_loadu_ps(k + j + 8));
        _mm256_storeu_ps(s + j, t0);
        _mm256_storeu_ps(s + j + 8, t1);
        m0 = _mm256_max_ps(t0, m0);
        m1 = _mm256_max_ps(t1, m1);
    }
    float m = hmax_ps(_mm256_max_ps(m0, m1));
    for (; j < n; j++) {
        float t = (u - k[j]) * inv_h;
        float v = gaussian ? -0.5f * t * t : -fabsf(t);
        s[j] = v;
        m = v > m ? v : m;
    }
    return m;
}

static float dot(const float *x, const float *y, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 16), _mm256_loadu_ps(y + j + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 24), _mm256_loadu_ps(y + j + 24), a3);
    }
    for (; j + 8 <= n; j += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; j < n; j++)
        sum += x[j] * y[j];
    return sum;
}

const nw_simd nw_simd_avx2 = {"avx2", exp_sum, exp_sumf, exp_sum_dot, max, dist1, dot};
