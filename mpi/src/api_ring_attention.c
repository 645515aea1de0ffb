/* nwattn_mpi_ring_attention: checks, the ring pass (ring.c), then the core finishes each
 * rank's rows. */
#include <stdlib.h>

#include "args.h"
#include "ring.h"

nwattn_status nwattn_mpi_ring_attention(nwattn_context *ctx, MPI_Comm comm,
                                        const nwattn_score *score, unsigned mask_flags,
                                        nwattn_mpi_layout layout, size_t n_local, size_t d,
                                        size_t dv, const float *q, size_t ldq, const float *k,
                                        size_t ldk, const float *v, size_t ldv, float *o,
                                        size_t ldo, float *lse, nwattn_mpi_error *error) {
    nm_call call;
    if (nm_begin(&call, comm, error) != NWATTN_OK)
        return call.status;
    uint64_t *counts = nm_alloc(&call, (size_t)call.size, sizeof *counts, "shard sizes");
    nm_layout *layouts = nm_alloc(&call, (size_t)call.size, sizeof *layouts, "layouts");
    nwattn_status status = nm_agree(&call);
    if (status != NWATTN_OK)
        goto done;
    size_t offset, total;
    if (nm_shard_counts(&call, n_local, counts, &offset, &total) == NWATTN_OK &&
        (layout == NWATTN_MPI_LAYOUT_CONTIGUOUS || layout == NWATTN_MPI_LAYOUT_ZIGZAG))
        nm_layouts(&call, layout, counts, layouts);
    if (layout != NWATTN_MPI_LAYOUT_CONTIGUOUS && layout != NWATTN_MPI_LAYOUT_ZIGZAG)
        nm_fail(&call, NWATTN_ERR_BAD_ENUM, "unknown layout %d", (int)layout);
    if (ctx == NULL)
        nm_fail(&call, NWATTN_ERR_NULL_POINTER, "ctx is NULL");
    if (mask_flags & ~(unsigned)(NWATTN_MASK_CAUSAL | NWATTN_MASK_LEAVE_ONE_OUT))
        nm_fail(&call, NWATTN_ERR_BAD_ENUM,
                "mask_flags 0x%x: only NWATTN_MASK_CAUSAL and NWATTN_MASK_LEAVE_ONE_OUT",
                mask_flags);
    if (d == 0)
        nm_fail(&call, NWATTN_ERR_BAD_DIMENSION, "d is 0: a score needs features");
    if (n_local > 0) { /* the core checks Q when it pools; K and V are copied before that */
        if (k == NULL || v == NULL || q == NULL)
            nm_fail(&call, NWATTN_ERR_NULL_POINTER, "%s is NULL",
                    q == NULL ? "q" : k == NULL ? "k" : "v");
        else if (ldk < d || ldv < dv || ldq < d)
            nm_fail(&call, NWATTN_ERR_BAD_LEADING_DIM,
                    "a leading dimension is smaller than its row (ldq %zu, ldk %zu: d = %zu; "
                    "ldv %zu: dv = %zu)", ldq, ldk, d, ldv, dv);
    }
    nm_check_output(&call, "o", o, 1, n_local, dv, ldo, 0);
    nm_signature(&call, "d", d, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "dv", dv, NWATTN_ERR_BAD_DIMENSION);
    nm_signature(&call, "mask_flags", mask_flags, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(&call, "layout", (uint64_t)layout, NWATTN_ERR_BAD_PARAMETER);
    nm_sign_score(&call, score, d);
    nm_state state = {0};
    if (call.status == NWATTN_OK)
        nm_state_alloc(&call, &state, n_local, dv);
    if ((status = nm_agree(&call)) != NWATTN_OK)
        goto done_state;
    const nm_ring ring = {ctx, score, mask_flags, d, dv, layouts, q, k, v, ldq, ldk, ldv};
    status = nm_ring_pool(&call, &ring, &state);
    if (status == NWATTN_OK && n_local > 0) {
        const nwattn_pool_state view = nm_state_view(&state, n_local);
        status = nwattn_pool_state_finish(ctx, 1, n_local, dv, &view, o, ldo, 0, lse, 0);
        if (status != NWATTN_OK)
            nm_fail_core(&call, ctx, status, "nwattn_pool_state_finish");
    }
done_state:
    nm_state_free(&state);
done:
    free(counts);
    free(layouts);
    return nm_end(&call, status);
}
