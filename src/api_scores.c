/* nwattn_scores: checks, then the backend's score kernel per batch item. */
#include "checks.h"

nwattn_status nwattn_scores(nwattn_context *ctx, const nwattn_score *score, size_t batch,
                            size_t m, size_t n, size_t d, const float *q, size_t ldq,
                            size_t stride_q, const float *k, size_t ldk, size_t stride_k,
                            float *s, size_t lds, size_t stride_s) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    nw_score sc;
    NW_TRY(nw_check_score(ctx, score, d, &sc));
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_input(&call, "q", q, m, d, ldq, stride_q));
    NW_TRY(nw_input(&call, "k", k, n, d, ldk, stride_k));
    if (sc.bandwidths != NULL)
        NW_TRY(nw_input_array(&call, "score.bandwidths", sc.bandwidths, sizeof(float), d));
    NW_TRY(nw_output(&call, "s", s, m, n, lds, stride_s));
    NW_TRY(nw_check_disjoint(&call));
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, nw_call_blas_ok(&call), &kernels));
    if (batch == 0 || m == 0 || n == 0)
        return NWATTN_OK;
    void *scratch;
    NW_TRY(nw_workspace(ctx, kernels->scores_workspace(&sc, m, n, d), &scratch));
    for (size_t b = 0; b < batch; b++)
        kernels->scores(&sc, m, n, d, q + b * stride_q, ldq, k + b * stride_k, ldk,
                        s + b * stride_s, lds, scratch);
    return NWATTN_OK;
}
