/* nwattn_scores: checks, then the backend's score kernel per batch item. */
#include "checks.h"

/* The kernels hand back scores as row_scale · t (see nw_kernels); the caller gets their float
 * rounding, which is ±inf for scores beyond the float range. */
static void apply_row_scale(size_t m, size_t n, const double *row_scale, float *s, size_t lds) {
    for (size_t i = 0; i < m; i++)
        if (row_scale[i] != 1.0)
            for (size_t j = 0; j < n; j++)
                s[i * lds + j] = (float)(row_scale[i] * (double)s[i * lds + j]);
}

nwattn_status nwattn_scores(nwattn_context *ctx, const nwattn_score *score, size_t batch,
                            size_t m, size_t n, size_t d, const float *q, size_t ldq,
                            size_t stride_q, const float *k, size_t ldk, size_t stride_k,
                            float *s, size_t lds, size_t stride_s) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_input(&call, "q", q, m, d, ldq, stride_q));
    NW_TRY(nw_input(&call, "k", k, n, d, ldk, stride_k));
    nw_score sc;
    NW_TRY(nw_check_score(&call, score, d, &sc));
    NW_TRY(nw_output(&call, "s", s, m, n, lds, stride_s));
    NW_TRY(nw_check_disjoint(&call));
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, nw_call_blas_ok(&call), &kernels));
    if (batch == 0 || m == 0 || n == 0)
        return NWATTN_OK;
    /* Workspace: m row scales, then the kernel's scratch. */
    const size_t scratch_bytes = kernels->scores_workspace(&sc, m, n, d);
    size_t scale_bytes = 0, total;
    if (scratch_bytes == SIZE_MAX || !nw_mul(m, sizeof(double), &scale_bytes) ||
        !nw_add(scale_bytes, scratch_bytes, &total))
        total = SIZE_MAX;
    void *ws;
    NW_TRY(nw_workspace(ctx, total, &ws));
    double *row_scale = ws;
    void *scratch = (char *)ws + scale_bytes;
    for (size_t b = 0; b < batch; b++) {
        float *sb = s + b * stride_s;
        kernels->scores(ctx->simd, &sc, m, n, d, q + b * stride_q, ldq, k + b * stride_k, ldk, sb,
                        lds, row_scale, scratch);
        apply_row_scale(m, n, row_scale, sb, lds);
    }
    return NWATTN_OK;
}
