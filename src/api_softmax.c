/* nwattn_softmax: checks, then the backend's masked softmax per batch item. */
#include "checks.h"

nwattn_status nwattn_softmax(nwattn_context *ctx, const nwattn_mask *mask, size_t batch,
                             size_t m, size_t n, const float *s, size_t lds, size_t stride_s,
                             float *w, size_t ldw, size_t stride_w, float *lse,
                             size_t stride_lse) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, batch);
    /* In place only with the very same layout (strides are ignored for batch 1); any other
     * layout that shares an element is refused below. */
    const int in_place = s == w && lds == ldw && (batch <= 1 || stride_s == stride_w);
    if (!in_place)
        NW_TRY(nw_input(&call, "s", s, m, n, lds, stride_s));
    NW_TRY(nw_output(&call, "w", w, m, n, ldw, stride_w));
    if (lse != NULL)
        NW_TRY(nw_output(&call, "lse", lse, 1, m, m > 0 ? m : 1, stride_lse));
    nw_mask mk;
    NW_TRY(nw_check_mask(&call, mask, m, n, &mk));
    NW_TRY(nw_check_disjoint(&call));
    const nw_kernels *kernels;
    NW_TRY(nw_select_kernels(ctx, 1, &kernels)); /* no BLAS call: any layout will do */
    for (size_t b = 0; b < batch; b++)
        kernels->softmax(ctx->simd, &mk, b, 0, m, n, s + b * stride_s, lds, NULL, w + b * stride_w, ldw,
                         lse ? lse + b * stride_lse : NULL);
    return NWATTN_OK;
}
