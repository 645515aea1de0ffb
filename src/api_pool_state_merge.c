/* nwattn_pool_state_merge: the associative merge of two partial states, in double. */
#include <math.h>

#include "checks.h"

static const char *const into_names[4] = {"into.acc", "into.max", "into.sum", "into"};
static const char *const from_names[4] = {"from.acc", "from.max", "from.sum", "from"};

/* Row i of item b: into = into merged with from. */
static void merge_row(const nwattn_pool_state *into, const nwattn_pool_state *from, size_t b,
                      size_t i, size_t dv) {
    const size_t at = b * into->stride_stats + i, from_at = b * from->stride_stats + i;
    float *acc = into->acc + b * into->stride_acc + i * into->ld_acc;
    const float *from_acc = from->acc + b * from->stride_acc + i * from->ld_acc;
    const double sum2 = (double)from->sum[from_at];
    if (sum2 == 0.0) /* from is empty */
        return;
    const double sum1 = (double)into->sum[at];
    const double m1 = (double)into->max[at], m2 = (double)from->max[from_at];
    if (sum1 == 0.0) { /* into is empty: take from */
        into->max[at] = (float)m2;
        into->sum[at] = (float)sum2;
        for (size_t c = 0; c < dv; c++)
            acc[c] = from_acc[c];
        return;
    }
    const double m = m1 > m2 ? m1 : m2;
    const double a1 = m1 == m ? 1.0 : exp(m1 - m), a2 = m2 == m ? 1.0 : exp(m2 - m);
    into->max[at] = (float)m;
    into->sum[at] = (float)(a1 * sum1 + a2 * sum2);
    for (size_t c = 0; c < dv; c++)
        acc[c] = (float)(a1 * (double)acc[c] + a2 * (double)from_acc[c]);
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
