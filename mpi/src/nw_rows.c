/* Every estimator over a sharded training set (nw_rows.h): the core's reference rows on each
 * rank's points, the parts added in rank order, the core's finish. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nw_rows.h"

#define ROWS_TAG 7303
/* Doubles of one rank's parts per gathered block of queries (the block's row count adapts). */
#define BLOCK_DOUBLES ((size_t)1 << 16)

void nm_rows_model(const nwattn_regression *model, size_t d, size_t dv, nw_model *out) {
    *out = nw_model_of(model, d, dv, NWATTN_NW_TOLERANCE_DEFAULT); /* unused: reference rows */
}

/* The layout of one query's part: [t_near, sums, (nearest) best t, count, sum of y]. */
typedef struct layout {
    size_t sums, width;
    int nearest; /* a compact kernel with the NEAREST policy: its empty rows need the points */
} layout;

static layout layout_of(const nw_model *mod, int grad) {
    layout l;
    l.sums = nw_sums_doubles(mod, grad);
    l.nearest = nw_kernel_compact(mod->kernel) && mod->empty == NWATTN_EMPTY_NEAREST;
    l.width = 1 + l.sums + (l.nearest ? 2 + mod->dv : 0);
    return l;
}

/* total (l->sums) = sum over ranks, in rank order, of each rank's sums rescaled from its
 * shift to the smallest one (returned). parts: `ranks` parts `stride` doubles apart. */
static double combine(const nw_model *mod, const layout *l, const double *parts, size_t stride,
                      int ranks, double *total) {
    double t_min = INFINITY;
    for (int r = 0; r < ranks; r++)
        t_min = fmin(t_min, parts[(size_t)r * stride]);
    memset(total, 0, l->sums * sizeof(double));
    for (int r = 0; r < ranks; r++) {
        const double *part = parts + (size_t)r * stride;
        if (!(part[0] < INFINITY))
            continue; /* no points on that rank */
        const double f = nw_ref_shift(mod->kernel, part[0], t_min);
        for (size_t e = 0; e < l->sums; e++)
            total[e] += f * part[1 + e];
    }
    return t_min;
}

/* The nearest points over every rank: mean (dv) and the best t and count (for weights). */
static void combine_nearest(const nw_model *mod, const layout *l, const double *parts,
                            size_t stride, int ranks, double *mean, double *best,
                            double *count) {
    *best = INFINITY;
    *count = 0.0;
    for (int r = 0; r < ranks; r++)
        *best = fmin(*best, parts[(size_t)r * stride + 1 + l->sums]);
    for (size_t c = 0; c < mod->dv; c++)
        mean[c] = 0.0;
    for (int r = 0; r < ranks; r++) {
        const double *near = parts + (size_t)r * stride + 1 + l->sums;
        if (!(near[0] == *best))
            continue;
        *count += near[1];
        for (size_t c = 0; c < mod->dv; c++)
            mean[c] += near[2 + c];
    }
    for (size_t c = 0; c < mod->dv && *count > 0.0; c++)
        mean[c] /= *count;
}

