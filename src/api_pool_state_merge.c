/* nwattn_pool_state_merge: the associative merge of two partial states, in double. */
#include "checks.h"
#include "core/row_state.h"

static const char *const into_names[4] = {"into.acc", "into.max", "into.sum", "into"};
static const char *const from_names[4] = {"from.acc", "from.max", "from.sum", "from"};

/* Row i of item b: into = into merged with from (core/row_state.h). */
static void merge_row(const nwattn_pool_state *into, const nwattn_pool_state *from, size_t b,
                      size_t i, size_t dv) {
    const size_t at = b * into->stride_stats + i, from_at = b * from->stride_stats + i;
    float *acc = into->acc + b * into->stride_acc + i * into->ld_acc;
    const float *from_acc = from->acc + b * from->stride_acc + i * from->ld_acc;
    nw_row row = nw_row_load(into->max[at], into->sum[at]);
    const nw_row other = nw_row_load(from->max[from_at], from->sum[from_at]);
    double a_into, a_from;
    nw_row_merge(&row, &other, &a_into, &a_from);
    if (a_from == 0.0) /* from is empty, or weighs nothing beside into's limit */
        return;
    into->max[at] = (float)row.max;
    into->sum[at] = (float)row.sum;
    for (size_t c = 0; c < dv; c++) /* an empty into contributes nothing */
        acc[c] = (float)((a_into == 0.0 ? 0.0 : a_into * (double)acc[c]) +
                         a_from * (double)from_acc[c]);
}

nwattn_status nwattn_pool_state_merge(nwattn_context *ctx, size_t batch, size_t m, size_t dv,
                                      const nwattn_pool_state *into,
                                      const nwattn_pool_state *from) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, batch);
    NW_TRY(nw_check_state(&call, from_names, from, m, dv, 0));
    NW_TRY(nw_check_state(&call, into_names, into, m, dv, 1));
    NW_TRY(nw_check_disjoint(&call));
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < m; i++)
            merge_row(into, from, b, i, dv);
    return NWATTN_OK;
}
