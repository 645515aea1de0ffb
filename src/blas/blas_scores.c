/* BLAS scores: each kind's fast block (score/) over all the keys at once. Rows the fast form
 * cannot hold (core/range.h), and every row facing non-finite keys, are exact: the reference
 * formulas in double, stored as float times a power of two, so all backends agree on where
 * NaN and Inf go and no row's range decides another's. */
#include "blas_kernels.h"
#include "ref/ref_kernels.h"
#include "score/score.h"

/* Scratch, in this order: the keys' info (doubles), one row of exact scores (n doubles), the
 * prepared keys and the block's scratch (floats). */
typedef struct scores_layout {
    size_t info_doubles, prep_floats, total;
} scores_layout;

static scores_layout layout_of(const nw_score *score, size_t m, size_t n, size_t d) {
    const nw_score_desc *desc = score->desc;
    scores_layout l = {desc->info_doubles(d), desc->prep_floats(n, d), SIZE_MAX};
    const size_t row_floats = desc->row_floats(m, d);
    size_t doubles, floats, bytes;
    if (l.prep_floats != SIZE_MAX && row_floats != SIZE_MAX &&
        nw_add(l.info_doubles, n, &doubles) && nw_add(l.prep_floats, row_floats, &floats) &&
        nw_mul(doubles, sizeof(double), &bytes) && nw_mul(floats, sizeof(float), &floats) &&
        nw_add(bytes, floats, &bytes) && nw_add(bytes, sizeof(double), &bytes))
        l.total = bytes & ~(size_t)7; /* a multiple of 8 bytes */
    return l;
}

size_t nw_blas_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d) {
    return layout_of(score, m, n, d).total;
}

void nw_blas_scores(const nw_simd *simd, const nw_score *score, size_t m, size_t n, size_t d,
                    const float *q, size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                    double *row_scale, void *scratch) {
    if (m == 0)
        return;
    if (n == 0) { /* no scores, but the softmax still reads each row's scale */
        for (size_t i = 0; i < m; i++)
            row_scale[i] = 1.0;
        return;
    }
    const nw_score_desc *desc = score->desc;
    const scores_layout l = layout_of(score, m, n, d);
    double *store = scratch, *exact_row = store + l.info_doubles;
    float *kp = (float *)(void *)(exact_row + n), *rows = kp + l.prep_floats;
    nw_keys_info info;
    desc->keys_info(score, n, d, k, ldk, store, &info);
    if (info.finite) {
        desc->prepare(score, &info, simd, n, d, k, ldk, kp);
        desc->prepare_rows(score, &info, m, d, q, ldq, rows);
        desc->block(score, &info, simd, m, n, d, q, ldq, rows, k, ldk, kp, n, t, ldt);
    }
    const double scale = desc->scale(score, &info);
    for (size_t i = 0; i < m; i++) {
        if (nw_score_row_exact(score, d, q + i * ldq, &info))
            nw_ref_score_row(score, n, d, q + i * ldq, k, ldk, t + i * ldt, &row_scale[i],
                             exact_row);
        else
            row_scale[i] = scale;
    }
}
