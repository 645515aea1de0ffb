/* Errors: every status code through every public function it applies to, one defect at a time
 * on top of a valid call. After each error every buffer of the call (inputs, outputs, masks) is
 * byte-for-byte unchanged and nwattn_context_last_error() is a non-empty message; the valid
 * call then succeeds and clears it. Also: allocation failure at every allocation of a call
 * (counting allocator, no leaks), BLAS integer limits, status names and descriptions, version,
 * context management, working memory.
 *
 * NWATTN_ERR_UNSUPPORTED is not provoked: no backend refuses any valid problem (the BLAS
 * backend refuses only layouts whose leading dimension exceeds its integer, which is
 * NWATTN_ERR_TOO_LARGE), so the code cannot be reached through the public API. */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The fixture: one arena of floats holding every matrix of the valid calls -------------- */
enum {
    OFF_Q = 0,      /* Q 2×3×2, ld 3, stride 10 (also bmm's A) */
    OFF_K = 32,     /* K 2×4×2, ld 2, stride 8 */
    OFF_V = 64,     /* V 2×4×3, ld 3, stride 12 */
    OFF_S = 96,     /* softmax input S 2×3×4, ld 4, stride 12 */
    OFF_B = 128,    /* bmm's B 2×2×4, ld 4, stride 8 */
    OFF_O = 256,    /* output 2×3×(3 or 4), ld 5, stride 16 */
    OFF_W = 320,    /* pool weights 2×3×4, ld 4, stride 12 */
    OFF_LSE = 352,  /* lse 2×3, stride 4 */
    OFF_ADD = 384,  /* additive mask 2×3×4, ld 4, stride 12 */
    ARENA = 512
};

#define BATCH 2
#define M 3
#define N 4
#define D 2
#define DV 3

typedef struct fixture {
    float arena[ARENA];
    size_t lens_item[BATCH], lens_row[BATCH * M], lens_bad[BATCH * M];
    unsigned char keep[BATCH * 12];
    float h[D], h_bad[D];
} fixture;

typedef enum fn_id { FN_SCORES, FN_SOFTMAX, FN_BMM, FN_POOL, FN_AVERAGE } fn_id;
static const char *fn_names[] = {"nwattn_scores", "nwattn_softmax", "nwattn_bmm", "nwattn_pool",
                                 "nwattn_average_pool"};

/* The arguments of any of the five calls. softmax: S in q, W in o. bmm: A (m×d) in q,
 * B (d×n) in k, C (m×n) in o. */
typedef struct call_args {
    nwattn_score score;
    int no_score; /* pass NULL for the score */
    nwattn_mask mask;
    size_t batch, m, n, d, dv;
    const float *q;
    size_t ldq, stride_q;
    const float *k;
    size_t ldk, stride_k;
    const float *v;
    size_t ldv, stride_v;
    float *o;
    size_t ldo, stride_o;
    float *w;
    size_t ldw, stride_w;
    float *lse;
    size_t stride_lse;
} call_args;

static void fixture_init(fixture *fx) {
    tu_rng rng;
    tu_rng_seed(&rng, 2024);
    for (size_t t = 0; t < ARENA; t++)
        fx->arena[t] = tu_rng_range(&rng, -1.0f, 1.0f);
    const size_t lens_item[BATCH] = {4, 2}, lens_row[BATCH * M] = {1, 2, 3, 4, 0, 4};
    memcpy(fx->lens_item, lens_item, sizeof lens_item);
    memcpy(fx->lens_row, lens_row, sizeof lens_row);
    memcpy(fx->lens_bad, lens_row, sizeof lens_row);
    fx->lens_bad[4] = N + 1; /* one valid length larger than n */
    for (size_t t = 0; t < sizeof fx->keep; t++)
        fx->keep[t] = (unsigned char)(t % 5 != 0);
    fx->h[0] = 0.5f;
    fx->h[1] = 2.0f;
    fx->h_bad[0] = 1.0f;
    fx->h_bad[1] = 0.0f;
}

/* The valid call of each function. */
static call_args baseline(fn_id fn, fixture *fx) {
    call_args a;
    memset(&a, 0, sizeof a);
    a.score.kind = NWATTN_SCORE_GAUSSIAN;
    a.score.bandwidth = 1.0f;
    a.mask.flags = NWATTN_MASK_CAUSAL;
    a.mask.valid_lens = fx->lens_item;
    a.mask.additive = fx->arena + OFF_ADD;
    a.mask.ld_additive = N;
    a.mask.stride_additive = 12;
    a.mask.keep = fx->keep;
    a.mask.ld_keep = N;
    a.mask.stride_keep = 12;
    a.batch = BATCH, a.m = M, a.n = N, a.d = D, a.dv = DV;
    a.q = fx->arena + OFF_Q, a.ldq = 3, a.stride_q = 10;
    a.k = fx->arena + OFF_K, a.ldk = D, a.stride_k = 8;
    a.v = fx->arena + OFF_V, a.ldv = DV, a.stride_v = 12;
    a.o = fx->arena + OFF_O, a.ldo = 5, a.stride_o = 16;
    a.w = fx->arena + OFF_W, a.ldw = N, a.stride_w = 12;
    a.lse = fx->arena + OFF_LSE, a.stride_lse = 4;
    switch (fn) {
    case FN_SOFTMAX:
        a.q = fx->arena + OFF_S, a.ldq = N, a.stride_q = 12;
        break;
    case FN_BMM:
        a.k = fx->arena + OFF_B, a.ldk = N, a.stride_k = 8;
        break;
    default:
        break;
    }
    return a;
}

