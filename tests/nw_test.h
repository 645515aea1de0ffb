/* Helpers of the Nadaraya-Watson regression tests (tests/test_nw_*.c): contexts for both
 * backends, tolerant comparisons that say what failed, data, and direct double-precision
 * evaluations of the estimators written from their textbook definitions, independent of the
 * library's code. Everything is static: each test is one translation unit. */
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

/* ---- Direct evaluation from the definitions (double) ---------------------------------------- */
static inline double nt_kernel(nwattn_kernel kernel, double t) {
    switch (kernel) {
    case NWATTN_KERNEL_GAUSSIAN:
        return exp(-t / 2.0);
    case NWATTN_KERNEL_LAPLACE:
        return exp(-sqrt(t));
    case NWATTN_KERNEL_EPANECHNIKOV:
        return t < 1.0 ? 1.0 - t : 0.0;
    case NWATTN_KERNEL_TRICUBE:
        return t < 1.0 ? pow(1.0 - pow(t, 1.5), 3.0) : 0.0;
    case NWATTN_KERNEL_UNIFORM:
        return t <= 1.0 ? 1.0 : 0.0;
    }
    return NAN;
}

static inline double nt_t(size_t d, const float *q, const float *xj, const float *h) {
    double t = 0.0;
    for (size_t k = 0; k < d; k++) {
        double u = ((double)q[k] - (double)xj[k]) / (double)h[k];
        t += u * u;
    }
    return t;
}

/* Solves the p×p system a·x = b (row-major, destroyed) by Gaussian elimination with partial
 * pivoting; returns 0 when a pivot vanishes. */
static inline int nt_solve(size_t p, double *a, double *b) {
    for (size_t c = 0; c < p; c++) {
        size_t piv = c;
        for (size_t r = c + 1; r < p; r++)
            if (fabs(a[r * p + c]) > fabs(a[piv * p + c]))
                piv = r;
        if (a[piv * p + c] == 0.0)
            return 0;
        for (size_t k = 0; k < p; k++) {
            double tmp = a[c * p + k];
            a[c * p + k] = a[piv * p + k];
            a[piv * p + k] = tmp;
        }
        double tmp = b[c];
        b[c] = b[piv];
        b[piv] = tmp;
        for (size_t r = c + 1; r < p; r++) {
            double f = a[r * p + c] / a[c * p + c];
            for (size_t k = c; k < p; k++)
                a[r * p + k] -= f * a[c * p + k];
            b[r] -= f * b[c];
        }
    }
    for (size_t c = p; c-- > 0;) {
        for (size_t k = c + 1; k < p; k++)
            b[c] -= a[c * p + k] * b[k];
        b[c] /= a[c * p + c];
    }
    return 1;
}

/* The estimate at q from the n training points (skip: left out, or SIZE_MAX) in double:
 * local constant sum K y / sum K, or local linear by solving the weighted normal equations in
 * raw coordinates. Returns 0 for an empty support (sum K == 0). */
static inline int nt_direct(nwattn_kernel kernel, nwattn_degree degree, size_t n, size_t d,
                            size_t dv, const float *x, size_t ldx, const float *y, size_t ldy,
                            const float *h, const float *q, size_t skip, double *out) {
    const size_t p = degree == NWATTN_LOCAL_LINEAR ? d + 1 : 1;
    double *m = nt_alloc(p * p * sizeof(double)), *b = nt_alloc(p * dv * sizeof(double));
    double *z = nt_alloc(p * sizeof(double)), *a = nt_alloc(p * p * sizeof(double));
    double *rhs = nt_alloc(p * sizeof(double));
    /* Gaussian and Laplace weights relative to the nearest point's, so that they cannot
     * underflow far from the data: the estimate is a ratio and does not change. */
    double t_near = INFINITY;
    for (size_t j = 0; j < n; j++)
        if (j != skip)
            t_near = fmin(t_near, nt_t(d, q, x + j * ldx, h));
    const double shift = kernel == NWATTN_KERNEL_GAUSSIAN  ? exp(t_near / 2.0)
                         : kernel == NWATTN_KERNEL_LAPLACE ? exp(sqrt(t_near))
                                                           : 1.0;
    double total = 0.0;
    for (size_t j = 0; j < n; j++) {
        if (j == skip)
            continue;
        double k = nt_kernel(kernel, nt_t(d, q, x + j * ldx, h));
        if (shift != 1.0) /* exp(a) · exp(-b) computed as exp(a - b) */
            k = kernel == NWATTN_KERNEL_GAUSSIAN
                    ? exp((t_near - nt_t(d, q, x + j * ldx, h)) / 2.0)
                    : exp(sqrt(t_near) - sqrt(nt_t(d, q, x + j * ldx, h)));
        total += k;
        z[0] = 1.0;
        for (size_t e = 1; e < p; e++)
            z[e] = (double)x[j * ldx + e - 1] - (double)q[e - 1];
        for (size_t r = 0; r < p; r++) {
            for (size_t c = 0; c < p; c++)
                m[r * p + c] += k * z[r] * z[c];
            for (size_t c = 0; c < dv; c++)
                b[r * dv + c] += k * z[r] * (double)y[j * ldy + c];
        }
    }
    int ok = total > 0.0;
    for (size_t c = 0; ok && c < dv; c++) {
        memcpy(a, m, p * p * sizeof(double));
        for (size_t r = 0; r < p; r++)
            rhs[r] = b[r * dv + c];
        ok = nt_solve(p, a, rhs);
        out[c] = rhs[0];
    }
    free(m), free(b), free(z), free(a), free(rhs);
    return ok;
}

#endif /* NWATTN_NW_TEST_H */
