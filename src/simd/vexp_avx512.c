/* The AVX-512F vector kernels, sixteen floats at a time. This file alone is compiled with
 * -mavx512f; nw_simd_select hands its table out only on CPUs (and kernels) that support it.
 * The exponential is the generic one's algorithm (see simd.h) with one difference: 2^n is
 * applied by vscalefps, which rounds once also into the denormal range, so no two-factor
 * split is needed. Operand order makes NaN propagate through max/min (they return their
 * second operand when either is NaN), so no NaN fix-up is needed either. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "simd.h"
#include "vexp_constants.h"

static inline __m512 exp16(__m512 x) {
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(NW_VEXP_LO), x); /* NaN stays NaN */
    xc = _mm512_min_ps(_mm512_set1_ps(NW_VEXP_HI), xc);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(NW_VEXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(NW_VEXP_C1), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(NW_VEXP_C2), r);
    __m512 p = _mm512_set1_ps(NW_VEXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(NW_VEXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(NW_VEXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(NW_VEXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(NW_VEXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(NW_VEXP_P5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f)); /* Horner to the end: one op less */
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

static inline __mmask16 tail_mask(size_t count) {
    return (__mmask16)(count >= 16 ? 0xffffu : (1u << count) - 1u);
}

static inline __m512d add_widened(__m512d sum, __m512 v) {
    sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return _mm512_add_pd(sum, _mm512_cvtps_pd(high));
}

static double exp_sum(float *x, size_t n, float shift) {
    const __m512 sh = _mm512_set1_ps(shift);
    __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 a = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), sh));
        __m512 b = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), sh));
        _mm512_storeu_ps(x + j, a);
        _mm512_storeu_ps(x + j + 16, b);
        sum0 = add_widened(sum0, a);
        sum1 = add_widened(sum1, b);
    }
    for (; j < n; j += 16) {
        const __mmask16 mask = tail_mask(n - j);
        __m512 a = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + j), sh));
        a = _mm512_maskz_mov_ps(mask, a);
        _mm512_mask_storeu_ps(x + j, mask, a);
        sum0 = add_widened(sum0, a);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
}

static float exp_sumf(float *x, size_t n, float shift) {
    const __m512 sh = _mm512_set1_ps(shift);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 a = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), sh));
        __m512 b = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), sh));
        _mm512_storeu_ps(x + j, a);
        _mm512_storeu_ps(x + j + 16, b);
        s0 = _mm512_add_ps(s0, a);
        s1 = _mm512_add_ps(s1, b);
    }
    for (; j < n; j += 16) {
        const __mmask16 mask = tail_mask(n - j);
        __m512 a = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + j), sh));
        a = _mm512_maskz_mov_ps(mask, a);
        _mm512_mask_storeu_ps(x + j, mask, a);
        s0 = _mm512_add_ps(s0, a);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static float exp_sum_dot(const float *x, size_t n, float shift, const float *v, float *dot) {
    const __m512 sh = _mm512_set1_ps(shift);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, a0 = s0, a1 = s0;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), sh));
        __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), sh));
        s0 = _mm512_add_ps(s0, e0);
        s1 = _mm512_add_ps(s1, e1);
        a0 = _mm512_fmadd_ps(e0, _mm512_loadu_ps(v + j), a0);
        a1 = _mm512_fmadd_ps(e1, _mm512_loadu_ps(v + j + 16), a1);
    }
    for (; j < n; j += 16) {
        const __mmask16 mask = tail_mask(n - j);
        __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + j), sh));
        e = _mm512_maskz_mov_ps(mask, e);
        s0 = _mm512_add_ps(s0, e);
        a0 = _mm512_fmadd_ps(e, _mm512_maskz_loadu_ps(mask, v + j), a0);
    }
    *dot = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

/* max_ps(v, m) returns m when v is NaN: NaN never wins, as in the scalar loops. */
static float max(const float *x, size_t n) {
    const __m512 none = _mm512_set1_ps(-INFINITY);
    __m512 m0 = none, m1 = none;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + j), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + j + 16), m1);
    }
    for (; j < n; j += 16)
        m0 = _mm512_max_ps(_mm512_mask_loadu_ps(none, tail_mask(n - j), x + j), m0);
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

static inline __m512 distance(int gaussian, __m512 u, __m512 inv_h, __m512 k) {
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(u, k), inv_h);
    if (gaussian) /* (-0.5 t) t, the scalar evaluation order */
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), t), t);
    /* -|t|: set the sign bit */
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(t), _mm512_set1_epi32((int)0x80000000u)));
}

static float dist1(int gaussian, float u, float inv_h, const float *k, size_t n, float *s) {
    const __m512 uu = _mm512_set1_ps(u), ih = _mm512_set1_ps(inv_h);
    const __m512 none = _mm512_set1_ps(-INFINITY);
    __m512 m0 = none, m1 = none;
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m512 t0 = distance(gaussian, uu, ih, _mm512_loadu_ps(k + j));
        const __m512 t1 = distance(gaussian, uu, ih, _mm512_loadu_ps(k + j + 16));
        _mm512_storeu_ps(s + j, t0);
        _mm512_storeu_ps(s + j + 16, t1);
        m0 = _mm512_max_ps(t0, m0);
        m1 = _mm512_max_ps(t1, m1);
    }
    for (; j < n; j += 16) {
        const __mmask16 mask = tail_mask(n - j);
        const __m512 t = distance(gaussian, uu, ih, _mm512_maskz_loadu_ps(mask, k + j));
        _mm512_mask_storeu_ps(s + j, mask, t);
        m0 = _mm512_max_ps(_mm512_mask_mov_ps(none, mask, t), m0);
    }
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

static float dot(const float *x, const float *y, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t j = 0;
    for (; j + 64 <= n; j += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + j), _mm512_loadu_ps(y + j), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + j + 16), _mm512_loadu_ps(y + j + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + j + 32), _mm512_loadu_ps(y + j + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + j + 48), _mm512_loadu_ps(y + j + 48), a3);
    }
    for (; j < n; j += 16) {
        const __mmask16 mask = tail_mask(n - j);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + j), _mm512_maskz_loadu_ps(mask, y + j),
                             a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

const nw_simd nw_simd_avx512 = {"avx512", exp_sum, exp_sumf, exp_sum_dot, max, dist1, dot};
