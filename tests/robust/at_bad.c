/* The classes of bad input, applied generically to any function of the API table. Each class
 * turns a freshly built valid case into variant v of its kind of bad input and states the
 * documented status (nwattn.h) for the REFERENCE, BLAS and AUTO backends. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api_table.h"

static void expect_all(at_bad *bad, nwattn_status status) {
    for (int b = 0; b < AT_BACKENDS; b++)
        bad->expect[b] = status;
}

/* A valid call after all: it succeeds and may write its outputs. */
static void expect_success(at_bad *bad) {
    expect_all(bad, NWATTN_OK);
    bad->writes_allowed = 1;
}

static int dim_used(const at_case *c, int k) {
    return c->fn->dim_used == NULL || c->fn->dim_used(c, k);
}

/* Whether operand i reaches the call: it has a buffer, and it is not part of a mask the call
 * does not get, nor the bandwidths of a dot or cosine score (which ignore them). */
static int present(const at_case *c, int i) {
    if (c->buf[i].block == NULL)
        return 0;
    if (c->mask_null && (i == c->op_lens || i == c->op_additive || i == c->op_keep))
        return 0;
    if (i == c->op_bandwidths &&
        (c->score.kind == NWATTN_SCORE_DOT || c->score.kind == NWATTN_SCORE_COSINE))
        return 0;
    return 1;
}

static size_t span_bytes(const at_case *c, int i) {
    size_t items, rows, cols;
    at_operand_shape(c, i, &items, &rows, &cols);
    if (items == 0 || rows == 0 || cols == 0)
        return 0;
    const at_buffer *b = &c->buf[i];
    size_t ld = (c->op[i].flags & AT_HAS_LD) ? b->ld : cols;
    return ((items - 1) * b->stride + (rows - 1) * ld + cols) * at_elem_bytes(c->op[i].elem);
}

static int any_zero_dim(const at_case *c) {
    for (int k = 0; k < c->fn->n_dims; k++)
        if (c->dim[k] == 0)
            return 1;
    return 0;
}

/* Keeps valid lengths <= n after n changed. */
static void clamp_lens(at_case *c) {
    if (c->op_lens < 0 || !present(c, c->op_lens))
        return;
    size_t items, rows, cols;
    at_operand_shape(c, c->op_lens, &items, &rows, &cols);
    size_t *lens = c->buf[c->op_lens].data;
    const size_t n = c->dim[c->fn->mask_n_dim];
    for (size_t t = 0; t < cols; t++)
        if (lens[t] > n)
            lens[t] = n;
}

/* ---- Classes ------------------------------------------------------------------------------ */
static int null_context(int v, at_case *c, at_bad *bad) {
    (void)c;
    if (v > 0)
        return 0;
    snprintf(bad->label, sizeof bad->label, "ctx = NULL");
    bad->null_ctx = 1;
    expect_all(bad, NWATTN_ERR_NULL_POINTER);
    return 1;
}

static int null_operand(int v, at_case *c, at_bad *bad) {
    for (int i = 0; i < c->n_ops; i++) {
        if (at_is_optional(&c->op[i]) || v-- > 0)
            continue;
        c->buf[i].data = NULL;
        snprintf(bad->label, sizeof bad->label, "%s = NULL", c->op[i].name);
        /* saved "may be NULL only when the count is 0" (nwattn.h; a fuzzer find) */
        if ((c->op[i].flags & AT_NULL_IF_EMPTY) && span_bytes(c, i) == 0)
            expect_success(bad);
        else
            expect_all(bad, NWATTN_ERR_NULL_POINTER);
        return 1;
    }
    return 0;
}

static int null_score(int v, at_case *c, at_bad *bad) {
    if (v > 0 || c->fn->score_dim < 0)
        return 0;
    c->score_null = 1;
    snprintf(bad->label, sizeof bad->label, "score = NULL");
    if (c->fn->score_optional)
        expect_success(bad); /* the documented default score */
    else
        expect_all(bad, NWATTN_ERR_NULL_POINTER);
    return 1;
}

static int null_struct(int v, at_case *c, at_bad *bad) {
    if (v >= c->fn->n_structs)
        return 0;
    c->null_structs = 1u << v;
    snprintf(bad->label, sizeof bad->label, "%s = NULL", c->fn->structs[v]);
    expect_all(bad, NWATTN_ERR_NULL_POINTER);
    return 1;
}

