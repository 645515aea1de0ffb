/* Vector kernels for the hot loops of the softmax: exponentials, row maxima, direct distance
 * scores and dot products. One table per instruction set; the context picks the best table the
 * CPU supports when it is created (nw_simd_select, through the CPU probe of cpu.h), so nothing
 * that changes results is ever written to global state.
 *
 * Exponential: exp(x) = 2^n · p(r), n = round(x / ln 2), r = x - n ln 2 (two-constant
 * Cody-Waite reduction, |r| <= ln 2 / 2), p Cephes' degree-7 polynomial by Horner's rule,
 * and 2^n applied as two exact power-of-two factors (vscalefps on AVX-512) so that results
 * down to the smallest denormal round once. Measured against double exp() over the whole
 * float range (tests/test_simd.c): at most NW_VEXP_MAX_ULP units in the last place of the
 * correctly rounded float, denormal results included (over all 2^32 inputs, with
 * NWATTN_TEST_EXHAUSTIVE=1: 0.89 ulp at worst for AVX2 and AVX-512, 1.19 for portable C,
 * which has no fused multiply-add). Special values are exact: exp(-inf) = 0, results
 * below half the smallest denormal (x < -103.97) are +0, exp(x) = +inf for x > 88.7228 and
 * for +inf, NaN gives NaN. No -ffast-math anywhere: masks are -INFINITY and must stay 0. */
#ifndef NWATTN_SIMD_H
#define NWATTN_SIMD_H

#include <stddef.h>

#include "cpu.h"

/* The accuracy the tests hold every table's exponential to, in ulp. */
#define NW_VEXP_MAX_ULP 2

typedef struct nw_simd {
    const char *name; /* "avx512", "avx2" or "generic" */
    /* x[j] = exp(x[j] - shift) in place; returns the sum of the results, accumulated in
     * double. -INFINITY entries become exactly 0, NaN stays NaN. */
    double (*exp_sum)(float *x, size_t n, float shift);
    /* The same for the rows of a tile (a few hundred keys), where shift is at least every
     * x[j] (x[j] - shift <= 0 up to rounding): the sum accumulated in float lanes (double would
     * cost more than the exponentials) and the softmax-term exponential of simd_map.h
     * (nw_exp_term0: 12 operations against 21, within 2 ulp; terms below exp(-86), 4.5e-38 of
     * the shift's, and -INFINITY entries, are exactly 0). */
    float (*exp_sumf)(float *x, size_t n, float shift);
    /* sum_j exp(x[j] - shift) and *dot = sum_j exp(x[j] - shift) v[j], x left as it is:
     * softmax and weighted sum of a row with one value per key, in one pass. As exp_sumf: a
     * tile row, shift at least every x[j], the softmax-term exponential. */
    float (*exp_sum_dot)(const float *x, size_t n, float shift, const float *v, float *dot);
    /* The largest of x[0 .. n-1], ignoring NaN; -INFINITY for n == 0 or an all-NaN row. */
    float (*max)(const float *x, size_t n);
    /* Direct one-dimensional distance scores: with t = (u - k[j]) · inv_h, s[j] = (-t/2) · t
     * (gaussian) or -|t| (Laplace), rounded exactly as nw_distance_scores_1d rounds them (no
     * expansion, no cancellation); returns their maximum. */
    float (*dist1)(int gaussian, float u, float inv_h, const float *k, size_t n, float *s);
    /* The one-dimensional row of the fused pooling in one pass, nothing stored: with d_j =
     * u - k[j] and x_j = c d_j^2 - shift (Gaussian; c = nw_dist1_coefficient(inv_h)) or
     * x_j = -|d_j| inv_h - shift (Laplace), returns sum_j exp(x_j) and sets *dot =
     * sum_j exp(x_j) v[j], in float lanes (a tile of keys). The exponent is formed in base 2,
     * c · log2 e and shift · log2 e rounded to float, one product then one fused multiply-add
     * per key (Gaussian; Laplace one fused multiply-add), its term simd_map.h's nw_exp2_term:
     * within 1.8 ulp of 2 to the rounded exponent, whose rounding is |x_j| 2^-24 relative as
     * the base-e exponent's (see docs/numerics.md). shift is at least the largest score
     * (x_j <= 0 up to the last rounding: nw_dist1_bound); x_j below -86 counts as -86 (4.5e-38;
     * the caller keeps the row's sum above 2^-40, so such a term changes it by less than 2^-84
     * relative); on x86 subnormal results are flushed to zero during the call (MXCSR.FTZ,
     * restored); v may hold anything. */
    float (*dist1_exp_dot)(int gaussian, float u, float inv_h, const float *k, const float *v,
                           size_t n, float shift, float *dot);
    /* *lo and *hi = the smallest and largest of x[0 .. n-1]; n > 0, no NaN. */
    void (*range)(const float *x, size_t n, float *lo, float *hi);
    /* sum_j x[j] y[j], accumulated in float lanes. */
    float (*dot)(const float *x, const float *y, size_t n);
    /* t[c·ldt + r] = a[r·lda + c] for r < rows, c < cols (blocks of 8 × 8 in registers): a
     * key tile as the BLAS's untransposed products take it. */
    void (*transpose)(const float *a, size_t rows, size_t cols, size_t lda, float *t,
                      size_t ldt);
} nw_simd;

/* c = -inv_h^2 / 2 in float, as dist1_exp_dot and nw_dist1_bound round it. */
static inline float nw_dist1_coefficient(float inv_h) { return (-0.5f * inv_h) * inv_h; }

/* One table per level of cpu.h, all written once over the mapping layer (simd_map.h,
 * vexp_impl.h); NWATTN_SIMD_LEVEL (build option NWATTN_SIMD) says which are compiled in. */
/* Portable C, for every CPU. */
extern const nw_simd nw_simd_generic;
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX2
/* AVX2 + FMA (x86-64 since Haswell / Zen): only where nw_simd_level() >= NW_SIMD_LEVEL_AVX2. */
extern const nw_simd nw_simd_avx2;
#endif
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX512
/* AVX-512 F, VL, DQ, BW (Skylake-SP, Zen 4 and later): only where nw_simd_level() says so. */
extern const nw_simd nw_simd_avx512;
#endif

/* The fastest table this CPU runs and this build has: nw_simd_for_level(nw_simd_level()). */
const nw_simd *nw_simd_select(void);
/* The table of the highest compiled-in level <= level (cpu.h); the caller makes sure that the
 * CPU runs it (tests call each table the CPU runs directly). */
const nw_simd *nw_simd_for_level(int level);

#endif /* NWATTN_SIMD_H */