static nwattn_status invoke(fn_id fn, nwattn_context *ctx, const call_args *in) {
    call_args a = *in;
    const nwattn_score *score = a.no_score ? NULL : &a.score;
    const nwattn_mask *mask = &a.mask;
    switch (fn) {
    case FN_SCORES:
        return nwattn_scores(ctx, score, a.batch, a.m, a.n, a.d, a.q, a.ldq, a.stride_q, a.k,
                             a.ldk, a.stride_k, a.o, a.ldo, a.stride_o);
    case FN_SOFTMAX:
        return nwattn_softmax(ctx, mask, a.batch, a.m, a.n, a.q, a.ldq, a.stride_q, a.o, a.ldo,
                              a.stride_o, a.lse, a.stride_lse);
    case FN_BMM:
        return nwattn_bmm(ctx, a.batch, a.m, a.n, a.d, a.q, a.ldq, a.stride_q, a.k, a.ldk,
                          a.stride_k, a.o, a.ldo, a.stride_o);
    case FN_POOL:
        return nwattn_pool(ctx, score, mask, a.batch, a.m, a.n, a.d, a.dv, a.q, a.ldq,
                           a.stride_q, a.k, a.ldk, a.stride_k, a.v, a.ldv, a.stride_v, a.o,
                           a.ldo, a.stride_o, a.w, a.ldw, a.stride_w, a.lse, a.stride_lse);
    case FN_AVERAGE:
        return nwattn_average_pool(ctx, mask, a.batch, a.m, a.n, a.dv, a.v, a.ldv, a.stride_v,
                                   a.o, a.ldo, a.stride_o);
    }
    return NWATTN_OK;
}

/* ---- Mutations: one defect each ----------------------------------------------------------- */
typedef void (*mutate_fn)(call_args *a, fixture *fx);

#define HUGE_DIM (SIZE_MAX / 2)

