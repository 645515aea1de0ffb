/* Small helpers for the attention, fused-path and partial-state tests: a deterministic RNG,
 * buffers, tolerant comparisons that report the worst entry, contexts per backend. Header-only
 * (static inline) so that each test stays one self-contained executable. */
#ifndef NWATTN_ATTN_TESTUTIL_H
#define NWATTN_ATTN_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nwattn.h"
#include "test_env.h"

/* ---- Random numbers (splitmix64) -------------------------------------------------------- */
typedef struct at_rng {
    uint64_t state;
} at_rng;

static inline uint64_t at_next(at_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static inline double at_unit(at_rng *r) { return (double)(at_next(r) >> 11) * 0x1.0p-53; }
static inline float at_uniform(at_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)at_unit(r);
}
static inline size_t at_below(at_rng *r, size_t n) { return (size_t)(at_next(r) % n); }

/* ---- Buffers ------------------------------------------------------------------------------ */
/* count floats, uniform on [lo, hi). */
static inline float *at_random(at_rng *r, size_t count, float lo, float hi) {
    float *x = malloc((count ? count : 1) * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < count; i++)
        x[i] = at_uniform(r, lo, hi);
    return x;
}
/* count floats, all `value`. */
static inline float *at_filled(size_t count, float value) {
    float *x = malloc((count ? count : 1) * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < count; i++)
        x[i] = value;
    return x;
}
static inline float *at_copy(const float *src, size_t count) {
    float *x = at_filled(count, 0.0f);
    memcpy(x, src, count * sizeof(float));
    return x;
}

/* ---- Comparisons -------------------------------------------------------------------------- */
/* Entries (b, i, j) of two batch×rows×cols arrays with their own pitches must agree within
 * atol + rtol·|want|; equal infinities agree, NaN never does. Prints the worst entry. */
static inline int at_close(const char *what, size_t batch, size_t rows, size_t cols,
                           const float *got, size_t ld_got, size_t stride_got, const float *want,
                           size_t ld_want, size_t stride_want, double atol, double rtol) {
    double worst = -INFINITY, max_diff = 0.0;
    size_t wb = 0, wi = 0, wj = 0;
    int ok = 1;
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++) {
                double g = got[b * stride_got + i * ld_got + j];
                double w = want[b * stride_want + i * ld_want + j];
                double excess;
                if (isinf(w) || isinf(g))
                    excess = g == w ? -1.0 : INFINITY;
                else if (isnan(g) || isnan(w))
                    excess = INFINITY;
                else {
                    excess = fabs(g - w) - (atol + rtol * fabs(w));
                    max_diff = fabs(g - w) > max_diff ? fabs(g - w) : max_diff;
                }
                if (excess > 0.0)
                    ok = 0;
                if (excess > worst) {
                    worst = excess;
                    wb = b, wi = i, wj = j;
                }
            }
    if (getenv("NWATTN_TEST_VERBOSE") != NULL)
        fprintf(stderr, "%s: max |diff| %.3g\n", what, max_diff);
    if (!ok)
        fprintf(stderr, "%s: worst entry (%zu, %zu, %zu): got %.9g want %.9g (atol %g rtol %g)\n",
                what, wb, wi, wj, (double)got[wb * stride_got + wi * ld_got + wj],
                (double)want[wb * stride_want + wi * ld_want + wj], atol, rtol);
    return ok;
}

/* Bitwise equality of count floats. */
static inline int at_same_bits(const float *a, const float *b, size_t count) {
    return memcmp(a, b, count * sizeof(float)) == 0;
}

/* ---- Contexts ----------------------------------------------------------------------------- */
static inline nwattn_context *at_context(nwattn_backend backend, size_t threads) {
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    assert_int_equal(nwattn_context_set_backend(ctx, backend), NWATTN_OK);
    assert_int_equal(nwattn_context_set_threads(ctx, threads), NWATTN_OK);
    return ctx;
}

#define AT_OK(ctx, expr)                                                                    \
    do {                                                                                    \
        nwattn_status at_status_ = (expr);                                                  \
        if (at_status_ != NWATTN_OK)                                                        \
            fprintf(stderr, "%s failed: %s: %s\n", #expr, nwattn_status_name(at_status_), \
                    nwattn_context_last_error(ctx));                                        \
        assert_int_equal(at_status_, NWATTN_OK);                                            \
    } while (0)

#endif /* NWATTN_ATTN_TESTUTIL_H */
