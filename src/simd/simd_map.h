/* The SIMD mapping layer: the few vector primitives the kernels of vexp_impl.h are written
 * over, for one instruction set per translation unit. Define NW_SIMD_MAP to one of the levels
 * of cpu.h before including it (vexp_generic.c, vexp_avx2.c, vexp_avx512.c); the AVX2 and
 * AVX-512 files are compiled with the matching -m flags (src/CMakeLists.txt).
 *
 *   nw_vf            NW_VL floats (generic: 4, AVX2: 8, AVX-512: 16)
 *   nw_vd            double accumulators for the widened sum of one nw_vf
 *   nw_vm            the lanes j < count of a partial vector (nw_tail(count), count > 0;
 *                    count >= NW_VL means all)
 *   zero set1 load store load_tail (masked-off lanes 0) load_or (... fill) store_tail
 *   keep (masked-off lanes 0) keep_or (... fill)
 *   add sub mul fmadd (a b + c) fnmadd (c - a b) max min (x86 semantics: a > b ? a : b, so the
 *   second operand wins when either is NaN) negabs (-|x|) hsum hmax
 *   vd_zero vd_add vd_add_widened vd_hsum
 *   transpose8 (an 8×8 block of floats, any pitches)
 *   exp pieces: exp_clamp (into [NW_VEXP_LO, NW_VEXP_HI]), round (to nearest even), scale2
 *   (p 2^n for integral n in -151 .. 128, rounded once), exp_nan (the result for NaN input).
 *
 * Everything is inline: the kernels compile to the code the hand-written files had. */
#ifndef NWATTN_SIMD_MAP_H
#define NWATTN_SIMD_MAP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "vexp_constants.h"

#ifndef NW_SIMD_MAP
#error "define NW_SIMD_MAP (a level of cpu.h) before including simd_map.h"
#endif

#if defined(__GNUC__)
#define NW_MAP_INLINE static inline __attribute__((always_inline))
#else
#define NW_MAP_INLINE static inline
#endif

/* ================================================================================ AVX-512 == */
#if NW_SIMD_MAP == NW_SIMD_LEVEL_AVX512
#include <immintrin.h>

#define NW_VL 16
#define NW_MAP_TABLE nw_simd_avx512
#define NW_MAP_NAME "avx512"
typedef __m512 nw_vf;
typedef __m512d nw_vd;
typedef __mmask16 nw_vm;

