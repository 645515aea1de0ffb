/* nwattn_mpi_nw_select_bandwidth: the core's own search (src/nw/cv_search.c, compiled into
 * this library too) on nwattn_mpi_nw_cv as its evaluator. Every value the search decides on
 * (the start, each CV and gradient) is already the same double on every rank, so every rank
 * takes the same steps and returns the same bandwidths, bit for bit. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "cv_search.h"
#include "nw_rows.h"

typedef struct mpi_eval {
    nwattn_context *ctx;
    MPI_Comm comm;
    const nwattn_regression *model;
    size_t n_local, d, dv, ldx, ldy;
    const float *x, *y;
    float *hf;              /* d */
    nw_search *search;
    nwattn_status status;   /* the first failure (agreed on by every rank) */
    nwattn_mpi_error error; /* its report */
} mpi_eval;

/* CV (and dCV/dh) at h through the sharded CV. A failure, the same on every rank, ends the
 * search at its next check. */
static double sharded_cv(void *arg, const double *h, double *grad, size_t *flagged) {
    mpi_eval *e = arg;
    *flagged = 0;
    if (e->status != NWATTN_OK)
        return NAN;
    for (size_t k = 0; k < e->d; k++)
        e->hf[k] = (float)h[k]; /* exact: the search's h are floats */
    double cv = NAN;
    nwattn_status status =
        nwattn_mpi_nw_cv(e->ctx, e->comm, e->model, e->n_local, e->d, e->dv, e->x, e->ldx, e->y,
                         e->ldy, 1, e->hf, e->d, &cv, grad, e->d, flagged, &e->error);
    if (status != NWATTN_OK) {
        e->status = status;
        e->search->max_evals = 0;
        return NAN;
    }
    return cv;
}

/* The normal-reference start 1.06 · s_k · n^(-1/(d+4)) over every rank's points: the
 * per-rank sums (then centred sums of squares) are gathered and added in rank order. */
static nwattn_status normal_reference(nm_call *call, size_t n_local, size_t n, size_t d,
                                      const float *x, size_t ldx, double *parts,
                                      double *start) {
    for (int pass = 0; pass < 2; pass++) {
        double *mine = parts + (size_t)call->rank * d;
        for (size_t k = 0; k < d; k++) {
            double sum = 0.0;
            for (size_t i = 0; i < n_local; i++) {
                const double v = pass ? (double)x[i * ldx + k] - start[k] : x[i * ldx + k];
                sum += pass ? v * v : v;
            }
            mine[k] = sum;
        }
        int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, parts, (int)d, MPI_DOUBLE,
                               call->comm);
        if (rc != MPI_SUCCESS)
            return nm_mpi_failed(call, rc, "gathering the coordinate moments");
        for (size_t k = 0; k < d; k++) {
            double total = 0.0;
            for (int r = 0; r < call->size; r++)
                total += parts[(size_t)r * d + k];
            start[k] = pass ? total : total / (double)n; /* the mean, then the squares */
        }
    }
    const double rate = pow((double)n, -1.0 / (double)(d + 4));
    for (size_t k = 0; k < d; k++)
        start[k] = 1.06 * sqrt(start[k] / (double)(n - 1)) * rate;
    return NWATTN_OK;
}