static int small_leading_dim(int v, at_case *c, at_bad *bad) {
    for (int i = 0; i < c->n_ops; i++) {
        if (!(c->op[i].flags & AT_HAS_LD) || !present(c, i))
            continue;
        size_t items, rows, cols;
        at_operand_shape(c, i, &items, &rows, &cols);
        for (int which = 0; which < 2; which++) {
            /* rows of length 0 take any leading dimension, 0 included (nwattn.h) */
            if (cols == 0 || v-- > 0)
                continue;
            c->buf[i].ld = which == 0 ? cols - 1 : 0;
            snprintf(bad->label, sizeof bad->label, "%s: ld %zu < row %zu", c->op[i].name,
                     c->buf[i].ld, cols);
            expect_all(bad, NWATTN_ERR_BAD_LEADING_DIM);
            return 1;
        }
    }
    return 0;
}

static int overlapping_stride(int v, at_case *c, at_bad *bad) {
    for (int i = 0; i < c->n_ops; i++) {
        if (!at_is_output(&c->op[i]) || !(c->op[i].flags & AT_HAS_STRIDE) ||
            (c->op[i].flags & AT_SHARED_STRIDE) || !present(c, i))
            continue;
        size_t items, rows, cols;
        at_operand_shape(c, i, &items, &rows, &cols);
        size_t ld = (c->op[i].flags & AT_HAS_LD) ? c->buf[i].ld : cols;
        if (items < 2 || rows == 0 || cols == 0)
            continue;
        size_t item = (rows - 1) * ld + cols;
        for (int which = 0; which < 2; which++) {
            if (which == 1 && item == 1)
                continue; /* item - 1 is already 0 */
            if (v-- > 0)
                continue;
            c->buf[i].stride = which == 0 ? item - 1 : 0;
            snprintf(bad->label, sizeof bad->label, "%s: stride %zu < item %zu", c->op[i].name,
                     c->buf[i].stride, item);
            expect_all(bad, NWATTN_ERR_BAD_STRIDE);
            return 1;
        }
    }
    return 0;
}

/* Output o starts at input i's first element (exact) or inside its last one (partial). */
static int output_aliases_input(int v, at_case *c, at_bad *bad) {
    for (int o = 0; o < c->n_ops; o++) {
        if (!at_is_output(&c->op[o]) || !present(c, o) || span_bytes(c, o) == 0)
            continue;
        for (int i = 0; i < c->n_ops; i++) {
            if (at_is_output(&c->op[i]) || !present(c, i) || span_bytes(c, i) == 0)
                continue;
            for (int partial = 0; partial < 2; partial++) {
                unsigned char *base = c->buf[i].data;
                /* partial: the output element holding the input's last byte */
                const uintptr_t align = (uintptr_t)at_elem_bytes(c->op[o].elem);
                const uintptr_t last =
                    (uintptr_t)(base + span_bytes(c, i) - 1) & ~(align - 1);
                if ((partial && last == (uintptr_t)base) || v-- > 0)
                    continue; /* a one-element input: the same as the exact variant */
                if (partial) {
                    c->buf[o].data = (void *)last;
                } else {
                    c->buf[o].data = base;
                    /* The one pair allowed to share a buffer must differ in layout to be bad. */
                    if (o == c->fn->in_place_out && i == c->fn->in_place_in) {
                        size_t items, rows, cols;
                        at_operand_shape(c, o, &items, &rows, &cols);
                        c->buf[o].ld = c->buf[i].ld + 1;
                        c->buf[o].stride = rows * c->buf[o].ld;
                    }
                }
                snprintf(bad->label, sizeof bad->label, "%s %s %s", c->op[o].name,
                         partial ? "starts inside the last element of" : "starts at", c->op[i].name);
                expect_all(bad, NWATTN_ERR_ALIASING);
                return 1;
            }
        }
    }
    return 0;
}

static int output_aliases_output(int v, at_case *c, at_bad *bad) {
    for (int o = 0; o < c->n_ops; o++)
        for (int p = o + 1; p < c->n_ops; p++) {
            if (!at_is_output(&c->op[o]) || !at_is_output(&c->op[p]) || !present(c, o) ||
                !present(c, p) || span_bytes(c, o) == 0 || span_bytes(c, p) == 0 || v-- > 0)
                continue;
            c->buf[p].data = c->buf[o].data;
            snprintf(bad->label, sizeof bad->label, "%s = %s", c->op[p].name, c->op[o].name);
            expect_all(bad, NWATTN_ERR_ALIASING);
            return 1;
        }
    return 0;
}

