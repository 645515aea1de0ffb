/* nwattn_nw_predict_backward: dL/dh_k of a prediction from dL/dyq, through the row engines'
 * analytic d yhat / d log h_k (the same sums nwattn_nw_cv's gradient uses), a unit of query
 * rows at a time, reduced in unit order. */
#include <string.h>

#include "nw.h"
#include "threads.h"

typedef struct grad_job {
    nw_plan *plan;
    size_t m;
    const float *xq;
    size_t ldq;
    const float *dyq;
    size_t lddyq;
} grad_job;

static void grad_unit(void *arg, size_t unit, size_t worker) {
    const grad_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *mod = &plan->model;
    nw_worker *wk = &plan->workers[worker];
    const size_t d = mod->d, dv = mod->dv;
    double *out = plan->partial + unit * (3 + d);
    memset(out, 0, (3 + d) * sizeof(double));
    const size_t end = (unit + 1) * NW_UNIT_ROWS < job->m ? (unit + 1) * NW_UNIT_ROWS : job->m;
    for (size_t i = unit * NW_UNIT_ROWS; i < end; i++) {
        const float *q = job->xq + i * job->ldq;
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, mod, 1);
        if (plan->fast)
            nw_fast_row(&wk->engine, q, plan->inv_hf, SIZE_MAX, &s);
        else
            nw_ref_row(mod, plan->n, plan->x, plan->ldx, plan->y, plan->ldy, q, plan->inv_h,
                       SIZE_MAX, &s);
        /* An empty row's estimate (the policy's) does not move with h: no contribution. */
        if (nw_finish_row(mod, &s, plan->fast, wk->work, wk->yhat, wk->dyhat, NULL) &
            NWATTN_ROW_EMPTY)
            continue;
        for (size_t c = 0; c < dv; c++)
            for (size_t k = 0; k < d; k++)
                out[3 + k] += (double)job->dyq[i * job->lddyq + c] * wk->dyhat[k * dv + c];
    }
}

nwattn_status nwattn_nw_predict_backward(nwattn_context *ctx, const nwattn_regression *model,
                                         const float *bandwidths, size_t m, size_t n, size_t d,
                                         size_t dv, const float *xq, size_t ldq, const float *x,
                                         size_t ldx, const float *y, size_t ldy,
                                         const float *dyq, size_t lddyq, float *d_bandwidths) {
    NW_TRY(nw_begin(ctx));
    nw_model mod;
    NW_TRY(nw_check_model(ctx, model, d, dv, &mod));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_check_training(&call, n, d, dv, x, ldx, y, ldy));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    NW_TRY(nw_input(&call, "dyq", dyq, m, dv, lddyq, 0));
    NW_TRY(nw_output_elems(&call, "d_bandwidths", d_bandwidths, sizeof(float), 1, d, d));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths, d));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    NW_TRY(nw_check_finite(ctx, "dyq", dyq, m, dv, lddyq));
    if (n == 0)
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA, "n is 0: no training points");
    if (m == 0 || dv == 0 || mod.kernel == NWATTN_KERNEL_UNIFORM) {
        /* nothing depends on h (the boxcar's estimate is piecewise constant in it) */
        memset(d_bandwidths, 0, d * sizeof(float));
        return NWATTN_OK;
    }
    nw_plan plan;
    NW_TRY(nw_query_plan(ctx, &mod, m, n, x, ldx, y, ldy, bandwidths, &plan));
    const size_t threads = plan.threads, units = plan.units;
    grad_job job = {&plan, m, xq, ldq, dyq, lddyq};
    nw_parallel_for(&ctx->workers, threads, units, grad_unit, &job);
    for (size_t k = 0; k < d; k++) {
        double sum = 0.0;
        for (size_t u = 0; u < units; u++)
            sum += plan.partial[u * (3 + d) + 3 + k];
        d_bandwidths[k] = (float)(sum * plan.inv_h[k]); /* d/dh = (d/d log h) / h */
    }
    return NWATTN_OK;
}
