/* The ring (ring.h). Step s (0 .. p-1) computes on the block of rank (r - s) mod p while, for
 * s < p - 1, the same block goes on to rank r + 1 and the next one arrives from rank r - 1 in
 * the other buffer. The computation runs in tiles (at most TILE_ROWS queries × TILE_KEYS keys,
 * each one nwattn_pool_partial and one nwattn_pool_state_merge) with MPI_Test on both requests
 * between tiles: with few cores nothing else drives the transfer forward. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define TILE_KEYS 512
#define TILE_ROWS 2048
#define RING_TAG 7301
/* No key tile straddles a query tile's first position (tile() relies on it): the runs of two
 * ranks are disjoint, and within one run query tiles start at multiples of TILE_ROWS from the
 * run's start, key tiles at multiples of TILE_KEYS. */
_Static_assert(TILE_ROWS % TILE_KEYS == 0, "query tiles must start on key-tile boundaries");

void nm_layouts(nm_call *call, nwattn_mpi_layout layout, const uint64_t *counts,
                nm_layout *layouts) {
    size_t total = 0;
    for (int r = 0; r < call->size; r++)
        total += (size_t)counts[r];
    size_t offset = 0;
    for (int r = 0; r < call->size; r++) {
        nm_layout *l = &layouts[r];
        memset(l, 0, sizeof *l);
        l->rows = (size_t)counts[r];
        if (layout == NWATTN_MPI_LAYOUT_CONTIGUOUS) {
            l->segment[0] = (nm_segment){offset, l->rows, 0};
            l->n_segments = 1;
            offset += l->rows;
            continue;
        }
        size_t offsets[2], chunk[2];
        nwattn_mpi_zigzag_chunks(total, call->size, r, offsets, chunk);
        if (chunk[0] + chunk[1] != l->rows) {
            if (r == call->rank)
                nm_fail(call, NWATTN_ERR_BAD_DIMENSION,
                        "n_local is %zu, but ZIGZAG gives this rank chunks of %zu and %zu "
                        "positions of %zu (nwattn_mpi_zigzag_chunks)",
                        l->rows, chunk[0], chunk[1], total);
            l->rows = 0; /* the failing rank's own check reports it; nothing runs */
            continue;
        }
        l->segment[0] = (nm_segment){offsets[0], chunk[0], 0};
        l->segment[1] = (nm_segment){offsets[1], chunk[1], chunk[0]};
        l->n_segments = 2;
    }
}

nwattn_status nwattn_mpi_zigzag_chunks(size_t n_total, int ranks, int rank, size_t offsets[2],
                                       size_t counts[2]) {
    if (offsets == NULL || counts == NULL)
        return NWATTN_ERR_NULL_POINTER;
    if (ranks <= 0 || rank < 0 || rank >= ranks)
        return NWATTN_ERR_BAD_DIMENSION;
    const size_t chunks = 2 * (size_t)ranks, base = n_total / chunks, extra = n_total % chunks;
    const size_t c[2] = {(size_t)rank, chunks - 1 - (size_t)rank};
    for (int i = 0; i < 2; i++) {
        counts[i] = base + (c[i] < extra);
        offsets[i] = c[i] * base + (c[i] < extra ? c[i] : extra);
    }
    return NWATTN_OK;
}

/* ---- One tile ----------------------------------------------------------------------------- */
typedef struct ring_work {
    const nm_ring *ring;
    nm_call *call;
    nm_state *state; /* this rank's rows */
    nm_state tile;   /* one tile's state, TILE_ROWS rows */
    int broken;      /* the core failed here: compute nothing more */
} ring_work;

/* Queries at global positions q0 .. q0+qn-1 (local rows from qrow) against keys at global
 * positions k0 .. k0+kn-1 (k, v: their rows). The masks depend on key - query only, so they
 * are shifted: keys at or after q0 get key_offset k0 - q0; keys before q0 are never masked
 * (causal: before every query; leave-one-out: no query there). No tile holds keys on both
 * sides of q0 (see TILE_ROWS). */
static void tile(ring_work *w, size_t q0, size_t qn, size_t qrow, size_t k0, size_t kn,
                 const float *k, const float *v) {
    const nm_ring *r = w->ring;
    if (w->broken || qn == 0 || kn == 0)
        return;
    if ((r->mask_flags & NWATTN_MASK_CAUSAL) && k0 > q0 + qn - 1)
        return; /* every key is after every query */
    nwattn_mask mask = {0};
    size_t key_offset = 0;
    if (k0 >= q0) {
        mask.flags = r->mask_flags;
        key_offset = k0 - q0;
    }
    const nwattn_pool_state tile_view = nm_state_view(&w->tile, qn);
    nwattn_status status = nwattn_pool_partial(r->ctx, r->score, &mask, 1, qn, kn, r->d, r->dv,
                                               key_offset, r->q + qrow * r->ldq, r->ldq, 0, k,
                                               r->d, 0, v, r->dv, 0, &tile_view);
    if (status == NWATTN_OK) {
        const nm_state *s = w->state;
        const nwattn_pool_state into = {s->acc + qrow * s->dv, s->dv, 0, s->max + qrow,
                                        s->sum + qrow, 0};
        status = nwattn_pool_state_merge(r->ctx, 1, qn, r->dv, &into, &tile_view);
        if (status != NWATTN_OK)
            nm_fail_core(w->call, r->ctx, status, "nwattn_pool_state_merge");
    } else {
        nm_fail_core(w->call, r->ctx, status, "nwattn_pool_partial");
    }
    w->broken = status != NWATTN_OK;
}