static int zero_dimension(int v, at_case *c, at_bad *bad) {
    if (v >= c->fn->n_dims)
        return 0;
    const at_dim *d = &c->fn->dims[v];
    c->dim[v] = 0;
    clamp_lens(c);
    snprintf(bad->label, sizeof bad->label, "%s = 0", d->name);
    if (!dim_used(c, v)) {
        expect_success(bad);
        return 1;
    }
    switch (d->zero) {
    case AT_ZERO_INVALID:
        expect_all(bad, d->zero_status != NWATTN_OK ? d->zero_status : NWATTN_ERR_BAD_DIMENSION);
        break;
    case AT_ZERO_EMPTY:
        expect_all(bad, NWATTN_OK);
        break;
    case AT_ZERO_DEFINED:
        expect_all(bad, NWATTN_OK);
        bad->writes_allowed = 1;
        break;
    }
    return 1;
}

/* A dimension so large that some operand's byte count overflows size_t; leading dimensions
 * follow it so that the overflow, not a short row, is what the call sees. */
static int overflowing_dimension(int v, at_case *c, at_bad *bad) {
    static const size_t huge[] = {SIZE_MAX / 4 + 1, SIZE_MAX / 2 + 1, SIZE_MAX};
    const int n_huge = (int)(sizeof huge / sizeof huge[0]);
    if (any_zero_dim(c))
        return 0; /* another zero dimension makes the problem empty: valid whatever this one is */
    for (int k = 0; k < c->fn->n_dims; k++) {
        if (c->fn->dims[k].no_extent || c->fn->dims[k].offset_of >= 0)
            continue;
        for (int h = 0; h < n_huge; h++) {
            if (v-- > 0)
                continue;
            c->dim[k] = huge[h];
            if (!dim_used(c, k)) {
                snprintf(bad->label, sizeof bad->label, "unused %s = %zu", c->fn->dims[k].name,
                         huge[h]);
                expect_success(bad);
                return 1;
            }
            for (int i = 0; i < c->n_ops; i++) {
                size_t items, rows, cols;
                at_operand_shape(c, i, &items, &rows, &cols);
                if ((c->op[i].flags & AT_HAS_LD) && c->buf[i].ld < cols)
                    c->buf[i].ld = cols;
            }
            snprintf(bad->label, sizeof bad->label, "%s = %zu", c->fn->dims[k].name, huge[h]);
            expect_all(bad, NWATTN_ERR_OVERFLOW);
            return 1;
        }
    }
    return 0;
}

/* An offset whose last position overflows size_t (first + t - 1, key_offset + n). */
static int overflowing_offset(int v, at_case *c, at_bad *bad) {
    for (int k = 0; k < c->fn->n_dims; k++) {
        const int of = c->fn->dims[k].offset_of;
        if (of < 0 || c->dim[of] < 2 || v-- > 0)
            continue;
        c->dim[k] = SIZE_MAX;
        snprintf(bad->label, sizeof bad->label, "%s = SIZE_MAX with %s = %zu",
                 c->fn->dims[k].name, c->fn->dims[of].name, c->dim[of]);
        expect_all(bad, NWATTN_ERR_OVERFLOW);
        return 1;
    }
    return 0;
}

/* An operand whose last byte would lie beyond the end of the address space. */
static int address_wraps(int v, at_case *c, at_bad *bad) {
    for (int i = 0; i < c->n_ops; i++) {
        size_t bytes = present(c, i) ? span_bytes(c, i) : 0;
        if (bytes < 16 || v-- > 0)
            continue;
        uintptr_t top = (UINTPTR_MAX - bytes / 2) & ~(uintptr_t)7;
        c->buf[i].data = (void *)top;
        snprintf(bad->label, sizeof bad->label, "%s at %#jx spans %zu bytes", c->op[i].name,
                 (uintmax_t)top, bytes);
        expect_all(bad, NWATTN_ERR_OVERFLOW);
        return 1;
    }
    return 0;
}

/* A leading dimension above the BLAS integer on a small buffer: rows = 1, so it never moves
 * a pointer. BLAS refuses, AUTO falls back to the reference. */
