/* nwattn_nw_predict: local constant Gaussian and Laplace fits through the pooling driver (their
 * weights are a softmax) unless the fast sums are chosen; other fits through the row engines
 * (reference, direct or fast sums: nw_select_path). */
#include <math.h>
#include <string.h>

#include "fastsum.h"
#include "nw.h"
#include "score/score.h"
#include "pool.h"
#include "threads.h"

static nwattn_status predict_pooled(nwattn_context *ctx, const nw_call *call, const nw_model *mod,
                                    const float *bandwidths, size_t m, size_t n, const float *xq,
                                    size_t ldq, const float *x, size_t ldx, const float *y,
                                    size_t ldy, float *yq, size_t ldyq, float *weights,
                                    size_t ldw) {
    nw_pool_args args;
    memset(&args, 0, sizeof args);
    args.simd = ctx->simd;
    args.score.kind =
        mod->kernel == NWATTN_KERNEL_GAUSSIAN ? NWATTN_SCORE_GAUSSIAN : NWATTN_SCORE_LAPLACE;
    args.score.desc = nw_score_desc_of(args.score.kind);
    args.score.bandwidth = bandwidths[0];
    args.score.bandwidths = bandwidths;
    args.mask.m = m;
    args.batch = 1;
    args.heads = 1;
    args.m = m;
    args.n = n;
    args.d = mod->d;
    args.dv = mod->dv;
    args.q = xq, args.ldq = ldq;
    args.k = x, args.ldk = ldx;
    args.v = y, args.ldv = ldy;
    args.o = yq, args.ldo = ldyq;
    args.w = weights, args.ldw = ldw;
    nw_pooling pooling;
    NW_TRY(
        nw_select_pooling(ctx, nw_call_blas_ok(call), n <= NW_BLAS_INT_MAX, &args, &pooling));
    return nw_pool_run(ctx, &pooling, &args);
}

/* The row engines, a unit of query rows at a time; partial[u · (3 + d)] counts the flagged
 * rows of unit u. */
typedef struct predict_job {
    nw_plan *plan;
    size_t m;
    const float *xq;
    size_t ldq;
    float *yq;
    size_t ldyq;
    float *weights;
    size_t ldw;
    unsigned char *row_flags;
} predict_job;

static void predict_unit(void *arg, size_t unit, size_t worker) {
    const predict_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *mod = &plan->model;
    nw_worker *wk = &plan->workers[worker];
    const size_t n = plan->n, d = mod->d, dv = mod->dv;
    size_t flagged = 0;
    const size_t end = (unit + 1) * NW_UNIT_ROWS < job->m ? (unit + 1) * NW_UNIT_ROWS : job->m;
    for (size_t i = unit * NW_UNIT_ROWS; i < end; i++) {
        const float *q = job->xq + i * job->ldq;
        float *wrow = job->weights != NULL ? job->weights + i * job->ldw : NULL;
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, mod, 0);
        if (plan->fast)
            nw_fast_row(&wk->engine, q, plan->inv_hf, SIZE_MAX, &s);
        else
            nw_ref_row(mod, n, plan->x, plan->ldx, plan->y, plan->ldy, q, plan->inv_h, SIZE_MAX,
                       &s);
        unsigned flags = nw_finish_row(mod, &s, plan->fast, wk->work, wk->yhat, NULL,
                                       wrow != NULL ? wk->coef : NULL);
        if (flags & NWATTN_ROW_EMPTY) {
            if (mod->empty == NWATTN_EMPTY_NEAREST) {
                nw_nearest(n, d, dv, plan->x, plan->ldx, plan->y, plan->ldy, q, plan->inv_h,
                           SIZE_MAX, wk->yhat, wrow);
            } else {
                for (size_t c = 0; c < dv; c++)
                    wk->yhat[c] = mod->empty == NWATTN_EMPTY_NAN ? (double)NAN : 0.0;
                for (size_t j = 0; wrow != NULL && j < n; j++)
                    wrow[j] = 0.0f;
            }
        } else if (wrow != NULL) {
            if (plan->fast)
                nw_fast_row_weights(&wk->engine, q, plan->inv_hf, SIZE_MAX, wk->coef, wrow);
            else
                nw_ref_row_weights(mod, n, plan->x, plan->ldx, q, plan->inv_h, SIZE_MAX, wk->coef,
                                   wrow);
        }
        for (size_t c = 0; c < dv; c++)
            job->yq[i * job->ldyq + c] = (float)wk->yhat[c];
        if (job->row_flags != NULL)
            job->row_flags[i] = (unsigned char)flags;
        flagged += flags != 0;
    }
    plan->partial[unit * (3 + d)] = (double)flagged;
}

nwattn_status nw_query_plan(nwattn_context *ctx, const nw_model *mod, size_t m, size_t n,
                            const float *x, size_t ldx, const float *y, size_t ldy,
                            const float *bandwidths, nw_plan *plan) {
    int fast;
    NW_TRY(nw_select_fast(ctx, &fast));
    const size_t threads = fast ? ctx->workers.threads : 1, units = nw_units(m);
    size_t bytes = nw_plan_bytes(mod, fast, n, threads, units);
    if (bytes == SIZE_MAX)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_plan_init(plan, mod, fast, n, x, ldx, y, ldy, threads, units, mem);
    plan->team = &ctx->workers;
    for (size_t k = 0; k < mod->d; k++) {
        plan->inv_h[k] = 1.0 / (double)bandwidths[k];
        plan->inv_hf[k] = (float)plan->inv_h[k];
    }
    return NWATTN_OK;
}

