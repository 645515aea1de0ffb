/* The vector kernels (src/simd/) called directly, for every table this CPU can run: the
 * exponential's error in ulp against double exp() over the whole float range (sampled; set
 * NWATTN_TEST_EXHAUSTIVE=1 to try all 2^32 inputs), its special values, and the row maximum,
 * direct distance scores and dot product against scalar double loops, at every tail length. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64)
#include <xmmintrin.h>

/* Whether setting MXCSR.FTZ flushes a subnormal product here (not under valgrind's emulator). */
static int ftz_works(void) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | _MM_FLUSH_ZERO_ON);
    volatile float a = 0x1p-124f, b = 0.1f;
    const float p = a * b;
    _mm_setcsr(csr);
    return p == 0.0f;
}
#endif

#include "testutil.h"
#include "simd/simd.h"

static float from_bits(uint32_t bits) {
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static uint32_t to_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

/* The tables to test, slowest first: the generic one always, AVX2 and AVX-512 where the build
 * has them and the CPU (the library's probe, src/simd/cpu.h) runs them. */
#define MAX_TABLES 3
static size_t tables(const nw_simd *out[MAX_TABLES]) {
    size_t count = 0;
    out[count++] = &nw_simd_generic;
    const int level = nw_cpu_level();
    (void)level;
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX2
    if (level >= NW_SIMD_LEVEL_AVX2)
        out[count++] = &nw_simd_avx2;
#endif
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX512
    if (level >= NW_SIMD_LEVEL_AVX512)
        out[count++] = &nw_simd_avx512;
#endif
    return count;
}

/* Error of y as an approximation of exp(x), in units of the last place of the correctly
 * rounded float (2^-149 for denormal results). An overflow that the exact value just misses
 * (y = inf where FLT_MAX is right, or the reverse) counts as 1 ulp; NaN or a wrong special
 * value counts as infinity. */
/* |y - exact| in units of the last place of exact rounded to float. */
static double ulp_error_of(double exact, float y) {
    const float rounded = (float)exact;
    if (isinf(rounded) || isinf(y)) {
        if (isinf(rounded) && isinf(y))
            return 0.0;
        return (rounded == FLT_MAX || y == FLT_MAX) ? 1.0 : INFINITY;
    }
    if (isnan(y) || y < 0.0f)
        return INFINITY;
    int exponent;
    frexp(rounded > 0.0f ? (double)rounded : 0x1p-149, &exponent); /* value in [2^(e-1), 2^e) */
    double ulp = ldexp(1.0, exponent - 24);
    if (ulp < 0x1p-149)
        ulp = 0x1p-149;
    return fabs((double)y - exact) / ulp;
}

static double ulp_error(float x, float y) {
    if (isnan(x))
        return isnan(y) ? 0.0 : INFINITY;
    return ulp_error_of(exp((double)x), y);
}

typedef struct sweep {
    double worst;
    float worst_x;
    size_t count;
} sweep;

#define BATCH 4096

/* Feeds inputs x[0 .. n-1] through table->exp_sum and records the worst ulp error. */
static void check_batch(const nw_simd *table, const float *x, size_t n, sweep *sw) {
    float y[BATCH];
    memcpy(y, x, n * sizeof(float));
    table->exp_sum(y, n, 0.0f);
    for (size_t j = 0; j < n; j++) {
        double err = ulp_error(x[j], y[j]);
        if (err > sw->worst || (err != err)) {
            sw->worst = err;
            sw->worst_x = x[j];
        }
    }
    sw->count += n;
}

/* Every `step`-th float bit pattern, then every float in a few dense ranges. */
static sweep sweep_exp(const nw_simd *table, uint64_t step) {
    sweep sw = {0.0, 0.0f, 0};
    float x[BATCH];
    size_t n = 0;
    for (uint64_t bits = 0; bits <= UINT32_MAX; bits += step) {
        x[n++] = from_bits((uint32_t)bits);
        if (n == BATCH) {
            check_batch(table, x, n, &sw);
            n = 0;
        }
    }
    /* Dense: the overflow threshold, the start of the denormal results, the underflow to 0. */
    const float lo[] = {88.6f, -87.5f, -104.2f};
    const float hi[] = {88.9f, -86.9f, -103.6f};
    for (size_t r = 0; r < sizeof lo / sizeof lo[0]; r++)
        for (float v = lo[r]; v <= hi[r]; v = nextafterf(v, INFINITY)) {
            x[n++] = v;
            if (n == BATCH) {
                check_batch(table, x, n, &sw);
                n = 0;
            }
        }
    check_batch(table, x, n, &sw);
    return sw;
}

static void test_exp_ulp(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    const uint64_t step = test_env_flag("NWATTN_TEST_EXHAUSTIVE") ? 1 : 1021;
    for (size_t i = 0; i < count; i++) {
        sweep sw = sweep_exp(t[i], step);
        printf("exp %s: %zu inputs, worst %.3f ulp at x = %.9g\n", t[i]->name, sw.count,
               sw.worst, (double)sw.worst_x);
        assert_true(sw.worst <= NW_VEXP_MAX_ULP);
        assert_true(sw.count > 4000000);
    }
}

static void test_exp_special(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    for (size_t i = 0; i < count; i++) {
        /* 19 entries: every lane position of a vector and a tail. */
        float x[19] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, -200.0f, -104.0f, 89.0f, 1e30f,
                       -1e30f, 1.0f, -1.0f, -87.0f, -103.0f, 88.7f, -INFINITY, -INFINITY, NAN,
                       -INFINITY};
        float y[19];
        memcpy(y, x, sizeof x);
        double sum = t[i]->exp_sum(y, 19, 0.0f);
        assert_int_equal(to_bits(y[0]), 0u); /* exactly +0 */
        assert_true(isinf(y[1]) && y[1] > 0);
        assert_true(isnan(y[2]) && isnan(y[17]));
        assert_true(y[3] == 1.0f && y[4] == 1.0f);
        assert_int_equal(to_bits(y[5]), 0u);
        assert_int_equal(to_bits(y[6]), 0u);
        assert_true(isinf(y[7]) && isinf(y[8]));
        assert_int_equal(to_bits(y[9]), 0u);
        assert_true(y[12] > 0.0f && y[12] < FLT_MIN * 100.0f);
        assert_true(y[13] > 0.0f && y[13] < FLT_MIN); /* a denormal */
        assert_true(isfinite(y[14]));
        assert_int_equal(to_bits(y[15]), 0u);
        assert_int_equal(to_bits(y[18]), 0u);
        assert_true(isnan(sum));
        /* The tile variant takes x <= shift only: -inf and everything below -86 give exactly
         * 0, NaN stays NaN. */
        float xt[11] = {-INFINITY, NAN, 0.0f, -0.0f, -200.0f, -86.5f, -85.5f, -1e30f, -1.0f,
                        -FLT_MAX, -INFINITY};
        assert_true(isnan(t[i]->exp_sumf(xt, 11, 0.0f)));
        assert_int_equal(to_bits(xt[0]), 0u);
        assert_true(isnan(xt[1]) && xt[2] == 1.0f && xt[3] == 1.0f);
        assert_int_equal(to_bits(xt[4]), 0u);
        assert_int_equal(to_bits(xt[5]), 0u);
        assert_true(xt[6] > 6e-38f && xt[6] < 8e-38f);
        assert_int_equal(to_bits(xt[7]), 0u);
        assert_int_equal(to_bits(xt[9]), 0u);
        assert_int_equal(to_bits(xt[10]), 0u);
        /* Masked keys under a shift: -inf - shift is -inf, exactly 0 again. */
        float z[11] = {-INFINITY, 3.0f, -INFINITY, 2.0f, -INFINITY, -INFINITY, -INFINITY,
                       -INFINITY, 1.0f, -INFINITY, -INFINITY};
        double s = t[i]->exp_sum(z, 11, 3.0f);
        for (size_t j = 0; j < 11; j++)
            if (j != 1 && j != 3 && j != 8)
                assert_int_equal(to_bits(z[j]), 0u);
        assert_true(z[1] == 1.0f);
        double want = 1.0 + exp(-1.0) + exp(-2.0);
        assert_true(fabs(s - want) < 4e-7 * want);
    }
}

