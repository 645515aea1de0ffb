/* Reference products: triple loops with double accumulation. */
#include "ref_kernels.h"

void nw_ref_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b,
                 size_t ldb, float *c, size_t ldc) {
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0.0;
            for (size_t p = 0; p < k; p++)
                sum += (double)a[i * lda + p] * (double)b[p * ldb + j];
            c[i * ldc + j] = (float)sum;
        }
}

void nw_ref_linear(nw_workers *workers, size_t rows, size_t out, size_t in, const float *x,
                   size_t ldx, const float *w, const float *bias, float *y, size_t ldy,
                   const nw_heads_out *heads) {
    (void)workers; /* the reference runs on the calling thread */
    const size_t width = heads ? out / heads->heads : out;
    for (size_t i = 0; i < rows; i++)
        for (size_t o = 0; o < out; o++) {
            double sum = bias ? (double)bias[o] : 0.0;
            for (size_t p = 0; p < in; p++)
                sum += (double)x[i * ldx + p] * (double)w[o * in + p];
            float *at = heads ? y + ((o / width) * heads->rows + heads->row0 + i) * width + o % width
                              : y + i * ldy + o;
            *at = (float)sum;
        }
}

size_t nw_ref_bmm_workspace(size_t batch) {
    (void)batch;
    return 0;
}

void nw_ref_bmm(const nw_exec *exec, size_t batch, size_t m, size_t n, size_t k, const float *a, size_t lda,
                size_t stride_a, const float *b, size_t ldb, size_t stride_b, float *c,
                size_t ldc, size_t stride_c, void *scratch) {
    (void)scratch, (void)exec;
    for (size_t item = 0; item < batch; item++)
        nw_ref_gemm(m, n, k, a + item * stride_a, lda, b + item * stride_b, ldb,
                    c + item * stride_c, ldc);
}
