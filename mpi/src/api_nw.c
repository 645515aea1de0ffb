/* Nadaraya-Watson regression over a sharded training set: the local constant Gaussian and
 * Laplace estimators are max-shifted poolings with score -t/2 or -sqrt(t), so prediction is
 * nwattn_mpi_pool_sharded_keys and leave-one-out CV is a ring pass with the leave-one-out mask
 * on global positions. Every other estimator (and predictions with weights) goes through the
 * core's reference rows on each rank's points, the moment sums combined in rank order
 * (nw_rows.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cv_gradient.h"
#include "nw_rows.h"

static int pooling_model(const nwattn_regression *model) {
    return model->degree == NWATTN_LOCAL_CONSTANT &&
           (model->kernel == NWATTN_KERNEL_GAUSSIAN || model->kernel == NWATTN_KERNEL_LAPLACE);
}

static nwattn_score score_of(const nwattn_regression *model, const float *bandwidths) {
    nwattn_score score = {0};
    score.kind = model->kernel == NWATTN_KERNEL_GAUSSIAN ? NWATTN_SCORE_GAUSSIAN
                                                         : NWATTN_SCORE_LAPLACE;
    score.bandwidth = 1.0f;
    score.bandwidths = bandwidths;
    return score;
}

/* rows × cols floats, all finite (the regression functions' rule for data). */
static void check_finite(nm_call *call, const char *name, const float *a, size_t rows,
                         size_t cols, size_t ld) {
    if (rows == 0 || cols == 0)
        return;
    if (a == NULL) {
        nm_fail(call, NWATTN_ERR_NULL_POINTER, "%s is NULL", name);
        return;
    }
    if (ld < cols) {
        nm_fail(call, NWATTN_ERR_BAD_LEADING_DIM,
                "leading dimension of %s is %zu, smaller than its row of %zu", name, ld, cols);
        return;
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            if (!isfinite(a[i * ld + j])) {
                nm_fail(call, NWATTN_ERR_BAD_PARAMETER, "%s[%zu][%zu] is not finite", name, i,
                        j);
                return;
            }
}

/* Whether a row's sums (with the gradient's, and the finish's scratch) are far from
 * overflowing size_t, as the core's model check asks. */
static int sums_fit(int linear, size_t d, size_t dv) {
    if (d > SIZE_MAX / 64 || dv > SIZE_MAX / 64)
        return 0;
    const size_t p = linear ? d + 1 : 1;
    size_t p2, pdv, all;
    return nw_mul(p, p, &p2) && nw_mul(p, dv, &pdv) && nw_add(p2, pdv, &all) &&
           nw_mul(all, d + 1, &all) && nw_add(all, 4 * p + p2 + 2 * pdv, &all) &&
           nw_mul(all, 2 * sizeof(double), &all);
}

/* The checks every rank makes before the pooling: the model, finite data, the global n. */
static nwattn_status check_regression(nm_call *call, const nwattn_regression *model,
                                      size_t n_local, size_t d, size_t dv, const float *x,
                                      size_t ldx, const float *y, size_t ldy, size_t min_n,
                                      size_t *n_total) {
    uint64_t *counts = nm_alloc(call, (size_t)call->size, sizeof *counts, "shard sizes");
    nwattn_status status = nm_agree(call);
    if (status != NWATTN_OK) {
        free(counts);
        return status;
    }
    size_t offset;
    nm_shard_counts(call, n_local, counts, &offset, n_total);
    free(counts);
    if (model == NULL)
        nm_fail(call, NWATTN_ERR_NULL_POINTER, "model is NULL");
    else if ((unsigned)model->kernel > (unsigned)NWATTN_KERNEL_MATERN52)
        nm_fail(call, NWATTN_ERR_BAD_ENUM, "unknown kernel %d", (int)model->kernel);
    else if (model->degree != NWATTN_LOCAL_CONSTANT && model->degree != NWATTN_LOCAL_LINEAR)
        nm_fail(call, NWATTN_ERR_BAD_ENUM, "unknown degree %d", (int)model->degree);
    else if (model->empty != NWATTN_EMPTY_NEAREST && model->empty != NWATTN_EMPTY_NAN &&
             model->empty != NWATTN_EMPTY_ZERO)
        nm_fail(call, NWATTN_ERR_BAD_ENUM, "unknown empty-row policy %d", (int)model->empty);
    if (model != NULL && !sums_fit(model->degree == NWATTN_LOCAL_LINEAR, d, dv))
        nm_fail(call, NWATTN_ERR_OVERFLOW, "d = %zu and dv = %zu are too large", d, dv);
    if (d == 0)
        nm_fail(call, NWATTN_ERR_BAD_DIMENSION, "d is 0");
    if (call->status == NWATTN_OK && *n_total < min_n)
        nm_fail(call, NWATTN_ERR_DEGENERATE_DATA, "the ranks hold %zu training points in all, "
                "fewer than %zu", *n_total, min_n);
    check_finite(call, "x", x, n_local, d, ldx);
    check_finite(call, "y", y, n_local, dv, ldy);
    const nwattn_regression none = {0};
    const nwattn_regression *signed_model = model ? model : &none;
    nm_signature(call, "model.kernel", (uint64_t)signed_model->kernel, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "model.degree", (uint64_t)signed_model->degree, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "model.empty", (uint64_t)signed_model->empty, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "d", d, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(call, "dv", dv, NWATTN_ERR_BAD_DIMENSION);
    return NWATTN_OK;
}

/* Every bandwidth finite and > 0 (the core's rule). */
static void check_bandwidths(nm_call *call, const float *bandwidths, size_t d) {
    if (bandwidths == NULL) {
        nm_fail(call, NWATTN_ERR_NULL_POINTER, "bandwidths is NULL");
        return;
    }
    for (size_t k = 0; k < d; k++)
        if (!(isfinite(bandwidths[k]) && bandwidths[k] > 0.0f)) {
            nm_fail(call, NWATTN_ERR_BAD_PARAMETER, "bandwidths[%zu] = %g is not finite and > 0",
                    k, (double)bandwidths[k]);
            return;
        }
}

nwattn_status nwattn_mpi_nw_predict(nwattn_context *ctx, MPI_Comm comm,
                                    const nwattn_regression *model, const float *bandwidths,
                                    size_t m, size_t n_local, size_t d, size_t dv,
                                    const float *xq, size_t ldq, const float *x, size_t ldx,
                                    const float *y, size_t ldy, float *yq, size_t ldyq,
                                    float *weights, size_t ldw, unsigned char *row_flags,
                                    size_t *n_flagged, nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    size_t n_total = 0;
    check_regression(&call, model, n_local, d, dv, x, ldx, y, ldy, 1, &n_total);
    check_finite(&call, "xq", xq, m, d, ldq);
    if (call.status == NWATTN_OK && d > 0)
        check_bandwidths(&call, bandwidths, d);
    if (call.status == NWATTN_OK && m > 0 && dv > 0)
        nm_check_output(&call, "yq", yq, 1, m, dv, ldyq, 0);
    if (call.status == NWATTN_OK && m > 0 && n_local > 0 && weights != NULL)
        nm_check_output(&call, "weights", weights, 1, m, n_local, ldw, 0);
    nm_signature(&call, "m", m, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "bandwidths (hash)",
                 call.status == NWATTN_OK && bandwidths ? nm_hash(bandwidths, d * sizeof(float))
                                                        : 0,
                 NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "xq (hash)",
                 call.status == NWATTN_OK ? nm_hash_matrix(xq, 1, m, d, ldq, 0) : 0,
                 NWATTN_ERR_BAD_PARAMETER);
    /* weights asked on one rank and not on another: they choose the path, so agree on it */
    nm_signature(&call, "weights (NULL or not)", weights != NULL, NWATTN_ERR_BAD_PARAMETER);
    nwattn_status status = nm_agree(&call);
    if (status == NWATTN_OK && (m == 0 || (dv == 0 && weights == NULL))) { /* as the core */
        if (n_flagged != NULL)
            *n_flagged = 0;
        if (row_flags != NULL && m > 0)
            memset(row_flags, 0, m);
    }
    if (status != NWATTN_OK || m == 0 || (dv == 0 && weights == NULL))
        return nm_end(&call, status);
    if (pooling_model(model) && weights == NULL) { /* the fast pooling, never flagged */
        nm_end(&call, NWATTN_OK);
        const nwattn_score score = score_of(model, bandwidths);
        status = nwattn_mpi_pool_sharded_keys(ctx, comm, NWATTN_MPI_REDUCTION_AUTO, &score,
                                              NULL, 1, m, n_local, d, dv, xq, ldq, 0, x, ldx, 0,
                                              y, ldy, 0, yq, ldyq, 0, NULL, 0, error);
        if (status == NWATTN_OK) {
            if (row_flags != NULL)
                memset(row_flags, 0, m);
            if (n_flagged != NULL)
                *n_flagged = 0;
        }
        return status;
    }
    nw_model mod;
    nm_rows_model(model, d, dv, &mod);
    status = nm_rows_predict(&call, &mod, bandwidths, m, n_local, xq, ldq, x, ldx, y, ldy, yq,
                             ldyq, weights, ldw, row_flags, n_flagged);
    return nm_end(&call, status);
}

/* Largest minus smallest of each coordinate over every rank's points: 0 means no spread. */
static void check_spread(nm_call *call, size_t n_local, size_t d, const float *x, size_t ldx) {
    double *range = nm_alloc(call, d, 2 * sizeof(double), "coordinate ranges");
    if (nm_agree(call) != NWATTN_OK) {
        free(range);
        return;
    }
    for (size_t j = 0; j < d; j++) {
        range[j] = -INFINITY;     /* max */
        range[d + j] = -INFINITY; /* -min */
        for (size_t i = 0; i < n_local; i++) {
            const double value = x[i * ldx + j];
            range[j] = fmax(range[j], value);
            range[d + j] = fmax(range[d + j], -value);
        }
    }
    int rc = MPI_Allreduce(MPI_IN_PLACE, range, (int)(2 * d), MPI_DOUBLE, MPI_MAX, call->comm);
    if (rc != MPI_SUCCESS)
        nm_mpi_failed(call, rc, "MPI_Allreduce of the coordinate ranges");
    for (size_t j = 0; rc == MPI_SUCCESS && j < d; j++)
        if (!(range[j] + range[d + j] > 0.0)) {
            nm_fail(call, NWATTN_ERR_DEGENERATE_DATA,
                    "coordinate %zu of x takes one value on every rank: no bandwidth fits", j);
            break;
        }
    free(range);
}

/* dCV/dh_k at h (d floats) from the fit yhat and normalisers lse of its ring pass: every
 * rank's share (nm_cv_gradient) gathered and added in rank order, the same bits everywhere. */
static nwattn_status cv_gradient_at(nm_call *call, const nwattn_regression *model,
                                    size_t n_local, size_t d, size_t dv, const float *x,
                                    size_t ldx, const float *y, size_t ldy, const float *yhat,
                                    const float *lse, const float *h, const uint64_t *counts,
                                    size_t offset, size_t n_total, double *inv_h,
                                    double *parts, double *out) {
    for (size_t k = 0; k < d; k++)
        inv_h[k] = 1.0 / (double)h[k];
    const nm_grad_pass pass = {model->kernel == NWATTN_KERNEL_GAUSSIAN, n_local, d, dv, x, y,
                               ldx, ldy, yhat, lse, inv_h};
    double *mine = parts + (size_t)call->rank * d;
    nwattn_status status = nm_cv_gradient(call, &pass, counts, offset, mine);
    if (status != NWATTN_OK)
        return status;
    int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, parts, (int)d, MPI_DOUBLE,
                           call->comm);
    if (rc != MPI_SUCCESS)
        return nm_mpi_failed(call, rc, "gathering the CV gradients");
    for (size_t k = 0; k < d; k++) {
        double total = 0.0; /* in rank order */
        for (int r = 0; r < call->size; r++)
            total += parts[(size_t)r * d + k];
        out[k] = 2.0 * total / (double)n_total * inv_h[k]; /* d/dlog h_k -> d/dh_k */
    }
    return NWATTN_OK;
}

/* nwattn_mpi_nw_cv for every other model: per bandwidth one ring pass of the core's rows
 * (nm_rows_cv), every rank's (squared errors, flagged, empty, gradient) gathered and added in
 * rank order, finished by the core's nw_cv_result: the same doubles on every rank. */
static nwattn_status rows_cv(nm_call *call, const nwattn_regression *model, size_t n_local,
                             size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                             size_t ldy, size_t n_bw, const float *bandwidths, size_t ldb,
                             double *cv, double *gradient, size_t ldg, size_t *flagged) {
    nw_model mod;
    nm_rows_model(model, d, dv, &mod);
    const size_t ranks = (size_t)call->size, width = 3 + d;
    uint64_t *counts = nm_alloc(call, ranks, sizeof *counts, "shard sizes");
    double *parts = nm_alloc(call, ranks, width * sizeof(double), "per-rank sums");
    double *result = nm_alloc(call, n_bw, (2 + d) * sizeof(double), "results");
    double *h = nm_alloc(call, d, sizeof(double), "bandwidths");
    nwattn_status status = nm_agree(call);
    size_t offset = 0, n_total = 0;
    if (status == NWATTN_OK) {
        nm_shard_counts(call, n_local, counts, &offset, &n_total);
        status = nm_agree(call);
    }
    const int want_grad = gradient != NULL && model->kernel != NWATTN_KERNEL_UNIFORM;
    for (size_t g = 0; status == NWATTN_OK && g < n_bw; g++) {
        for (size_t k = 0; k < d; k++)
            h[k] = (double)bandwidths[g * ldb + k];
        double *mine = parts + (size_t)call->rank * width;
        status = nm_rows_cv(call, &mod, counts, n_local, x, ldx, y, ldy, h, want_grad, mine,
                            NULL);
        if (status != NWATTN_OK)
            break;
        int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, parts, (int)width,
                               MPI_DOUBLE, call->comm);
        if (rc != MPI_SUCCESS) {
            status = nm_mpi_failed(call, rc, "gathering the CV sums");
            break;
        }
        for (int r = 1; r < call->size; r++) /* in rank order: the same bits on every rank */
            for (size_t e = 0; e < width; e++)
                parts[e] += parts[(size_t)r * width + e];
        double *out = result + g * (2 + d);
        nw_cv_result(&mod, (double)n_total, h, parts, want_grad, &out[0], out + 2);
        out[1] = parts[1];
    }
    status = nm_agree(call);
    for (size_t g = 0; status == NWATTN_OK && g < n_bw; g++) {
        const double *out = result + g * (2 + d);
        cv[g] = out[0];
        if (flagged != NULL)
            flagged[g] = (size_t)out[1];
        if (gradient != NULL)
            memcpy(gradient + g * ldg, out + 2, d * sizeof(double));
    }
    free(counts);
    free(parts);
    free(result);
    free(h);
    return status;
}

