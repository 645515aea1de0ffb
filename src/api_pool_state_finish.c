/* nwattn_pool_state_finish: O = acc / sum and lse = max + log(sum), row by row. */
#include "checks.h"
#include "core/row_state.h"

nwattn_status nwattn_pool_state_finish(nwattn_context *ctx, size_t batch, size_t m, size_t dv,
                                       const nwattn_pool_state *state, float *o, size_t ldo,
                                       size_t stride_o, float *lse, size_t stride_lse) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, batch);
    if (state == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "state is NULL");
    /* In place only with the very same layout (strides are ignored for batch 1); any other
     * layout that shares an element is refused below. */
    const int in_place = o == state->acc && ldo == state->ld_acc &&
                         (batch <= 1 || stride_o == state->stride_acc);
    if (!in_place)
        NW_TRY(nw_input(&call, "state.acc", state->acc, m, dv, state->ld_acc, state->stride_acc));
    const size_t ld_stats = m > 0 ? m : 1;
    NW_TRY(nw_input(&call, "state.max", state->max, 1, m, ld_stats, state->stride_stats));
    NW_TRY(nw_input(&call, "state.sum", state->sum, 1, m, ld_stats, state->stride_stats));
    NW_TRY(nw_output(&call, "o", o, m, dv, ldo, stride_o));
    if (lse != NULL)
        NW_TRY(nw_output(&call, "lse", lse, 1, m, m > 0 ? m : 1, stride_lse));
    NW_TRY(nw_check_disjoint(&call));
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < m; i++) {
            const size_t at = b * state->stride_stats + i;
            const float *acc = state->acc + b * state->stride_acc + i * state->ld_acc;
            float *out = o + b * stride_o + i * ldo;
            const nw_row row = nw_row_load(state->max[at], state->sum[at]);
            const double inv = nw_row_inverse(&row);
            for (size_t c = 0; c < dv; c++)
                out[c] = row.sum == 0.0 ? 0.0f : (float)((double)acc[c] * inv);
            if (lse != NULL)
                lse[b * stride_lse + i] = (float)nw_row_lse(&row);
        }
    return NWATTN_OK;
}