/* Every tail length: results match element-wise exponentials and the sum their double sum;
 * entries beyond n are never touched. */
static void test_exp_sum_lengths(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 7);
    for (size_t i = 0; i < count; i++)
        for (size_t n = 0; n <= 70; n++) {
            float x[72], y[72];
            for (size_t j = 0; j < 72; j++)
                x[j] = tu_rng_range(&rng, -30.0f, 5.0f);
            memcpy(y, x, sizeof x);
            const float shift = 2.5f;
            double sum = t[i]->exp_sum(y, n, shift);
            double want = 0.0;
            for (size_t j = 0; j < n; j++) {
                assert_true(ulp_error(x[j] - shift, y[j]) <= NW_VEXP_MAX_ULP);
                want += (double)y[j];
            }
            assert_true(fabs(sum - want) <= 1e-12 * (want + 1e-30));
            assert_int_equal(to_bits(y[n]), to_bits(x[n]));
            assert_int_equal(to_bits(y[n + 1]), to_bits(x[n + 1]));
            /* The tile variant, shifted by the maximum as the tiles are: the softmax-term
             * exponential within NW_VEXP_MAX_ULP (4 ulp without fused multiply-adds), a float
             * sum of n terms. */
            float z[72], top = -INFINITY;
            memcpy(z, x, sizeof x);
            for (size_t j = 0; j < n; j++)
                top = x[j] > top ? x[j] : top;
            const double bound = strcmp(t[i]->name, "generic") == 0 ? 4.0 : NW_VEXP_MAX_ULP;
            float sumf = t[i]->exp_sumf(z, n, top);
            double wantf = 0.0;
            for (size_t j = 0; j < n; j++) {
                assert_true(ulp_error(x[j] - top, z[j]) <= bound);
                wantf += (double)z[j];
            }
            assert_true(fabs((double)sumf - wantf) <= (double)(n + 1) * TU_U * wantf + 1e-30);
            assert_int_equal(to_bits(z[n]), to_bits(x[n]));
        }
}

