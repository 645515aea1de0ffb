/* nwattn_bandwidth_rule_of_thumb. */
#include <float.h>

#include "nw.h"

nwattn_status nwattn_bandwidth_rule_of_thumb(nwattn_context *ctx, nwattn_bandwidth_rule rule,
                                             size_t n, size_t d, const float *x, size_t ldx,
                                             float *bandwidths) {
    NW_TRY(nw_begin(ctx));
    if (rule != NWATTN_RULE_SILVERMAN && rule != NWATTN_RULE_SCOTT &&
        rule != NWATTN_RULE_NORMAL_REFERENCE)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown bandwidth rule %d", (int)rule);
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: no coordinates to measure");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "x", x, n, d, ldx, 0));
    NW_TRY(nw_output(&call, "bandwidths", bandwidths, 1, d, d, 0));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_finite(ctx, "x", x, n, d, ldx));
    NW_TRY(nw_check_spread(ctx, n, d, x, ldx, 2));
    size_t floats, bytes;
    if (!nw_mul(n, 2, &floats) || !nw_mul(floats, sizeof(float), &bytes) ||
        !nw_add(bytes, d * sizeof(double), &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    double *h = mem;
    nw_rule_of_thumb(rule, n, d, x, ldx, h, (float *)(void *)(h + d));
    for (size_t k = 0; k < d; k++) /* > 0: the spread was checked; tiny spreads stay > 0 */
        if (!(h[k] >= (double)FLT_MIN && h[k] <= (double)FLT_MAX))
            return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA,
                           "the spread of x[.][%zu] gives bandwidth %g, outside float's range", k,
                           h[k]);
    for (size_t k = 0; k < d; k++)
        bandwidths[k] = (float)h[k];
    return NWATTN_OK;
}