nwattn_status nwattn_mpi_nw_cv(nwattn_context *ctx, MPI_Comm comm,
                               const nwattn_regression *model, size_t n_local, size_t d,
                               size_t dv, const float *x, size_t ldx, const float *y,
                               size_t ldy, size_t n_bw, const float *bandwidths, size_t ldb,
                               double *cv, double *gradient, size_t ldg, size_t *flagged,
                               nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    size_t n_total = 0;
    check_regression(&call, model, n_local, d, dv, x, ldx, y, ldy, 3, &n_total);
    if (n_bw > 0 && (bandwidths == NULL || cv == NULL))
        nm_fail(&call, NWATTN_ERR_NULL_POINTER, "%s is NULL", cv ? "bandwidths" : "cv");
    else if (n_bw > 1 && ldb < d)
        nm_fail(&call, NWATTN_ERR_BAD_LEADING_DIM, "ldb is %zu, smaller than d = %zu", ldb, d);
    if (gradient != NULL && n_bw > 1 && ldg < d)
        nm_fail(&call, NWATTN_ERR_BAD_LEADING_DIM, "ldg is %zu, smaller than d = %zu", ldg, d);
    nm_signature(&call, "n_bw", n_bw, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "gradient (NULL or not)", gradient != NULL, NWATTN_ERR_BAD_PARAMETER);
    const int hashable = n_bw > 0 && bandwidths && call.status == NWATTN_OK;
    nm_signature(&call, "bandwidths (hash)",
                 hashable ? nm_hash(bandwidths, ((n_bw - 1) * ldb + d) * sizeof(float)) : 0,
                 NWATTN_ERR_BAD_PARAMETER);
    if (nm_agree(&call) == NWATTN_OK)
        check_spread(&call, n_local, d, x, ldx);
    if (call.status == NWATTN_OK && !pooling_model(model))
        return nm_end(&call, rows_cv(&call, model, n_local, d, dv, x, ldx, y, ldy, n_bw,
                                     bandwidths, ldb, cv, gradient, ldg, flagged));
    float *yhat = nm_alloc(&call, n_local, (dv ? dv : 1) * sizeof(float), "leave-one-out fit");
    double *sums = nm_alloc(&call, (size_t)call.size, sizeof(double), "per-rank sums");
    double *result = nm_alloc(&call, n_bw, sizeof(double), "cv");
    const int want_grad = gradient != NULL && n_bw > 0;
    float *lse = NULL;
    double *grad = NULL, *inv_h = NULL, *parts = NULL;
    uint64_t *counts = NULL;
    size_t offset = 0;
    if (want_grad) {
        lse = nm_alloc(&call, n_local ? n_local : 1, sizeof(float), "log normalisers");
        grad = nm_alloc(&call, n_bw, d * sizeof(double), "gradient");
        inv_h = nm_alloc(&call, d, sizeof(double), "inverse bandwidths");
        parts = nm_alloc(&call, (size_t)call.size, d * sizeof(double), "per-rank gradients");
        counts = nm_alloc(&call, (size_t)call.size, sizeof(uint64_t), "shard sizes");
    }
    nwattn_status status = nm_agree(&call);
    if (status == NWATTN_OK && want_grad) {
        nm_shard_counts(&call, n_local, counts, &offset, &n_total);
        status = nm_agree(&call);
    }
    for (size_t g = 0; status == NWATTN_OK && g < n_bw; g++) {
        const nwattn_score score = score_of(model, bandwidths + g * ldb);
        status = nwattn_mpi_ring_attention(ctx, call.comm, &score, NWATTN_MASK_LEAVE_ONE_OUT,
                                           NWATTN_MPI_LAYOUT_CONTIGUOUS, n_local, d, dv, x, ldx,
                                           x, ldx, y, ldy, yhat, dv ? dv : 1, lse, error);
        if (status != NWATTN_OK) { /* already agreed on by every rank, message included */
            call.error = NULL;     /* keep the ring's report */
            break;
        }
        double mine = 0.0;
        for (size_t i = 0; i < n_local; i++)
            for (size_t c = 0; c < dv; c++) {
                const double r = (double)y[i * ldy + c] - (double)yhat[i * dv + c];
                mine += r * r;
            }
        int rc = MPI_Allgather(&mine, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, call.comm);
        if (rc != MPI_SUCCESS) {
            status = nm_mpi_failed(&call, rc, "gathering the CV sums");
            break;
        }
        double total = 0.0; /* in rank order: the same bits on every rank */
        for (int r = 0; r < call.size; r++)
            total += sums[r];
        result[g] = total / (double)n_total;
        if (want_grad) {
            status = cv_gradient_at(&call, model, n_local, d, dv, x, ldx, y, ldy, yhat, lse,
                                    bandwidths + g * ldb, counts, offset, n_total, inv_h,
                                    parts, grad + g * d);
            if (status != NWATTN_OK)
                break;
        }
    }
    if (status == NWATTN_OK && n_bw > 0)
        memcpy(cv, result, n_bw * sizeof(double));
    for (size_t g = 0; status == NWATTN_OK && flagged != NULL && g < n_bw; g++)
        flagged[g] = 0; /* the local constant Gaussian and Laplace rows are never flagged */
    for (size_t g = 0; status == NWATTN_OK && want_grad && g < n_bw; g++)
        memcpy(gradient + g * ldg, grad + g * d, d * sizeof(double));
    free(yhat);
    free(sums);
    free(result);
    free(lse);
    free(grad);
    free(inv_h);
    free(parts);
    free(counts);
    return nm_end(&call, status);
}
