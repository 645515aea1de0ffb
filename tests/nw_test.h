/* Helpers of the Nadaraya-Watson regression tests (tests/test_nw_*.c): contexts for both
 * backends, tolerant comparisons that say what failed, and data; the direct evaluations of the
 * estimators from their textbook definitions are the oracle's (tests/oracle.h). Everything
 * here is static: each test is one translation unit. */
#ifndef NWATTN_NW_TEST_H
#define NWATTN_NW_TEST_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmocka needs the headers above first */
#include <cmocka.h>

#include "nwattn.h"
#define OR_CORE_ONLY
#include "oracle.h"
#include "test_env.h"

#define NT_ASSERT_OK(ctx, expr)                                                                    \
    do {                                                                                           \
        nwattn_status nt_st_ = (expr);                                                             \
        if (nt_st_ != NWATTN_OK)                                                                   \
            fail_msg("%s failed: %s: %s", #expr, nwattn_status_name(nt_st_),                       \
                     nwattn_context_last_error(ctx));                                              \
    } while (0)

#define NT_ASSERT_STATUS(ctx, expr, want)                                                          \
    do {                                                                                           \
        nwattn_status nt_st_ = (expr);                                                             \
        if (nt_st_ != (want))                                                                      \
            fail_msg("%s returned %s, expected %s (%s)", #expr, nwattn_status_name(nt_st_),        \
                     nwattn_status_name(want), nwattn_context_last_error(ctx));                    \
        if (strstr(nwattn_context_last_error(ctx), nwattn_status_name(want)) == NULL)              \
            fail_msg("%s: message \"%s\" does not name %s", #expr, nwattn_context_last_error(ctx), \
                     nwattn_status_name(want));                                                    \
    } while (0)

/* |got - want| <= atol + rtol |want|, with a message naming the entry. */
static inline void nt_close(const char *what, size_t index, double got, double want, double atol,
                            double rtol) {
    if (got == want) /* infinities included */
        return;
    if (!(fabs(got - want) <= atol + rtol * fabs(want)))
        fail_msg("%s[%zu]: got %.9g, want %.9g (|diff| %.3g > %.3g)", what, index, got, want,
                 fabs(got - want), atol + rtol * fabs(want));
}

static inline nwattn_context *nt_context(nwattn_backend backend) {
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    assert_int_equal(nwattn_context_set_backend(ctx, backend), NWATTN_OK);
    return ctx;
}

static inline void *nt_alloc(size_t bytes) {
    void *p = calloc(bytes > 0 ? bytes : 1, 1);
    assert_non_null(p);
    return p;
}

/* ---- Data ------------------------------------------------------------------------------------ */
/* rows×cols floats with row pitch ld, uniform on [lo, hi); the padding holds NaN, so that a read
 * of padding shows up in the results. */
static inline float *nt_matrix(nwattn_rng *rng, size_t rows, size_t cols, size_t ld, double lo,
                               double hi) {
    float *a = nt_alloc((rows > 0 ? rows : 1) * ld * sizeof(float));
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < ld; j++)
            a[i * ld + j] = j < cols ? (float)(lo + (hi - lo) * nwattn_rng_uniform(rng)) : NAN;
    return a;
}

/* ---- Direct evaluation from the definitions ------------------------------------------------- */
/* The kernels, t, the small linear solver and the direct local constant / linear estimate are
 * the oracle's (tests/oracle.h: or_kernel, or_kernel_t, or_solve, or_nw_direct). */

#endif /* NWATTN_NW_TEST_H */