/* Drives the outstanding transfers (MPI_Test), remembering an MPI failure. */
static void progress(ring_work *w, MPI_Request *requests, int count) {
    for (int i = 0; i < count; i++) {
        if (requests[i] == MPI_REQUEST_NULL)
            continue;
        int done = 0;
        int rc = MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            nm_mpi_failed(w->call, rc, "MPI_Test on the ring");
            w->broken = 1;
        }
    }
}

/* The block of rank `src` (its K rows then its V rows, packed) against this rank's queries,
 * tile by tile, with progress between tiles. */
static void compute_block(ring_work *w, const nm_layout *src, const float *block,
                          MPI_Request *requests, int n_requests) {
    const nm_ring *r = w->ring;
    const nm_layout *mine = &r->layouts[w->call->rank];
    const float *kb = block, *vb = block + src->rows * r->d;
    for (int qs = 0; qs < mine->n_segments; qs++) {
        const nm_segment *q = &mine->segment[qs];
        for (size_t i0 = 0; i0 < q->count; i0 += TILE_ROWS) {
            const size_t qn = q->count - i0 < TILE_ROWS ? q->count - i0 : TILE_ROWS;
            const size_t q0 = q->offset + i0;
            for (int ks = 0; ks < src->n_segments; ks++) {
                const nm_segment *key = &src->segment[ks];
                for (size_t j0 = 0; j0 < key->count;) {
                    const size_t kn = key->count - j0 < TILE_KEYS ? key->count - j0
                                                                  : TILE_KEYS;
                    const size_t k0 = key->offset + j0;
                    const size_t row = key->row + j0;
                    tile(w, q0, qn, q->row + i0, k0, kn, kb + row * r->d, vb + row * r->dv);
                    progress(w, requests, n_requests);
                    j0 += kn;
                }
            }
        }
    }
}

nwattn_status nm_ring_pool(nm_call *call, const nm_ring *ring, nm_state *state) {
    const int p = call->size, me = call->rank;
    const size_t width = ring->d + ring->dv;
    size_t cap = 0;
    for (int r = 0; r < p; r++)
        if (ring->layouts[r].rows > cap)
            cap = ring->layouts[r].rows;
    if (cap > INT_MAX || width > INT_MAX || (cap && width > SIZE_MAX / cap))
        nm_fail(call, NWATTN_ERR_TOO_LARGE,
                "a block of %zu rows of %zu floats is too large for one MPI message", cap,
                width);
    ring_work w = {ring, call, state, {0}, 0};
    float *buffers = NULL;
    if (call->status == NWATTN_OK) {
        buffers = nm_alloc(call, 2 * cap, width * sizeof(float), "ring buffers");
        nm_state_alloc(call, &w.tile, TILE_ROWS, ring->dv);
    }
    nwattn_status status = nm_agree(call);
    MPI_Datatype row_type = MPI_DATATYPE_NULL;
    if (status == NWATTN_OK) {
        int rc = MPI_Type_contiguous((int)width, MPI_FLOAT, &row_type);
        if (rc == MPI_SUCCESS)
            rc = MPI_Type_commit(&row_type);
        if (rc != MPI_SUCCESS)
            nm_mpi_failed(call, rc, "MPI_Type_contiguous");
        status = nm_agree(call);
    }
    if (status != NWATTN_OK) {
        free(buffers);
        nm_state_free(&w.tile);
        if (row_type != MPI_DATATYPE_NULL)
            MPI_Type_free(&row_type);
        return status;
    }
    /* This rank's rows start empty; its own block is packed into the first buffer. */
    const nm_layout *own = &ring->layouts[me];
    for (size_t i = 0; i < own->rows; i++) {
        state->max[i] = -INFINITY;
        state->sum[i] = 0.0f;
    }
    memset(state->acc, 0, own->rows * ring->dv * sizeof(float));
    float *block[2] = {buffers, buffers + cap * width};
    for (size_t i = 0; i < own->rows; i++) {
        memcpy(block[0] + i * ring->d, ring->k + i * ring->ldk, ring->d * sizeof(float));
        memcpy(block[0] + own->rows * ring->d + i * ring->dv, ring->v + i * ring->ldv,
               ring->dv * sizeof(float));
    }
    const int right = (me + 1) % p, left = (me + p - 1) % p;
    for (int s = 0; s < p; s++) {
        const int src = (me - s + p) % p, next = (me - s - 1 + 2 * p) % p;
        MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int rc = MPI_SUCCESS;
        if (s < p - 1) {
            rc = MPI_Irecv(block[(s + 1) % 2], (int)ring->layouts[next].rows, row_type, left,
                           RING_TAG, call->comm, &requests[0]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Isend(block[s % 2], (int)ring->layouts[src].rows, row_type, right,
                               RING_TAG, call->comm, &requests[1]);
        }
        if (rc != MPI_SUCCESS) {
            nm_mpi_failed(call, rc, "posting the ring transfers");
            w.broken = 1;
        }
        compute_block(&w, &ring->layouts[src], block[s % 2], requests, 2);
        rc = MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            nm_mpi_failed(call, rc, "MPI_Waitall on the ring");
            w.broken = 1;
        }
    }
    MPI_Type_free(&row_type);
    free(buffers);
    nm_state_free(&w.tile);
    return nm_agree(call);
}