NW_MAP_INLINE nw_vf nw_zero(void) { return _mm512_setzero_ps(); }
NW_MAP_INLINE nw_vf nw_set1(float x) { return _mm512_set1_ps(x); }
NW_MAP_INLINE nw_vf nw_load(const float *p) { return _mm512_loadu_ps(p); }
NW_MAP_INLINE void nw_store(float *p, nw_vf v) { _mm512_storeu_ps(p, v); }
NW_MAP_INLINE nw_vm nw_tail(size_t count) {
    return (__mmask16)(count >= 16 ? 0xffffu : (1u << count) - 1u);
}
NW_MAP_INLINE nw_vf nw_load_tail(nw_vm m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
NW_MAP_INLINE nw_vf nw_load_or(nw_vm m, const float *p, nw_vf fill) {
    return _mm512_mask_loadu_ps(fill, m, p);
}
NW_MAP_INLINE void nw_store_tail(nw_vm m, float *p, nw_vf v) { _mm512_mask_storeu_ps(p, m, v); }
NW_MAP_INLINE nw_vf nw_keep(nw_vm m, nw_vf v) { return _mm512_maskz_mov_ps(m, v); }
NW_MAP_INLINE nw_vf nw_keep_or(nw_vm m, nw_vf v, nw_vf fill) {
    return _mm512_mask_mov_ps(fill, m, v);
}
NW_MAP_INLINE nw_vf nw_add(nw_vf a, nw_vf b) { return _mm512_add_ps(a, b); }
NW_MAP_INLINE nw_vf nw_sub(nw_vf a, nw_vf b) { return _mm512_sub_ps(a, b); }
NW_MAP_INLINE nw_vf nw_mul(nw_vf a, nw_vf b) { return _mm512_mul_ps(a, b); }
NW_MAP_INLINE nw_vf nw_fmadd(nw_vf a, nw_vf b, nw_vf c) { return _mm512_fmadd_ps(a, b, c); }
NW_MAP_INLINE nw_vf nw_fnmadd(nw_vf a, nw_vf b, nw_vf c) { return _mm512_fnmadd_ps(a, b, c); }
NW_MAP_INLINE nw_vf nw_max(nw_vf a, nw_vf b) { return _mm512_max_ps(a, b); }
NW_MAP_INLINE nw_vf nw_min(nw_vf a, nw_vf b) { return _mm512_min_ps(a, b); }
NW_MAP_INLINE nw_vf nw_negabs(nw_vf x) { /* set the sign bit */
    return _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
}
NW_MAP_INLINE float nw_hsum(nw_vf v) { return _mm512_reduce_add_ps(v); }
NW_MAP_INLINE float nw_hmax(nw_vf v) { return _mm512_reduce_max_ps(v); }
NW_MAP_INLINE nw_vd nw_vd_zero(void) { return _mm512_setzero_pd(); }
NW_MAP_INLINE nw_vd nw_vd_add_widened(nw_vd sum, nw_vf v) {
    sum = _mm512_add_pd(sum, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return _mm512_add_pd(sum, _mm512_cvtps_pd(high));
}
NW_MAP_INLINE nw_vd nw_vd_add(nw_vd a, nw_vd b) { return _mm512_add_pd(a, b); }
NW_MAP_INLINE double nw_vd_hsum(nw_vd v) { return _mm512_reduce_add_pd(v); }

/* max/min return their second operand if either is NaN: NaN stays NaN. */
NW_MAP_INLINE nw_vf nw_exp_clamp(nw_vf x) {
    return _mm512_min_ps(_mm512_set1_ps(NW_VEXP_HI), _mm512_max_ps(_mm512_set1_ps(NW_VEXP_LO), x));
}
NW_MAP_INLINE nw_vf nw_round(nw_vf x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* vscalefps rounds once, also into the denormal range. */
NW_MAP_INLINE nw_vf nw_scale2(nw_vf p, nw_vf n) { return _mm512_scalef_ps(p, n); }
NW_MAP_INLINE nw_vf nw_exp_nan(nw_vf x, nw_vf y) { /* scalef keeps the NaN */
    (void)x;
    return y;
}
/* The float whose bits are those of x shifted left by 23 (2^n from x = n + 127 + 1.5·2^23). */
NW_MAP_INLINE nw_vf nw_pow2_bits(nw_vf x) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(x), 23));
}
/* 0 in the lanes where x < lo (ordered: NaN lanes keep y). */
NW_MAP_INLINE nw_vf nw_zero_below(nw_vf x, nw_vf lo, nw_vf y) {
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
}

/* =================================================================================== AVX2 == */
#elif NW_SIMD_MAP == NW_SIMD_LEVEL_AVX2
#include <immintrin.h>

#define NW_VL 8
#define NW_MAP_TABLE nw_simd_avx2
#define NW_MAP_NAME "avx2"
typedef __m256 nw_vf;
typedef __m256d nw_vd;
typedef __m256i nw_vm;

