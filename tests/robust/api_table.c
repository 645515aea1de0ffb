/* The table of public computing functions (see api_table.h).
 *
 * Adding a function
 * -----------------
 * 1. Write an invoke shim that passes the case's dimensions and buffers to the function, in the
 *    order of its prototype: D(c, i) is dimension i, F(c, i) / LD(c, i) / ST(c, i) are operand
 *    i's pointer, leading dimension and batch stride; SCORE(c) and MASK(c) the score and mask
 *    (NULL when the case passes none); c->param[p] a scalar parameter.
 * 2. Add a row to at_functions[]: its dimensions (name, two base sizes for the bad-input matrix,
 *    the largest size random cases use, what 0 means, per the header), the batch dimension, its
 *    operands (role, element type, fill, extents as products of dimensions, AT_HAS_LD /
 *    AT_HAS_STRIDE / AT_BLAS), score_dim if it takes an nwattn_score (the table adds
 *    score.bandwidths), mask_m_dim / mask_n_dim if it takes an nwattn_mask (the table adds
 *    valid_lens, additive and keep), scalar parameters with their validity rule, an in-place
 *    pair if the header allows one, and optionally an `agree` function comparing BLAS with
 *    REFERENCE within the documented accuracy (the fuzzer uses it).
 * Every bad-input class, the allocation-failure sweep, the thread stress test and the fuzzer
 * then cover it; nothing else needs to change. If a prototype needs something the description
 * cannot express (an operand whose extent is not a product of two dimensions, say), give the
 * operand a `shape` function, as mask.valid_lens has. */
#include <math.h>
#include <stdio.h>

#include "api_table.h"

#define D(c, i) ((c)->dim[i])
#define F(c, i) ((float *)(c)->buf[i].data)
#define LD(c, i) ((c)->buf[i].ld)
#define ST(c, i) ((c)->buf[i].stride)
#define SCORE(c) ((c)->score_null ? NULL : &(c)->score)
#define MASK(c) ((c)->mask_null ? NULL : &(c)->mask)

#define EXT(a) {a, AT_ONE}
#define ONE {AT_ONE, AT_ONE}
#define MAT (AT_HAS_LD | AT_HAS_STRIDE)

static const double u = 0x1p-24; /* float unit roundoff */

/* ---- Element access and comparison helpers for the `agree` functions ---------------------- */
static float get(const at_case *c, int op, size_t b, size_t i, size_t j) {
    const at_buffer *buf = &c->buf[op];
    size_t ld = (c->op[op].flags & AT_HAS_LD) ? buf->ld : 0;
    return ((const float *)buf->data)[b * buf->stride + i * ld + j];
}

/* NaN matches NaN, infinities match exactly, finite values within tol. */
static int close_to(const at_case *c, int op, size_t b, size_t i, size_t j, float got, float want,
                    double tol) {
    if (isnan(got) && isnan(want))
        return 1;
    if (isinf(want) || isinf(got) ? got == want : fabs((double)got - (double)want) <= tol)
        return 1;
    fprintf(stderr, "%s: %s[%zu][%zu][%zu]: BLAS %.9g, REFERENCE %.9g, tolerance %.3g\n",
            c->fn->name, c->op[op].name, b, i, j, (double)got, (double)want, tol);
    return 0;
}

static size_t items_of(const at_case *c) { return c->dim[c->fn->batch_dim]; }

/* The documented BLAS score error (nwattn.h "Accuracy") for query i, key j of item b, with
 * operands q and k (n keys), times a safety factor of 4. */