static int blas_leading_dim(int v, at_case *c, at_bad *bad) {
    if (SIZE_MAX <= UINT32_MAX)
        return 0;
    for (int i = 0; i < c->n_ops; i++) {
        const at_operand *op = &c->op[i];
        /* Rows only shrink to 1 (growing them would outgrow the other buffers). */
        const int rows_zero = (op->rows.a != AT_ONE && c->dim[op->rows.a] == 0) ||
                              (op->rows.b != AT_ONE && c->dim[op->rows.b] == 0);
        if (!(op->flags & AT_BLAS) || !(op->flags & AT_HAS_LD) || !present(c, i) || rows_zero ||
            v-- > 0)
            continue;
        if (op->rows.a != AT_ONE)
            c->dim[op->rows.a] = 1;
        if (op->rows.b != AT_ONE)
            c->dim[op->rows.b] = 1;
        clamp_lens(c);
        c->buf[i].ld = (size_t)INT_MAX + 6;
        snprintf(bad->label, sizeof bad->label, "%s: ld %zu on one row", op->name, c->buf[i].ld);
        expect_success(bad);
        bad->expect[AT_B_BLAS] = bad->expect[AT_B_FUSED] = NWATTN_ERR_TOO_LARGE;
        return 1;
    }
    return 0;
}

static int bad_score_kind(int v, at_case *c, at_bad *bad) {
    /* 4 is the first value past the enum; 100 was the library's internal "zero score" kind,
     * which must stay unreachable. */
    static const int kinds[] = {4, 100, -1, INT_MAX};
    if (c->fn->score_dim < 0 || v >= (int)(sizeof kinds / sizeof kinds[0]))
        return 0;
    c->score.kind = (nwattn_score_kind)kinds[v];
    snprintf(bad->label, sizeof bad->label, "score.kind = %d", kinds[v]);
    expect_all(bad, NWATTN_ERR_BAD_ENUM);
    return 1;
}

static const float bad_positive[] = {0.0f, -0.0f, -1.0f, -FLT_MIN, NAN, -NAN, INFINITY,
                                     -INFINITY};
#define N_BAD_POSITIVE ((int)(sizeof bad_positive / sizeof bad_positive[0]))

static int bad_bandwidth(int v, at_case *c, at_bad *bad) {
    if (c->fn->score_dim < 0 || v >= 2 * N_BAD_POSITIVE)
        return 0;
    c->score.kind = v < N_BAD_POSITIVE ? NWATTN_SCORE_GAUSSIAN : NWATTN_SCORE_LAPLACE;
    c->score.bandwidth = bad_positive[v % N_BAD_POSITIVE];
    c->buf[c->op_bandwidths].data = NULL; /* the scalar is used */
    snprintf(bad->label, sizeof bad->label, "kind %d, bandwidth %g", (int)c->score.kind,
             (double)c->score.bandwidth);
    expect_all(bad, NWATTN_ERR_BAD_PARAMETER);
    return 1;
}

static const float bad_nonneg[] = {-1.0f, -FLT_MIN, NAN, -NAN, INFINITY, -INFINITY};
#define N_BAD_NONNEG ((int)(sizeof bad_nonneg / sizeof bad_nonneg[0]))

/* A bad entry (first or last) in an array the function validates: the score's bandwidths
 * (under both distance kinds) or any operand filled AT_FILL_POSITIVE / AT_FILL_NONNEG. */
static int bad_array_entry(int v, at_case *c, at_bad *bad) {
    for (int i = 0; i < c->n_ops; i++) {
        const at_fill fill = c->op[i].fill;
        if ((fill != AT_FILL_POSITIVE && fill != AT_FILL_NONNEG) || c->buf[i].block == NULL ||
            (i != c->op_bandwidths && !present(c, i)))
            continue;
        const int is_bw = i == c->op_bandwidths;
        const float *values = fill == AT_FILL_POSITIVE ? bad_positive : bad_nonneg;
        const int n_values = fill == AT_FILL_POSITIVE ? N_BAD_POSITIVE : N_BAD_NONNEG;
        const int kinds = is_bw ? 2 : 1, variants = kinds * 2 * n_values;
        if (v >= variants) {
            v -= variants;
            continue;
        }
        size_t items, rows, cols;
        at_operand_shape(c, i, &items, &rows, &cols);
        const size_t count = (items - 1) * c->buf[i].stride + (rows - 1) * c->buf[i].ld + cols;
        if (items == 0 || rows == 0 || cols == 0)
            return 0;
        const size_t at = (v / n_values) % 2 == 0 ? 0 : count - 1; /* the last element */
        if (is_bw)
            c->score.kind = v < 2 * n_values ? NWATTN_SCORE_GAUSSIAN : NWATTN_SCORE_LAPLACE;
        ((float *)c->buf[i].data)[at] = values[v % n_values];
        snprintf(bad->label, sizeof bad->label, "%s[%zu] = %g", c->op[i].name, at,
                 (double)values[v % n_values]);
        expect_all(bad, NWATTN_ERR_BAD_PARAMETER);
        return 1;
    }
    return 0;
}