NW_MAP_INLINE nw_vf nw_zero(void) { return _mm256_setzero_ps(); }
NW_MAP_INLINE nw_vf nw_set1(float x) { return _mm256_set1_ps(x); }
NW_MAP_INLINE nw_vf nw_load(const float *p) { return _mm256_loadu_ps(p); }
NW_MAP_INLINE void nw_store(float *p, nw_vf v) { _mm256_storeu_ps(p, v); }
NW_MAP_INLINE nw_vm nw_tail(size_t count) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), lanes); /* count < 2^31 */
}
/* Masked-off lanes load 0 and are never stored. */
NW_MAP_INLINE nw_vf nw_load_tail(nw_vm m, const float *p) { return _mm256_maskload_ps(p, m); }
NW_MAP_INLINE nw_vf nw_load_or(nw_vm m, const float *p, nw_vf fill) {
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
NW_MAP_INLINE void nw_store_tail(nw_vm m, float *p, nw_vf v) { _mm256_maskstore_ps(p, m, v); }
NW_MAP_INLINE nw_vf nw_keep(nw_vm m, nw_vf v) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }
NW_MAP_INLINE nw_vf nw_keep_or(nw_vm m, nw_vf v, nw_vf fill) {
    return _mm256_blendv_ps(fill, v, _mm256_castsi256_ps(m));
}
NW_MAP_INLINE nw_vf nw_add(nw_vf a, nw_vf b) { return _mm256_add_ps(a, b); }
NW_MAP_INLINE nw_vf nw_sub(nw_vf a, nw_vf b) { return _mm256_sub_ps(a, b); }
NW_MAP_INLINE nw_vf nw_mul(nw_vf a, nw_vf b) { return _mm256_mul_ps(a, b); }
NW_MAP_INLINE nw_vf nw_fmadd(nw_vf a, nw_vf b, nw_vf c) { return _mm256_fmadd_ps(a, b, c); }
NW_MAP_INLINE nw_vf nw_fnmadd(nw_vf a, nw_vf b, nw_vf c) { return _mm256_fnmadd_ps(a, b, c); }
NW_MAP_INLINE nw_vf nw_max(nw_vf a, nw_vf b) { return _mm256_max_ps(a, b); }
NW_MAP_INLINE nw_vf nw_min(nw_vf a, nw_vf b) { return _mm256_min_ps(a, b); }
NW_MAP_INLINE nw_vf nw_negabs(nw_vf x) { return _mm256_or_ps(x, _mm256_set1_ps(-0.0f)); }
NW_MAP_INLINE float nw_hsum(nw_vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
NW_MAP_INLINE float nw_hmax(nw_vf v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
NW_MAP_INLINE nw_vd nw_vd_zero(void) { return _mm256_setzero_pd(); }
NW_MAP_INLINE nw_vd nw_vd_add_widened(nw_vd sum, nw_vf v) {
    sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
NW_MAP_INLINE nw_vd nw_vd_add(nw_vd a, nw_vd b) { return _mm256_add_pd(a, b); }
NW_MAP_INLINE double nw_vd_hsum(nw_vd v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* max/min return their second operand if either is NaN: NaN stays NaN, and every later step
 * keeps it (a NaN times any scale factor is NaN). */
NW_MAP_INLINE nw_vf nw_exp_clamp(nw_vf x) {
    return _mm256_min_ps(_mm256_set1_ps(NW_VEXP_HI), _mm256_max_ps(_mm256_set1_ps(NW_VEXP_LO), x));
}
NW_MAP_INLINE nw_vf nw_round(nw_vf x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 2^n = 2^e1 · 2^e2 with e1 = n >> 1, both factors normal for n in -151 .. 128: the first
 * product is exact, the second rounds once. */
NW_MAP_INLINE nw_vf nw_scale2(nw_vf p, nw_vf n) {
    const __m256i e = _mm256_cvtps_epi32(n);
    const __m256i e1 = _mm256_srai_epi32(e, 1), e2 = _mm256_sub_epi32(e, e1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
NW_MAP_INLINE nw_vf nw_exp_nan(nw_vf x, nw_vf y) {
    (void)x;
    return y;
}
NW_MAP_INLINE nw_vf nw_pow2_bits(nw_vf x) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(x), 23));
}
NW_MAP_INLINE nw_vf nw_zero_below(nw_vf x, nw_vf lo, nw_vf y) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
}

/* ================================================================================ generic == */
#elif NW_SIMD_MAP == NW_SIMD_LEVEL_GENERIC
/* Portable C: four floats in a struct, every operation a loop over the lanes, with no fused
 * multiply-add (fmadd is a product and a sum, each rounded). */
#define NW_VL 4
#define NW_MAP_TABLE nw_simd_generic
#define NW_MAP_NAME "generic"
typedef struct nw_vf {
    float l[4];
} nw_vf;
typedef struct nw_vd {
    double l[4];
} nw_vd;
typedef size_t nw_vm; /* the number of lanes to keep */

#define NW_LANES(expr)                                                                         \
    nw_vf r_;                                                                                  \
    for (size_t i_ = 0; i_ < 4; i_++)                                                          \
        r_.l[i_] = (expr);                                                                     \
    return r_

NW_MAP_INLINE nw_vf nw_set1(float x) { NW_LANES(x); }
NW_MAP_INLINE nw_vf nw_zero(void) { return nw_set1(0.0f); }
NW_MAP_INLINE nw_vf nw_load(const float *p) { NW_LANES(p[i_]); }
NW_MAP_INLINE void nw_store(float *p, nw_vf v) {
    for (size_t i = 0; i < 4; i++)
        p[i] = v.l[i];
}
NW_MAP_INLINE nw_vm nw_tail(size_t count) { return count; }
NW_MAP_INLINE nw_vf nw_load_tail(nw_vm m, const float *p) { NW_LANES(i_ < m ? p[i_] : 0.0f); }
NW_MAP_INLINE nw_vf nw_load_or(nw_vm m, const float *p, nw_vf fill) {
    NW_LANES(i_ < m ? p[i_] : fill.l[i_]);
}
NW_MAP_INLINE void nw_store_tail(nw_vm m, float *p, nw_vf v) {
    for (size_t i = 0; i < 4 && i < m; i++)
        p[i] = v.l[i];
}
NW_MAP_INLINE nw_vf nw_keep(nw_vm m, nw_vf v) { NW_LANES(i_ < m ? v.l[i_] : 0.0f); }
NW_MAP_INLINE nw_vf nw_keep_or(nw_vm m, nw_vf v, nw_vf fill) {
    NW_LANES(i_ < m ? v.l[i_] : fill.l[i_]);
}
NW_MAP_INLINE nw_vf nw_add(nw_vf a, nw_vf b) { NW_LANES(a.l[i_] + b.l[i_]); }
NW_MAP_INLINE nw_vf nw_sub(nw_vf a, nw_vf b) { NW_LANES(a.l[i_] - b.l[i_]); }
NW_MAP_INLINE nw_vf nw_mul(nw_vf a, nw_vf b) { NW_LANES(a.l[i_] * b.l[i_]); }
NW_MAP_INLINE nw_vf nw_fmadd(nw_vf a, nw_vf b, nw_vf c) { NW_LANES(a.l[i_] * b.l[i_] + c.l[i_]); }
NW_MAP_INLINE nw_vf nw_fnmadd(nw_vf a, nw_vf b, nw_vf c) { NW_LANES(c.l[i_] - a.l[i_] * b.l[i_]); }
NW_MAP_INLINE nw_vf nw_max(nw_vf a, nw_vf b) { NW_LANES(a.l[i_] > b.l[i_] ? a.l[i_] : b.l[i_]); }
NW_MAP_INLINE nw_vf nw_min(nw_vf a, nw_vf b) { NW_LANES(a.l[i_] < b.l[i_] ? a.l[i_] : b.l[i_]); }
NW_MAP_INLINE nw_vf nw_negabs(nw_vf x) { NW_LANES(-fabsf(x.l[i_])); }
NW_MAP_INLINE float nw_hsum(nw_vf v) { return (v.l[0] + v.l[1]) + (v.l[2] + v.l[3]); }
NW_MAP_INLINE float nw_hmax(nw_vf v) {
    float m = v.l[0];
    for (size_t i = 1; i < 4; i++)
        m = v.l[i] > m ? v.l[i] : m;
    return m;
}
NW_MAP_INLINE nw_vd nw_vd_zero(void) {
    nw_vd r = {{0.0, 0.0, 0.0, 0.0}};
    return r;
}
NW_MAP_INLINE nw_vd nw_vd_add_widened(nw_vd sum, nw_vf v) {
    for (size_t i = 0; i < 4; i++)
        sum.l[i] += (double)v.l[i];
    return sum;
}
NW_MAP_INLINE nw_vd nw_vd_add(nw_vd a, nw_vd b) {
    for (size_t i = 0; i < 4; i++)
        a.l[i] += b.l[i];
    return a;
}
NW_MAP_INLINE double nw_vd_hsum(nw_vd v) { return (v.l[0] + v.l[1]) + (v.l[2] + v.l[3]); }

/* C comparisons send NaN to NW_VEXP_LO (a NaN must not reach the integer conversion of
 * nw_scale2); nw_exp_nan gives it back. */
NW_MAP_INLINE nw_vf nw_exp_clamp(nw_vf x) {
    NW_LANES(x.l[i_] > NW_VEXP_LO ? (x.l[i_] < NW_VEXP_HI ? x.l[i_] : NW_VEXP_HI) : NW_VEXP_LO);
}
NW_MAP_INLINE nw_vf nw_round(nw_vf x) { /* adding 1.5 · 2^23 rounds to an integer */
    NW_LANES((x.l[i_] + 12582912.0f) - 12582912.0f);
}
/* 2^e for -126 <= e <= 127. */
NW_MAP_INLINE float nw_pow2(int32_t e) {
    const uint32_t bits = (uint32_t)(e + 127) << 23;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}
/* 2^n = 2^e1 · 2^e2, e1 = n / 2, both in -76 .. 64: the first product is exact. */
NW_MAP_INLINE nw_vf nw_scale2(nw_vf p, nw_vf n) {
    nw_vf r;
    for (size_t i = 0; i < 4; i++) {
        const int32_t e = (int32_t)n.l[i], e1 = e / 2, e2 = e - e1;
        r.l[i] = (p.l[i] * nw_pow2(e1)) * nw_pow2(e2);
    }
    return r;
}
NW_MAP_INLINE nw_vf nw_exp_nan(nw_vf x, nw_vf y) { NW_LANES(x.l[i_] != x.l[i_] ? x.l[i_] : y.l[i_]); }
NW_MAP_INLINE nw_vf nw_pow2_bits(nw_vf x) {
    nw_vf r;
    for (size_t i = 0; i < 4; i++) {
        uint32_t bits;
        memcpy(&bits, &x.l[i], sizeof bits);
        bits <<= 23;
        memcpy(&r.l[i], &bits, sizeof bits);
    }
    return r;
}
NW_MAP_INLINE nw_vf nw_zero_below(nw_vf x, nw_vf lo, nw_vf y) {
    NW_LANES(x.l[i_] < lo.l[i_] ? 0.0f : y.l[i_]);
}

/* An 8×8 block transposed: t[c·ldt + r] = a[r·lda + c]. */
NW_MAP_INLINE void nw_transpose8(const float *a, size_t lda, float *t, size_t ldt) {
    for (size_t r = 0; r < 8; r++)
        for (size_t c = 0; c < 8; c++)
            t[c * ldt + r] = a[r * lda + c];
}

#undef NW_LANES
#else
#error "unknown NW_SIMD_MAP"
#endif

#if NW_SIMD_MAP == NW_SIMD_LEVEL_AVX2 || NW_SIMD_MAP == NW_SIMD_LEVEL_AVX512
/* An 8×8 block transposed in eight-float registers (both x86 levels): the 128-bit halves
 * come in through the load ports (rows r and r + 4 in one register), so the shuffle port
 * runs only the 16 in-lane unpacks and shuffles. */
NW_MAP_INLINE __m256 nw_rows_0_4(const float *a, size_t lda, size_t r) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a + r * lda)),
                                _mm_loadu_ps(a + (r + 4) * lda), 1);
}
NW_MAP_INLINE void nw_transpose8(const float *a, size_t lda, float *t, size_t ldt) {
    /* Low halves: columns 0-3 of rows r (lane 0) and r + 4 (lane 1); then columns 4-7. */
    __m256 r0 = nw_rows_0_4(a, lda, 0), r1 = nw_rows_0_4(a, lda, 1);
    __m256 r2 = nw_rows_0_4(a, lda, 2), r3 = nw_rows_0_4(a, lda, 3);
    __m256 r4 = nw_rows_0_4(a + 4, lda, 0), r5 = nw_rows_0_4(a + 4, lda, 1);
    __m256 r6 = nw_rows_0_4(a + 4, lda, 2), r7 = nw_rows_0_4(a + 4, lda, 3);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    _mm256_storeu_ps(t + 0 * ldt, _mm256_shuffle_ps(t0, t2, 0x44));
    _mm256_storeu_ps(t + 1 * ldt, _mm256_shuffle_ps(t0, t2, 0xEE));
    _mm256_storeu_ps(t + 2 * ldt, _mm256_shuffle_ps(t1, t3, 0x44));
    _mm256_storeu_ps(t + 3 * ldt, _mm256_shuffle_ps(t1, t3, 0xEE));
    _mm256_storeu_ps(t + 4 * ldt, _mm256_shuffle_ps(t4, t6, 0x44));
    _mm256_storeu_ps(t + 5 * ldt, _mm256_shuffle_ps(t4, t6, 0xEE));
    _mm256_storeu_ps(t + 6 * ldt, _mm256_shuffle_ps(t5, t7, 0x44));
    _mm256_storeu_ps(t + 7 * ldt, _mm256_shuffle_ps(t5, t7, 0xEE));
}
#endif

