/* The fused backend's kernel table: the BLAS kernels, with the pooling replaced by the fused
 * driver (BLIS-style: the table starts from the BLAS one and overrides what it fuses). */
#include "blas/blas_kernels.h"
#include "fused_kernels.h"

const nw_kernels nw_fused_kernels = {
    .name = "fused",
    .scores_workspace = nw_blas_scores_workspace,
    .scores = nw_blas_scores,
    .softmax = nw_blas_softmax,
    .gemm = nw_blas_gemm,
    .bmm_workspace = nw_blas_bmm_workspace,
    .bmm = nw_blas_bmm,
    .linear = nw_blas_linear,
    .pool_workspace = nw_fused_pool_workspace,
    .pool = nw_fused_pool,
    .partial_workspace = nw_fused_partial_workspace,
    .partial = nw_fused_partial,
};
