/* nwattn_mpi_pool_sharded_keys: each rank pools its key shard into a partial state (the core's
 * nwattn_pool_partial at its global key offset), the states are reduced over the ranks, and
 * every rank finishes the merged state into O and lse. */
#include <stdlib.h>

#include "args.h"
#include "reduce.h"

/* Replicated mask parts: flags, whether each array is given, and the valid lengths' values
 * (which must be <= the global n). */
static void sign_mask(nm_call *call, const nwattn_mask *mask, size_t batch, size_t m,
                      size_t n_total) {
    unsigned flags = mask ? mask->flags : 0;
    const size_t *lens = mask ? mask->valid_lens : NULL;
    nm_signature(call, "mask.flags", flags, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "mask arrays given (valid_lens, additive, keep)",
                 (uint64_t)(lens != NULL) | (uint64_t)(mask && mask->additive) << 1 |
                     (uint64_t)(mask && mask->keep) << 2,
                 NWATTN_ERR_BAD_PARAMETER);
    size_t count = lens == NULL ? 0 : (flags & NWATTN_MASK_LENS_PER_ROW) ? batch * m : batch;
    nm_signature(call, "mask.valid_lens (hash)", nm_hash(lens, count * sizeof *lens),
                 NWATTN_ERR_BAD_PARAMETER);
    for (size_t i = 0; i < count; i++)
        if (lens[i] > n_total) {
            nm_fail(call, NWATTN_ERR_BAD_MASK,
                    "valid_lens[%zu] is %zu, larger than the global n = %zu", i, lens[i],
                    n_total);
            return;
        }
}

nwattn_status nwattn_mpi_pool_sharded_keys(
    nwattn_context *ctx, MPI_Comm comm, nwattn_mpi_reduction reduction,
    const nwattn_score *score, const nwattn_mask *mask, size_t batch, size_t m,
    size_t n_local, size_t d, size_t dv, const float *q, size_t ldq, size_t stride_q,
    const float *k, size_t ldk, size_t stride_k, const float *v, size_t ldv, size_t stride_v,
    float *o, size_t ldo, size_t stride_o, float *lse, size_t stride_lse,
    nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    nwattn_status status;
    uint64_t *counts = nm_alloc(&call, (size_t)call.size, sizeof *counts, "shard sizes");
    if ((status = nm_agree(&call)) != NWATTN_OK) {
        free(counts);
        return nm_end(&call, status);
    }
    size_t offset = 0, n_total = 0;
    nm_shard_counts(&call, n_local, counts, &offset, &n_total);
    free(counts);

    /* Local checks; the core checks the inputs themselves in nwattn_pool_partial. */
    if (ctx == NULL)
        nm_fail(&call, NWATTN_ERR_NULL_POINTER, "ctx is NULL");
    if (reduction != NWATTN_MPI_REDUCTION_AUTO && reduction != NWATTN_MPI_REDUCTION_USER_OP &&
        reduction != NWATTN_MPI_REDUCTION_MAX_THEN_SUM)
        nm_fail(&call, NWATTN_ERR_BAD_ENUM, "unknown reduction %d", (int)reduction);
    nm_check_output(&call, "o", o, batch, m, dv, ldo, stride_o);
    if (lse != NULL && batch > 1 && stride_lse < m)
        nm_fail(&call, NWATTN_ERR_BAD_STRIDE, "stride_lse is %zu, smaller than m = %zu",
                stride_lse, m);
    nm_signature(&call, "batch", batch, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "m", m, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "d", d, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "dv", dv, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "reduction", (uint64_t)reduction, NWATTN_ERR_BAD_PARAMETER);
    nm_sign_score(&call, score, d);
    sign_mask(&call, mask, batch, m, n_total);
    /* replicated queries that differ would give every rank a different wrong answer; hashing
     * them costs m·d of the m·n·d the pooling does. (q is checked by the core below.) */
    nm_signature(&call, "q (a hash of its values)",
                 call.status == NWATTN_OK && ldq >= d
                     ? nm_hash_matrix(q, batch, m, d, ldq, batch > 1 ? stride_q : 0)
                     : 0,
                 NWATTN_ERR_BAD_PARAMETER);

    nm_state state = {0};
    size_t rows = 0;
    if (call.status == NWATTN_OK) {
        if (m != 0 && batch > SIZE_MAX / m)
            nm_fail(&call, NWATTN_ERR_OVERFLOW, "batch × m overflows size_t");
        else
            rows = batch * m;
    }
    if (call.status == NWATTN_OK)
        nm_state_alloc(&call, &state, rows, dv);
    if (call.status == NWATTN_OK) {
        nm_shard ks, vs;
        nm_shard_fix(&ks, k, ldk, n_local, d);
        nm_shard_fix(&vs, v, ldv, n_local, dv);
        const nwattn_pool_state view = nm_state_view(&state, m);
        status = nwattn_pool_partial(ctx, score, mask, batch, m, n_local, d, dv, offset, q, ldq,
                                     stride_q, ks.data, ks.ld, stride_k, vs.data, vs.ld,
                                     stride_v, &view);
        if (status != NWATTN_OK)
            nm_fail_core(&call, ctx, status, "nwattn_pool_partial");
    }
    if ((status = nm_agree(&call)) == NWATTN_OK)
        status = nm_reduce_states(&call, reduction, &state);
    if (status == NWATTN_OK && batch != 0 && m != 0) {
        const nwattn_pool_state view = nm_state_view(&state, m);
        status = nwattn_pool_state_finish(ctx, batch, m, dv, &view, o, ldo, stride_o, lse,
                                          stride_lse);
        if (status != NWATTN_OK) /* checked above: cannot happen; reported all the same */
            nm_fail_core(&call, ctx, status, "nwattn_pool_state_finish");
    }
    nm_state_free(&state);
    return nm_end(&call, status);
}