/* ============================================================ written once over the mapping == */
/* exp(x) lane by lane (see simd.h): clamp, n = round(x / ln 2), r = x - n ln 2 in two steps,
 * Cephes' polynomial by Horner's rule, times 2^n. */
NW_MAP_INLINE nw_vf nw_exp(nw_vf x) {
    const nw_vf xc = nw_exp_clamp(x);
    const nw_vf n = nw_round(nw_mul(xc, nw_set1(NW_VEXP_LOG2E)));
    nw_vf r = nw_fnmadd(n, nw_set1(NW_VEXP_C1), xc);
    r = nw_fnmadd(n, nw_set1(NW_VEXP_C2), r);
    nw_vf p = nw_set1(NW_VEXP_P0);
    p = nw_fmadd(p, r, nw_set1(NW_VEXP_P1));
    p = nw_fmadd(p, r, nw_set1(NW_VEXP_P2));
    p = nw_fmadd(p, r, nw_set1(NW_VEXP_P3));
    p = nw_fmadd(p, r, nw_set1(NW_VEXP_P4));
    p = nw_fmadd(p, r, nw_set1(NW_VEXP_P5));
    p = nw_fmadd(p, r, nw_set1(1.0f)); /* Horner to the end */
    p = nw_fmadd(p, r, nw_set1(1.0f));
    return nw_exp_nan(x, nw_scale2(p, n));
}

