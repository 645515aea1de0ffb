/* One collective call: a private duplicate of the caller's communicator, local failures, the
 * agreement that turns them (and replicated arguments that differ) into one status and one
 * message on every rank. */
#ifndef NWATTN_MPI_CALL_H
#define NWATTN_MPI_CALL_H

#include <stdint.h>

#include "nwattn_mpi.h"

/* Replicated values a call compares across ranks (shapes, flags, float bits, hashes). */
#define NM_MAX_SIGNATURE 24

typedef struct nm_call {
    MPI_Comm comm;        /* the duplicate (MPI_COMM_NULL before nm_begin succeeded) */
    int rank, size;
    nwattn_status status; /* this rank's first failure, NWATTN_OK if none */
    char message[NWATTN_MPI_MESSAGE_BYTES];
    nwattn_mpi_error *error; /* the caller's, or NULL */
    int agreed;              /* status is a failure every rank has agreed on */
    int failed_rank;         /* set by nm_agree: the failing rank, or size on disagreement */
    size_t n_signature;
    uint64_t signature[NM_MAX_SIGNATURE];
    nwattn_status signature_status[NM_MAX_SIGNATURE];
    const char *signature_name[NM_MAX_SIGNATURE];
} nm_call;

/* Duplicates comm (collective). A NULL or unusable communicator, or MPI not running, fails
 * here on this rank alone: there is nobody to agree with. */
nwattn_status nm_begin(nm_call *call, MPI_Comm comm, nwattn_mpi_error *error);

/* Records this rank's failure (the first one counts) and returns the status. */
nwattn_status nm_fail(nm_call *call, nwattn_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Records a core call's failure with the context's message. */
nwattn_status nm_fail_core(nm_call *call, nwattn_context *ctx, nwattn_status status,
                           const char *what);

/* Adds a replicated value; `status` is what a disagreement fails with. */
void nm_signature(nm_call *call, const char *name, uint64_t value, nwattn_status status);
uint64_t nm_float_bits(float value);
uint64_t nm_hash(const void *data, size_t bytes);
/* The hash of a batch of rows × cols floats with pitches (0 for NULL or empty). */
uint64_t nm_hash_matrix(const float *data, size_t batch, size_t rows, size_t cols, size_t ld,
                        size_t stride);

/* Collective: combines every rank's status and signature. Returns NWATTN_OK on every rank, or
 * the same failure on every rank (the lowest failing rank's, or the first signature entry
 * that differs). Clears the signature. */
nwattn_status nm_agree(nm_call *call);

/* A failed MPI call: records NWATTN_MPI_ERR_COMM with MPI's message. */
nwattn_status nm_mpi_failed(nm_call *call, int code, const char *what);

/* Frees the duplicate and fills the caller's error. Returns status. */
nwattn_status nm_end(nm_call *call, nwattn_status status);

/* Allocation through the context-free C allocator, failures recorded on the call. */
void *nm_alloc(nm_call *call, size_t count, size_t elem, const char *what);

/* Every rank's n (allgathered in rank order) into counts[size]; offset and total of this
 * rank. Collective. */
nwattn_status nm_shard_counts(nm_call *call, size_t n_local, uint64_t *counts,
                              size_t *offset, size_t *total);

#endif