static void m_score_null(call_args *a, fixture *fx) { (void)fx, a->no_score = 1; }
static void m_mask_lens_null_per_row(call_args *a, fixture *fx) {
    (void)fx, a->mask.flags |= NWATTN_MASK_LENS_PER_ROW, a->mask.valid_lens = NULL;
}
static void m_q_null(call_args *a, fixture *fx) { (void)fx, a->q = NULL; }
static void m_k_null(call_args *a, fixture *fx) { (void)fx, a->k = NULL; }
static void m_v_null(call_args *a, fixture *fx) { (void)fx, a->v = NULL; }
static void m_o_null(call_args *a, fixture *fx) { (void)fx, a->o = NULL; }
static void m_d_zero(call_args *a, fixture *fx) { (void)fx, a->d = 0; }
static void m_ldq_small(call_args *a, fixture *fx) {
    (void)fx, a->ldq = (a->q == fx->arena + OFF_S) ? N - 1 : D - 1;
}
static void m_ldk_small(call_args *a, fixture *fx) {
    (void)fx, a->ldk = (a->k == fx->arena + OFF_B) ? N - 1 : D - 1;
}
static void m_ldv_small(call_args *a, fixture *fx) { (void)fx, a->ldv = DV - 1; }
static void m_ldo_small(call_args *a, fixture *fx) { (void)fx, a->ldo = 2; }
static void m_ldw_small(call_args *a, fixture *fx) { (void)fx, a->ldw = N - 1; }
static void m_ld_additive_small(call_args *a, fixture *fx) {
    (void)fx, a->mask.ld_additive = N - 1;
}
static void m_ld_keep_small(call_args *a, fixture *fx) { (void)fx, a->mask.ld_keep = N - 1; }
/* One item of the output spans (m-1)·ld + cols elements: one less overlaps the next item. */
static void m_stride_o_overlap(call_args *a, fixture *fx) {
    (void)fx, a->stride_o = (M - 1) * a->ldo + 2;
}
static void m_stride_o_zero(call_args *a, fixture *fx) { (void)fx, a->stride_o = 0; }
static void m_stride_w_overlap(call_args *a, fixture *fx) {
    (void)fx, a->stride_w = (M - 1) * a->ldw + N - 1;
}
static void m_stride_lse_overlap(call_args *a, fixture *fx) { (void)fx, a->stride_lse = M - 1; }
static void m_kind_4(call_args *a, fixture *fx) { (void)fx, a->score.kind = (nwattn_score_kind)4; }
static void m_kind_100(call_args *a, fixture *fx) {
    (void)fx, a->score.kind = (nwattn_score_kind)100;
}
static void m_flag_bit3(call_args *a, fixture *fx) { (void)fx, a->mask.flags |= 1u << 3; }
static void m_flag_top(call_args *a, fixture *fx) { (void)fx, a->mask.flags |= 1u << 31; }
static void m_h_zero(call_args *a, fixture *fx) { (void)fx, a->score.bandwidth = 0.0f; }
static void m_h_negative(call_args *a, fixture *fx) { (void)fx, a->score.bandwidth = -1.0f; }
static void m_h_nan(call_args *a, fixture *fx) { (void)fx, a->score.bandwidth = NAN; }
static void m_h_inf(call_args *a, fixture *fx) { (void)fx, a->score.bandwidth = INFINITY; }
static void m_h_laplace_neg_zero(call_args *a, fixture *fx) {
    (void)fx, a->score.kind = NWATTN_SCORE_LAPLACE, a->score.bandwidth = -0.0f;
}
static void m_hj_zero(call_args *a, fixture *fx) { a->score.bandwidths = fx->h_bad; }
static void m_hj_nan(call_args *a, fixture *fx) {
    fx->h_bad[1] = NAN;
    a->score.bandwidths = fx->h_bad;
}
static void m_hj_neg_inf(call_args *a, fixture *fx) {
    fx->h_bad[1] = -INFINITY;
    a->score.bandwidths = fx->h_bad;
}
static void m_hj_negative_laplace(call_args *a, fixture *fx) {
    fx->h_bad[1] = -2.0f;
    a->score.kind = NWATTN_SCORE_LAPLACE;
    a->score.bandwidths = fx->h_bad;
}
static void m_scale_nan(call_args *a, fixture *fx) {
    (void)fx, a->score.kind = NWATTN_SCORE_DOT, a->score.scale = NAN;
}
static void m_scale_inf(call_args *a, fixture *fx) {
    (void)fx, a->score.kind = NWATTN_SCORE_DOT, a->score.scale = -INFINITY;
}
static void m_len_item_big(call_args *a, fixture *fx) {
    fx->lens_item[1] = N + 1;
    a->mask.valid_lens = fx->lens_item;
}
static void m_len_row_big(call_args *a, fixture *fx) {
    a->mask.flags |= NWATTN_MASK_LENS_PER_ROW;
    a->mask.valid_lens = fx->lens_bad;
}
static void m_o_is_q(call_args *a, fixture *fx) { a->o = fx->arena + (a->q - fx->arena); }
static void m_o_in_k(call_args *a, fixture *fx) { a->o = fx->arena + (a->k - fx->arena) + 5; }
static void m_o_in_v(call_args *a, fixture *fx) { a->o = fx->arena + OFF_V + 1; }
static void m_o_in_additive(call_args *a, fixture *fx) { a->o = fx->arena + OFF_ADD + 7; }
static void m_w_in_o(call_args *a, fixture *fx) { a->w = fx->arena + OFF_O + 2; }
static void m_w_is_k(call_args *a, fixture *fx) { a->w = fx->arena + OFF_K; }
static void m_lse_in_o(call_args *a, fixture *fx) { a->lse = fx->arena + OFF_O + 9; }
static void m_lse_in_w(call_args *a, fixture *fx) { a->lse = fx->arena + OFF_W + 3; }
static void m_lse_in_q(call_args *a, fixture *fx) { a->lse = fx->arena + (a->q - fx->arena) + 2; }
/* softmax: W = S shifted, or the same pointer with another layout, is no in-place call. */
static void m_w_shifted_s(call_args *a, fixture *fx) { a->o = fx->arena + OFF_S + 1, a->ldo = N; }
static void m_w_is_s_other_ld(call_args *a, fixture *fx) { a->o = fx->arena + OFF_S, a->ldo = 5; }
static void m_w_is_s_other_stride(call_args *a, fixture *fx) {
    a->o = fx->arena + OFF_S, a->ldo = N, a->stride_o = 13;
}
static void m_huge_m(call_args *a, fixture *fx) { (void)fx, a->m = HUGE_DIM; }
static void m_huge_n(call_args *a, fixture *fx) { (void)fx, a->n = HUGE_DIM; }
static void m_huge_batch(call_args *a, fixture *fx) { (void)fx, a->batch = SIZE_MAX / 8; }
/* (m-1)·ld + d fits in size_t, but the byte count (·4) does not. */
static void m_huge_bytes(call_args *a, fixture *fx) {
    (void)fx, a->batch = 1, a->m = SIZE_MAX / 4, a->ldq = D;
}

typedef struct err_case {
    const char *name;
    mutate_fn mutate;
    nwattn_status want;
} err_case;

#define CASE(f, s) {#f, f, s}

static const err_case scores_cases[] = {
    CASE(m_score_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_q_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_k_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_o_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_d_zero, NWATTN_ERR_BAD_DIMENSION),
    CASE(m_ldq_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldk_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldo_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_stride_o_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_stride_o_zero, NWATTN_ERR_BAD_STRIDE),
    CASE(m_kind_4, NWATTN_ERR_BAD_ENUM),
    CASE(m_kind_100, NWATTN_ERR_BAD_ENUM),
    CASE(m_h_zero, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_negative, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_nan, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_inf, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_laplace_neg_zero, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_zero, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_nan, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_neg_inf, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_negative_laplace, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_scale_nan, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_scale_inf, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_o_is_q, NWATTN_ERR_ALIASING),
    CASE(m_o_in_k, NWATTN_ERR_ALIASING),
    CASE(m_huge_m, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_n, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_batch, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_bytes, NWATTN_ERR_OVERFLOW),
};

static const err_case softmax_cases[] = {
    CASE(m_q_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_o_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_mask_lens_null_per_row, NWATTN_ERR_NULL_POINTER),
    CASE(m_ldq_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldo_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ld_additive_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ld_keep_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_stride_o_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_stride_lse_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_flag_bit3, NWATTN_ERR_BAD_ENUM),
    CASE(m_flag_top, NWATTN_ERR_BAD_ENUM),
    CASE(m_len_item_big, NWATTN_ERR_BAD_MASK),
    CASE(m_len_row_big, NWATTN_ERR_BAD_MASK),
    CASE(m_w_shifted_s, NWATTN_ERR_ALIASING),
    CASE(m_w_is_s_other_ld, NWATTN_ERR_ALIASING),
    CASE(m_w_is_s_other_stride, NWATTN_ERR_ALIASING),
    CASE(m_o_in_additive, NWATTN_ERR_ALIASING),
    CASE(m_lse_in_o, NWATTN_ERR_ALIASING),
    CASE(m_lse_in_q, NWATTN_ERR_ALIASING),
    CASE(m_huge_m, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_batch, NWATTN_ERR_OVERFLOW),
};