static double score_error(const at_case *c, int q, int k, size_t n, size_t b, size_t i,
                          size_t j) {
    const size_t d = c->dim[c->fn->score_dim];
    if (c->score.kind == NWATTN_SCORE_DOT) {
        double sum = 0.0;
        for (size_t l = 0; l < d; l++)
            sum += fabs((double)get(c, q, b, i, l) * (double)get(c, k, b, j, l));
        return 4.0 * (double)(d + 4) * u * fabs((double)c->score.scale) * sum + 1e-30;
    }
    double qn = 0.0, kn = 0.0, dist2 = 0.0;
    for (size_t l = 0; l < d; l++) {
        double centre = 0.0;
        for (size_t t = 0; t < n; t++)
            centre += (double)get(c, k, b, t, l);
        centre /= (double)n;
        double h = c->score.bandwidths ? (double)c->score.bandwidths[l] : (double)c->score.bandwidth;
        double qp = ((double)get(c, q, b, i, l) - centre) / h;
        double kp = ((double)get(c, k, b, j, l) - centre) / h;
        qn += qp * qp;
        kn += kp * kp;
        dist2 += (qp - kp) * (qp - kp);
    }
    double e2 = 4.0 * (double)(2 * d + 16) * u * (qn + kn) + 1e-30;
    if (c->score.kind == NWATTN_SCORE_GAUSSIAN)
        return 0.5 * e2 + 4.0 * u * 0.5 * dist2;
    return fmin(sqrt(e2), e2 / fmax(sqrt(dist2), 1e-300)) + 4.0 * u * sqrt(dist2);
}

/* ---- nwattn_scores -------------------------------------------------------------------------- */
enum { SC_BATCH, SC_M, SC_N, SC_D };
enum { SC_Q, SC_K, SC_S };

static nwattn_status invoke_scores(nwattn_context *ctx, const at_case *c) {
    return nwattn_scores(ctx, SCORE(c), D(c, SC_BATCH), D(c, SC_M), D(c, SC_N), D(c, SC_D),
                         F(c, SC_Q), LD(c, SC_Q), ST(c, SC_Q), F(c, SC_K), LD(c, SC_K),
                         ST(c, SC_K), F(c, SC_S), LD(c, SC_S), ST(c, SC_S));
}

static int agree_scores(const at_case *r, const at_case *x) {
    for (size_t b = 0; b < items_of(r); b++)
        for (size_t i = 0; i < r->dim[SC_M]; i++)
            for (size_t j = 0; j < r->dim[SC_N]; j++) {
                float want = get(r, SC_S, b, i, j);
                double tol = score_error(r, SC_Q, SC_K, r->dim[SC_N], b, i, j) + 4.0 * u * fabs((double)want);
                if (!close_to(r, SC_S, b, i, j, get(x, SC_S, b, i, j), want, tol))
                    return 0;
            }
    return 1;
}

/* ---- nwattn_softmax ------------------------------------------------------------------------- */
enum { SM_BATCH, SM_M, SM_N };
enum { SM_S, SM_W, SM_LSE };

static nwattn_status invoke_softmax(nwattn_context *ctx, const at_case *c) {
    return nwattn_softmax(ctx, MASK(c), D(c, SM_BATCH), D(c, SM_M), D(c, SM_N), F(c, SM_S),
                          LD(c, SM_S), ST(c, SM_S), F(c, SM_W), LD(c, SM_W), ST(c, SM_W),
                          F(c, SM_LSE), ST(c, SM_LSE));
}

/* Float exponentials against double ones: a few ulp of each weight, of lse. */
static int agree_softmax(const at_case *r, const at_case *x) {
    for (size_t b = 0; b < items_of(r); b++)
        for (size_t i = 0; i < r->dim[SM_M]; i++) {
            for (size_t j = 0; j < r->dim[SM_N]; j++) {
                float want = get(r, SM_W, b, i, j);
                if (!close_to(r, SM_W, b, i, j, get(x, SM_W, b, i, j), want,
                              16.0 * u * fabs((double)want) + 1e-12))
                    return 0;
            }
            if (r->buf[SM_LSE].data != NULL) {
                float want = get(r, SM_LSE, b, 0, i);
                if (!close_to(r, SM_LSE, b, 0, i, get(x, SM_LSE, b, 0, i), want,
                              8.0 * u * fabs((double)want) + 1e-6))
                    return 0;
            }
        }
    return 1;
}

/* ---- nwattn_bmm ----------------------------------------------------------------------------- */
enum { MM_BATCH, MM_M, MM_N, MM_K };
enum { MM_A, MM_B, MM_C };