/* The softmax terms' tail, either base: 2^n (n + 127 in the low bits of kf) times the degree-5
 * polynomial 1 + r (c4 + r (c3 + r (c2 + r (c1 + r c0)))), by Horner's rule. */
NW_MAP_INLINE nw_vf nw_term_scaled(nw_vf r, nw_vf kf, float c0, float c1, float c2, float c3,
                                   float c4) {
    nw_vf p = nw_fmadd(nw_set1(c0), r, nw_set1(c1));
    p = nw_fmadd(p, r, nw_set1(c2));
    p = nw_fmadd(p, r, nw_set1(c3));
    p = nw_fmadd(p, r, nw_set1(c4));
    p = nw_fmadd(p, r, nw_set1(1.0f));
    return nw_mul(p, nw_pow2_bits(kf));
}

/* A softmax term exp(x) for x <= 0 (a score minus a shift at least as large; a little above 0
 * from rounding is fine): vexp_constants.h's term exponential, 12 operations against the 21
 * of nw_exp. Over all floats in [-86, 0]: at most 1.95 ulp (AVX2, measured exhaustively);
 * below -86 it gives exp(-86) = 4.5e-38 (a term below 2^-124 of the shift's, see simd.h).
 * NaN stays NaN. */
NW_MAP_INLINE nw_vf nw_exp_term(nw_vf x) {
    const nw_vf magic = nw_set1(NW_VEXP_TERM_MAGIC);
    const nw_vf xc = nw_max(nw_set1(NW_VEXP_TERM_LO), x); /* max(lo, NaN) is NaN */
    const nw_vf kf = nw_fmadd(xc, nw_set1(NW_VEXP_LOG2E), magic);
    const nw_vf n = nw_sub(kf, magic);
    const nw_vf r = nw_fnmadd(n, nw_set1(NW_VEXP_C2), nw_fnmadd(n, nw_set1(NW_VEXP_C1), xc));
    return nw_term_scaled(r, kf, NW_VEXP_T0, NW_VEXP_T1, NW_VEXP_T2, NW_VEXP_T3, NW_VEXP_T4);
}