static const err_case bmm_cases[] = {
    CASE(m_q_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_k_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_o_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_ldq_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldk_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldo_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_stride_o_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_stride_o_zero, NWATTN_ERR_BAD_STRIDE),
    CASE(m_o_is_q, NWATTN_ERR_ALIASING),
    CASE(m_o_in_k, NWATTN_ERR_ALIASING),
    CASE(m_huge_m, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_batch, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_bytes, NWATTN_ERR_OVERFLOW),
};

static const err_case pool_cases[] = {
    CASE(m_score_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_q_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_k_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_v_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_o_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_mask_lens_null_per_row, NWATTN_ERR_NULL_POINTER),
    CASE(m_d_zero, NWATTN_ERR_BAD_DIMENSION),
    CASE(m_ldq_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldk_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldv_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldo_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldw_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ld_additive_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ld_keep_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_stride_o_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_stride_w_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_stride_lse_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_kind_4, NWATTN_ERR_BAD_ENUM),
    CASE(m_kind_100, NWATTN_ERR_BAD_ENUM),
    CASE(m_flag_bit3, NWATTN_ERR_BAD_ENUM),
    CASE(m_h_zero, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_nan, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_h_inf, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_zero, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_hj_negative_laplace, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_scale_nan, NWATTN_ERR_BAD_PARAMETER),
    CASE(m_len_item_big, NWATTN_ERR_BAD_MASK),
    CASE(m_len_row_big, NWATTN_ERR_BAD_MASK),
    CASE(m_o_is_q, NWATTN_ERR_ALIASING),
    CASE(m_o_in_v, NWATTN_ERR_ALIASING),
    CASE(m_o_in_additive, NWATTN_ERR_ALIASING),
    CASE(m_w_in_o, NWATTN_ERR_ALIASING),
    CASE(m_w_is_k, NWATTN_ERR_ALIASING),
    CASE(m_lse_in_w, NWATTN_ERR_ALIASING),
    CASE(m_lse_in_q, NWATTN_ERR_ALIASING),
    CASE(m_huge_m, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_n, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_batch, NWATTN_ERR_OVERFLOW),
};

static const err_case average_cases[] = {
    CASE(m_v_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_o_null, NWATTN_ERR_NULL_POINTER),
    CASE(m_mask_lens_null_per_row, NWATTN_ERR_NULL_POINTER),
    CASE(m_ldv_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ldo_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_ld_additive_small, NWATTN_ERR_BAD_LEADING_DIM),
    CASE(m_stride_o_overlap, NWATTN_ERR_BAD_STRIDE),
    CASE(m_flag_top, NWATTN_ERR_BAD_ENUM),
    CASE(m_len_item_big, NWATTN_ERR_BAD_MASK),
    CASE(m_len_row_big, NWATTN_ERR_BAD_MASK),
    CASE(m_o_in_v, NWATTN_ERR_ALIASING),
    CASE(m_o_in_additive, NWATTN_ERR_ALIASING),
    CASE(m_huge_m, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_n, NWATTN_ERR_OVERFLOW),
    CASE(m_huge_batch, NWATTN_ERR_OVERFLOW),
};

/* ---- The driver ----------------------------------------------------------------------------- */
static int fixture_equal(const fixture *a, const fixture *b) {
    return memcmp(a, b, sizeof *a) == 0;
}

static void expect_error_message(nwattn_context *ctx, const char *what) {
    const char *msg = nwattn_context_last_error(ctx);
    if (msg == NULL || msg[0] == '\0') {
        print_message("%s: failed without a message\n", what);
        fail();
    }
}

static void run_cases(fn_id fn, const err_case *cases, size_t count) {
    static const nwattn_backend backends[3] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                               NWATTN_BACKEND_AUTO};
    fixture *pristine = malloc(sizeof *pristine), *fx = malloc(sizeof *fx);
    assert_true(pristine && fx);
    fixture_init(pristine);
    for (int t = 0; t < 3; t++) {
        nwattn_context *ctx = tu_context(backends[t]);
        /* The valid call succeeds, clears the message and writes its output. */
        memcpy(fx, pristine, sizeof *fx);
        call_args good = baseline(fn, fx);
        TU_ASSERT_OK(ctx, invoke(fn, ctx, &good));
        assert_false(fixture_equal(fx, pristine));
        /* Without a context. */
        memcpy(fx, pristine, sizeof *fx);
        good = baseline(fn, fx);
        assert_int_equal(invoke(fn, NULL, &good), NWATTN_ERR_NULL_POINTER);
        assert_true(fixture_equal(fx, pristine));
        for (size_t c = 0; c < count; c++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s (backend %d)", fn_names[fn], cases[c].name,
                     (int)backends[t]);
            memcpy(fx, pristine, sizeof *fx);
            call_args bad = baseline(fn, fx);
            cases[c].mutate(&bad, fx);
            fixture *before = malloc(sizeof *before);
            assert_non_null(before);
            memcpy(before, fx, sizeof *fx); /* mutations may edit the fixture's arrays */
            nwattn_status st = invoke(fn, ctx, &bad);
            if (st != cases[c].want) {
                print_message("%s: returned %s, want %s (%s)\n", what, nwattn_status_name(st),
                              nwattn_status_name(cases[c].want), nwattn_context_last_error(ctx));
                fail();
            }
            expect_error_message(ctx, what);
            if (!fixture_equal(fx, before)) {
                print_message("%s: a buffer changed although the call failed\n", what);
                fail();
            }
            free(before);
            /* The next valid call succeeds and clears the message. */
            memcpy(fx, pristine, sizeof *fx);
            good = baseline(fn, fx);
            TU_ASSERT_OK(ctx, invoke(fn, ctx, &good));
        }
        nwattn_context_destroy(ctx);
    }
    free(pristine);
    free(fx);
}