/* The one-pass softmax step: the sum and weighted sum of exp(x - shift) against double loops,
 * x untouched, -inf entries contributing exactly nothing, NaN propagating. */
static void test_exp_sum_dot(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 9);
    for (size_t i = 0; i < count; i++)
        for (size_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) {
            float x[300], x0[300], v[300];
            for (size_t j = 0; j < n; j++) {
                x[j] = tu_rng_below(&rng, 6) == 0 ? -INFINITY : tu_rng_range(&rng, -20.0f, 1.0f);
                v[j] = tu_rng_range(&rng, -1.0f, 1.0f);
            }
            memcpy(x0, x, sizeof x);
            const float shift = 1.0f;
            double want_sum = 0.0, want_dot = 0.0, bound = 0.0;
            for (size_t j = 0; j < n; j++) {
                double e = exp((double)x[j] - shift);
                want_sum += e;
                want_dot += e * v[j];
                bound += e * fabs((double)v[j]);
            }
            float dot = 42.0f;
            float sum = t[i]->exp_sum_dot(x, n, shift, v, &dot);
            assert_memory_equal(x, x0, n * sizeof(float));
            /* exp within 2 ulp, then float sums of at most n terms */
            const double rel = (NW_VEXP_MAX_ULP + (double)n + 2) * TU_U;
            assert_true(fabs((double)sum - want_sum) <= rel * want_sum + 1e-30);
            assert_true(fabs((double)dot - want_dot) <= rel * bound + 1e-30);
        }
    for (size_t i = 0; i < count; i++) {
        float x[19], v[19], dot;
        for (size_t j = 0; j < 19; j++)
            x[j] = -INFINITY, v[j] = 1.0f;
        assert_true(t[i]->exp_sum_dot(x, 19, 0.0f, v, &dot) == 0.0f && dot == 0.0f);
        x[17] = NAN;
        assert_true(isnan(t[i]->exp_sum_dot(x, 19, 0.0f, v, &dot)) && isnan(dot));
    }
}

