/* The BLAS backend's kernel table. */
#include "blas_kernels.h"

const nw_kernels nw_blas_kernels = {
    .name = "blas",
    .scores_workspace = nw_blas_scores_workspace,
    .scores = nw_blas_scores,
    .softmax = nw_blas_softmax,
    .gemm = nw_blas_gemm,
    .bmm_workspace = nw_blas_bmm_workspace,
    .bmm = nw_blas_bmm,
};
