/* The collective call (call.h). The agreement is one MPI_Allreduce(MPI_MAX) over
 *   [size - failing rank (0 if fine), v_0 .. v_k, ~v_0 .. ~v_k]
 * whose maxima give the lowest failing rank and, for every replicated value, its largest and
 * (through ~) smallest value over the ranks; then one MPI_Bcast of the failing rank's message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"

static void set_message(nm_call *call, const char *text) {
    snprintf(call->message, sizeof call->message, "%s", text);
}

nwattn_status nm_begin(nm_call *call, MPI_Comm comm, nwattn_mpi_error *error) {
    memset(call, 0, sizeof *call);
    call->comm = MPI_COMM_NULL;
    call->error = error;
    call->failed_rank = -1;
    int up = 0, down = 0;
    if (MPI_Initialized(&up) != MPI_SUCCESS || MPI_Finalized(&down) != MPI_SUCCESS || !up ||
        down) {
        call->rank = -1;
        nm_fail(call, NWATTN_ERR_UNSUPPORTED, "MPI is not initialised, or already finalised");
        return nm_end(call, call->status);
    }
    if (comm == MPI_COMM_NULL) {
        call->rank = -1;
        nm_fail(call, NWATTN_ERR_NULL_POINTER, "comm is MPI_COMM_NULL");
        return nm_end(call, call->status);
    }
    /* An intercommunicator's collectives combine the other group's data: not what any call
     * here means. Every rank of one sees the same, so failing alone is failing together. */
    int inter = 0;
    if (MPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter) {
        call->rank = -1;
        nm_fail(call, NWATTN_ERR_UNSUPPORTED, "comm is an intercommunicator");
        return nm_end(call, call->status);
    }
    /* The duplication itself must not invoke a fatal error handler: the caller's handler is
     * set to MPI_ERRORS_RETURN for the one call and put back. */
    MPI_Errhandler saved;
    int rc = MPI_Comm_get_errhandler(comm, &saved);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        rc = MPI_Comm_dup(comm, &call->comm);
        MPI_Comm_set_errhandler(comm, saved);
        MPI_Errhandler_free(&saved);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(call->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(call->comm, &call->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(call->comm, &call->size);
    if (rc != MPI_SUCCESS) {
        call->rank = -1;
        nm_mpi_failed(call, rc, "duplicating the communicator");
        return nm_end(call, call->status);
    }
    return NWATTN_OK;
}

nwattn_status nm_fail(nm_call *call, nwattn_status status, const char *format, ...) {
    if (call->status != NWATTN_OK)
        return call->status;
    call->status = status;
    va_list args;
    va_start(args, format);
    vsnprintf(call->message, sizeof call->message, format, args);
    va_end(args);
    return status;
}

nwattn_status nm_fail_core(nm_call *call, nwattn_context *ctx, nwattn_status status,
                           const char *what) {
    return nm_fail(call, status, "%s: %s", what, nwattn_context_last_error(ctx));
}

nwattn_status nm_mpi_failed(nm_call *call, int code, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    return nm_fail(call, NWATTN_MPI_ERR_COMM, "%s: %s", what, text);
}

void nm_signature(nm_call *call, const char *name, uint64_t value, nwattn_status status) {
    if (call->n_signature == NM_MAX_SIGNATURE) /* a programming error: caught by the tests */
        return;
    call->signature[call->n_signature] = value;
    call->signature_name[call->n_signature] = name;
    call->signature_status[call->n_signature] = status;
    call->n_signature++;
}

uint64_t nm_float_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

uint64_t nm_hash(const void *data, size_t bytes) { /* FNV-1a, 64 bits */
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

uint64_t nm_hash_matrix(const float *data, size_t batch, size_t rows, size_t cols, size_t ld,
                        size_t stride) {
    if (data == NULL)
        return 0;
    uint64_t h = 1469598103934665603ull;
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < rows; i++) {
            h ^= nm_hash(data + b * stride + i * ld, cols * sizeof(float));
            h *= 1099511628211ull;
        }
    return h;
}

nwattn_status nm_agree(nm_call *call) {
    /* A failure every rank has agreed on stays agreed: no rank communicates about it again. */
    if (call->agreed)
        return call->status;
    /* Always the full length, so that ranks whose signatures differ in length (a bug, or
     * a caller's NULL on one rank) still make one matching call and see a disagreement. */
    const size_t k = NM_MAX_SIGNATURE;
    uint64_t words[1 + 2 * NM_MAX_SIGNATURE] = {0};
    words[0] = call->status == NWATTN_OK ? 0 : (uint64_t)(call->size - call->rank);
    for (size_t i = 0; i < k; i++) {
        const uint64_t value = i < call->n_signature ? call->signature[i] : 0;
        words[1 + i] = value;
        words[1 + k + i] = ~value;
    }
    const size_t n_signature = call->n_signature;
    call->n_signature = 0;
    int rc = MPI_Allreduce(MPI_IN_PLACE, words, (int)(1 + 2 * k), MPI_UINT64_T, MPI_MAX,
                           call->comm);
    if (rc != MPI_SUCCESS)
        return nm_mpi_failed(call, rc, "agreeing on the status");
    if (words[0] != 0) { /* the lowest failing rank tells everyone what went wrong */
        int root = call->size - (int)words[0];
        int packet[2] = {(int)call->status, root};
        char text[NWATTN_MPI_MESSAGE_BYTES];
        memcpy(text, call->message, sizeof text);
        rc = MPI_Bcast(packet, 2, MPI_INT, root, call->comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Bcast(text, (int)sizeof text, MPI_CHAR, root, call->comm);
        if (rc != MPI_SUCCESS) {
            call->status = NWATTN_OK;
            return nm_mpi_failed(call, rc, "broadcasting the error");
        }
        text[sizeof text - 1] = '\0';
        call->status = (nwattn_status)packet[0];
        snprintf(call->message, sizeof call->message, "rank %d: %s", root, text);
        call->failed_rank = root;
        call->agreed = 1;
        return call->status;
    }
    for (size_t i = 0; i < k; i++) {
        uint64_t largest = words[1 + i], smallest = ~words[1 + k + i];
        if (largest != smallest) {
            const int known = i < n_signature;
            call->status = known ? call->signature_status[i] : NWATTN_ERR_BAD_PARAMETER;
            char text[NWATTN_MPI_MESSAGE_BYTES];
            snprintf(text, sizeof text, "the ranks disagree on %s (one of them passes %llu, "
                     "another %llu): it must be the same on every rank",
                     known ? call->signature_name[i] : "the arguments given",
                     (unsigned long long)smallest,
                     (unsigned long long)largest);
            set_message(call, text);
            call->failed_rank = call->size; /* not one rank's fault */
            call->agreed = 1;
            return call->status;
        }
    }
    return NWATTN_OK;
}

nwattn_status nm_end(nm_call *call, nwattn_status status) {
    if (call->comm != MPI_COMM_NULL)
        MPI_Comm_free(&call->comm);
    if (call->error) {
        call->error->status = status;
        call->error->rank = status == NWATTN_OK ? -1
                            : call->failed_rank >= 0 ? call->failed_rank
                                                     : call->rank;
        snprintf(call->error->message, sizeof call->error->message, "%s",
                 status == NWATTN_OK ? "" : call->message);
    }
    return status;
}

void *nm_alloc(nm_call *call, size_t count, size_t elem, const char *what) {
    if (count == 0)
        count = 1;
    if (count > SIZE_MAX / elem) {
        nm_fail(call, NWATTN_ERR_OVERFLOW, "%s: %zu elements of %zu bytes overflow size_t",
                what, count, elem);
        return NULL;
    }
    void *p = malloc(count * elem);
    if (p == NULL)
        nm_fail(call, NWATTN_ERR_ALLOC, "%s: out of memory (%zu bytes)", what, count * elem);
    return p;
}

nwattn_status nm_shard_counts(nm_call *call, size_t n_local, uint64_t *counts, size_t *offset,
                              size_t *total) {
    uint64_t mine = n_local;
    int rc = MPI_Allgather(&mine, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, call->comm);
    if (rc != MPI_SUCCESS)
        return nm_mpi_failed(call, rc, "gathering the shard sizes");
    uint64_t sum = 0;
    for (int r = 0; r < call->size; r++) {
        if (r == call->rank)
            *offset = (size_t)sum;
        if (counts[r] > SIZE_MAX - sum)
            return nm_fail(call, NWATTN_ERR_OVERFLOW, "the ranks' key counts overflow size_t");
        sum += counts[r];
    }
    *total = (size_t)sum;
    return NWATTN_OK;
}
