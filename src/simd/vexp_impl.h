/* The vector kernels of simd.h written once over the mapping layer (simd_map.h): included by
 * vexp_generic.c, vexp_avx2.c and vexp_avx512.c, each defining NW_SIMD_MAP first, and each
 * defining one table (nw_simd_generic, nw_simd_avx2, nw_simd_avx512). Loops take two vectors
 * at a time (dot: four), then the rest one masked vector at a time. */
#include "simd.h"
#include "simd_map.h"

static double exp_sum(float *x, size_t n, float shift) {
    const nw_vf sh = nw_set1(shift);
    nw_vd sum0 = nw_vd_zero(), sum1 = nw_vd_zero();
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        const nw_vf a = nw_exp(nw_sub(nw_load(x + j), sh));
        const nw_vf b = nw_exp(nw_sub(nw_load(x + j + NW_VL), sh));
        nw_store(x + j, a);
        nw_store(x + j + NW_VL, b);
        sum0 = nw_vd_add_widened(sum0, a);
        sum1 = nw_vd_add_widened(sum1, b);
    }
    for (; j < n; j += NW_VL) {
        const nw_vm mask = nw_tail(n - j);
        /* Masked-off lanes load 0, whose exponential is never stored; zero them for the sum. */
        const nw_vf a = nw_keep(mask, nw_exp(nw_sub(nw_load_tail(mask, x + j), sh)));
        nw_store_tail(mask, x + j, a);
        sum0 = nw_vd_add_widened(sum0, a);
    }
    return nw_vd_hsum(nw_vd_add(sum0, sum1));
}

static float exp_sumf(float *x, size_t n, float shift) {
    const nw_vf sh = nw_set1(shift);
    nw_vf s0 = nw_zero(), s1 = s0;
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        const nw_vf a = nw_exp_term0(nw_sub(nw_load(x + j), sh));
        const nw_vf b = nw_exp_term0(nw_sub(nw_load(x + j + NW_VL), sh));
        nw_store(x + j, a);
        nw_store(x + j + NW_VL, b);
        s0 = nw_add(s0, a);
        s1 = nw_add(s1, b);
    }
    for (; j < n; j += NW_VL) {
        const nw_vm mask = nw_tail(n - j);
        const nw_vf a = nw_keep(mask, nw_exp_term0(nw_sub(nw_load_tail(mask, x + j), sh)));
        nw_store_tail(mask, x + j, a);
        s0 = nw_add(s0, a);
    }
    return nw_hsum(nw_add(s0, s1));
}

static float exp_sum_dot(const float *x, size_t n, float shift, const float *v, float *dot) {
    const nw_vf sh = nw_set1(shift);
    nw_vf s0 = nw_zero(), s1 = s0, a0 = s0, a1 = s0;
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        const nw_vf e0 = nw_exp_term0(nw_sub(nw_load(x + j), sh));
        const nw_vf e1 = nw_exp_term0(nw_sub(nw_load(x + j + NW_VL), sh));
        s0 = nw_add(s0, e0);
        s1 = nw_add(s1, e1);
        a0 = nw_fmadd(e0, nw_load(v + j), a0);
        a1 = nw_fmadd(e1, nw_load(v + j + NW_VL), a1);
    }
    for (; j < n; j += NW_VL) {
        const nw_vm mask = nw_tail(n - j);
        const nw_vf e = nw_keep(mask, nw_exp_term0(nw_sub(nw_load_tail(mask, x + j), sh)));
        s0 = nw_add(s0, e);
        a0 = nw_fmadd(e, nw_load_tail(mask, v + j), a0);
    }
    *dot = nw_hsum(nw_add(a0, a1));
    return nw_hsum(nw_add(s0, s1));
}

/* max(v, m) returns m when v is NaN: NaN never wins, as in scalar loops. */
static float max(const float *x, size_t n) {
    const nw_vf none = nw_set1(-INFINITY);
    nw_vf m0 = none, m1 = none;
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        m0 = nw_max(nw_load(x + j), m0);
        m1 = nw_max(nw_load(x + j + NW_VL), m1);
    }
    for (; j < n; j += NW_VL)
        m0 = nw_max(nw_load_or(nw_tail(n - j), x + j, none), m0);
    return nw_hmax(nw_max(m0, m1));
}

