/* Exact leave-one-out cross-validation in one pass: each row's sums leave out its own point
 * (j == i), which is yhat_-i = (S_i - K(0) y_i) / (D_i - K(0)) without the cancellation. */
#include <math.h>
#include <string.h>

#include "fastsum.h"
#include "nw.h"
#include "threads.h"

/* Memory layout (each part a multiple of 8 bytes): the training copy (fast path), the
 * workers (structs), the per-worker doubles and floats, the shared bandwidth arrays and the
 * per-unit results. */
static size_t align8(size_t bytes) { return (bytes + 7) / 8 * 8; }

/* Doubles of one worker's scratch: sums, finish work, yhat (dv), dyhat (d·dv), coef (p),
 * q (d floats, given d doubles). */
static size_t worker_doubles(const nw_model *model) {
    return nw_sums_doubles(model, 1) + nw_finish_work_doubles(model) + model->dv +
           model->d * model->dv + model->p + model->d;
}

size_t nw_plan_bytes(const nw_model *model, int fast, size_t n, size_t threads, size_t units) {
    size_t per_worker, total = 0, part;
    if (!nw_mul(worker_doubles(model), sizeof(double), &per_worker) ||
        !nw_add(per_worker, align8(sizeof(nw_worker)), &per_worker))
        return SIZE_MAX;
    if (fast) {
        size_t floats = nw_fast_buffer_floats(model, n);
        if (floats == SIZE_MAX || !nw_mul(floats, sizeof(float), &part) ||
            !nw_add(per_worker, align8(part), &per_worker))
            return SIZE_MAX;
        total = nw_train_bytes(n, model->d, model->dv);
        if (total == SIZE_MAX)
            return SIZE_MAX;
    }
    if (fast == NW_PATH_FASTSUM &&
        ((part = nw_fs_plan_bytes(model, n, threads)) == SIZE_MAX || !nw_add(total, part, &total)))
        return SIZE_MAX;
    if (!nw_mul(per_worker, threads, &part) || !nw_add(total, part, &total) ||
        !nw_add(total, 2 * model->d * sizeof(double), &total) ||
        !nw_mul(units, (3 + model->d) * sizeof(double), &part) || !nw_add(total, part, &total))
        return SIZE_MAX;
    return total;
}

void nw_plan_init(nw_plan *plan, const nw_model *model, int fast, size_t n, const float *x,
                  size_t ldx, const float *y, size_t ldy, size_t threads, size_t units, void *mem) {
    const size_t d = model->d, dv = model->dv;
    memset(plan, 0, sizeof *plan);
    plan->model = *model;
    plan->fast = fast;
    plan->n = n;
    plan->threads = threads;
    plan->units = units;
    plan->x = x;
    plan->y = y;
    plan->ldx = ldx;
    plan->ldy = ldy;
    char *p = mem;
    if (fast) {
        nw_train_fill(&plan->train, p, n, d, dv, x, ldx, y, ldy);
        p += nw_train_bytes(n, d, dv);
    }
    plan->workers = (nw_worker *)(void *)p;
    p += align8(threads * sizeof(nw_worker));
    for (size_t w = 0; w < threads; w++) {
        nw_worker *wk = &plan->workers[w];
        wk->sums_mem = (double *)(void *)p;
        wk->work = wk->sums_mem + nw_sums_doubles(model, 1);
        wk->yhat = wk->work + nw_finish_work_doubles(model);
        wk->dyhat = wk->yhat + dv;
        wk->coef = wk->dyhat + d * dv;
        wk->q = (float *)(void *)(wk->coef + model->p);
        p = (char *)(wk->coef + model->p + d);
        if (fast) {
            float *buf = (float *)(void *)p;
            p += align8(nw_fast_buffer_floats(model, n) * sizeof(float));
            nw_fast_init(&wk->engine, &plan->model, &plan->train, buf);
        }
    }
    plan->inv_h = (double *)(void *)p;
    plan->inv_hf = (float *)(void *)(plan->inv_h + d);
    plan->partial = plan->inv_h + 2 * d;
    if (fast == NW_PATH_FASTSUM)
        nw_fs_plan_init(plan, plan->partial + units * (3 + d), model->tolerance);
}

void nw_plan_obs_weights(nw_plan *plan, const float *obs) {
    plan->obs = obs;
    plan->obs_total = 0.0;
    for (size_t j = 0; j < plan->n; j++)
        plan->obs_total += (double)obs[j];
}

void nw_plan_bandwidths(nw_plan *plan, const double *h) {
    for (size_t k = 0; k < plan->model.d; k++) {
        plan->inv_h[k] = 1.0 / h[k];
        plan->inv_hf[k] = (float)plan->inv_h[k];
    }
}

/* One unit of leave-one-out rows: partial = (sum of squared errors, flagged, empty,
 * gradient sums per log h_k). */
typedef struct cv_job {
    nw_plan *plan;
    int want_grad;
} cv_job;

