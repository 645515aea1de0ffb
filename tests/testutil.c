#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RNG --------------------------------------------------------------------------------- */
void tu_rng_seed(tu_rng *rng, uint64_t seed) {
    rng->state = seed;
}

uint64_t tu_rng_u64(tu_rng *rng) {
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double tu_rng_unit(tu_rng *rng) {
    return (double)(tu_rng_u64(rng) >> 11) * 0x1p-53;
}

float tu_rng_range(tu_rng *rng, float lo, float hi) {
    float x = (float)((double)lo + ((double)hi - (double)lo) * tu_rng_unit(rng));
    return x < hi ? x : lo; /* rounding may reach hi */
}

double tu_rng_normal(tu_rng *rng) {
    double u1 = 1.0 - tu_rng_unit(rng); /* (0, 1] */
    double u2 = tu_rng_unit(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

size_t tu_rng_below(tu_rng *rng, size_t n) {
    return (size_t)(tu_rng_u64(rng) % (uint64_t)n);
}

/* ---- Matrices ---------------------------------------------------------------------------- */
float tu_sentinel(void) {
    uint32_t bits = TU_SENTINEL_BITS;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

int tu_is_sentinel(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits == TU_SENTINEL_BITS;
}

#define TU_TAIL 8 /* sentinel floats after the last element, to catch writes past the end */

tu_mat tu_mat_new_layout(size_t batch, size_t rows, size_t cols, size_t ld, size_t stride) {
    tu_mat mat = {NULL, batch, rows, cols, ld, stride, 0};
    size_t extent = 0;
    if (batch > 0 && rows > 0)
        extent = (batch - 1) * stride + (rows - 1) * ld + cols;
    mat.count = extent + TU_TAIL;
    mat.data = malloc(mat.count * sizeof(float));
    assert_non_null(mat.data);
    float sentinel = tu_sentinel();
    for (size_t t = 0; t < mat.count; t++)
        mat.data[t] = sentinel;
    return mat;
}

tu_mat tu_mat_new(size_t batch, size_t rows, size_t cols, size_t ld_pad, size_t stride_pad) {
    size_t ld = cols + ld_pad;
    return tu_mat_new_layout(batch, rows, cols, ld, rows * ld + stride_pad);
}

tu_mat tu_mat_new_broadcast(size_t batch, size_t rows, size_t cols, size_t ld_pad) {
    return tu_mat_new_layout(batch, rows, cols, cols + ld_pad, 0);
}

tu_mat tu_mat_clone(const tu_mat *src) {
    tu_mat mat = *src;
    mat.data = malloc(mat.count * sizeof(float));
    assert_non_null(mat.data);
    memcpy(mat.data, src->data, mat.count * sizeof(float));
    return mat;
}

void tu_mat_free(tu_mat *mat) {
    free(mat->data);
    mat->data = NULL;
}

float *tu_at(const tu_mat *mat, size_t b, size_t i, size_t j) {
    return mat->data + b * mat->stride + i * mat->ld + j;
}

float tu_get(const tu_mat *mat, size_t b, size_t i, size_t j) {
    return *tu_at(mat, b, i, j);
}

void tu_mat_fill_uniform(tu_mat *mat, tu_rng *rng, float lo, float hi) {
    for (size_t b = 0; b < mat->batch; b++)
        for (size_t i = 0; i < mat->rows; i++)
            for (size_t j = 0; j < mat->cols; j++)
                *tu_at(mat, b, i, j) = tu_rng_range(rng, lo, hi);
}

void tu_mat_fill_value(tu_mat *mat, float value) {
    for (size_t b = 0; b < mat->batch; b++)
        for (size_t i = 0; i < mat->rows; i++)
            for (size_t j = 0; j < mat->cols; j++)
                *tu_at(mat, b, i, j) = value;
}

double tu_mat_maxabs_item(const tu_mat *mat, size_t b) {
    double best = 0.0;
    for (size_t i = 0; i < mat->rows; i++)
        for (size_t j = 0; j < mat->cols; j++) {
            double x = fabs((double)tu_get(mat, b, i, j));
            if (x > best)
                best = x;
        }
    return best;
}

double tu_mat_maxabs(const tu_mat *mat) {
    double best = 0.0;
    for (size_t b = 0; b < mat->batch; b++) {
        double x = tu_mat_maxabs_item(mat, b);
        if (x > best)
            best = x;
    }
    return best;
}

int tu_mat_padding_intact(const tu_mat *mat, const char *what) {
    unsigned char *is_elem = calloc(mat->count, 1);
    assert_non_null(is_elem);
    for (size_t b = 0; b < mat->batch; b++)
        for (size_t i = 0; i < mat->rows; i++)
            for (size_t j = 0; j < mat->cols; j++)
                is_elem[b * mat->stride + i * mat->ld + j] = 1;
    int ok = 1;
    for (size_t t = 0; t < mat->count && ok; t++) {
        if (!is_elem[t] && !tu_is_sentinel(mat->data[t])) {
            print_message("%s: padding float %zu of %zu was overwritten with %.9g\n", what, t,
                          mat->count, (double)mat->data[t]);
            ok = 0;
        }
    }
    free(is_elem);
    return ok;
}

int tu_mat_no_nan(const tu_mat *mat, const char *what) {
    for (size_t b = 0; b < mat->batch; b++)
        for (size_t i = 0; i < mat->rows; i++)
            for (size_t j = 0; j < mat->cols; j++)
                if (isnan(tu_get(mat, b, i, j))) {
                    print_message("%s: NaN at [%zu,%zu,%zu]%s\n", what, b, i, j,
                                  tu_is_sentinel(tu_get(mat, b, i, j)) ? " (never written)" : "");
                    return 0;
                }
    return 1;
}

int tu_mat_bits_equal(const tu_mat *a, const tu_mat *b) {
    return a->count == b->count && memcmp(a->data, b->data, a->count * sizeof(float)) == 0;
}

/* ---- Comparison -------------------------------------------------------------------------- */
static int tu_verbose(void) { return test_env_flag("NWATTN_TEST_VERBOSE"); }

int tu_allclose_tol(const char *what, const tu_mat *got, const tu_mat *want, const tu_mat *tol,
                    double atol, double rtol) {
    assert_int_equal(got->batch, want->batch);
    assert_int_equal(got->rows, want->rows);
    assert_int_equal(got->cols, want->cols);
    size_t bad = 0, total = 0;
    double worst_ratio = -1.0, max_diff = 0.0;
    size_t wb = 0, wi = 0, wj = 0;
    double wgot = 0.0, wwant = 0.0, wallowed = 0.0;
    for (size_t b = 0; b < got->batch; b++)
        for (size_t i = 0; i < got->rows; i++)
            for (size_t j = 0; j < got->cols; j++) {
                double g = (double)tu_get(got, b, i, j);
                double w = (double)tu_get(want, b, i, j);
                double allowed = atol + rtol * fabs(w);
                if (tol != NULL)
                    allowed += (double)tu_get(tol, b, i, j);
                double ratio;
                total++;
                if (isnan(g) || isnan(w)) {
                    ratio = INFINITY;
                } else if (isinf(g) || isinf(w)) {
                    ratio = (g == w) ? 0.0 : INFINITY;
                } else {
                    double diff = fabs(g - w);
                    if (diff > max_diff)
                        max_diff = diff;
                    ratio = diff <= allowed ? (allowed > 0.0 ? diff / allowed : 0.0)
                                            : (allowed > 0.0 ? diff / allowed : INFINITY);
                }
                if (ratio > 1.0)
                    bad++;
                if (ratio > worst_ratio) {
                    worst_ratio = ratio;
                    wb = b, wi = i, wj = j;
                    wgot = g, wwant = w, wallowed = allowed;
                }
            }
    if (bad > 0) {
        print_message("%s: %zu of %zu entries out of tolerance; worst at [b=%zu,i=%zu,j=%zu]: "
                      "got %.9g, want %.9g, |diff| %.3g, allowed %.3g (atol %.3g, rtol %.3g)\n",
                      what, bad, total, wb, wi, wj, wgot, wwant, fabs(wgot - wwant), wallowed,
                      atol, rtol);
    } else if (tu_verbose() && total > 0) {
        print_message("[deviation] %-44s max|diff| %.3g, worst diff/allowed %.3g at "
                      "[%zu,%zu,%zu]\n",
                      what, max_diff, worst_ratio, wb, wi, wj);
    }
    return bad == 0;
}

int tu_allclose(const char *what, const tu_mat *got, const tu_mat *want, double atol,
                double rtol) {
    return tu_allclose_tol(what, got, want, NULL, atol, rtol);
}

double tu_max_abs_diff(const tu_mat *got, const tu_mat *want) {
    double best = 0.0;
    for (size_t b = 0; b < got->batch; b++)
        for (size_t i = 0; i < got->rows; i++)
            for (size_t j = 0; j < got->cols; j++) {
                double d = fabs((double)tu_get(got, b, i, j) - (double)tu_get(want, b, i, j));
                if (d > best)
                    best = d;
            }
    return best;
}

/* ---- Contexts ---------------------------------------------------------------------------- */
nwattn_context *tu_context(nwattn_backend backend) {
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    assert_non_null(ctx);
    assert_int_equal(nwattn_context_set_backend(ctx, backend), NWATTN_OK);
    assert_int_equal(nwattn_context_get_backend(ctx), backend);
    return ctx;
}

void tu_assert_ok(nwattn_context *ctx, nwattn_status status, const char *expr, const char *file,
                  int line) {
    const char *msg = nwattn_context_last_error(ctx);
    if (status != NWATTN_OK) {
        print_message("%s:%d: %s returned %s: %s\n", file, line, expr, nwattn_status_name(status),
                      msg);
        fail_msg("%s", "call failed");
    }
    if (msg == NULL || msg[0] != '\0') {
        print_message("%s:%d: %s succeeded but last_error is \"%s\"\n", file, line, expr,
                      msg ? msg : "(NULL)");
        fail_msg("%s", "last_error not empty after success");
    }
}

void tu_backends_init(tu_backends *bk) {
    bk->ctx[TU_REF] = tu_context(NWATTN_BACKEND_REFERENCE);
    bk->ctx[TU_BLAS] = tu_context(NWATTN_BACKEND_BLAS);
}

void tu_backends_fini(tu_backends *bk) {
    nwattn_context_destroy(bk->ctx[TU_REF]);
    nwattn_context_destroy(bk->ctx[TU_BLAS]);
    bk->ctx[TU_REF] = bk->ctx[TU_BLAS] = NULL;
}

void tu_run_both(const tu_backends *bk, tu_call_fn fn, void *user) {
    for (int which = TU_REF; which <= TU_BLAS; which++) {
        nwattn_status st = fn(bk->ctx[which], user, which);
        tu_assert_ok(bk->ctx[which], st, which == TU_REF ? "call (REFERENCE)" : "call (BLAS)",
                     __FILE__, __LINE__);
    }
}

/* ---- Counting allocator ------------------------------------------------------------------ */
typedef union tu_header {
    size_t bytes;
    max_align_t align;
} tu_header;

static void *tu_counting_alloc(void *user, size_t bytes) {
    tu_alloc_stats *stats = user;
    if (stats->budget == 0) {
        stats->failures++;
        return NULL;
    }
    if (bytes > SIZE_MAX - sizeof(tu_header))
        return NULL;
    tu_header *h = malloc(sizeof(tu_header) + bytes);
    if (h == NULL)
        return NULL;
    if (stats->budget > 0)
        stats->budget--;
    h->bytes = bytes;
    stats->allocs++;
    stats->live_bytes += bytes;
    if (stats->live_bytes > stats->peak_bytes)
        stats->peak_bytes = stats->live_bytes;
    return h + 1;
}

static void tu_counting_free(void *user, void *ptr) {
    tu_alloc_stats *stats = user;
    assert_non_null(ptr); /* the header promises never NULL */
    tu_header *h = (tu_header *)ptr - 1;
    stats->frees++;
    stats->live_bytes -= h->bytes;
    free(h);
}

nwattn_allocator tu_counting_allocator(tu_alloc_stats *stats) {
    memset(stats, 0, sizeof *stats);
    stats->budget = -1;
    nwattn_allocator a = {tu_counting_alloc, tu_counting_free, stats};
    return a;
}
