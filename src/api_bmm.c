/* nwattn_bmm: checks, then the backend's batched product. */
#include "checks.h"

nwattn_status nwattn_bmm(nwattn_context *ctx, size_t batch, size_t m, size_t n, size_t k,
                         const float *a, size_t lda, size_t stride_a, const float *b,
                         size_t ldb, size_t stride_b, float *c, size_t ldc, size_t stride_c) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_input(&call, "a", a, m, k, lda, stride_a));
    NW_TRY(nw_input(&call, "b", b, k, n, ldb, stride_b));
    NW_TRY(nw_output(&call, "c", c, m, n, ldc, stride_c));
    NW_TRY(nw_check_disjoint(&call));
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, nw_call_blas_ok(&call), &kernels));
    if (batch == 0 || m == 0 || n == 0)
        return NWATTN_OK;
    void *scratch;
    NW_TRY(nw_workspace(ctx, kernels->bmm_workspace(batch), &scratch));
    const nw_exec exec = {ctx->simd, &ctx->workers};
    kernels->bmm(&exec, batch, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, scratch);
    return NWATTN_OK;
}