static nwattn_status invoke_bmm(nwattn_context *ctx, const at_case *c) {
    return nwattn_bmm(ctx, D(c, MM_BATCH), D(c, MM_M), D(c, MM_N), D(c, MM_K), F(c, MM_A),
                      LD(c, MM_A), ST(c, MM_A), F(c, MM_B), LD(c, MM_B), ST(c, MM_B), F(c, MM_C),
                      LD(c, MM_C), ST(c, MM_C));
}

static int agree_bmm(const at_case *r, const at_case *x) {
    const size_t k = r->dim[MM_K];
    for (size_t b = 0; b < items_of(r); b++)
        for (size_t i = 0; i < r->dim[MM_M]; i++)
            for (size_t j = 0; j < r->dim[MM_N]; j++) {
                double sum = 0.0;
                for (size_t l = 0; l < k; l++)
                    sum += fabs((double)get(r, MM_A, b, i, l) * (double)get(r, MM_B, b, l, j));
                if (!close_to(r, MM_C, b, i, j, get(x, MM_C, b, i, j), get(r, MM_C, b, i, j),
                              2.0 * (double)(k + 2) * u * sum + 1e-30))
                    return 0;
            }
    return 1;
}

/* ---- nwattn_pool ---------------------------------------------------------------------------- */
enum { PL_BATCH, PL_M, PL_N, PL_D, PL_DV };
enum { PL_Q, PL_K, PL_V, PL_O, PL_W, PL_LSE };

static nwattn_status invoke_pool(nwattn_context *ctx, const at_case *c) {
    return nwattn_pool(ctx, SCORE(c), MASK(c), D(c, PL_BATCH), D(c, PL_M), D(c, PL_N), D(c, PL_D),
                       D(c, PL_DV), F(c, PL_Q), LD(c, PL_Q), ST(c, PL_Q), F(c, PL_K), LD(c, PL_K),
                       ST(c, PL_K), F(c, PL_V), LD(c, PL_V), ST(c, PL_V), F(c, PL_O), LD(c, PL_O),
                       ST(c, PL_O), F(c, PL_W), LD(c, PL_W), ST(c, PL_W), F(c, PL_LSE),
                       ST(c, PL_LSE));
}

/* A score error e moves each weight by a factor within exp(±2e); the output moves by that times
 * the values, plus the rounding of the weighted sum. */
static int agree_pool(const at_case *r, const at_case *x) {
    const size_t n = r->dim[PL_N], dv = r->dim[PL_DV];
    for (size_t b = 0; b < items_of(r); b++)
        for (size_t i = 0; i < r->dim[PL_M]; i++) {
            double e = 0.0, vmax = 0.0;
            for (size_t j = 0; j < n; j++)
                e = fmax(e, score_error(r, PL_Q, PL_K, n, b, i, j));
            for (size_t j = 0; j < n; j++)
                for (size_t l = 0; l < dv; l++)
                    vmax = fmax(vmax, fabs((double)get(r, PL_V, b, j, l)));
            const double rel = expm1(2.0 * e) + 16.0 * u;
            if (r->buf[PL_W].data != NULL)
                for (size_t j = 0; j < n; j++) {
                    float want = get(r, PL_W, b, i, j);
                    if (!close_to(r, PL_W, b, i, j, get(x, PL_W, b, i, j), want,
                                  rel * fabs((double)want) + 1e-12))
                        return 0;
                }
            for (size_t l = 0; l < dv; l++)
                if (!close_to(r, PL_O, b, i, l, get(x, PL_O, b, i, l), get(r, PL_O, b, i, l),
                              (rel + (double)(n + 8) * u) * vmax + 1e-30))
                    return 0;
            if (r->buf[PL_LSE].data != NULL) {
                float want = get(r, PL_LSE, b, 0, i);
                if (!close_to(r, PL_LSE, b, 0, i, get(x, PL_LSE, b, 0, i), want,
                              e + 8.0 * u * fabs((double)want) + 1e-6))
                    return 0;
            }
        }
    return 1;
}

/* ---- nwattn_average_pool -------------------------------------------------------------------- */
enum { AV_BATCH, AV_M, AV_N, AV_DV };
enum { AV_V, AV_O };

