/* The reference backend's kernel table. */
#include "pool.h"
#include "ref_kernels.h"

const nw_kernels nw_reference_kernels = {
    .name = "reference",
    .scores_workspace = nw_ref_scores_workspace,
    .scores = nw_ref_scores,
    .softmax = nw_ref_softmax,
    .gemm = nw_ref_gemm,
    .bmm_workspace = nw_ref_bmm_workspace,
    .bmm = nw_ref_bmm,
    .linear = nw_ref_linear,
    .pool_workspace = nw_ref_pool_workspace,
    .pool = nw_ref_pool,
    .partial_workspace = nw_ref_pool_workspace,
    .partial = nw_ref_pool,
};
