/* The two kernel providers' tables: the reference (plain loops in double) and BLAS (OpenBLAS
 * products, float softmax, the vector kernels). Which driver a pooling runs on them is
 * dispatch.c's choice. */
#include "blas/blas_kernels.h"
#include "frame/tiled.h"
#include "ref/ref_kernels.h"

const nw_kernels nw_reference_kernels = {
    .name = "reference",
    .scores_workspace = nw_ref_scores_workspace,
    .scores = nw_ref_scores,
    .softmax = nw_ref_softmax,
    .gemm = nw_ref_gemm,
    .bmm_workspace = nw_ref_bmm_workspace,
    .bmm = nw_ref_bmm,
    .linear = nw_ref_linear,
    .tiles = &nw_ref_tiles,
};

const nw_kernels nw_blas_kernels = {
    .name = "blas",
    .scores_workspace = nw_blas_scores_workspace,
    .scores = nw_blas_scores,
    .softmax = nw_blas_softmax,
    .gemm = nw_blas_gemm,
    .bmm_workspace = nw_blas_bmm_workspace,
    .bmm = nw_blas_bmm,
    .linear = nw_blas_linear,
    .tiles = &nw_blas_tiles,
};
