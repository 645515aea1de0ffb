/* The BLAS backend's kernel table. Poolings run the unfused driver on these kernels; partial
 * states, which only exist tile by tile, come from the fused driver (also BLAS products). */
#include "blas_kernels.h"
#include "fused/fused_kernels.h"

static size_t pool_workspace(const nw_pool_args *args, size_t threads) {
    (void)threads;
    return nw_pool_unfused_workspace(&nw_blas_kernels, args);
}

static void pool(const nw_pool_args *args, void *scratch, nw_workers *workers) {
    (void)workers;
    nw_pool_unfused(&nw_blas_kernels, args, scratch);
}

const nw_kernels nw_blas_kernels = {
    .name = "blas",
    .scores_workspace = nw_blas_scores_workspace,
    .scores = nw_blas_scores,
    .softmax = nw_blas_softmax,
    .gemm = nw_blas_gemm,
    .bmm_workspace = nw_blas_bmm_workspace,
    .bmm = nw_blas_bmm,
    .linear = nw_blas_linear,
    .pool_workspace = pool_workspace,
    .pool = pool,
    .partial_workspace = nw_fused_partial_workspace,
    .partial = nw_fused_partial,
};
