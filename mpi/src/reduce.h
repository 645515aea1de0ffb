/* The ranks' partial states become one (nwattn_mpi_reduction). */
#ifndef NWATTN_MPI_REDUCE_H
#define NWATTN_MPI_REDUCE_H

#include "call.h"

/* A dense partial state of `rows` rows: acc rows × dv (pitch dv), max and sum rows each. */
typedef struct nm_state {
    float *acc, *max, *sum;
    size_t rows, dv;
} nm_state;

/* Allocates one (on failure records it on the call and leaves *state empty). */
void nm_state_alloc(nm_call *call, nm_state *state, size_t rows, size_t dv);
void nm_state_free(nm_state *state);

/* The core's view of rows = batch × m as batch items of m rows. */
nwattn_pool_state nm_state_view(const nm_state *state, size_t m);

/* Collective: every rank's state replaced by the merge of all ranks' states (the same bits on
 * every rank). The rows and dv must agree (nm_agree first). */
nwattn_status nm_reduce_states(nm_call *call, nwattn_mpi_reduction how, nm_state *state);

/* MPI_Allreduce in pieces whose counts fit an int. */
int nm_allreduce(void *buffer, size_t count, size_t elem_bytes, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm);

#endif
