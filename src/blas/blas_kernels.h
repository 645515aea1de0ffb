/* The BLAS backend: OpenBLAS products, float softmax. */
#ifndef NWATTN_BLAS_KERNELS_H
#define NWATTN_BLAS_KERNELS_H

#include "internal.h"

/* Largest dimension handed to one BLAS call; larger problems are split into chunks. The build
 * option NWATTN_BLAS_DIM_LIMIT lowers it so that tests exercise the splitting. */
#if defined(NWATTN_BLAS_DIM_LIMIT) && NWATTN_BLAS_DIM_LIMIT > 0
#define NW_BLAS_DIM_LIMIT ((size_t)NWATTN_BLAS_DIM_LIMIT)
#else
#define NW_BLAS_DIM_LIMIT ((size_t)NW_BLAS_INT_MAX)
#endif

/* The BLAS's core (OpenBLAS's openblas_get_corename, e.g. "Haswell"), NULL for another BLAS. */
const char *nw_blas_core(void);
/* Whether the BLAS multiplies products up to m·n·k = 2^18 without packing (OpenBLAS's
 * small-matrix kernels, its Skylake-X cores): then a transposed copy of a key tile pays
 * (score_dot.c). Probed once per process, like the CPU (simd/cpu.h). */
int nw_blas_small_products(void);
/* The BLAS's own thread count now (OpenBLAS's openblas_get_num_threads), 0 where it does not
 * say (another BLAS). */
int nw_blas_threads(void);

/* c = alpha · a · op(b) + beta · c, with op(b) = b (k×n) or b^T (b is n×k). Any sizes: the
 * product is split so that every BLAS argument fits its integer. Leading dimensions must fit. */
void nw_blas_sgemm(int transpose_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                   size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* c = alpha · a^T · b + beta · c with a k×m, b k×n, c m×n (the backward's P^T dO, dS^T Q). */
void nw_blas_sgemm_tn(size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc);

size_t nw_blas_scores_workspace(const nw_score *score, size_t m, size_t n, size_t d);
void nw_blas_scores(const nw_simd *simd, const nw_score *score, size_t m, size_t n, size_t d,
                    const float *q, size_t ldq, const float *k, size_t ldk, float *t, size_t ldt,
                    double *row_scale, void *scratch);
void nw_blas_softmax(const nw_simd *simd, const nw_mask *mask, size_t b, size_t i0,
                     size_t rows, size_t n, const float *s, size_t lds,
                     const double *row_scale, float *w, size_t ldw, float *lse);
void nw_blas_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                  size_t ldb, float *c, size_t ldc);
void nw_blas_linear(nw_workers *workers, size_t rows, size_t out, size_t in, const float *x,
                    size_t ldx, const float *w, const float *bias, float *y, size_t ldy,
                    const nw_heads_out *heads);
size_t nw_blas_bmm_workspace(size_t batch);
void nw_blas_bmm(const nw_exec *exec, size_t batch, size_t m, size_t n, size_t k, const float *a, size_t lda,
                 size_t stride_a, const float *b, size_t ldb, size_t stride_b, float *c,
                 size_t ldc, size_t stride_c, void *scratch);

#endif /* NWATTN_BLAS_KERNELS_H */