static nwattn_status invoke_average(nwattn_context *ctx, const at_case *c) {
    return nwattn_average_pool(ctx, MASK(c), D(c, AV_BATCH), D(c, AV_M), D(c, AV_N), D(c, AV_DV),
                               F(c, AV_V), LD(c, AV_V), ST(c, AV_V), F(c, AV_O), LD(c, AV_O),
                               ST(c, AV_O));
}

static int agree_average(const at_case *r, const at_case *x) {
    const size_t n = r->dim[AV_N], dv = r->dim[AV_DV];
    for (size_t b = 0; b < items_of(r); b++) {
        double vmax = 0.0;
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < dv; l++)
                vmax = fmax(vmax, fabs((double)get(r, AV_V, b, j, l)));
        for (size_t i = 0; i < r->dim[AV_M]; i++)
            for (size_t l = 0; l < dv; l++)
                if (!close_to(r, AV_O, b, i, l, get(x, AV_O, b, i, l), get(r, AV_O, b, i, l),
                              (double)(n + 16) * u * vmax + 1e-30))
                    return 0;
    }
    return 1;
}

/* ---- The table ------------------------------------------------------------------------------ */
const at_fn at_functions[] = {
    {
        .name = "nwattn_scores",
        .n_dims = 4,
        .dims = {{"batch", {3, 2}, 4, AT_ZERO_EMPTY, 0},
                 {"m", {4, 1}, 9, AT_ZERO_EMPTY, 0},
                 {"n", {5, 3}, 9, AT_ZERO_EMPTY, 0},
                 {"d", {3, 2}, 6, AT_ZERO_INVALID, 0}},
        .batch_dim = SC_BATCH,
        .n_ops = 3,
        .ops = {{"q", AT_IN, AT_F32, AT_FILL_DATA, EXT(SC_BATCH), EXT(SC_M), EXT(SC_D),
                 MAT | AT_BLAS, NULL},
                {"k", AT_IN, AT_F32, AT_FILL_DATA, EXT(SC_BATCH), EXT(SC_N), EXT(SC_D),
                 MAT | AT_BLAS, NULL},
                {"s", AT_OUT, AT_F32, AT_FILL_DATA, EXT(SC_BATCH), EXT(SC_M), EXT(SC_N),
                 MAT | AT_BLAS, NULL}},
        .score_dim = SC_D,
        .mask_m_dim = -1,
        .mask_n_dim = -1,
        .in_place_out = -1,
        .in_place_in = -1,
        .invoke = invoke_scores,
        .agree = agree_scores,
    },
    {
        .name = "nwattn_softmax",
        .n_dims = 3,
        .dims = {{"batch", {3, 2}, 4, AT_ZERO_EMPTY, 0},
                 {"m", {4, 1}, 9, AT_ZERO_EMPTY, 0},
                 {"n", {5, 3}, 12, AT_ZERO_DEFINED, 0}},
        .batch_dim = SM_BATCH,
        .n_ops = 3,
        .ops = {{"s", AT_IN, AT_F32, AT_FILL_DATA, EXT(SM_BATCH), EXT(SM_M), EXT(SM_N), MAT,
                 NULL},
                {"w", AT_OUT, AT_F32, AT_FILL_DATA, EXT(SM_BATCH), EXT(SM_M), EXT(SM_N), MAT,
                 NULL},
                {"lse", AT_OUT_OPT, AT_F32, AT_FILL_DATA, EXT(SM_BATCH), ONE, EXT(SM_M),
                 AT_HAS_STRIDE, NULL}},
        .score_dim = -1,
        .mask_m_dim = SM_M,
        .mask_n_dim = SM_N,
        .in_place_out = SM_W,
        .in_place_in = SM_S,
        .invoke = invoke_softmax,
        .agree = agree_softmax,
    },
    {
        .name = "nwattn_bmm",
        .n_dims = 4,
        .dims = {{"batch", {3, 2}, 4, AT_ZERO_EMPTY, 0},
                 {"m", {4, 1}, 9, AT_ZERO_EMPTY, 0},
                 {"n", {2, 3}, 9, AT_ZERO_EMPTY, 0},
                 {"k", {5, 2}, 9, AT_ZERO_DEFINED, 0}},
        .batch_dim = MM_BATCH,
        .n_ops = 3,
        .ops = {{"a", AT_IN, AT_F32, AT_FILL_DATA, EXT(MM_BATCH), EXT(MM_M), EXT(MM_K),
                 MAT | AT_BLAS, NULL},
                {"b", AT_IN, AT_F32, AT_FILL_DATA, EXT(MM_BATCH), EXT(MM_K), EXT(MM_N),
                 MAT | AT_BLAS, NULL},
                {"c", AT_OUT, AT_F32, AT_FILL_DATA, EXT(MM_BATCH), EXT(MM_M), EXT(MM_N),
                 MAT | AT_BLAS, NULL}},
        .score_dim = -1,
        .mask_m_dim = -1,
        .mask_n_dim = -1,
        .in_place_out = -1,
        .in_place_in = -1,
        .invoke = invoke_bmm,
        .agree = agree_bmm,
    },
    {
        .name = "nwattn_pool",
        .n_dims = 5,
        .dims = {{"batch", {3, 2}, 4, AT_ZERO_EMPTY, 0},
                 {"m", {4, 1}, 9, AT_ZERO_EMPTY, 0},
                 {"n", {5, 3}, 12, AT_ZERO_DEFINED, 0},
                 {"d", {3, 2}, 6, AT_ZERO_INVALID, 0},
                 {"dv", {2, 1}, 5, AT_ZERO_DEFINED, 0}},
        .batch_dim = PL_BATCH,
        .n_ops = 6,
        .ops = {{"q", AT_IN, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), EXT(PL_M), EXT(PL_D),
                 MAT | AT_BLAS, NULL},
                {"k", AT_IN, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), EXT(PL_N), EXT(PL_D),
                 MAT | AT_BLAS, NULL},
                {"v", AT_IN, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), EXT(PL_N), EXT(PL_DV),
                 MAT | AT_BLAS, NULL},
                {"o", AT_OUT, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), EXT(PL_M), EXT(PL_DV),
                 MAT | AT_BLAS, NULL},
                {"weights", AT_OUT_OPT, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), EXT(PL_M),
                 EXT(PL_N), MAT | AT_BLAS, NULL},
                {"lse", AT_OUT_OPT, AT_F32, AT_FILL_DATA, EXT(PL_BATCH), ONE, EXT(PL_M),
                 AT_HAS_STRIDE, NULL}},
        .score_dim = PL_D,
        .mask_m_dim = PL_M,
        .mask_n_dim = PL_N,
        .in_place_out = -1,
        .in_place_in = -1,
        .invoke = invoke_pool,
        .agree = agree_pool,
    },
    {
        .name = "nwattn_average_pool",
        .n_dims = 4,
        .dims = {{"batch", {3, 2}, 4, AT_ZERO_EMPTY, 0},
                 {"m", {4, 1}, 9, AT_ZERO_EMPTY, 0},
                 {"n", {5, 3}, 12, AT_ZERO_DEFINED, 0},
                 {"dv", {2, 3}, 5, AT_ZERO_EMPTY, 0}},
        .batch_dim = AV_BATCH,
        .n_ops = 2,
        .ops = {{"v", AT_IN, AT_F32, AT_FILL_DATA, EXT(AV_BATCH), EXT(AV_N), EXT(AV_DV),
                 MAT | AT_BLAS, NULL},
                {"o", AT_OUT, AT_F32, AT_FILL_DATA, EXT(AV_BATCH), EXT(AV_M), EXT(AV_DV),
                 MAT | AT_BLAS, NULL}},
        .score_dim = -1,
        .mask_m_dim = AV_M,
        .mask_n_dim = AV_N,
        .in_place_out = -1,
        .in_place_in = -1,
        .invoke = invoke_average,
        .agree = agree_average,
    },
};

const int at_function_count = (int)(sizeof at_functions / sizeof at_functions[0]);
