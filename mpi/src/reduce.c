/* Reductions of partial states (docs/mpi.md, "Reductions").
 * USER_OP: rows packed as (max, sum, acc[dv]) floats, one MPI_Allreduce whose operation is the
 *   core's nwattn_pool_state_merge on those rows.
 * MAX_THEN_SUM: the merge rule for p states at once. M = max over ranks of max (MPI_MAX);
 *   each rank weighs its state by a = exp(max - M) in double (a = 1 when max == M, which
 *   covers M = +INFINITY; a = 0 for an empty state), MPI_SUM adds (a·sum, a·acc) in double,
 *   and the float state (M, sum, acc) is finished by the core. A NaN anywhere reaches the sum. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

void nm_state_alloc(nm_call *call, nm_state *state, size_t rows, size_t dv) {
    memset(state, 0, sizeof *state);
    size_t cells;
    if (dv != 0 && rows > SIZE_MAX / dv) {
        nm_fail(call, NWATTN_ERR_OVERFLOW, "partial state of %zu × %zu overflows size_t", rows,
                dv);
        return;
    }
    cells = rows * dv;
    float *acc = nm_alloc(call, cells, sizeof(float), "partial state");
    float *stats = nm_alloc(call, rows, 2 * sizeof(float), "partial state");
    if (acc == NULL || stats == NULL) {
        free(acc);
        free(stats);
        return;
    }
    *state = (nm_state){acc, stats, stats + rows, rows, dv};
}

void nm_state_free(nm_state *state) {
    free(state->acc);
    free(state->max);
    memset(state, 0, sizeof *state);
}

nwattn_pool_state nm_state_view(const nm_state *state, size_t m) {
    return (nwattn_pool_state){state->acc, state->dv, m * state->dv, state->max, state->sum, m};
}

int nm_allreduce(void *buffer, size_t count, size_t elem_bytes, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm) {
    const size_t piece = (size_t)1 << 30;
    char *at = buffer;
    do { /* count == 0 still takes part once, as every rank does */
        size_t now = count < piece ? count : piece;
        int rc = MPI_Allreduce(MPI_IN_PLACE, at, (int)now, type, op, comm);
        if (rc != MPI_SUCCESS)
            return rc;
        at += now * elem_bytes;
        count -= now;
    } while (count > 0);
    return MPI_SUCCESS;
}

/* ---- USER_OP ------------------------------------------------------------------------------ */
/* One element is a packed row (max, sum, acc[dv]); dv is read from the datatype's size. The
 * merge needs a context: one is made per invocation (a few hundred bytes). If that fails the
 * rows become NaN, which the caller sees as a NaN state on every rank (and reports). */
static void merge_rows(void *in, void *inout, int *len, MPI_Datatype *type) {
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    const size_t pitch = (size_t)bytes / sizeof(float), dv = pitch - 2, rows = (size_t)*len;
    float *from = in, *into = inout;
    nwattn_context *ctx = NULL;
    if (nwattn_context_create(&ctx) != NWATTN_OK) {
        for (size_t r = 0; r < rows; r++)
            into[r * pitch] = into[r * pitch + 1] = NAN;
        return;
    }
    /* rows as batch items of one row each: stats and acc both at pitch `pitch` */
    const nwattn_pool_state a = {into + 2, dv, pitch, into, into + 1, pitch};
    const nwattn_pool_state b = {from + 2, dv, pitch, from, from + 1, pitch};
    nwattn_pool_state_merge(ctx, rows, 1, dv, &a, &b);
    nwattn_context_destroy(ctx);
}

