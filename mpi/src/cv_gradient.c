/* The analytic gradient of the sharded leave-one-out CV (cv_gradient.h). The fit yhat and
 * the log normalisers lse come from the CV's ring pass; this second pass visits every
 * (query shard, key shard) pair again with the training blocks travelling round the ring,
 * and carries per query, in double, the normaliser and the d derivative sums. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cv_gradient.h"

#define GRAD_TAG 7302

/* One key block (x rows then y rows, packed) against this rank's queries: for each query i
 * and key j != i, p = exp(s_ij - lse_i), wsum_i += p and
 * acc_ik += p · g_ijk · sum_c r_ic (y_jc - yhat_ic), g = ds/dlog h_k. */
static void block_sums(const nm_grad_pass *g, size_t q0, size_t k0, size_t kn,
                       const float *kx, const float *ky, double *wsum, double *acc,
                       double *u2) {
    const size_t d = g->d, dv = g->dv;
    for (size_t i = 0; i < g->n_local; i++) {
        const float *xi = g->x + i * g->ldx;
        const float *ri = g->yhat + i * dv;
        for (size_t j = 0; j < kn; j++) {
            if (k0 + j == q0 + i)
                continue; /* leave one out */
            double t = 0.0;
            for (size_t k = 0; k < d; k++) {
                const double u = ((double)xi[k] - (double)kx[j * d + k]) * g->inv_h[k];
                u2[k] = u * u;
                t += u2[k];
            }
            const double root = sqrt(t);
            const double s = g->gaussian ? -0.5 * t : -root;
            const double p = exp(s - (double)g->lse[i]);
            if (p == 0.0)
                continue;
            double proj = 0.0; /* sum_c r_ic (y_jc - yhat_ic) */
            for (size_t c = 0; c < dv; c++) {
                const double yhat = (double)ri[c];
                proj += (yhat - (double)g->y[i * g->ldy + c]) * ((double)ky[j * dv + c] - yhat);
            }
            wsum[i] += p;
            /* Gaussian: ds/dlog h_k = u_k^2; Laplace: u_k^2 / sqrt(t) (0 at t = 0) */
            const double scale = g->gaussian ? p * proj : root > 0.0 ? p * proj / root : 0.0;
            for (size_t k = 0; k < d; k++)
                acc[i * d + k] += scale * u2[k];
        }
    }
}

nwattn_status nm_cv_gradient(nm_call *call, const nm_grad_pass *g, const uint64_t *counts,
                             size_t offset, double *mine) {
    const int p = call->size, me = call->rank;
    const size_t d = g->d, dv = g->dv, width = d + dv;
    size_t cap = 0;
    for (int r = 0; r < p; r++)
        cap = (size_t)counts[r] > cap ? (size_t)counts[r] : cap;
    if (cap * width > INT_MAX)
        nm_fail(call, NWATTN_ERR_TOO_LARGE,
                "a block of %zu rows of %zu floats is too large for one MPI message", cap,
                width);
    float *buffers = NULL;
    double *wsum = NULL, *acc = NULL, *u2 = NULL;
    if (call->status == NWATTN_OK) {
        buffers = nm_alloc(call, 2 * (cap ? cap : 1), width * sizeof(float), "gradient blocks");
        wsum = nm_alloc(call, g->n_local ? g->n_local : 1, sizeof(double), "gradient sums");
        acc = nm_alloc(call, g->n_local ? g->n_local : 1, d * sizeof(double), "gradient sums");
        u2 = nm_alloc(call, d, sizeof(double), "gradient scratch");
    }
    nwattn_status status = nm_agree(call);
    if (status == NWATTN_OK) {
        memset(wsum, 0, g->n_local * sizeof(double));
        memset(acc, 0, g->n_local * d * sizeof(double));
        float *block[2] = {buffers, buffers + cap * width};
        for (size_t i = 0; i < g->n_local; i++) { /* own block: x rows, then y rows */
            memcpy(block[0] + i * d, g->x + i * g->ldx, d * sizeof(float));
            memcpy(block[0] + g->n_local * d + i * dv, g->y + i * g->ldy, dv * sizeof(float));
        }
        /* The offsets of every rank's block, to know the keys' global positions. */
        const int right = (me + 1) % p, left = (me + p - 1) % p;
        for (int s = 0; s < p; s++) {
            const int src = (me - s + p) % p, next = (me - s - 1 + 2 * p) % p;
            size_t k0 = 0;
            for (int r = 0; r < src; r++)
                k0 += (size_t)counts[r];
            const size_t kn = (size_t)counts[src];
            const float *cur = block[s % 2];
            block_sums(g, offset, k0, kn, cur, cur + kn * d, wsum, acc, u2);
            if (s < p - 1) {
                int rc = MPI_Sendrecv(cur, (int)(kn * width), MPI_FLOAT, right, GRAD_TAG,
                                      block[(s + 1) % 2], (int)((size_t)counts[next] * width),
                                      MPI_FLOAT, left, GRAD_TAG, call->comm, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) {
                    nm_mpi_failed(call, rc, "MPI_Sendrecv on the gradient ring");
                    break;
                }
            }
        }
        for (size_t k = 0; k < d; k++)
            mine[k] = 0.0;
        for (size_t i = 0; i < g->n_local; i++) /* in row order: the same bits every time */
            for (size_t k = 0; k < d; k++)
                mine[k] += wsum[i] > 0.0 ? acc[i * d + k] / wsum[i] : 0.0;
        status = nm_agree(call);
    }
    free(buffers);
    free(wsum);
    free(acc);
    free(u2);
    return status;
}