static int bad_scale(int v, at_case *c, at_bad *bad) {
    static const float scales[] = {NAN, -NAN, INFINITY, -INFINITY};
    if (c->fn->score_dim < 0 || v >= 4)
        return 0;
    c->score.kind = NWATTN_SCORE_DOT;
    c->score.scale = scales[v];
    snprintf(bad->label, sizeof bad->label, "dot scale %g", (double)scales[v]);
    expect_all(bad, NWATTN_ERR_BAD_PARAMETER);
    return 1;
}

/* Not bad: fields the chosen kind does not use may hold anything. */
static int ignored_fields(int v, at_case *c, at_bad *bad) {
    if (c->fn->score_dim < 0 || v >= 2)
        return 0;
    if (v == 0) {
        c->score.kind = NWATTN_SCORE_DOT;
        c->score.scale = 0.25f;
        c->score.bandwidth = NAN;
        if ((c->buf[c->op_bandwidths].block != NULL))
            ((float *)c->buf[c->op_bandwidths].data)[0] = -INFINITY;
        snprintf(bad->label, sizeof bad->label, "dot score with NaN bandwidth (ignored)");
    } else {
        if (!(c->buf[c->op_bandwidths].block != NULL))
            return 0;
        c->score.kind = NWATTN_SCORE_GAUSSIAN;
        c->score.bandwidth = -1.0f;
        c->score.scale = NAN;
        snprintf(bad->label, sizeof bad->label, "per-dimension bandwidths, bad scalar (ignored)");
    }
    expect_all(bad, NWATTN_OK);
    bad->writes_allowed = 1;
    return 1;
}

static int bad_mask_flags(int v, at_case *c, at_bad *bad) {
    static const unsigned flags[] = {1u << 3, 1u << 8, 1u << 31};
    if (c->fn->mask_m_dim < 0 || v >= 3)
        return 0;
    c->mask_null = 0;
    c->mask.flags |= flags[v];
    snprintf(bad->label, sizeof bad->label, "mask.flags has unknown bit 0x%x", flags[v]);
    expect_all(bad, NWATTN_ERR_BAD_ENUM);
    return 1;
}

static int lens_per_row_without_lens(int v, at_case *c, at_bad *bad) {
    if (c->fn->mask_m_dim < 0 || v > 0)
        return 0;
    c->mask_null = 0;
    c->mask.flags |= NWATTN_MASK_LENS_PER_ROW;
    c->buf[c->op_lens].data = NULL;
    snprintf(bad->label, sizeof bad->label, "NWATTN_MASK_LENS_PER_ROW, valid_lens NULL");
    expect_all(bad, NWATTN_ERR_NULL_POINTER);
    return 1;
}

static int valid_length_too_large(int v, at_case *c, at_bad *bad) {
    if (c->fn->mask_m_dim < 0 || !present(c, c->op_lens) || v >= 4)
        return 0;
    size_t items, rows, cols;
    at_operand_shape(c, c->op_lens, &items, &rows, &cols);
    if (cols == 0)
        return 0;
    const size_t n = c->dim[c->fn->mask_n_dim];
    const size_t at = v % 2 == 0 ? 0 : cols - 1;
    const size_t len = v < 2 ? n + 1 : SIZE_MAX;
    c->mask_null = 0;
    ((size_t *)c->buf[c->op_lens].data)[at] = len;
    snprintf(bad->label, sizeof bad->label, "valid_lens[%zu] = %zu > n = %zu", at, len, n);
    if (c->fn->lens_any)
        expect_success(bad); /* a shard of the keys: lengths count the whole problem's keys */
    else
        expect_all(bad, NWATTN_ERR_BAD_MASK);
    return 1;
}