static void test_max(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 11);
    for (size_t i = 0; i < count; i++) {
        assert_true(t[i]->max(NULL, 0) == -INFINITY);
        for (size_t n = 1; n <= 70; n++) {
            float x[70];
            for (size_t j = 0; j < n; j++)
                x[j] = tu_rng_range(&rng, -100.0f, 100.0f);
            size_t at = tu_rng_below(&rng, n);
            x[at] = 1000.0f;
            x[tu_rng_below(&rng, n)] = NAN; /* never wins (may overwrite the maximum) */
            float want = -INFINITY;
            for (size_t j = 0; j < n; j++)
                want = x[j] > want ? x[j] : want;
            assert_true(t[i]->max(x, n) == want);
        }
        float all_nan[13];
        for (size_t j = 0; j < 13; j++)
            all_nan[j] = NAN;
        assert_true(t[i]->max(all_nan, 13) == -INFINITY);
        float masked[17];
        for (size_t j = 0; j < 17; j++)
            masked[j] = -INFINITY;
        assert_true(t[i]->max(masked, 17) == -INFINITY);
    }
}

static void test_dist1(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 13);
    for (size_t i = 0; i < count; i++)
        for (int gaussian = 0; gaussian <= 1; gaussian++)
            for (size_t n = 0; n <= 70; n++) {
                float k[70], s[71];
                for (size_t j = 0; j < n; j++)
                    k[j] = tu_rng_range(&rng, -3.0f, 3.0f);
                s[n] = 42.0f;
                const float u = tu_rng_range(&rng, -3.0f, 3.0f);
                const float inv_h = tu_rng_range(&rng, 0.3f, 3.0f);
                float got_max = t[i]->dist1(gaussian, u, inv_h, k, n, s);
                float want_max = -INFINITY;
                for (size_t j = 0; j < n; j++) {
                    double e = ((double)u - k[j]) * (double)inv_h;
                    double exact = gaussian ? -0.5 * e * e : -fabs(e);
                    /* two roundings of t, then at most two more */
                    assert_true(fabs((double)s[j] - exact) <= 6.0 * TU_U * fabs(exact) + 1e-30);
                    /* bit for bit what the BLAS backend's scalar loop computes */
                    float d = (u - k[j]) * inv_h;
                    float same = gaussian ? -0.5f * d * d : -fabsf(d);
                    assert_int_equal(to_bits(s[j]), to_bits(same));
                    want_max = s[j] > want_max ? s[j] : want_max;
                }
                assert_true(got_max == want_max);
                assert_true(s[n] == 42.0f);
            }
}

/* The base-2 term exponential through dist1_exp_dot with one Laplace key (u = 0, shift 0, and
 * 1/h = ln 2 rounded, whose product with log2 e rounds to exactly 1: the exponent is exactly
 * -|k|): within 1.8 ulp of 2^-|k| over [-124, 0] where the table has fused multiply-adds (the
 * generic table rounds each product and sum: 4 ulp), 2^-124 below; sampled, or every float
 * of [-124, 0] with NWATTN_TEST_EXHAUSTIVE=1. */
