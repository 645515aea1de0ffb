/* Test helpers: a deterministic RNG, padded batched matrices with sentinel padding, tolerant
 * comparisons that report the worst entry, contexts for both backends, a counting allocator. */
#ifndef NWATTN_TESTUTIL_H
#define NWATTN_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "nwattn.h"
#include "test_env.h"

/* Unit roundoff of float32: every tolerance below is a multiple of it. */
#define TU_U 0x1p-24

/* ---- Deterministic random numbers (splitmix64) ------------------------------------------- */
typedef struct tu_rng {
    uint64_t state;
} tu_rng;

void tu_rng_seed(tu_rng *rng, uint64_t seed);
uint64_t tu_rng_u64(tu_rng *rng);
double tu_rng_unit(tu_rng *rng);                    /* uniform on [0, 1) */
float tu_rng_range(tu_rng *rng, float lo, float hi); /* uniform on [lo, hi) */
double tu_rng_normal(tu_rng *rng);                  /* standard normal */
size_t tu_rng_below(tu_rng *rng, size_t n);         /* uniform on 0 .. n-1, n >= 1 */

/* ---- Batched padded matrices ------------------------------------------------------------- */
/* `batch` matrices of rows×cols, element (b, i, j) at data[b*stride + i*ld + j]. Every float of
 * the buffer that is no element (row padding, gaps between items, a tail) holds the sentinel, a
 * quiet NaN with a recognisable payload: an input's padding that leaks into a result shows up as
 * NaN, and an output's padding can be checked bit for bit. */
typedef struct tu_mat {
    float *data;
    size_t batch, rows, cols, ld, stride;
    size_t count; /* floats in data */
} tu_mat;

#define TU_SENTINEL_BITS 0x7fcdbeefu
float tu_sentinel(void);
int tu_is_sentinel(float x);

/* ld = cols + ld_pad; stride = rows*ld + stride_pad (0 when broadcast is set, for inputs). */
tu_mat tu_mat_new(size_t batch, size_t rows, size_t cols, size_t ld_pad, size_t stride_pad);
tu_mat tu_mat_new_broadcast(size_t batch, size_t rows, size_t cols, size_t ld_pad);
/* Any layout: ld >= cols, any stride (the caller keeps output items apart). */
tu_mat tu_mat_new_layout(size_t batch, size_t rows, size_t cols, size_t ld, size_t stride);
tu_mat tu_mat_clone(const tu_mat *src);
void tu_mat_free(tu_mat *mat);

float *tu_at(const tu_mat *mat, size_t b, size_t i, size_t j);
float tu_get(const tu_mat *mat, size_t b, size_t i, size_t j);
void tu_mat_fill_uniform(tu_mat *mat, tu_rng *rng, float lo, float hi);
void tu_mat_fill_value(tu_mat *mat, float value);
/* Largest |element| of item b / of all items. */
double tu_mat_maxabs_item(const tu_mat *mat, size_t b);
double tu_mat_maxabs(const tu_mat *mat);
/* True if every float that is no element still holds the sentinel (prints the first culprit). */
int tu_mat_padding_intact(const tu_mat *mat, const char *what);
/* True if no element is NaN (prints the first culprit). */
int tu_mat_no_nan(const tu_mat *mat, const char *what);
/* True if the two buffers are bit-identical (same layout). */
int tu_mat_bits_equal(const tu_mat *a, const tu_mat *b);

/* ---- Comparison -------------------------------------------------------------------------- */
/* Entry (b,i,j) passes when |got - want| <= atol + tol(b,i,j) + rtol*|want|, where tol is an
 * optional per-entry bound (same shape; NULL for none). Infinities must match exactly and NaN
 * never passes. On failure the worst entry is printed with `what`. With the environment
 * variable NWATTN_TEST_VERBOSE set, the largest deviation is printed on success too. */
int tu_allclose_tol(const char *what, const tu_mat *got, const tu_mat *want, const tu_mat *tol,
                    double atol, double rtol);
int tu_allclose(const char *what, const tu_mat *got, const tu_mat *want, double atol, double rtol);
/* Largest |got - want| over finite entries (for reports). */
double tu_max_abs_diff(const tu_mat *got, const tu_mat *want);

/* ---- Contexts ---------------------------------------------------------------------------- */
nwattn_context *tu_context(nwattn_backend backend);

/* cmocka assertion that status is OK and the context's last error is "". */
#define TU_ASSERT_OK(ctx, expr) tu_assert_ok((ctx), (expr), #expr, __FILE__, __LINE__)
void tu_assert_ok(nwattn_context *ctx, nwattn_status status, const char *expr, const char *file,
                  int line);

/* The same call under the reference and the BLAS backend. The callback gets the context and
 * which = TU_REF or TU_BLAS, and writes to its own outputs for that `which`. Both calls must
 * succeed with an empty last error. */
enum { TU_REF = 0, TU_BLAS = 1 };
typedef nwattn_status (*tu_call_fn)(nwattn_context *ctx, void *user, int which);
typedef struct tu_backends {
    nwattn_context *ctx[2];
} tu_backends;
void tu_backends_init(tu_backends *bk);
void tu_backends_fini(tu_backends *bk);
void tu_run_both(const tu_backends *bk, tu_call_fn fn, void *user);

/* ---- Counting allocator ------------------------------------------------------------------ */
/* Counts allocations and frees; with budget >= 0 only `budget` more allocations succeed. */
typedef struct tu_alloc_stats {
    size_t allocs, frees, failures;
    size_t live_bytes, peak_bytes;
    long budget; /* < 0: unlimited */
} tu_alloc_stats;
nwattn_allocator tu_counting_allocator(tu_alloc_stats *stats);

#endif /* NWATTN_TESTUTIL_H */
