/* nwattn_mpi_ulysses_attention: DeepSpeed-Ulysses' head split. One MPI_Alltoallv gives every
 * rank the whole sequence of heads/p heads (rows in global order, since shards are in rank
 * order), the core pools each head over the whole sequence (nwattn_pool: masks on global
 * positions for free), and a second MPI_Alltoallv returns every rank its rows of all heads. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static int fits_int(size_t x) { return x <= INT_MAX; }

/* MPI_Alltoallv of rows of `width` floats (counts and displacements in rows). */
static int alltoallv_rows(const float *send, const int *send_n, const int *send_at, float *recv,
                          const int *recv_n, const int *recv_at, size_t width, MPI_Comm comm) {
    MPI_Datatype row;
    int rc = MPI_Type_contiguous((int)width, MPI_FLOAT, &row);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Type_commit(&row);
    if (rc == MPI_SUCCESS)
        rc = MPI_Alltoallv(send, send_n, send_at, row, recv, recv_n, recv_at, row, comm);
    MPI_Type_free(&row);
    return rc;
}

nwattn_status nwattn_mpi_ulysses_attention(nwattn_context *ctx, MPI_Comm comm,
                                           const nwattn_score *score, unsigned mask_flags,
                                           size_t heads, size_t n_local, size_t dh, size_t dvh,
                                           const float *q, size_t ldq, const float *k,
                                           size_t ldk, const float *v, size_t ldv, float *o,
                                           size_t ldo, nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    const int p = call.size;
    uint64_t *counts = nm_alloc(&call, (size_t)p, sizeof *counts, "shard sizes");
    int *ints = nm_alloc(&call, (size_t)p, 4 * sizeof(int), "all-to-all counts");
    float *packed = NULL, *gathered = NULL, *pooled = NULL, *back = NULL;
    nwattn_status status = nm_agree(&call);
    if (status != NWATTN_OK)
        goto done;
    size_t offset, total;
    nm_shard_counts(&call, n_local, counts, &offset, &total);
    if (ctx == NULL)
        nm_fail(&call, NWATTN_ERR_NULL_POINTER, "ctx is NULL");
    if (heads == 0 || heads % (size_t)p != 0)
        nm_fail(&call, NWATTN_ERR_BAD_DIMENSION,
                "heads is %zu: it must be a positive multiple of the %d ranks", heads, p);
    if (dh == 0)
        nm_fail(&call, NWATTN_ERR_BAD_DIMENSION, "dh is 0: a score needs features");
    if (mask_flags & ~(unsigned)(NWATTN_MASK_CAUSAL | NWATTN_MASK_LEAVE_ONE_OUT))
        nm_fail(&call, NWATTN_ERR_BAD_ENUM,
                "mask_flags 0x%x: only NWATTN_MASK_CAUSAL and NWATTN_MASK_LEAVE_ONE_OUT",
                mask_flags);
    if (!fits_int(heads) || !fits_int(dh) || !fits_int(dvh) || n_local > (size_t)(INT_MAX / p))
        nm_fail(&call, NWATTN_ERR_TOO_LARGE, "heads, dh, dvh or n_local too large for MPI");
    /* with each of them below 2^31 these products fit in size_t (64 bits) */
    const size_t hp = heads / (size_t)p, w_in = hp * (2 * dh + dvh), w_out = hp * dvh;
    if (call.status == NWATTN_OK && n_local > 0) {
        if (q == NULL || k == NULL || v == NULL)
            nm_fail(&call, NWATTN_ERR_NULL_POINTER, "%s is NULL",
                    q == NULL ? "q" : k == NULL ? "k" : "v");
        else if (ldq < heads * dh || ldk < heads * dh || ldv < heads * dvh)
            nm_fail(&call, NWATTN_ERR_BAD_LEADING_DIM,
                    "a leading dimension is smaller than its row (ldq %zu, ldk %zu: heads·dh "
                    "= %zu; ldv %zu: heads·dvh = %zu)", ldq, ldk, heads * dh, ldv, heads * dvh);
    }
    nm_check_output(&call, "o", o, 1, n_local, heads * dvh, ldo, 0);
    if (call.status == NWATTN_OK && (!fits_int(w_in) || !fits_int(total) || !fits_int(w_out)))
        nm_fail(&call, NWATTN_ERR_TOO_LARGE, "the sequence or a row is too large for MPI counts");
    nm_signature(&call, "heads", heads, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "dh", dh, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "dvh", dvh, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "mask_flags", mask_flags, NWATTN_ERR_BAD_PARAMETER);
    nm_sign_score(&call, score, dh);
    if (call.status == NWATTN_OK) {
        packed = nm_alloc(&call, n_local * (size_t)p, w_in * sizeof(float), "send rows");
        gathered = nm_alloc(&call, total, w_in * sizeof(float), "whole-sequence heads");
        pooled = nm_alloc(&call, total, (w_out ? w_out : 1) * sizeof(float), "pooled heads");
        back = nm_alloc(&call, n_local * (size_t)p, (w_out ? w_out : 1) * sizeof(float),
                        "returned rows");
    }
    if ((status = nm_agree(&call)) != NWATTN_OK)
        goto done;

    /* rows for rank r: its heads r·hp .. of q, then of k, then of v */
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < n_local; i++) {
            float *row = packed + ((size_t)r * n_local + i) * w_in;
            memcpy(row, q + i * ldq + (size_t)r * hp * dh, hp * dh * sizeof(float));
            memcpy(row + hp * dh, k + i * ldk + (size_t)r * hp * dh, hp * dh * sizeof(float));
            memcpy(row + 2 * hp * dh, v + i * ldv + (size_t)r * hp * dvh,
                   hp * dvh * sizeof(float));
        }
    int *send_n = ints, *send_at = ints + p, *recv_n = ints + 2 * p, *recv_at = ints + 3 * p;
    size_t at = 0;
    for (int r = 0; r < p; r++) {
        send_n[r] = (int)n_local;
        send_at[r] = (int)((size_t)r * n_local);
        recv_n[r] = (int)counts[r];
        recv_at[r] = (int)at;
        at += counts[r];
    }
    int rc = alltoallv_rows(packed, send_n, send_at, gathered, recv_n, recv_at, w_in, call.comm);
    if (rc != MPI_SUCCESS) {
        status = nm_mpi_failed(&call, rc, "MPI_Alltoallv of the heads");
        goto done;
    }
    /* each of this rank's heads over the whole sequence */
    nwattn_mask mask = {0};
    mask.flags = mask_flags;
    for (size_t j = 0; j < hp && call.status == NWATTN_OK; j++) {
        status = nwattn_pool(ctx, score, &mask, 1, total, total, dh, dvh, gathered + j * dh,
                             w_in, 0, gathered + hp * dh + j * dh, w_in, 0,
                             gathered + 2 * hp * dh + j * dvh, w_in, 0, pooled + j * dvh,
                             w_out ? w_out : 1, 0, NULL, 0, 0, NULL, 0);
        if (status != NWATTN_OK)
            nm_fail_core(&call, ctx, status, "nwattn_pool");
    }
    if ((status = nm_agree(&call)) != NWATTN_OK)
        goto done;
    /* back again: the counts swap roles */
    rc = alltoallv_rows(pooled, recv_n, recv_at, back, send_n, send_at, w_out ? w_out : 1,
                        call.comm);
    if (rc != MPI_SUCCESS) {
        status = nm_mpi_failed(&call, rc, "MPI_Alltoallv of the outputs");
        goto done;
    }
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < n_local; i++)
            memcpy(o + i * ldo + (size_t)r * w_out, back + ((size_t)r * n_local + i) * w_out,
                   w_out * sizeof(float));
done:
    free(counts);
    free(ints);
    free(packed);
    free(gathered);
    free(pooled);
    free(back);
    return nm_end(&call, status);
}