nwattn_status nm_rows_predict(nm_call *call, const nw_model *mod, const float *bandwidths,
                              size_t m, size_t n_local, const float *xq, size_t ldq,
                              const float *x, size_t ldx, const float *y, size_t ldy, float *yq,
                              size_t ldyq, float *weights, size_t ldw, unsigned char *row_flags,
                              size_t *n_flagged) {
    const size_t d = mod->d, dv = mod->dv, p = mod->p, ranks = (size_t)call->size;
    const layout l = layout_of(mod, 0);
    size_t block = BLOCK_DOUBLES / l.width;
    block = block < 1 ? 1 : block > m ? m : block;
    if (block * l.width > INT_MAX)
        nm_fail(call, NWATTN_ERR_TOO_LARGE,
                "a query's moment sums (%zu doubles) are too large for one MPI message",
                l.width);
    /* Per query kept for the outputs: the estimate (dv), flags, the shift, the nearest best t
     * and count, the weights' coefficients (p). */
    enum { FLAGS = 0, SHIFT = 1, BEST = 2, COUNT = 3, COEF = 4 }; /* after the dv estimates */
    const size_t keep = dv + COEF + p;
    double *parts = NULL, *kept = NULL, *total = NULL, *work = NULL, *inv_h = NULL;
    if (call->status == NWATTN_OK) {
        parts = nm_alloc(call, ranks * block, l.width * sizeof(double), "gathered sums");
        kept = nm_alloc(call, m, keep * sizeof(double), "estimates");
        total = nm_alloc(call, l.sums + dv + nw_finish_work_doubles(mod), sizeof(double),
                         "row sums");
        inv_h = nm_alloc(call, d, sizeof(double), "inverse bandwidths");
    }
    nwattn_status status = nm_agree(call);
    if (status == NWATTN_OK) {
        work = total + l.sums + dv;
        for (size_t k = 0; k < d; k++)
            inv_h[k] = 1.0 / (double)bandwidths[k];
    }
    for (size_t i0 = 0; status == NWATTN_OK && i0 < m; i0 += block) {
        const size_t rows = m - i0 < block ? m - i0 : block;
        double *mine = parts + (size_t)call->rank * rows * l.width;
        for (size_t i = 0; i < rows; i++) {
            const float *q = xq + (i0 + i) * ldq;
            double *part = mine + i * l.width;
            nw_sums s;
            nw_sums_init(&s, part + 1, mod, 0);
            part[0] = n_local ? nw_ref_nearest_t(mod, n_local, x, ldx, q, inv_h, NULL, SIZE_MAX,
                                                 0.0)
                              : INFINITY;
            if (part[0] < INFINITY)
                nw_ref_row_at(mod, n_local, x, ldx, y, ldy, q, inv_h, NULL, SIZE_MAX, 0.0,
                              part[0], &s);
            if (l.nearest)
                part[1 + l.sums + 1] =
                    (double)nw_nearest_scan(n_local, d, dv, x, ldx, y, ldy, q, inv_h, SIZE_MAX,
                                            &part[1 + l.sums], &part[1 + l.sums + 2]);
        }
        /* the one collective of the block: every rank's parts, in rank order */
        int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, parts,
                               (int)(rows * l.width), MPI_DOUBLE, call->comm);
        if (rc != MPI_SUCCESS) {
            status = nm_mpi_failed(call, rc, "gathering the regression sums");
            break;
        }
        for (size_t i = 0; i < rows; i++) {
            double *out = kept + (i0 + i) * keep, *more = out + dv;
            nw_sums s;
            nw_sums_init(&s, total, mod, 0);
            more[SHIFT] = combine(mod, &l, parts + i * l.width, rows * l.width, call->size,
                                  total);
            unsigned flags = nw_finish_row(mod, &s, 0, work, out, NULL, more + COEF);
            more[BEST] = INFINITY;
            more[COUNT] = 0.0;
            if (flags & NWATTN_ROW_EMPTY) {
                if (l.nearest)
                    combine_nearest(mod, &l, parts + i * l.width, rows * l.width, call->size,
                                    out, &more[BEST], &more[COUNT]);
                else
                    for (size_t c = 0; c < dv; c++)
                        out[c] = mod->empty == NWATTN_EMPTY_NAN ? (double)NAN : 0.0;
            }
            more[FLAGS] = (double)flags;
        }
    }
    status = nm_agree(call);
    if (status == NWATTN_OK) { /* nothing can fail any more: the outputs */
        size_t flagged = 0;
        for (size_t i = 0; i < m; i++) {
            const double *out = kept + i * keep, *more = out + dv;
            const unsigned flags = (unsigned)more[FLAGS];
            for (size_t c = 0; c < dv; c++)
                yq[i * ldyq + c] = (float)out[c];
            if (row_flags != NULL)
                row_flags[i] = (unsigned char)flags;
            flagged += flags != 0;
            if (weights == NULL || n_local == 0)
                continue;
            float *wrow = weights + i * ldw;
            const float *q = xq + i * ldq;
            if (!(flags & NWATTN_ROW_EMPTY))
                nw_ref_row_weights_at(mod, n_local, x, ldx, q, inv_h, SIZE_MAX, more + COEF,
                                      more[SHIFT], wrow);
            else if (l.nearest)
                nw_nearest_weights(n_local, d, x, ldx, q, inv_h, SIZE_MAX, more[BEST],
                                   (size_t)more[COUNT], wrow);
            else
                for (size_t j = 0; j < n_local; j++)
                    wrow[j] = 0.0f;
        }
        if (n_flagged != NULL)
            *n_flagged = flagged;
    }
    free(parts);
    free(kept);
    free(total);
    free(inv_h);
    return status;
}

/* acc (t_acc, sums) += tmp (t, sums), both rescaled to the smaller shift. */
static void merge_into(const nw_model *mod, size_t sums, double *acc, double t,
                       const double *tmp) {
    if (t < acc[0]) {
        const double f = acc[0] < INFINITY ? nw_ref_shift(mod->kernel, acc[0], t) : 0.0;
        for (size_t e = 0; e < sums; e++)
            acc[1 + e] = f * acc[1 + e] + tmp[e];
        acc[0] = t;
    } else {
        const double f = nw_ref_shift(mod->kernel, t, acc[0]);
        for (size_t e = 0; e < sums; e++)
            acc[1 + e] += f * tmp[e];
    }
}