/* nw_query_plan for the fast sums: the plan with its fast-sum part, then the queries' order
 * and blocks (nw_fs_predict_scratch) in *scratch. */
static nwattn_status fastsum_plan(nwattn_context *ctx, const nw_model *mod, size_t m, size_t n,
                                  const float *x, size_t ldx, const float *y, size_t ldy,
                                  const float *bandwidths, nw_plan *plan, size_t **scratch) {
    const size_t threads = ctx->workers.threads, units = nw_units(m);
    size_t bytes = nw_plan_bytes(mod, NW_PATH_FASTSUM, n, threads, units), order = 0;
    if (bytes == SIZE_MAX || !nw_add(bytes, sizeof(size_t) - 1, &bytes) ||
        !nw_fs_predict_scratch(n, m, &order) || !nw_mul(order, sizeof(size_t), &order) ||
        !nw_add(bytes / sizeof(size_t) * sizeof(size_t), order, &bytes))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "working memory for n = %zu overflows", n);
    void *mem;
    NW_TRY(nw_workspace(ctx, bytes, &mem));
    nw_plan_init(plan, mod, NW_PATH_FASTSUM, n, x, ldx, y, ldy, threads, units, mem);
    plan->team = &ctx->workers;
    for (size_t k = 0; k < mod->d; k++) {
        plan->inv_h[k] = 1.0 / (double)bandwidths[k];
        plan->inv_hf[k] = (float)plan->inv_h[k];
    }
    *scratch = (size_t *)(void *)((char *)mem + (bytes - order));
    return NWATTN_OK;
}

nwattn_status nwattn_nw_predict(nwattn_context *ctx, const nwattn_regression *model,
                                const float *bandwidths, size_t m, size_t n, size_t d, size_t dv,
                                const float *xq, size_t ldq, const float *x, size_t ldx,
                                const float *y, size_t ldy, float *yq, size_t ldyq, float *weights,
                                size_t ldw, unsigned char *row_flags, size_t *n_flagged) {
    NW_TRY(nw_begin(ctx));
    nw_model mod;
    NW_TRY(nw_check_model(ctx, model, d, dv, &mod));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_check_training(&call, n, d, dv, x, ldx, y, ldy));
    NW_TRY(nw_input(&call, "xq", xq, m, d, ldq, 0));
    NW_TRY(nw_input_array(&call, "bandwidths", bandwidths, sizeof(float), d));
    NW_TRY(nw_output(&call, "yq", yq, m, dv, ldyq, 0));
    if (weights != NULL)
        NW_TRY(nw_output(&call, "weights", weights, m, n, ldw, 0));
    if (row_flags != NULL)
        NW_TRY(nw_output_elems(&call, "row_flags", row_flags, 1, 1, m, m > 0 ? m : 1));
    if (n_flagged != NULL)
        NW_TRY(nw_output_elems(&call, "n_flagged", n_flagged, sizeof(size_t), 1, 1, 1));
    NW_TRY(nw_check_disjoint(&call));
    /* Read the bandwidths only now that their d entries are known to be addressable. */
    NW_TRY(nw_check_bandwidths(ctx, "bandwidths", bandwidths, d));
    NW_TRY(nw_check_finite(ctx, "xq", xq, m, d, ldq));
    if (n == 0)
        return nw_fail(ctx, NWATTN_ERR_DEGENERATE_DATA, "n is 0: no training points");
    if (m == 0 || (dv == 0 && weights == NULL)) {
        if (n_flagged != NULL)
            *n_flagged = 0;
        for (size_t i = 0; row_flags != NULL && i < m; i++)
            row_flags[i] = 0;
        return NWATTN_OK;
    }

    int fast;
    const int pooled = mod.degree == NWATTN_LOCAL_CONSTANT &&
                       (mod.kernel == NWATTN_KERNEL_GAUSSIAN || mod.kernel == NWATTN_KERNEL_LAPLACE);
    NW_TRY(nw_select_path(ctx, &mod, n, m, x, ldx, (double)bandwidths[0], weights != NULL, pooled,
                          &fast));
    if (fast != NW_PATH_FASTSUM && pooled) {
        NW_TRY(predict_pooled(ctx, &call, &mod, bandwidths, m, n, xq, ldq, x, ldx, y, ldy, yq, ldyq,
                              weights, ldw));
        if (row_flags != NULL)
            memset(row_flags, 0, m);
        if (n_flagged != NULL)
            *n_flagged = 0;
        return NWATTN_OK;
    }

    nw_plan plan;
    size_t flagged = 0;
    if (fast == NW_PATH_FASTSUM) {
        size_t *scratch = NULL;
        NW_TRY(fastsum_plan(ctx, &mod, m, n, x, ldx, y, ldy, bandwidths, &plan, &scratch));
        flagged = nw_fs_predict(&plan, m, xq, ldq, yq, ldyq, row_flags, scratch);
    } else {
        NW_TRY(nw_query_plan(ctx, &mod, m, n, x, ldx, y, ldy, bandwidths, &plan));
        predict_job job = {&plan, m, xq, ldq, yq, ldyq, weights, ldw, row_flags};
        nw_parallel_for(&ctx->workers, plan.threads, plan.units, predict_unit, &job);
        for (size_t u = 0; u < plan.units; u++)
            flagged += (size_t)plan.partial[u * (3 + d)];
    }
    if (n_flagged != NULL)
        *n_flagged = flagged;
    return NWATTN_OK;
}
