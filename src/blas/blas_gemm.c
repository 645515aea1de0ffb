/* BLAS products of any size: sgemm, or sgemv/sdot for single-row and single-column products
 * (several times faster there), split so that every dimension fits the BLAS integer. */
#include <cblas.h>

#include "blas_kernels.h"

#if NWATTN_USE_SGEMM_BATCH
#include "sgemm_batch.h"
#endif

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

void nw_blas_sgemm(int transpose_b, size_t m, size_t n, size_t k, float alpha, const float *a,
                   size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    for (size_t i0 = 0; i0 < m; i0 += limit) {
        size_t mb = min_size(limit, m - i0);
        for (size_t j0 = 0; j0 < n; j0 += limit) {
            size_t nb = min_size(limit, n - j0);
            for (size_t p0 = 0; p0 < k; p0 += limit) {
                size_t kb = min_size(limit, k - p0);
                const float *bblock = transpose_b ? b + j0 * ldb + p0 : b + p0 * ldb + j0;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
                            (blasint)mb, (blasint)nb, (blasint)kb, alpha, a + i0 * lda + p0,
                            (blasint)lda, bblock, (blasint)ldb, p0 == 0 ? beta : 1.0f,
                            c + i0 * ldc + j0, (blasint)ldc);
            }
        }
    }
}

/* y = A x for A m×k (row pitch lda), x with increment incx, y with increment incy. */
static void gemv_rows(size_t m, size_t k, const float *a, size_t lda, const float *x,
                      size_t incx, float *y, size_t incy) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    for (size_t i0 = 0; i0 < m; i0 += limit) {
        size_t mb = min_size(limit, m - i0);
        for (size_t p0 = 0; p0 < k; p0 += limit) {
            size_t kb = min_size(limit, k - p0);
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)mb, (blasint)kb, 1.0f,
                        a + i0 * lda + p0, (blasint)lda, x + p0 * incx, (blasint)incx,
                        p0 == 0 ? 0.0f : 1.0f, y + i0 * incy, (blasint)incy);
        }
    }
}

/* y = B^T x for B k×n (row pitch ldb), x contiguous, y contiguous. */
static void gemv_cols(size_t k, size_t n, const float *b, size_t ldb, const float *x, float *y) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    for (size_t j0 = 0; j0 < n; j0 += limit) {
        size_t nb = min_size(limit, n - j0);
        for (size_t p0 = 0; p0 < k; p0 += limit) {
            size_t kb = min_size(limit, k - p0);
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)kb, (blasint)nb, 1.0f,
                        b + p0 * ldb + j0, (blasint)ldb, x + p0, 1, p0 == 0 ? 0.0f : 1.0f,
                        y + j0, 1);
        }
    }
}

/* x·y with y strided. */
static float dot(size_t k, const float *x, const float *y, size_t incy) {
    const size_t limit = NW_BLAS_DIM_LIMIT;
    float sum = 0.0f;
    for (size_t p0 = 0; p0 < k; p0 += limit)
        sum += cblas_sdot((blasint)min_size(limit, k - p0), x + p0, 1, y + p0 * incy,
                          (blasint)incy);
    return sum;
}

void nw_blas_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                  size_t ldb, float *c, size_t ldc) {
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * ldc + j] = 0.0f;
    } else if (m == 1 && n == 1) {
        c[0] = dot(k, a, b, ldb);
    } else if (n == 1) {
        gemv_rows(m, k, a, lda, b, ldb, c, ldc);
    } else if (m == 1) {
        gemv_cols(k, n, b, ldb, a, c);
    } else {
        nw_blas_sgemm(0, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    }
}

void nw_blas_linear(size_t rows, size_t out, size_t in, const float *x, size_t ldx,
                    const float *w, const float *bias, float *y, size_t ldy) {
    if (bias != NULL) /* the bias rows, then beta = 1 adds the product */
        for (size_t i = 0; i < rows; i++)
            for (size_t o = 0; o < out; o++)
                y[i * ldy + o] = bias[o];
    nw_blas_sgemm(1, rows, out, in, 1.0f, x, ldx, w, in, bias ? 1.0f : 0.0f, y, ldy);
}

#if NWATTN_USE_SGEMM_BATCH
/* Items per cblas_sgemm_batch call: bounds the pointer arrays kept in the workspace. */
#define BATCH_CHUNK ((size_t)4096)

size_t nw_blas_bmm_workspace(size_t batch) {
    return 3 * min_size(batch, BATCH_CHUNK) * sizeof(void *);
}

static int batch_api_fits(size_t m, size_t n, size_t k) {
    /* Single rows and columns go to sgemv/sdot instead; huge ones to the splitting loop. */
    return m > 1 && n > 1 && k > 0 && m <= NW_BLAS_DIM_LIMIT && n <= NW_BLAS_DIM_LIMIT &&
           k <= NW_BLAS_DIM_LIMIT;
}

static void bmm_batch_api(size_t batch, size_t m, size_t n, size_t k, const float *a,
                          size_t lda, size_t stride_a, const float *b, size_t ldb,
                          size_t stride_b, float *c, size_t ldc, size_t stride_c,
                          void *scratch) {
    /* Three arrays of `chunk` pointers: the size nw_blas_bmm_workspace(batch) provides. */
    const size_t chunk = min_size(batch, BATCH_CHUNK);
    void **slots = scratch;
    const float **a_array = (const float **)(void *)slots;
    const float **b_array = (const float **)(void *)(slots + chunk);
    float **c_array = (float **)(void *)(slots + 2 * chunk);
    const enum CBLAS_TRANSPOSE no_trans = CblasNoTrans;
    const blasint mi = (blasint)m, ni = (blasint)n, ki = (blasint)k;
    const blasint ldai = (blasint)lda, ldbi = (blasint)ldb, ldci = (blasint)ldc;
    const float one = 1.0f, zero = 0.0f;
    for (size_t first = 0; first < batch; first += chunk) {
        size_t count = min_size(chunk, batch - first);
        for (size_t t = 0; t < count; t++) {
            a_array[t] = a + (first + t) * stride_a;
            b_array[t] = b + (first + t) * stride_b;
            c_array[t] = c + (first + t) * stride_c;
        }
        const blasint group_size = (blasint)count;
        NW_SGEMM_BATCH(CblasRowMajor, &no_trans, &no_trans, &mi, &ni, &ki, &one, a_array, &ldai,
                       b_array, &ldbi, &zero, c_array, &ldci, 1, &group_size);
    }
}
#else
size_t nw_blas_bmm_workspace(size_t batch) {
    (void)batch;
    return 0;
}
#endif

void nw_blas_bmm(size_t batch, size_t m, size_t n, size_t k, const float *a, size_t lda,
                 size_t stride_a, const float *b, size_t ldb, size_t stride_b, float *c,
                 size_t ldc, size_t stride_c, void *scratch) {
#if NWATTN_USE_SGEMM_BATCH
    if (batch > 1 && batch_api_fits(m, n, k)) {
        bmm_batch_api(batch, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c,
                      scratch);
        return;
    }
#else
    (void)scratch;
#endif
    for (size_t item = 0; item < batch; item++)
        nw_blas_gemm(m, n, k, a + item * stride_a, lda, b + item * stride_b, ldb,
                     c + item * stride_c, ldc);
}
