/* Exact leave-one-out cross-validation in one pass: each row's sums leave out its own point
 * (j == i), which is yhat_-i = (S_i - K(0) y_i) / (D_i - K(0)) without the cancellation. */
#include <math.h>
#include <string.h>

#include "nw.h"

/* Doubles of per-plan scratch after the training copy and the fast buffers. */
static size_t scratch_doubles(const nw_model *model) {
    const size_t d = model->d, dv = model->dv;
    /* sums, finish work, yhat (dv), dyhat (d·dv), inv_h, inv_h as float, q as float, grad */
    return nw_sums_doubles(model, 1) + nw_finish_work_doubles(model) + dv + d * dv + 4 * d;
}

size_t nw_plan_bytes(const nw_model *model, int fast, size_t n) {
    size_t total, part;
    if (!nw_mul(scratch_doubles(model), sizeof(double), &total))
        return SIZE_MAX;
    if (!fast)
        return total;
    part = nw_train_bytes(n, model->d, model->dv);
    if (part == SIZE_MAX || !nw_add(total, part, &total))
        return SIZE_MAX;
    part = nw_fast_buffer_floats(model, n);
    if (part == SIZE_MAX || !nw_mul(part, sizeof(float), &part) || !nw_add(total, part, &total) ||
        !nw_add(total, sizeof(double), &total)) /* alignment slack after the float buffers */
        return SIZE_MAX;
    return total;
}

void nw_plan_init(nw_plan *plan, const nw_model *model, int fast, size_t n, const float *x,
                  size_t ldx, const float *y, size_t ldy, void *mem) {
    memset(plan, 0, sizeof *plan);
    plan->model = *model;
    plan->fast = fast;
    plan->n = n;
    plan->x = x;
    plan->y = y;
    plan->ldx = ldx;
    plan->ldy = ldy;
    char *p = mem;
    if (fast) {
        nw_train_fill(&plan->train, p, n, model->d, model->dv, x, ldx, y, ldy);
        p += nw_train_bytes(n, model->d, model->dv);
        float *buf = (float *)(void *)p;
        size_t floats = nw_fast_buffer_floats(model, n);
        p += (floats * sizeof(float) + sizeof(double) - 1) / sizeof(double) * sizeof(double);
        nw_fast_init(&plan->engine, &plan->model, &plan->train, buf);
    }
    plan->sums_mem = (double *)(void *)p;
    plan->work = plan->sums_mem + nw_sums_doubles(model, 1);
    plan->yhat = plan->work + nw_finish_work_doubles(model);
    plan->dyhat = plan->yhat + model->dv;
}

/* The per-evaluation arrays after dyhat: inv_h (d doubles), then d floats of inverse bandwidths
 * and d floats of query (in d doubles each), then the gradient accumulator (d). */
typedef struct eval_arrays {
    double *inv_h;
    float *inv_hf, *q;
    double *grad;
} eval_arrays;

static eval_arrays arrays(const nw_plan *plan) {
    const size_t d = plan->model.d;
    eval_arrays e;
    e.inv_h = plan->dyhat + d * plan->model.dv;
    e.inv_hf = (float *)(void *)(e.inv_h + d);
    e.q = (float *)(void *)(e.inv_h + 2 * d);
    e.grad = e.inv_h + 3 * d;
    return e;
}

size_t nw_cv_evaluate(nw_plan *plan, const double *h, double *cv, double *grad) {
    const nw_model *model = &plan->model;
    const size_t n = plan->n, d = model->d, dv = model->dv;
    const int want_grad = grad != NULL && model->kernel != NWATTN_KERNEL_UNIFORM;
    eval_arrays e = arrays(plan);
    for (size_t k = 0; k < d; k++) {
        e.inv_h[k] = 1.0 / h[k];
        e.inv_hf[k] = (float)e.inv_h[k];
        e.grad[k] = 0.0;
    }
    double total = 0.0;
    size_t flagged = 0, empty = 0;
    for (size_t i = 0; i < n; i++) {
        nw_sums s;
        nw_sums_init(&s, plan->sums_mem, model, want_grad);
        const float *target;
        size_t target_stride;
        if (plan->fast) {
            for (size_t k = 0; k < d; k++)
                e.q[k] = plan->train.x[k * n + i];
            nw_fast_row(&plan->engine, e.q, e.inv_hf, i, &s);
            target = plan->train.y + i;
            target_stride = n;
        } else {
            nw_ref_row(model, n, plan->x, plan->ldx, plan->y, plan->ldy, plan->x + i * plan->ldx,
                       e.inv_h, i, &s);
            target = plan->y + i * plan->ldy;
            target_stride = 1;
        }
        unsigned flags = nw_finish_row(model, &s, plan->fast, plan->work, plan->yhat,
                                       want_grad ? plan->dyhat : NULL, NULL);
        if (flags != 0)
            flagged++;
        if (flags & NWATTN_ROW_EMPTY) {
            empty++;
            continue;
        }
        for (size_t c = 0; c < dv; c++) {
            const double r = plan->yhat[c] - (double)target[c * target_stride];
            total += r * r;
            if (want_grad)
                for (size_t k = 0; k < d; k++)
                    e.grad[k] += 2.0 * r * plan->dyhat[k * dv + c];
        }
    }
    *cv = empty > 0 ? INFINITY : total / (double)n;
    if (grad != NULL)
        for (size_t k = 0; k < d; k++) /* d/dlog h_k -> d/dh_k */
            grad[k] = empty > 0 || !want_grad ? 0.0 : e.grad[k] / (double)n / h[k];
    return flagged;
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
    for (size_t i = 0; i < n; i++) {
        double best = INFINITY;
        for (size_t j = 0; j < n; j++) {
            if (j == i)
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

double nw_cv_admissible_scale(const nw_plan *plan, const double *h) {
    if (!nw_kernel_compact(plan->model.kernel))
        return 0.0;
    /* t scales as 1/s^2; the margin keeps t strictly inside the support after float rounding */
    return sqrt(largest_nearest_t(plan, h)) * (1.0 + 1e-5);
}