static void test_scores_errors(void **state) {
    (void)state;
    run_cases(FN_SCORES, scores_cases, sizeof scores_cases / sizeof scores_cases[0]);
}
static void test_softmax_errors(void **state) {
    (void)state;
    run_cases(FN_SOFTMAX, softmax_cases, sizeof softmax_cases / sizeof softmax_cases[0]);
}
static void test_bmm_errors(void **state) {
    (void)state;
    run_cases(FN_BMM, bmm_cases, sizeof bmm_cases / sizeof bmm_cases[0]);
}
static void test_pool_errors(void **state) {
    (void)state;
    run_cases(FN_POOL, pool_cases, sizeof pool_cases / sizeof pool_cases[0]);
}
static void test_average_pool_errors(void **state) {
    (void)state;
    run_cases(FN_AVERAGE, average_cases, sizeof average_cases / sizeof average_cases[0]);
}

/* Per-dimension bandwidths replace the scalar one: a bad scalar is then no error. */
static void test_bandwidths_override_scalar(void **state) {
    (void)state;
    fixture *fx = malloc(sizeof *fx);
    assert_non_null(fx);
    fixture_init(fx);
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    call_args a = baseline(FN_SCORES, fx);
    a.score.bandwidth = NAN;
    a.score.bandwidths = fx->h;
    TU_ASSERT_OK(ctx, invoke(FN_SCORES, ctx, &a));
    a = baseline(FN_POOL, fx);
    a.score.bandwidth = 0.0f;
    a.score.bandwidths = fx->h;
    TU_ASSERT_OK(ctx, invoke(FN_POOL, ctx, &a));
    nwattn_context_destroy(ctx);
    free(fx);
}

/* ---- BLAS integer limits ------------------------------------------------------------------- */
/* A leading dimension above INT_MAX cannot be handed to the BLAS: the BLAS backend refuses with
 * NWATTN_ERR_TOO_LARGE, AUTO falls back to the reference. With one row the buffer holds just
 * that row, so nothing beyond it is ever addressed. */
