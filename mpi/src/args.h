/* Checks and signatures shared by the entry points. */
#ifndef NWATTN_MPI_ARGS_H
#define NWATTN_MPI_ARGS_H

#include "call.h"

/* An output batch of rows × cols floats: NULL, leading dimension, item overlap (nwattn.h's
 * rules), checked before any rank writes anything. */
nwattn_status nm_check_output(nm_call *call, const char *name, const float *data, size_t batch,
                              size_t rows, size_t cols, size_t ld, size_t stride);

/* The score's replicated parts (kind, scale or bandwidth bits, per-dimension bandwidths). */
void nm_sign_score(nm_call *call, const nwattn_score *score, size_t d);

/* A shard with no rows may pass NULL: the core gets a harmless pointer and leading dimension. */
typedef struct nm_shard {
    const float *data;
    size_t ld;
    float dummy;
} nm_shard;
void nm_shard_fix(nm_shard *shard, const float *data, size_t ld, size_t rows, size_t cols);

#endif