nwattn_status nwattn_mpi_nw_select_bandwidth(
    nwattn_context *ctx, MPI_Comm comm, const nwattn_regression *model, size_t n_local,
    size_t d, size_t dv, const float *x, size_t ldx, const float *y, size_t ldy,
    const nwattn_cv_options *options, float *bandwidths, nwattn_cv_report *report,
    float *curve_scales, double *curve_cv, nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    nwattn_cv_options opt;
    char message[256];
    nwattn_status status = nw_search_options(options, &opt, message, sizeof message);
    if (status != NWATTN_OK)
        nm_fail(&call, status, "%s", message);
    if (bandwidths == NULL)
        nm_fail(&call, NWATTN_ERR_NULL_POINTER, "bandwidths is NULL");
    if (dv == 0)
        nm_fail(&call, NWATTN_ERR_BAD_DIMENSION, "dv is 0: no targets to cross-validate");
    for (size_t k = 0; opt.start != NULL && call.status == NWATTN_OK && k < d; k++)
        if (!(isfinite(opt.start[k]) && opt.start[k] > 0.0f))
            nm_fail(&call, NWATTN_ERR_BAD_PARAMETER,
                    "options.start[%zu] = %g is not finite and > 0", k, (double)opt.start[k]);
    const size_t grid = opt.grid_points;
    nm_signature(&call, "options.grid_points", grid, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "options.scale_min", nm_float_bits(opt.scale_min),
                 NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "options.scale_max", nm_float_bits(opt.scale_max),
                 NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "options.max_evaluations", opt.max_evaluations,
                 NWATTN_ERR_BAD_PARAMETER);
    uint64_t tolerance_bits;
    memcpy(&tolerance_bits, &opt.tolerance, sizeof tolerance_bits);
    nm_signature(&call, "options.tolerance", tolerance_bits, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "options.start (hash)",
                 opt.start && call.status == NWATTN_OK ? nm_hash(opt.start, d * sizeof(float))
                                                       : 0,
                 NWATTN_ERR_BAD_PARAMETER);
    status = nm_agree(&call);
    if (status != NWATTN_OK)
        return nm_end(&call, status);

    /* The model, the data and the global n >= 3, checked (collectively) by the CV itself. */
    double unused;
    status = nwattn_mpi_nw_cv(ctx, call.comm, model, n_local, d, dv, x, ldx, y, ldy, 0, NULL,
                              d, &unused, NULL, d, NULL, error);
    if (status != NWATTN_OK) {
        call.error = NULL; /* keep the CV's report */
        return nm_end(&call, status);
    }
    size_t n = 0;
    uint64_t *counts = nm_alloc(&call, (size_t)call.size, sizeof *counts, "shard sizes");
    /* doubles: 3 grid arrays, start, h, grad, best_h, 11 search vectors of d, d × d, and the
     * gathered moments (size × d); floats: d */
    size_t doubles = 0;
    const size_t ranks = (size_t)call.size;
    const size_t limit = SIZE_MAX / sizeof(double) / 4; /* each part below a quarter of it */
    if (d > limit / d || grid > limit / 3 || d > limit / 15 || ranks > limit / d)
        nm_fail(&call, NWATTN_ERR_OVERFLOW, "working memory for d = %zu overflows", d);
    else
        doubles = 3 * grid + 15 * d + d * d + ranks * d;
    double *mem = call.status == NWATTN_OK
                      ? nm_alloc(&call, doubles, sizeof(double), "search memory")
                      : NULL;
    float *hf = nm_alloc(&call, d, sizeof(float), "bandwidths");
    status = nm_agree(&call);
    size_t offset = 0;
    if (status == NWATTN_OK) {
        nm_shard_counts(&call, n_local, counts, &offset, &n);
        status = nm_agree(&call);
    }
    double *xs = mem, *fs = xs + grid, *gs = fs + grid, *start = gs + grid, *h = start + d,
           *grad = h + d, *best_h = grad + d, *vec = best_h + d, *parts = vec + 11 * d + d * d;
    if (status == NWATTN_OK) {
        if (opt.start != NULL)
            for (size_t k = 0; k < d; k++)
                start[k] = (double)opt.start[k];
        else
            normal_reference(&call, n_local, n, d, x, ldx, parts, start);
        status = nm_agree(&call);
    }
    /* A compact kernel: the grid's lower end raised to an admissible scale (every point with
     * a neighbour inside its support at the start), from the largest nearest-neighbour t of
     * a ring pass (MPI_MAX: exact, the same on every rank). */
    double lo = log((double)opt.scale_min), hi = log((double)opt.scale_max);
    nw_model mod;
    nm_rows_model(model, d, dv, &mod);
    if (status == NWATTN_OK && nw_kernel_compact(mod.kernel)) {
        double largest = 0.0;
        status = nm_rows_cv(&call, &mod, counts, n_local, x, ldx, y, ldy, start, 0, NULL,
                            &largest);
        int rc = status == NWATTN_OK ? MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE,
                                                     MPI_MAX, call.comm)
                                     : MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            nm_mpi_failed(&call, rc, "the largest nearest-neighbour distance");
        status = nm_agree(&call);
        nw_search_raise_grid(largest, grid, &lo, &hi);
    }
    if (status == NWATTN_OK) {
        for (size_t k = 0; k < d; k++)
            best_h[k] = 0.0;
        nw_search s = {sharded_cv, NULL, model->kernel == NWATTN_KERNEL_UNIFORM, d, start, h,
                       grad, 0, opt.max_evaluations, INFINITY, best_h, 0};
        mpi_eval e = {ctx, call.comm, model, n_local, d, dv, ldx, ldy, x, y, hf, &s,
                      NWATTN_OK, {0}};
        s.arg = &e;
        size_t best = 0;
        int converged = 0;
        const int finite =
            nw_search_run(&s, lo, hi, grid, opt.tolerance, xs, fs, gs, vec, &best, &converged);
        if (e.status != NWATTN_OK) {
            status = e.status;
            if (error != NULL)
                *error = e.error;
            call.error = NULL;
        } else if (!finite) {
            status = nm_fail(&call, NWATTN_ERR_DEGENERATE_DATA,
                             "the CV score is not finite anywhere on the grid (scales %g to %g)",
                             exp(lo), exp(hi));
        } else {
            for (size_t k = 0; k < d; k++)
                bandwidths[k] = (float)fmin(fmax(s.best_h[k], (double)FLT_MIN), (double)FLT_MAX);
            if (report != NULL) {
                report->cv = s.best_cv;
                report->evaluations = s.evals;
                report->flagged_rows = s.best_flagged;
                report->at_grid_edge = best == 0 ? -1 : best + 1 == grid ? 1 : 0;
                report->converged = converged;
            }
            for (size_t g = 0; g < grid; g++) {
                if (curve_scales != NULL)
                    curve_scales[g] = (float)exp(xs[g]);
                if (curve_cv != NULL)
                    curve_cv[g] = fs[g];
            }
        }
    }
    free(counts);
    free(mem);
    free(hf);
    return nm_end(&call, status);
}
