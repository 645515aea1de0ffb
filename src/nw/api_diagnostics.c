/* nwattn_weights_diagnostics: row entropy and effective number of neighbours. */
#include <math.h>

#include "nw.h"

nwattn_status nwattn_weights_diagnostics(nwattn_context *ctx, size_t m, size_t n,
                                         const float *weights, size_t ldw, float *entropy,
                                         float *n_eff) {
    NW_TRY(nw_begin(ctx));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "weights", weights, m, n, ldw, 0));
    if (entropy != NULL)
        NW_TRY(nw_output(&call, "entropy", entropy, 1, m, m > 0 ? m : 1, 0));
    if (n_eff != NULL)
        NW_TRY(nw_output(&call, "n_eff", n_eff, 1, m, m > 0 ? m : 1, 0));
    NW_TRY(nw_check_disjoint(&call));
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            float w = weights[i * ldw + j];
            if (!(isfinite(w) && w >= 0.0f))
                return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                               "weights[%zu][%zu] = %g is negative or not finite", i, j, (double)w);
        }
    for (size_t i = 0; i < m; i++) {
        const float *row = weights + i * ldw;
        double sum = 0.0, sum_sq = 0.0, plogp = 0.0;
        for (size_t j = 0; j < n; j++) {
            sum += (double)row[j];
            sum_sq += (double)row[j] * (double)row[j];
        }
        if (sum > 0.0)
            for (size_t j = 0; j < n; j++)
                if (row[j] > 0.0f) {
                    double p = (double)row[j] / sum;
                    plogp += p * log(p);
                }
        if (entropy != NULL)
            entropy[i] = sum > 0.0 ? (float)fmax(-plogp, 0.0) : 0.0f;
        if (n_eff != NULL)
            n_eff[i] = sum > 0.0 ? (float)(sum * sum / sum_sq) : 0.0f;
    }
    return NWATTN_OK;
}