static nwattn_status reduce_user_op(nm_call *call, nm_state *state) {
    const size_t rows = state->rows, dv = state->dv, pitch = dv + 2;
    if (pitch > INT_MAX / sizeof(float))
        return nm_fail(call, NWATTN_ERR_TOO_LARGE, "dv %zu is too large for USER_OP", dv);
    float *packed = nm_alloc(call, rows, pitch * sizeof(float), "packed states");
    /* Every rank must know whether every other could allocate before communicating. */
    nwattn_status status = nm_agree(call);
    if (status != NWATTN_OK) {
        free(packed);
        return status;
    }
    for (size_t r = 0; r < rows; r++) {
        packed[r * pitch] = state->max[r];
        packed[r * pitch + 1] = state->sum[r];
        memcpy(packed + r * pitch + 2, state->acc + r * dv, dv * sizeof(float));
    }
    MPI_Datatype row_type;
    MPI_Op op;
    int rc = MPI_Type_contiguous((int)pitch, MPI_FLOAT, &row_type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&row_type);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Op_create(merge_rows, 1, &op);
        if (rc == MPI_SUCCESS) {
            rc = nm_allreduce(packed, rows, pitch * sizeof(float), row_type, op, call->comm);
            MPI_Op_free(&op);
        }
        MPI_Type_free(&row_type);
    }
    if (rc != MPI_SUCCESS) {
        free(packed);
        return nm_mpi_failed(call, rc, "MPI_Allreduce of the partial states");
    }
    for (size_t r = 0; r < rows; r++) {
        state->max[r] = packed[r * pitch];
        state->sum[r] = packed[r * pitch + 1];
        memcpy(state->acc + r * dv, packed + r * pitch + 2, dv * sizeof(float));
    }
    free(packed);
    return NWATTN_OK;
}

/* ---- MAX_THEN_SUM ------------------------------------------------------------------------- */
static nwattn_status reduce_max_then_sum(nm_call *call, nm_state *state) {
    const size_t rows = state->rows, dv = state->dv, pitch = dv + 1;
    float *global_max = nm_alloc(call, rows, sizeof(float), "row maxima");
    double *sums = NULL;
    if (rows > SIZE_MAX / sizeof(double) / pitch)
        nm_fail(call, NWATTN_ERR_OVERFLOW, "the sums of %zu rows overflow size_t", rows);
    else
        sums = nm_alloc(call, rows * pitch, sizeof(double), "row sums");
    nwattn_status status = nm_agree(call);
    if (status != NWATTN_OK) {
        free(global_max);
        free(sums);
        return status;
    }
    memcpy(global_max, state->max, rows * sizeof(float));
    int rc = nm_allreduce(global_max, rows, sizeof(float), MPI_FLOAT, MPI_MAX, call->comm);
    if (rc == MPI_SUCCESS) {
        for (size_t r = 0; r < rows; r++) {
            const double mine = state->max[r], top = global_max[r];
            double a = state->sum[r] == 0.0f ? 0.0 : mine == top ? 1.0 : exp(mine - top);
            if (isnan(state->sum[r]) || isnan(state->max[r]))
                a = NAN; /* a NaN row stays NaN, whatever MPI_MAX made of it */
            sums[r * pitch] = a == 0.0 ? 0.0 : a * (double)state->sum[r];
            for (size_t c = 0; c < dv; c++)
                sums[r * pitch + 1 + c] = a == 0.0 ? 0.0 : a * (double)state->acc[r * dv + c];
        }
        rc = nm_allreduce(sums, rows * pitch, sizeof(double), MPI_DOUBLE, MPI_SUM, call->comm);
    }
    if (rc != MPI_SUCCESS) {
        free(global_max);
        free(sums);
        return nm_mpi_failed(call, rc, "MPI_Allreduce of the partial states");
    }
    for (size_t r = 0; r < rows; r++) {
        const double total = sums[r * pitch];
        state->sum[r] = (float)total;
        state->max[r] = total == 0.0 ? -INFINITY : isnan(total) ? NAN : global_max[r];
        for (size_t c = 0; c < dv; c++)
            state->acc[r * dv + c] = (float)sums[r * pitch + 1 + c];
    }
    free(global_max);
    free(sums);
    return NWATTN_OK;
}

nwattn_status nm_reduce_states(nm_call *call, nwattn_mpi_reduction how, nm_state *state) {
    /* AUTO is USER_OP: one collective on float rows (half MAX_THEN_SUM's bytes) measured
     * faster here (docs/mpi.md, "Reductions"). */
    if (how == NWATTN_MPI_REDUCTION_MAX_THEN_SUM)
        return reduce_max_then_sum(call, state);
    return reduce_user_op(call, state);
}