static void test_exp_term_ulp(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    const uint32_t step = test_env_flag("NWATTN_TEST_EXHAUSTIVE") ? 1u : 9973u;
    const uint32_t last = to_bits(-124.0f); /* -0 .. -124: 0x80000000 up to this */
    const float inv_h = 0x1.62e43p-1f;
    assert_true(inv_h * 1.44269504088896341f == 1.0f);
    for (size_t i = 0; i < count; i++) {
        const double bound = strcmp(t[i]->name, "generic") == 0 ? 4.0 : 1.8;
        double worst = 0.0;
        float worst_x = 0.0f;
        for (uint32_t b = 0x80000000u; b <= last && b >= 0x80000000u; b += step) {
            const float x = from_bits(b), k = -x, one = 1.0f;
            float dot;
            const float y = t[i]->dist1_exp_dot(0, 0.0f, inv_h, &k, &one, 1, 0.0f, &dot);
            const double e = ulp_error_of(exp2((double)x), y);
            if (e > worst)
                worst = e, worst_x = x;
            assert_true(dot == y);
        }
        printf("%s: softmax-term exp2, worst %.3f ulp at %a\n", t[i]->name, worst,
               (double)worst_x);
        assert_true(worst <= bound);
        /* below the floor the term is 2^-124; its product with a value below 1/4 is subnormal,
         * which on x86 the row flushes to zero (an assist per subnormal made such rows 15x
         * slower on Intel), leaving the caller's MXCSR as it was */
        static const float below[] = {-124.5f, -1000.0f, -FLT_MAX};
        for (size_t j = 0; j < 3; j++) {
            const float k = below[j], one = 1.0f, small = 0.1f;
            float dot;
            assert_true(t[i]->dist1_exp_dot(0, 0.0f, inv_h, &k, &one, 1, 0.0f, &dot) ==
                        0x1p-124f);
#if defined(__SSE2__) || defined(_M_X64)
            const unsigned csr = _mm_getcsr();
            assert_true(t[i]->dist1_exp_dot(0, 0.0f, inv_h, &k, &small, 1, 0.0f, &dot) ==
                        0x1p-124f);
            assert_true(_mm_getcsr() == csr);
            assert_true(dot == 0.0f || !ftz_works()); /* valgrind ignores MXCSR.FTZ */
#else
            (void)small;
#endif
        }
    }
}

/* dist1_exp_dot against double sums of the same exponents, both kinds, every tail length,
 * shifted by the keys' largest score (or more): each term within a few ulp, so the sums
 * within (n + 8) u of the sum of magnitudes; NaN values give a NaN dot only. */
static void test_dist1_exp_dot(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 19);
    for (size_t i = 0; i < count; i++)
        for (int gaussian = 0; gaussian <= 1; gaussian++)
            for (size_t n = 1; n <= 70; n++) {
                float k[70], v[70];
                for (size_t j = 0; j < n; j++) {
                    k[j] = tu_rng_range(&rng, -3.0f, 3.0f);
                    v[j] = tu_rng_range(&rng, -1.0f, 1.0f);
                }
                const float u = tu_rng_range(&rng, -4.0f, 4.0f);
                const float inv_h = tu_rng_range(&rng, 0.3f, 3.0f);
                float lo, hi; /* the tile range the fused row bounds its scores with */
                t[i]->range(k, n, &lo, &hi);
                float want_lo = k[0], want_hi = k[0];
                for (size_t j = 1; j < n; j++)
                    want_lo = k[j] < want_lo ? k[j] : want_lo,
                    want_hi = k[j] > want_hi ? k[j] : want_hi;
                assert_true(lo == want_lo && hi == want_hi);
                /* the largest score in the kernel's rounding (nw_dist1_bound's), or above */
                const float cf = gaussian ? nw_dist1_coefficient(inv_h) : inv_h;
                float shift = -INFINITY;
                for (size_t j = 0; j < n; j++) {
                    const float d = u - k[j], s_j = gaussian ? (d * cf) * d : -fabsf(d) * cf;
                    shift = s_j > shift ? s_j : shift;
                }
                shift += (float)(n % 3);
                const double c = (double)cf;
                double sum = 0.0, dot = 0.0, mag = 0.0;
                for (size_t j = 0; j < n; j++) {
                    const double d = (double)u - (double)k[j];
                    const double x = (gaussian ? c * d * d : -fabs(d) * c) - (double)shift;
                    const double e = x < -86.0 ? exp(-86.0) : exp(x);
                    sum += e, dot += e * (double)v[j], mag += e * fabs((double)v[j]);
                }
                float got_dot;
                const float got = t[i]->dist1_exp_dot(gaussian, u, inv_h, k, v, n, shift, &got_dot);
                /* the exponent's two roundings (relative to |x| <= 40 here) and 2 ulp */
                const double rel = (double)(n + 8) * TU_U + 2.0 * 40.0 * TU_U;
                assert_true(fabs((double)got - sum) <= rel * sum + 1e-37);
                assert_true(fabs((double)got_dot - dot) <= rel * mag + 1e-37);
                v[n / 2] = NAN;
                const float same = t[i]->dist1_exp_dot(gaussian, u, inv_h, k, v, n, shift, &got_dot);
                assert_true(same == got && isnan(got_dot));
            }
}