static void test_too_large_leading_dimension(void **state) {
    (void)state;
    const size_t big = (size_t)INT_MAX + 1;
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    const float q[2] = {0.5f, -0.5f}, k[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const float v[4] = {1, 2, 3, 4};
    float s[4], s_ref[4];
    nwattn_context *blas = tu_context(NWATTN_BACKEND_BLAS);
    nwattn_context *autoctx = tu_context(NWATTN_BACKEND_AUTO);
    nwattn_context *ref = tu_context(NWATTN_BACKEND_REFERENCE);

    for (size_t t = 0; t < 4; t++)
        s[t] = 42.0f;
    assert_int_equal(nwattn_scores(blas, &sc, 1, 1, 4, 2, q, big, 0, k, 2, 0, s, 4, 0),
                     NWATTN_ERR_TOO_LARGE);
    expect_error_message(blas, "scores with ldq > INT_MAX");
    for (size_t t = 0; t < 4; t++)
        assert_true(s[t] == 42.0f);
    TU_ASSERT_OK(autoctx, nwattn_scores(autoctx, &sc, 1, 1, 4, 2, q, big, 0, k, 2, 0, s, 4, 0));
    TU_ASSERT_OK(ref, nwattn_scores(ref, &sc, 1, 1, 4, 2, q, 2, 0, k, 2, 0, s_ref, 4, 0));
    assert_memory_equal(s, s_ref, sizeof s);
    /* the output's leading dimension counts too */
    assert_int_equal(nwattn_scores(blas, &sc, 1, 1, 4, 2, q, 2, 0, k, 2, 0, s, big, 0),
                     NWATTN_ERR_TOO_LARGE);

    float c = 42.0f;
    assert_int_equal(nwattn_bmm(blas, 1, 1, 1, 4, v, big, 0, v, 1, 0, &c, 1, 0),
                     NWATTN_ERR_TOO_LARGE);
    assert_true(c == 42.0f);
    expect_error_message(blas, "bmm with lda > INT_MAX");
    TU_ASSERT_OK(autoctx, nwattn_bmm(autoctx, 1, 1, 1, 4, v, big, 0, v, 1, 0, &c, 1, 0));
    assert_true(c == 30.0f);

    float o = 42.0f;
    assert_int_equal(nwattn_pool(blas, &sc, NULL, 1, 1, 4, 2, 1, q, big, 0, k, 2, 0, v, 1, 0, &o,
                                 1, 0, NULL, 0, 0, NULL, 0),
                     NWATTN_ERR_TOO_LARGE);
    assert_true(o == 42.0f);
    expect_error_message(blas, "pool with ldq > INT_MAX");
    TU_ASSERT_OK(autoctx, nwattn_pool(autoctx, &sc, NULL, 1, 1, 4, 2, 1, q, big, 0, k, 2, 0, v,
                                      1, 0, &o, 1, 0, NULL, 0, 0, NULL, 0));
    float o_ref;
    TU_ASSERT_OK(ref, nwattn_pool(ref, &sc, NULL, 1, 1, 4, 2, 1, q, 2, 0, k, 2, 0, v, 1, 0,
                                  &o_ref, 1, 0, NULL, 0, 0, NULL, 0));
    assert_true(o == o_ref);

    float avg = 42.0f;
    assert_int_equal(nwattn_average_pool(blas, NULL, 1, 1, 4, 1, v, 1, 0, &avg, big, 0),
                     NWATTN_ERR_TOO_LARGE);
    assert_true(avg == 42.0f);
    TU_ASSERT_OK(autoctx, nwattn_average_pool(autoctx, NULL, 1, 1, 4, 1, v, 1, 0, &avg, big, 0));
    assert_true(fabs((double)avg - 2.5) <= 8 * TU_U * 4);

    nwattn_context_destroy(blas);
    nwattn_context_destroy(autoctx);
    nwattn_context_destroy(ref);
}

/* ---- Allocation failures ---------------------------------------------------------------------- */
/* Walks the allocation budget from 0 upward: every budget that is too small fails with
 * NWATTN_ERR_ALLOC, leaves every buffer untouched and the context usable; the first budget
 * that suffices gives the same result as an unconstrained context. No allocation leaks. */
static void alloc_walk(fn_id fn, nwattn_backend backend, int drop_weights, int must_allocate) {
    fixture *pristine = malloc(sizeof *pristine), *fx = malloc(sizeof *fx);
    fixture *expect = malloc(sizeof *expect);
    assert_true(pristine && fx && expect);
    fixture_init(pristine);

    /* the expected result */
    nwattn_context *plain = tu_context(backend);
    memcpy(expect, pristine, sizeof *expect);
    call_args a = baseline(fn, expect);
    if (drop_weights)
        a.w = NULL, a.ldw = a.stride_w = 0;
    TU_ASSERT_OK(plain, invoke(fn, plain, &a));
    nwattn_context_destroy(plain);

    tu_alloc_stats stats;
    nwattn_allocator alloc = tu_counting_allocator(&stats);
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &alloc), NWATTN_OK);
    assert_true(stats.allocs >= 1); /* the context itself comes from the allocator */
    assert_int_equal(nwattn_context_set_backend(ctx, backend), NWATTN_OK);
    size_t failures = 0;
    for (long budget = 0;; budget++) {
        assert_true(budget < 64);
        nwattn_context_release_workspace(ctx);
        memcpy(fx, pristine, sizeof *fx);
        a = baseline(fn, fx);
        if (drop_weights)
            a.w = NULL, a.ldw = a.stride_w = 0;
        stats.budget = budget;
        nwattn_status st = invoke(fn, ctx, &a);
        stats.budget = -1;
        if (st == NWATTN_ERR_ALLOC) {
            failures++;
            expect_error_message(ctx, "allocation failure");
            if (!fixture_equal(fx, pristine)) {
                print_message("%s: buffers changed by a call that failed to allocate (budget "
                              "%ld)\n",
                              fn_names[fn], budget);
                fail();
            }
            continue;
        }
        TU_ASSERT_OK(ctx, st);
        if (!fixture_equal(fx, expect)) {
            print_message("%s: result after %zu allocation failures differs\n", fn_names[fn],
                          failures);
            fail();
        }
        break;
    }
    if (must_allocate && failures == 0) {
        print_message("%s (backend %d): expected the call to need working memory\n",
                      fn_names[fn], (int)backend);
        fail();
    }
    /* A steady workload allocates only on its first call. */
    size_t before = stats.allocs;
    memcpy(fx, pristine, sizeof *fx);
    a = baseline(fn, fx);
    if (drop_weights)
        a.w = NULL, a.ldw = a.stride_w = 0;
    TU_ASSERT_OK(ctx, invoke(fn, ctx, &a));
    assert_int_equal(stats.allocs, before);
    nwattn_context_destroy(ctx);
    if (stats.allocs != stats.frees || stats.live_bytes != 0) {
        print_message("%s: %zu allocations, %zu frees, %zu bytes still live\n", fn_names[fn],
                      stats.allocs, stats.frees, stats.live_bytes);
        fail();
    }
    free(pristine);
    free(fx);
    free(expect);
}

static void test_allocation_failures(void **state) {
    (void)state;
    static const nwattn_backend backends[3] = {NWATTN_BACKEND_REFERENCE, NWATTN_BACKEND_BLAS,
                                               NWATTN_BACKEND_AUTO};
    for (int t = 0; t < 3; t++) {
        nwattn_backend be = backends[t];
        /* pool without weights forms them in working memory: it must allocate */
        alloc_walk(FN_POOL, be, 1, 1);
        alloc_walk(FN_POOL, be, 0, 0);
        alloc_walk(FN_AVERAGE, be, 0, 1);
        alloc_walk(FN_SCORES, be, 0, be != NWATTN_BACKEND_REFERENCE); /* centred copies */
        alloc_walk(FN_SOFTMAX, be, 0, 0);
        alloc_walk(FN_BMM, be, 0, 0);
    }
}

