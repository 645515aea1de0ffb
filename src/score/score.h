/* Score kinds as descriptors, one file per kind: score_dot.c, score_gaussian.c,
 * score_laplace.c, score_cosine.c and score_uniform.c (average pooling's constant score, never
 * accepted from callers). A descriptor holds everything a path needs to know about its kind:
 * validation, the definition in double (the reference path, and the rows a fast path cannot
 * hold in float), and the fast float scores of a block of rows against prepared keys, which
 * the unfused BLAS path and the fused tiles share, so both round every score the same way.
 *
 * Range (core/range.h): what the keys of an item decide is in nw_keys_info; each row then
 * either takes the fast scores (row_fast) or is exact: its scores come from `ref` in double.
 * Both choices depend only on the row's query and its item's keys. */
#ifndef NWATTN_SCORE_H
#define NWATTN_SCORE_H

#include "internal.h"

struct nw_call;

/* What the keys of one item decide about how their scores are formed. */
typedef struct nw_keys_info {
    int finite;           /* no NaN or Inf among the keys (else every row is exact) */
    double max_abs;       /* largest |k| */
    int exponent;         /* distance expansion: coordinates stored times 2^-exponent */
    const double *centre; /* distance expansion: the mean key (d doubles) */
    const double *inv_h;  /* distance scores: 1/h per coordinate (d doubles) */
} nw_keys_info;

typedef struct nw_score_desc {
    const char *name;
    /* Validates the public parameters against d (registering arrays with call), fills out. */
    nwattn_status (*check)(struct nw_call *call, const nwattn_score *score, size_t d,
                           nw_score *out);
    /* The definition in double. */
    double (*ref)(const nw_score *score, size_t d, const float *q, const float *k);
    /* Doubles of storage keys_info keeps per item (bandwidths and the centre). */
    size_t (*info_doubles)(size_t d);
    void (*keys_info)(const nw_score *score, size_t n, size_t d, const float *k, size_t ldk,
                      double *store, nw_keys_info *info);
    /* Whether query row q (d finite or not floats) takes the fast scores. */
    int (*row_fast)(const nw_score *score, size_t d, const float *q, const nw_keys_info *info);
    /* Floats of the prepared keys of n keys, and of the prepared rows of m queries. */
    size_t (*prep_floats)(size_t n, size_t d);
    size_t (*row_floats)(size_t m, size_t d);
    /* The keys as block wants them (once per block of keys: a fused tile, the unfused keys). */
    void (*prepare)(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                    size_t n, size_t d, const float *k, size_t ldk, float *kp);
    /* The query rows as block wants them (once per block of rows, whatever the key tiles). */
    void (*prepare_rows)(const nw_score *score, const nw_keys_info *info, size_t m, size_t d,
                         const float *q, size_t ldq, float *qs);
    /* Fast scores of m query rows (q, and qs as prepare_rows left it for these m rows)
     * against the first n of np keys (k, and kp as prepare left it for np keys, n <= np):
     * the score is scale(info) · t[i·ldt + j]. */
    void (*block)(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                  size_t m, size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                  const float *k, size_t ldk, const float *kp, size_t np, float *t,
                  size_t ldt);
    /* The power of two the fast scores carry (1 for most kinds). */
    double (*scale)(const nw_score *score, const nw_keys_info *info);
    /* Rows this narrow (d <= row_direct_max_d) are cheapest scored one at a time, right
     * before the row is used (the fused tiles' 1-D Nadaraya-Watson). */
    size_t row_direct_max_d;
    /* Every score is 0 (uniform weights): the pooling may compute one row and copy it. */
    int constant;
    /* A distance kind whose d = 1 direct scores are simd.h's dist1 (NW_DIST1_GAUSSIAN or
     * NW_DIST1_LAPLACE): the fused path's one-pass row (simd.h dist1_exp_dot); 0 otherwise. */
    int dist1;
} nw_score_desc;

enum { NW_DIST1_LAPLACE = 1, NW_DIST1_GAUSSIAN = 2 };

/* The largest score of query u against keys within [lo, hi] (finite, lo <= hi) as simd.h's
 * dist1_exp_dot rounds its term exponents, before the shift: 0 when u lies inside; outside,
 * the score of the nearer end, which every key's is below (each step rounds monotonically in
 * |u - k|; the kernel's last fused step is rounded once more, so its exponents can exceed 0
 * by an ulp of the bound, which is harmless). */
float nw_dist1_bound(int gaussian, float u, float inv_h, float lo, float hi);

extern const nw_score_desc nw_score_dot, nw_score_gaussian, nw_score_laplace, nw_score_cosine,
    nw_score_uniform;

/* The parameter check of the scaled kinds (dot, cosine): a finite scale. */
nwattn_status nw_scale_check(struct nw_call *call, const nwattn_score *score, size_t d,
                             nw_score *out);

/* Pieces the kinds share (score_table.c): no stored doubles; the keys' largest magnitude and
 * finiteness only; no prepared query rows; fast scores at scale 1. */
size_t nw_score_no_doubles(size_t d);
void nw_score_plain_keys_info(const nw_score *score, size_t n, size_t d, const float *k,
                              size_t ldk, double *store, nw_keys_info *info);
void nw_score_no_rows(const nw_score *score, const nw_keys_info *info, size_t m, size_t d,
                      const float *q, size_t ldq, float *qs);
double nw_score_unit_scale(const nw_score *score, const nw_keys_info *info);

/* The descriptor of a public kind, or NULL. */
const nw_score_desc *nw_score_desc_of(nwattn_score_kind kind);

/* Whether row q is exact against keys with this info: non-finite data, or out of range. */
static inline int nw_score_row_exact(const nw_score *score, size_t d, const float *q,
                                     const nw_keys_info *info) {
    return !info->finite || !score->desc->row_fast(score, d, q, info);
}

#endif /* NWATTN_SCORE_H */
