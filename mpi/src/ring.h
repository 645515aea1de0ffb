/* The ring schedule: every rank's K/V block visits every rank, double-buffered and overlapped
 * with the tile computation. Shared by ring attention and the sharded leave-one-out CV. */
#ifndef NWATTN_MPI_RING_H
#define NWATTN_MPI_RING_H

#include "reduce.h"

/* Where a rank's rows are in the sequence: up to two runs of consecutive positions. */
typedef struct nm_segment {
    size_t offset, count; /* global positions offset .. offset + count - 1 */
    size_t row;           /* the run's first local row */
} nm_segment;

typedef struct nm_layout {
    nm_segment segment[2];
    int n_segments;
    size_t rows;
} nm_layout;

/* Every rank's layout (layouts[size]) from the gathered counts; records a BAD_DIMENSION
 * failure when a ZIGZAG rank's count is not its two chunks. */
void nm_layouts(nm_call *call, nwattn_mpi_layout layout, const uint64_t *counts,
                nm_layout *layouts);

/* The work of one ring pass. */
typedef struct nm_ring {
    nwattn_context *ctx;
    const nwattn_score *score;
    unsigned mask_flags; /* CAUSAL and/or LEAVE_ONE_OUT on global positions */
    size_t d, dv;
    const nm_layout *layouts; /* size entries */
    const float *q, *k, *v;   /* this rank's rows */
    size_t ldq, ldk, ldv;
} nm_ring;

/* Collective: `state` (layouts[rank].rows × dv, allocated) receives this rank's queries'
 * partial states over every rank's keys. Allocation failures are agreed on before any block
 * moves; a failure of the core on one rank later lets the ring run to its end (the blocks keep
 * moving, nothing more is computed there) and is agreed on at the end. */
nwattn_status nm_ring_pool(nm_call *call, const nm_ring *ring, nm_state *state);

#endif