NW_MAP_INLINE nw_vf distance(int gaussian, nw_vf u, nw_vf inv_h, nw_vf k) {
    const nw_vf t = nw_mul(nw_sub(u, k), inv_h);
    if (gaussian) /* (-0.5 t) t, the evaluation order of nw_distance_scores_1d */
        return nw_mul(nw_mul(nw_set1(-0.5f), t), t);
    return nw_negabs(t);
}

static float dist1(int gaussian, float u, float inv_h, const float *k, size_t n, float *s) {
    const nw_vf uu = nw_set1(u), ih = nw_set1(inv_h), none = nw_set1(-INFINITY);
    nw_vf m0 = none, m1 = none;
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        const nw_vf t0 = distance(gaussian, uu, ih, nw_load(k + j));
        const nw_vf t1 = distance(gaussian, uu, ih, nw_load(k + j + NW_VL));
        nw_store(s + j, t0);
        nw_store(s + j + NW_VL, t1);
        m0 = nw_max(t0, m0);
        m1 = nw_max(t1, m1);
    }
    for (; j < n; j += NW_VL) {
        const nw_vm mask = nw_tail(n - j);
        const nw_vf t = distance(gaussian, uu, ih, nw_load_tail(mask, k + j));
        nw_store_tail(mask, s + j, t);
        m0 = nw_max(nw_keep_or(mask, t, none), m0);
    }
    return nw_hmax(nw_max(m0, m1));
}

/* The term exponent of dist1_exp_dot in base 2: with d = u - k, c2 d^2 - shift2 (Gaussian,
 * c2 = -log2(e) / (2h^2)) or -|d| c2 - shift2 (Laplace, c2 = log2(e) / h), each one
 * multiplication and one fused multiply-add; its term is nw_exp2_term of it. */
NW_MAP_INLINE nw_vf term_exponent(int gaussian, nw_vf u, nw_vf c, nw_vf neg_shift, nw_vf k) {
    const nw_vf d = nw_sub(u, k);
    return gaussian ? nw_fmadd(nw_mul(d, c), d, neg_shift) : nw_fmadd(nw_negabs(d), c, neg_shift);
}

/* dist1_exp_dot for one kind of distance (the compiler makes two loops of it). One vector per
 * step: on Zen 3 two vectors a step measured 2-3 % faster, within the noise, and a second
 * vector makes AVX2's 16 registers spill an accumulator into the loop-carried chain. The
 * base-2 exponent (16 operations a vector, the reduction's chain 2 shorter) measured 1.2x
 * the base-e one (17) there, where the kernel is bound by the latency its out-of-order window
 * can hide rather than by issue. */
NW_MAP_INLINE float dist1_exp_dot_kind(int gaussian, float u, float inv_h, const float *k,
                                       const float *v, size_t n, float shift, float *dot) {
    const nw_vf uu = nw_set1(u), nsh = nw_set1(-shift * NW_VEXP_LOG2E);
    const nw_vf c = nw_set1((gaussian ? nw_dist1_coefficient(inv_h) : inv_h) * NW_VEXP_LOG2E);
    nw_vf sum = nw_zero(), acc = sum;
    size_t j = 0;
    for (; j + NW_VL <= n; j += NW_VL) {
        const nw_vf e = nw_exp2_term(term_exponent(gaussian, uu, c, nsh, nw_load(k + j)));
        sum = nw_add(sum, e);
        acc = nw_fmadd(e, nw_load(v + j), acc);
    }
    if (j < n) {
        const nw_vm mask = nw_tail(n - j);
        const nw_vf x = term_exponent(gaussian, uu, c, nsh, nw_load_tail(mask, k + j));
        const nw_vf e = nw_keep(mask, nw_exp2_term(x));
        sum = nw_add(sum, e);
        acc = nw_fmadd(e, nw_load_tail(mask, v + j), acc);
    }
    *dot = nw_hsum(acc);
    return nw_hsum(sum);
}

/* Far keys' terms sit at the 2^-124 floor, and the floor times a value below 1/4 is a
 * subnormal float: on Intel cores each subnormal product or sum costs a microcode assist (a
 * 1-D Gaussian row whose nearest key lies many h away ran 15x slower: nwattn_pool, m = n =
 * 16384, h = 3e-5, Intel Xeon, AVX-512). So on x86 the row runs with subnormal results flushed
 * to zero (MXCSR.FTZ, restored on return; inputs are read as they are): what is flushed is
 * below 2^-126 against the row's largest term, 1. (A per-term zero below the floor cost 10 %
 * of the common case on that machine.) */