static int bad_parameter(int v, at_case *c, at_bad *bad) {
    static const double finite_bad[] = {NAN, INFINITY, -INFINITY};
    static const double positive_bad[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.0};
    for (int p = 0; p < c->fn->n_params; p++) {
        const at_param *param = &c->fn->params[p];
        const double enum_bad[] = {(double)param->count, -1.0, (double)INT_MAX};
        const double *values = param->rule == AT_PARAM_POSITIVE_FINITE ? positive_bad
                               : param->rule == AT_PARAM_ENUM         ? enum_bad
                                                                      : finite_bad;
        const int count = param->rule == AT_PARAM_POSITIVE_FINITE ? 6 : 3;
        if (v >= count) {
            v -= count;
            continue;
        }
        c->param[p] = values[v];
        snprintf(bad->label, sizeof bad->label, "%s = %g", param->name, values[v]);
        expect_all(bad, param->rule == AT_PARAM_ENUM ? NWATTN_ERR_BAD_ENUM
                                                     : NWATTN_ERR_BAD_PARAMETER);
        return 1;
    }
    return 0;
}

typedef struct bad_class {
    const char *name;
    int (*apply)(int v, at_case *c, at_bad *bad);
} bad_class;

static const bad_class classes[] = {
    {"NULL context", null_context},
    {"NULL required operand", null_operand},
    {"NULL score", null_score},
    {"NULL parameter struct", null_struct},
    {"leading dimension below the row", small_leading_dim},
    {"output batch stride overlapping items", overlapping_stride},
    {"output aliasing an input", output_aliases_input},
    {"output aliasing an output", output_aliases_output},
    {"zero dimension", zero_dimension},
    {"dimension whose byte count overflows", overflowing_dimension},
    {"offset whose end overflows", overflowing_offset},
    {"operand wrapping the address space", address_wraps},
    {"leading dimension beyond the BLAS integer", blas_leading_dim},
    {"unknown score kind", bad_score_kind},
    {"bad scalar bandwidth", bad_bandwidth},
    {"bad entry in a validated array (bandwidths)", bad_array_entry},
    {"bad dot-product scale", bad_scale},
    {"unused score fields (valid)", ignored_fields},
    {"unknown mask flag", bad_mask_flags},
    {"per-row lengths without the array", lens_per_row_without_lens},
    {"valid length above n", valid_length_too_large},
    {"bad scalar parameter", bad_parameter},
};

int at_bad_class_count(void) { return (int)(sizeof classes / sizeof classes[0]); }

const char *at_bad_class_name(int k) { return classes[k].name; }

int at_bad_apply(int k, int v, at_case *c, at_bad *bad) {
    memset(bad, 0, sizeof *bad);
    return classes[k].apply(v, c, bad);
}

/* ---- The check ----------------------------------------------------------------------------- */
int at_bad_check(nwattn_context *ctx, int backend, at_alloc_stats *stats, at_case *c,
                 const at_bad *bad) {
    char what[320];
    snprintf(what, sizeof what, "%s [%s] %s", c->fn->name, at_backend_names[backend], bad->label);
    at_case_snapshot(c);
    const size_t allocs_before = stats != NULL ? stats->allocs : 0;
    const nwattn_status status = at_case_invoke(bad->null_ctx ? NULL : ctx, c);
    const nwattn_status want = bad->expect[backend];
    int ok = 1;
    if (status != want) {
        fprintf(stderr, "%s: status %s, expected %s (%s)\n", what, nwattn_status_name(status),
                nwattn_status_name(want), nwattn_context_last_error(ctx));
        ok = 0;
    }
    const char *message = nwattn_context_last_error(ctx);
    if (status != NWATTN_OK) {
        if (!bad->null_ctx && strncmp(message, nwattn_status_name(status),
                                      strlen(nwattn_status_name(status))) != 0) {
            fprintf(stderr, "%s: last error \"%s\" does not name the status\n", what, message);
            ok = 0;
        }
        if (stats != NULL && stats->allocs != allocs_before) {
            fprintf(stderr, "%s: a failing call allocated memory\n", what);
            ok = 0;
        }
        ok &= at_case_unchanged(c, what);
    } else {
        if (message[0] != '\0') {
            fprintf(stderr, "%s: successful call left last error \"%s\"\n", what, message);
            ok = 0;
        }
        ok &= bad->writes_allowed ? at_case_writes_confined(c, what) : at_case_unchanged(c, what);
    }
    return ok;
}