static void test_context_create_failures(void **state) {
    (void)state;
    tu_alloc_stats stats;
    nwattn_allocator alloc = tu_counting_allocator(&stats);
    static int marker;
    nwattn_context *const untouched = (nwattn_context *)(void *)&marker;
    nwattn_context *ctx = untouched;
    stats.budget = 0;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &alloc), NWATTN_ERR_ALLOC);
    assert_ptr_equal(ctx, untouched);
    assert_int_equal(stats.allocs, 0);

    nwattn_allocator no_alloc = alloc, no_free = alloc;
    no_alloc.alloc = NULL;
    no_free.free = NULL;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, NULL), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &no_alloc),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &no_free),
                     NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_context_create_with_allocator(NULL, &alloc), NWATTN_ERR_NULL_POINTER);
    assert_int_equal(nwattn_context_create(NULL), NWATTN_ERR_NULL_POINTER);
    assert_ptr_equal(ctx, untouched);

    /* The allocator is copied: changing the caller's struct afterwards changes nothing. */
    stats.budget = -1;
    nwattn_allocator copy = alloc;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &copy), NWATTN_OK);
    memset(&copy, 0, sizeof copy);
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_AUTO);
    nwattn_context_destroy(ctx);
    assert_int_equal(stats.allocs, stats.frees);
    assert_int_equal(stats.live_bytes, 0);
}

/* ---- Context management ---------------------------------------------------------------------- */
static void test_context_basics(void **state) {
    (void)state;
    nwattn_context_destroy(NULL); /* a no-op */
    const char *msg = nwattn_context_last_error(NULL);
    assert_non_null(msg);

    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create(&ctx), NWATTN_OK);
    assert_non_null(ctx);
    assert_string_equal(nwattn_context_last_error(ctx), "");
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_AUTO);
    assert_int_equal(nwattn_context_workspace_bytes(ctx), 0);

    /* unknown backends are refused and change nothing */
    assert_int_equal(nwattn_context_set_backend(ctx, NWATTN_BACKEND_BLAS), NWATTN_OK);
    assert_int_equal(nwattn_context_set_backend(ctx, (nwattn_backend)4), NWATTN_ERR_BAD_ENUM);
    expect_error_message(ctx, "set_backend(4)"); /* 3 is NWATTN_BACKEND_FUSED */
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_BLAS);
    assert_int_equal(nwattn_context_set_backend(ctx, (nwattn_backend)77), NWATTN_ERR_BAD_ENUM);
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_BLAS);
    /* a successful call clears the message */
    assert_int_equal(nwattn_context_set_backend(ctx, NWATTN_BACKEND_REFERENCE), NWATTN_OK);
    assert_string_equal(nwattn_context_last_error(ctx), "");
    assert_int_equal(nwattn_context_get_backend(ctx), NWATTN_BACKEND_REFERENCE);
    assert_int_equal(nwattn_context_set_backend(NULL, NWATTN_BACKEND_AUTO),
                     NWATTN_ERR_NULL_POINTER);
    nwattn_context_destroy(ctx);
}

/* Working memory is kept across calls, reported, released, and regrown on demand. */
static void test_workspace(void **state) {
    (void)state;
    fixture *fx = malloc(sizeof *fx);
    assert_non_null(fx);
    fixture_init(fx);
    tu_alloc_stats stats;
    nwattn_allocator alloc = tu_counting_allocator(&stats);
    nwattn_context *ctx = NULL;
    assert_int_equal(nwattn_context_create_with_allocator(&ctx, &alloc), NWATTN_OK);
    call_args a = baseline(FN_POOL, fx);
    a.w = NULL, a.ldw = a.stride_w = 0;
    TU_ASSERT_OK(ctx, invoke(FN_POOL, ctx, &a));
    size_t ws = nwattn_context_workspace_bytes(ctx);
    assert_true(ws > 0);
    assert_true(stats.live_bytes >= ws);
    size_t frees = stats.frees;
    nwattn_context_release_workspace(ctx);
    assert_int_equal(nwattn_context_workspace_bytes(ctx), 0);
    assert_int_equal(stats.frees, frees + 1);
    nwattn_context_release_workspace(ctx); /* twice is harmless */
    assert_int_equal(stats.frees, frees + 1);
    TU_ASSERT_OK(ctx, invoke(FN_POOL, ctx, &a));
    assert_int_equal(nwattn_context_workspace_bytes(ctx), ws);
    /* A larger problem grows the block; the smaller one is given back, not leaked. */
    a.batch = 1, a.n = 2, a.mask.valid_lens = NULL, a.mask.additive = NULL, a.mask.keep = NULL;
    TU_ASSERT_OK(ctx, invoke(FN_POOL, ctx, &a)); /* fewer keys: no growth */
    assert_int_equal(nwattn_context_workspace_bytes(ctx), ws);
    static float big_q[64 * 2], big_k[300 * 2], big_v[300], big_o[64];
    const nwattn_score sc = {NWATTN_SCORE_GAUSSIAN, 0.0f, 1.0f, NULL};
    TU_ASSERT_OK(ctx, nwattn_pool(ctx, &sc, NULL, 1, 64, 300, 2, 1, big_q, 2, 0, big_k, 2, 0,
                                  big_v, 1, 0, big_o, 1, 0, NULL, 0, 0, NULL, 0));
    size_t grown = nwattn_context_workspace_bytes(ctx);
    assert_true(grown > ws);
    assert_true(stats.live_bytes >= grown);
    /* only the context and the one block are alive */
    assert_true(stats.allocs - stats.frees == 2);
    nwattn_context_destroy(ctx);
    assert_int_equal(stats.allocs, stats.frees);
    assert_int_equal(stats.live_bytes, 0);
    free(fx);
}