static void test_dot(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    tu_rng rng;
    tu_rng_seed(&rng, 17);
    for (size_t i = 0; i < count; i++)
        for (size_t n = 0; n <= 300; n += (n < 70 ? 1 : 37)) {
            float x[300], y[300];
            double exact = 0.0, bound = 0.0;
            for (size_t j = 0; j < n; j++) {
                x[j] = tu_rng_range(&rng, -1.0f, 1.0f);
                y[j] = tu_rng_range(&rng, -1.0f, 1.0f);
                exact += (double)x[j] * (double)y[j];
                bound += fabs((double)x[j] * (double)y[j]);
            }
            float got = t[i]->dot(x, y, n);
            assert_true(fabs((double)got - exact) <= (double)(n + 2) * TU_U * bound + 1e-30);
        }
}

/* transpose: every element to its place for blocks of every remainder (rows and columns 0 to
 * 19 around the 8 × 8 blocks, 64 × 64 key tiles), padded pitches, the destination's padding
 * untouched. */
static void test_transpose(void **state) {
    (void)state;
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    enum { MAX = 64, LDA = MAX + 3, LDT = MAX + 5 };
    static float a[MAX * LDA], out[MAX * LDT];
    for (size_t e = 0; e < MAX * LDA; e++)
        a[e] = (float)e;
    const size_t sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 19, 64};
    const size_t n_sizes = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < count; i++)
        for (size_t x = 0; x < n_sizes; x++)
            for (size_t y = 0; y < n_sizes; y++) {
                const size_t rows = sizes[x], cols = sizes[y];
                const size_t lda = (x + y) % 2 ? LDA : cols, ldt = (x + y) % 3 ? LDT : rows;
                for (size_t e = 0; e < MAX * LDT; e++)
                    out[e] = -1.0f;
                t[i]->transpose(a, rows, cols, lda, out, ldt);
                for (size_t c = 0; c < cols; c++)
                    for (size_t r = 0; r < ldt && c * ldt + r < MAX * LDT; r++)
                        assert_true(out[c * ldt + r] == (r < rows ? a[r * lda + c] : -1.0f));
                for (size_t e = cols * ldt; e < MAX * LDT; e++)
                    assert_true(out[e] == -1.0f);
            }
}

static void test_select(void **state) {
    (void)state;
    const nw_simd *chosen = nw_simd_select();
    const nw_simd *t[MAX_TABLES];
    size_t count = tables(t);
    assert_ptr_equal(chosen, t[count - 1]); /* the fastest this CPU runs */
    printf("selected: %s\n", chosen->name);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_ulp),        cmocka_unit_test(test_exp_special),
        cmocka_unit_test(test_exp_sum_lengths), cmocka_unit_test(test_exp_sum_dot),
        cmocka_unit_test(test_max),
        cmocka_unit_test(test_dist1),          cmocka_unit_test(test_exp_term_ulp),
        cmocka_unit_test(test_dist1_exp_dot),  cmocka_unit_test(test_dot),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