#if defined(__SSE2__) || defined(_M_X64)
#include <xmmintrin.h>
static inline unsigned flush_subnormals(void) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | _MM_FLUSH_ZERO_ON);
    return csr;
}
static inline void restore_fp_mode(unsigned csr) { _mm_setcsr(csr); }
#else
static inline unsigned flush_subnormals(void) { return 0; }
static inline void restore_fp_mode(unsigned csr) { (void)csr; }
#endif

static float dist1_exp_dot(int gaussian, float u, float inv_h, const float *k, const float *v,
                           size_t n, float shift, float *dot) {
    const unsigned csr = flush_subnormals();
    const float sum = gaussian ? dist1_exp_dot_kind(1, u, inv_h, k, v, n, shift, dot)
                               : dist1_exp_dot_kind(0, u, inv_h, k, v, n, shift, dot);
    restore_fp_mode(csr);
    return sum;
}

/* The smallest and largest of x[0 .. n-1] (n > 0, no NaN). */
static void range(const float *x, size_t n, float *lo, float *hi) {
    const nw_vf first = nw_set1(x[0]);
    nw_vf l0 = first, l1 = first, h0 = first, h1 = first;
    size_t j = 0;
    for (; j + 2 * NW_VL <= n; j += 2 * NW_VL) {
        const nw_vf a = nw_load(x + j), b = nw_load(x + j + NW_VL);
        l0 = nw_min(a, l0), l1 = nw_min(b, l1), h0 = nw_max(a, h0), h1 = nw_max(b, h1);
    }
    for (; j < n; j += NW_VL) { /* masked-off lanes hold x[0] */
        const nw_vf a = nw_load_or(nw_tail(n - j), x + j, first);
        l0 = nw_min(a, l0), h0 = nw_max(a, h0);
    }
    *hi = nw_hmax(nw_max(h0, h1));
    *lo = -nw_hmax(nw_sub(nw_zero(), nw_min(l0, l1)));
}

static float dot(const float *x, const float *y, size_t n) {
    nw_vf a0 = nw_zero(), a1 = a0, a2 = a0, a3 = a0;
    size_t j = 0;
    for (; j + 4 * NW_VL <= n; j += 4 * NW_VL) {
        a0 = nw_fmadd(nw_load(x + j), nw_load(y + j), a0);
        a1 = nw_fmadd(nw_load(x + j + NW_VL), nw_load(y + j + NW_VL), a1);
        a2 = nw_fmadd(nw_load(x + j + 2 * NW_VL), nw_load(y + j + 2 * NW_VL), a2);
        a3 = nw_fmadd(nw_load(x + j + 3 * NW_VL), nw_load(y + j + 3 * NW_VL), a3);
    }
    for (; j < n; j += NW_VL) {
        const nw_vm mask = nw_tail(n - j);
        a0 = nw_fmadd(nw_load_tail(mask, x + j), nw_load_tail(mask, y + j), a0);
    }
    return nw_hsum(nw_add(nw_add(a0, a1), nw_add(a2, a3)));
}

static void transpose(const float *a, size_t rows, size_t cols, size_t lda, float *t,
                      size_t ldt) {
    const size_t rows8 = rows & ~(size_t)7, cols8 = cols & ~(size_t)7;
    for (size_t r = 0; r < rows8; r += 8) {
        for (size_t c = 0; c < cols8; c += 8)
            nw_transpose8(a + r * lda + c, lda, t + c * ldt + r, ldt);
        for (size_t i = r; i < r + 8; i++) /* the last columns */
            for (size_t c = cols8; c < cols; c++)
                t[c * ldt + i] = a[i * lda + c];
    }
    for (size_t r = rows8; r < rows; r++) /* the last rows */
        for (size_t c = 0; c < cols; c++)
            t[c * ldt + r] = a[r * lda + c];
}

const nw_simd NW_MAP_TABLE = {NW_MAP_NAME, exp_sum,       exp_sumf, exp_sum_dot, max,
                               dist1,       dist1_exp_dot, range,    dot,         transpose};
