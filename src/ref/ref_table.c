/* The reference backend's kernel table. */
#include "pool.h"
#include "ref_kernels.h"

static size_t pool_workspace(const nw_pool_args *args, size_t threads) {
    (void)threads;
    return nw_pool_unfused_workspace(&nw_reference_kernels, args);
}

static void pool(const nw_pool_args *args, void *scratch, nw_workers *workers) {
    (void)workers;
    nw_pool_unfused(&nw_reference_kernels, args, scratch);
}

const nw_kernels nw_reference_kernels = {
    .name = "reference",
    .scores_workspace = nw_ref_scores_workspace,
    .scores = nw_ref_scores,
    .softmax = nw_ref_softmax,
    .gemm = nw_ref_gemm,
    .bmm_workspace = nw_ref_bmm_workspace,
    .bmm = nw_ref_bmm,
    .linear = nw_ref_linear,
    .pool_workspace = pool_workspace,
    .pool = pool,
    .partial_workspace = nw_ref_partial_workspace,
    .partial = nw_ref_partial,
};