/* ---- Status names, descriptions, version ---------------------------------------------------- */
static void test_status_names(void **state) {
    (void)state;
    static const char *names[] = {
        "NWATTN_OK",
        "NWATTN_ERR_NULL_POINTER",
        "NWATTN_ERR_BAD_DIMENSION",
        "NWATTN_ERR_BAD_LEADING_DIM",
        "NWATTN_ERR_BAD_STRIDE",
        "NWATTN_ERR_BAD_PARAMETER",
        "NWATTN_ERR_BAD_ENUM",
        "NWATTN_ERR_BAD_MASK",
        "NWATTN_ERR_ALIASING",
        "NWATTN_ERR_OVERFLOW",
        "NWATTN_ERR_TOO_LARGE",
        "NWATTN_ERR_ALLOC",
        "NWATTN_ERR_UNSUPPORTED",
        "NWATTN_ERR_DEGENERATE_DATA",
    };
    const size_t count = sizeof names / sizeof names[0];
    assert_int_equal(count, (size_t)NWATTN_ERR_DEGENERATE_DATA + 1);
    for (size_t s = 0; s < count; s++) {
        nwattn_status st = (nwattn_status)s;
        assert_string_equal(nwattn_status_name(st), names[s]);
        const char *desc = nwattn_status_describe(st);
        assert_non_null(desc);
        assert_true(strlen(desc) > 0);
        assert_null(strchr(desc, '\n')); /* one line */
        for (size_t t = 0; t < s; t++)
            assert_true(strcmp(desc, nwattn_status_describe((nwattn_status)t)) != 0);
    }
    static const unsigned unknown[] = {14, 100, 0x7fffffffu};
    for (size_t u = 0; u < sizeof unknown / sizeof unknown[0]; u++) {
        nwattn_status st = (nwattn_status)unknown[u];
        assert_string_equal(nwattn_status_name(st), "NWATTN_ERR_UNKNOWN");
        assert_non_null(nwattn_status_describe(st));
        assert_true(strlen(nwattn_status_describe(st)) > 0);
    }
}

static void test_version(void **state) {
    (void)state;
    assert_int_equal(nwattn_version_number(), NWATTN_VERSION_NUMBER);
    assert_string_equal(nwattn_version_string(), NWATTN_VERSION_STRING);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", NWATTN_VERSION_MAJOR, NWATTN_VERSION_MINOR,
             NWATTN_VERSION_PATCH);
    assert_string_equal(NWATTN_VERSION_STRING, expect);
    assert_int_equal(NWATTN_VERSION_NUMBER,
                     NWATTN_VERSION_MAJOR * 10000 + NWATTN_VERSION_MINOR * 100 +
                         NWATTN_VERSION_PATCH);
}

/* Empty problems are valid: nothing is written and the message stays empty. */
static void test_empty_problems_are_ok(void **state) {
    (void)state;
    fixture *pristine = malloc(sizeof *pristine), *fx = malloc(sizeof *fx);
    assert_true(pristine && fx);
    fixture_init(pristine);
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    for (int fn = FN_SCORES; fn <= FN_AVERAGE; fn++) {
        for (int which = 0; which < 3; which++) {
            memcpy(fx, pristine, sizeof *fx);
            call_args a = baseline((fn_id)fn, fx);
            if (which == 0)
                a.batch = 0;
            else if (which == 1)
                a.m = 0;
            else if (fn == FN_POOL || fn == FN_AVERAGE)
                a.dv = 0, a.w = NULL, a.lse = NULL;
            else
                continue;
            TU_ASSERT_OK(ctx, invoke((fn_id)fn, ctx, &a));
            if (!fixture_equal(fx, pristine)) {
                print_message("%s: an empty problem (%d) wrote something\n", fn_names[fn],
                              which);
                fail();
            }
        }
    }
    nwattn_context_destroy(ctx);
    free(pristine);
    free(fx);
}

/* The header asks only ld >= the row length, so zero-length rows (n == 0 keys, k == 0 inner
 * dimension) may come with ld == 0. */
static void test_zero_length_rows_accept_ld_zero(void **state) {
    (void)state;
    nwattn_context *ctx = tu_context(NWATTN_BACKEND_AUTO);
    float s[1] = {0.0f}, w[1] = {5.0f}, lse[2] = {1.0f, 1.0f};
    TU_ASSERT_OK(ctx, nwattn_softmax(ctx, NULL, 1, 2, 0, s, 0, 0, w, 0, 0, lse, 0));
    assert_true(lse[0] == -INFINITY && lse[1] == -INFINITY && w[0] == 5.0f);
    float a[1] = {1.0f}, b[1] = {1.0f}, c[6] = {9, 9, 9, 9, 9, 9};
    TU_ASSERT_OK(ctx, nwattn_bmm(ctx, 1, 2, 3, 0, a, 0, 0, b, 3, 0, c, 3, 0));
    for (size_t t = 0; t < 6; t++)
        assert_true(c[t] == 0.0f);
    nwattn_context_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores_errors),
        cmocka_unit_test(test_softmax_errors),
        cmocka_unit_test(test_bmm_errors),
        cmocka_unit_test(test_pool_errors),
        cmocka_unit_test(test_average_pool_errors),
        cmocka_unit_test(test_bandwidths_override_scalar),
        cmocka_unit_test(test_too_large_leading_dimension),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_context_create_failures),
        cmocka_unit_test(test_context_basics),
        cmocka_unit_test(test_workspace),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_empty_problems_are_ok),
        cmocka_unit_test(test_zero_length_rows_accept_ld_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
