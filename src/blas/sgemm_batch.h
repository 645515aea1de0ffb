/* Which grouped batch GEMM the batched product calls: the BLAS's cblas_sgemm_batch, or (build
 * option NWATTN_SGEMM_BATCH=SHIM, for testing on a BLAS without it) an emulation with the same
 * signature, so that the batch-API code path is built and tested everywhere. */
#ifndef NWATTN_SGEMM_BATCH_H
#define NWATTN_SGEMM_BATCH_H

#include <cblas.h>

#if NWATTN_SGEMM_BATCH_SHIM
void nw_shim_sgemm_batch(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE *trans_a,
                         const enum CBLAS_TRANSPOSE *trans_b, const blasint *m,
                         const blasint *n, const blasint *k, const float *alpha,
                         const float **a, const blasint *lda, const float **b,
                         const blasint *ldb, const float *beta, float **c, const blasint *ldc,
                         const blasint group_count, const blasint *group_size);
#define NW_SGEMM_BATCH nw_shim_sgemm_batch
#else
#define NW_SGEMM_BATCH cblas_sgemm_batch
#endif

#endif /* NWATTN_SGEMM_BATCH_H */
