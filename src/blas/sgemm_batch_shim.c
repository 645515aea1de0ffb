/* Test-only emulation of the grouped cblas_sgemm_batch (MKL / OpenBLAS >= 0.3.27 signature):
 * built with NWATTN_SGEMM_BATCH=SHIM so that the batch-API path is exercised on a BLAS that
 * lacks the routine. It checks nothing the real routine would not: callers pass valid groups. */
#include "sgemm_batch.h"

void nw_shim_sgemm_batch(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE *trans_a,
                         const enum CBLAS_TRANSPOSE *trans_b, const blasint *m,
                         const blasint *n, const blasint *k, const float *alpha,
                         const float **a, const blasint *lda, const float **b,
                         const blasint *ldb, const float *beta, float **c, const blasint *ldc,
                         const blasint group_count, const blasint *group_size) {
    size_t item = 0;
    for (blasint g = 0; g < group_count; g++)
        for (blasint t = 0; t < group_size[g]; t++, item++)
            cblas_sgemm(order, trans_a[g], trans_b[g], m[g], n[g], k[g], alpha[g], a[item],
                        lda[g], b[item], ldb[g], beta[g], c[item], ldc[g]);
}