nwattn_status nm_rows_cv(nm_call *call, const nw_model *mod, const uint64_t *counts,
                         size_t n_local, const float *x, size_t ldx, const float *y, size_t ldy,
                         const double *h, int want_grad, double *out, double *largest_t) {
    const int p = call->size, me = call->rank;
    const size_t d = mod->d, dv = mod->dv, width = d + dv;
    const layout l = layout_of(mod, want_grad);
    size_t cap = 0;
    for (int r = 0; r < p; r++)
        cap = (size_t)counts[r] > cap ? (size_t)counts[r] : cap;
    if (cap * width > INT_MAX)
        nm_fail(call, NWATTN_ERR_TOO_LARGE,
                "a block of %zu rows of %zu floats is too large for one MPI message", cap, width);
    float *buffers = NULL;
    double *acc = NULL, *tmp = NULL, *inv_h = NULL;
    const size_t scratch = l.sums + nw_finish_work_doubles(mod) + dv + d * dv;
    if (call->status == NWATTN_OK) {
        buffers = nm_alloc(call, 2 * (cap ? cap : 1), width * sizeof(float), "training blocks");
        acc = nm_alloc(call, n_local, (1 + l.sums) * sizeof(double), "row sums");
        tmp = nm_alloc(call, scratch, sizeof(double), "row scratch");
        inv_h = nm_alloc(call, d, sizeof(double), "inverse bandwidths");
    }
    nwattn_status status = nm_agree(call);
    if (status != NWATTN_OK)
        goto done;
    for (size_t k = 0; k < d; k++)
        inv_h[k] = 1.0 / h[k];
    for (size_t i = 0; i < n_local; i++) {
        acc[i * (1 + l.sums)] = INFINITY;
        memset(acc + i * (1 + l.sums) + 1, 0, l.sums * sizeof(double));
    }
    float *block[2] = {buffers, buffers + (cap ? cap : 1) * width};
    for (size_t i = 0; i < n_local; i++) { /* own block: x rows, then y rows */
        memcpy(block[0] + i * d, x + i * ldx, d * sizeof(float));
        if (dv)
            memcpy(block[0] + n_local * d + i * dv, y + i * ldy, dv * sizeof(float));
    }
    const int right = (me + 1) % p, left = (me + p - 1) % p;
    double nearest_max = 0.0;
    for (int s = 0; s < p; s++) {
        const int src = (me - s + p) % p, next = (me - s - 1 + 2 * p) % p;
        const size_t kn = (size_t)counts[src];
        const float *kx = block[s % 2], *ky = kx + kn * d;
        for (size_t i = 0; kn > 0 && i < n_local; i++) {
            const float *q = x + i * ldx;
            const size_t skip = src == me ? i : SIZE_MAX; /* leave one out */
            double *a = acc + i * (1 + l.sums);
            if (largest_t != NULL) { /* the nearest other point */
                double best;
                (void)nw_nearest_scan(kn, d, 0, kx, d, ky, dv, q, inv_h, skip, &best, NULL);
                a[0] = fmin(a[0], best);
                continue;
            }
            const double t = nw_ref_nearest_t(mod, kn, kx, d, q, inv_h, NULL, skip, 0.0);
            if (!(t < INFINITY))
                continue; /* only the point itself */
            nw_sums st;
            nw_sums_init(&st, tmp, mod, want_grad);
            nw_ref_row_at(mod, kn, kx, d, ky, dv, q, inv_h, NULL, skip, 0.0, t, &st);
            merge_into(mod, l.sums, a, t, tmp);
        }
        if (s < p - 1) {
            int rc = MPI_Sendrecv(kx, (int)(kn * width), MPI_FLOAT, right, ROWS_TAG,
                                  block[(s + 1) % 2], (int)((size_t)counts[next] * width),
                                  MPI_FLOAT, left, ROWS_TAG, call->comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                nm_mpi_failed(call, rc, "MPI_Sendrecv on the regression ring");
                break;
            }
        }
    }
    if (largest_t != NULL) {
        for (size_t i = 0; i < n_local; i++)
            nearest_max = fmax(nearest_max, acc[i * (1 + l.sums)]);
        *largest_t = nearest_max;
    } else {
        memset(out, 0, (3 + d) * sizeof(double));
        double *sums = tmp, *work = sums + l.sums, *yhat = work + nw_finish_work_doubles(mod),
               *dyhat = yhat + dv;
        for (size_t i = 0; i < n_local; i++) { /* in row order: the same bits every time */
            nw_sums s;
            nw_sums_init(&s, sums, mod, want_grad);
            memcpy(sums, acc + i * (1 + l.sums) + 1, l.sums * sizeof(double));
            const unsigned flags =
                nw_finish_row(mod, &s, 0, work, yhat, want_grad ? dyhat : NULL, NULL);
            nw_cv_add_row(mod, flags, yhat, dyhat, y + i * ldy, 1, want_grad, 1.0, out);
        }
    }
    status = nm_agree(call);
done:
    free(buffers);
    free(acc);
    free(tmp);
    free(inv_h);
    return status;
}
