/* The reference backend: plain loops, double accumulation. */
#ifndef NWATTN_REF_KERNELS_H
#define NWATTN_REF_KERNELS_H

#include "internal.h"

/* One score in double precision. */
double nw_ref_score(const nw_score *score, size_t d, const float *q, const float *k);

/* One row of scores against n keys: x (n doubles) receives them in double, t their float
 * rounding divided by *row_scale, a power of two (core/range.h). */
void nw_ref_score_row(const nw_score *score, size_t n, size_t d, const float *q, const float *k,
                      size_t ldk, float *t, double *row_scale, double *x);

size_t nw_ref_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d);
void nw_ref_scores(const nw_simd *simd, const nw_score *score, size_t m, size_t n, size_t d,
                   const float *q, size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                   double *row_scale, void *scratch);
void nw_ref_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                    size_t rows, size_t n, const float *s, size_t lds,
                    const double *row_scale, float *w, size_t ldw, float *lse);
void nw_ref_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                 size_t ldb, float *c, size_t ldc);
void nw_ref_linear(nw_workers *workers, size_t rows, size_t out, size_t in, const float *x,
                   size_t ldx, const float *w, const float *bias, float *y, size_t ldy,
                   const nw_heads_out *heads);
size_t nw_ref_bmm_workspace(size_t batch);
void nw_ref_bmm(const nw_exec *exec, size_t batch, size_t m, size_t n, size_t k, const float *a, size_t lda,
                size_t stride_a, const float *b, size_t ldb, size_t stride_b, float *c,
                size_t ldc, size_t stride_c, void *scratch);

#endif /* NWATTN_REF_KERNELS_H */