/* The softmax term 2^x for x <= 0 in base 2 (a score formed in units of log2 e): x - round(x)
 * is exact, so the reduction is one subtraction where nw_exp_term needs a multiply-add and
 * two (Cody-Waite); 11 operations. Over all floats in [-124, 0]: at most 1.8 ulp of 2^x
 * (AVX2, measured on every float above -30 and every 64th below); below -124 it gives
 * 2^-124. NaN stays NaN. */
NW_MAP_INLINE nw_vf nw_exp2_term(nw_vf x) {
    const nw_vf magic = nw_set1(NW_VEXP_TERM_MAGIC);
    const nw_vf xc = nw_max(nw_set1(NW_VEXP2_TERM_LO), x); /* max(lo, NaN) is NaN */
    const nw_vf kf = nw_add(xc, magic);
    const nw_vf r = nw_sub(xc, nw_sub(kf, magic));
    return nw_term_scaled(r, kf, NW_VEXP2_B0, NW_VEXP2_B1, NW_VEXP2_B2, NW_VEXP2_B3,
                          NW_VEXP2_B4);
}

/* nw_exp_term with exactly 0 below NW_VEXP_TERM_LO (masked keys, -INFINITY, give 0): for tiles
 * of scores minus a shift at least their maximum (simd.h exp_sumf, exp_sum_dot). */
NW_MAP_INLINE nw_vf nw_exp_term0(nw_vf x) {
    return nw_zero_below(x, nw_set1(NW_VEXP_TERM_LO), nw_exp_term(x));
}

#endif /* NWATTN_SIMD_MAP_H */