static void cv_unit(void *arg, size_t unit, size_t worker) {
    const cv_job *job = arg;
    nw_plan *plan = job->plan;
    const nw_model *model = &plan->model;
    nw_worker *wk = &plan->workers[worker];
    const size_t n = plan->n, d = model->d;
    double *out = plan->partial + unit * (3 + d);
    memset(out, 0, (3 + d) * sizeof(double));
    const size_t end = (unit + 1) * NW_UNIT_ROWS < n ? (unit + 1) * NW_UNIT_ROWS : n;
    for (size_t i = unit * NW_UNIT_ROWS; i < end; i++) {
        nw_sums s;
        nw_sums_init(&s, wk->sums_mem, model, job->want_grad);
        const float *target;
        size_t target_stride;
        double w = 1.0;
        if (plan->obs != NULL) { /* weighted (reference path): one unit of point i left out */
            w = (double)plan->obs[i];
            if (!(w > 0.0))
                continue;
            nw_ref_row_obs(model, n, plan->x, plan->ldx, plan->y, plan->ldy,
                           plan->x + i * plan->ldx, plan->inv_h, plan->obs, i, w - fmin(1.0, w),
                           &s);
            target = plan->y + i * plan->ldy;
            target_stride = 1;
        } else if (plan->fast) {
            for (size_t k = 0; k < d; k++)
                wk->q[k] = plan->train.x[k * n + i];
            nw_fast_row(&wk->engine, wk->q, plan->inv_hf, i, &s);
            target = plan->train.y + i;
            target_stride = n;
        } else {
            nw_ref_row(model, n, plan->x, plan->ldx, plan->y, plan->ldy, plan->x + i * plan->ldx,
                       plan->inv_h, i, &s);
            target = plan->y + i * plan->ldy;
            target_stride = 1;
        }
        unsigned flags = nw_finish_row(model, &s, plan->fast, wk->work, wk->yhat,
                                       job->want_grad ? wk->dyhat : NULL, NULL);
        nw_cv_add_row(model, flags, wk->yhat, wk->dyhat, target, target_stride, job->want_grad, w,
                      out);
    }
}

size_t nw_cv_evaluate(nw_plan *plan, const double *h, double *cv, double *grad) {
    const nw_model *model = &plan->model;
    const size_t n = plan->n, d = model->d;
    cv_job job = {plan, grad != NULL && model->kernel != NWATTN_KERNEL_UNIFORM};
    nw_plan_bandwidths(plan, h);
    if (plan->fastsum != NULL)
        nw_fs_cv_units(plan, job.want_grad);
    else
        nw_parallel_for(plan->team, plan->threads, nw_units(n), cv_unit, &job);
    /* the units' results added in unit order (independent of threads) into unit 0's */
    double *total = plan->partial;
    for (size_t u = 1; u < nw_units(n); u++)
        for (size_t e = 0; e < 3 + d; e++)
            total[e] += plan->partial[u * (3 + d) + e];
    nw_cv_result(model, plan->obs != NULL ? plan->obs_total : (double)n, h, total, job.want_grad,
                 cv, grad);
    return (size_t)total[1];
}

/* Largest over points of the smallest t to another point, at bandwidths h. */
static double largest_nearest_t(const nw_plan *plan, const double *h) {
    const size_t n = plan->n, d = plan->model.d;
    double worst = 0.0;
    if (plan->fast && d == 1) { /* sorted: the nearest point is a neighbour */
        const float *x = plan->train.x;
        for (size_t i = 0; i < n; i++) {
            double best = INFINITY;
            if (i > 0)
                best = fmin(best, ((double)x[i] - (double)x[i - 1]) / h[0]);
            if (i + 1 < n)
                best = fmin(best, ((double)x[i + 1] - (double)x[i]) / h[0]);
            worst = fmax(worst, best * best);
        }
        return worst;
    }
    const float *obs = plan->obs; /* weighted: points of weight 0 need no neighbour and are
                                   * none; a point of weight > 1 keeps a unit of itself */
    for (size_t i = 0; i < n; i++) {
        if (obs != NULL && (!(obs[i] > 0.0f) || obs[i] > 1.0f))
            continue;
        double best = INFINITY;
        for (size_t j = 0; j < n; j++) {
            if (j == i || (obs != NULL && !(obs[j] > 0.0f)))
                continue;
            double t = 0.0;
            for (size_t k = 0; k < d; k++) {
                double u =
                    ((double)plan->x[i * plan->ldx + k] - (double)plan->x[j * plan->ldx + k]) /
                    h[k];
                t += u * u;
            }
            best = fmin(best, t);
        }
        worst = fmax(worst, best);
    }
    return worst;
}

double nw_cv_largest_nearest_t(const nw_plan *plan, const double *h) {
    return nw_kernel_compact(plan->model.kernel) ? largest_nearest_t(plan, h) : 0.0;
}
