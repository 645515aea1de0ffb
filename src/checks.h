/* Argument checking shared by every public entry point: one line per operand, then one call
 * that proves no output overlaps anything else. */
#ifndef NWATTN_CHECKS_H
#define NWATTN_CHECKS_H

#include "internal.h"
#include "lattice.h"

/* The most a call registers: nwattn_attention has 11 inputs of its own (sequences, weights,
 * biases), the score's bandwidths and three mask arrays, and 2 outputs. */
#define NW_MAX_OPERANDS 24

typedef struct nw_range {
    const char *name;
    uintptr_t begin, end; /* bytes [begin, end); empty when begin == end */
    nw_lattice elems;     /* the bytes of its elements (lattice.h) */
} nw_range;

/* The operands of one call, collected as they are checked. */
typedef struct nw_call {
    nwattn_context *ctx;
    size_t batch;
    size_t max_ld;       /* largest leading dimension of a float operand (BLAS integer check) */
    int n_inputs, n_outputs;
    nw_range inputs[NW_MAX_OPERANDS];
    nw_range outputs[NW_MAX_OPERANDS];
} nw_call;

void nw_call_init(nw_call *call, nwattn_context *ctx, size_t batch);

/* A batch of rows×cols float matrices at data, row pitch ld, item pitch stride.
 * Checks NULL, ld >= cols and that the addressed bytes fit in size_t. An output's stride must
 * also keep batch items apart. */
nwattn_status nw_input(nw_call *call, const char *name, const float *data, size_t rows,
                       size_t cols, size_t ld, size_t stride);
nwattn_status nw_output(nw_call *call, const char *name, const float *data, size_t rows,
                        size_t cols, size_t ld, size_t stride);

/* A flat array of count elements that no BLAS call sees (bandwidths, valid lengths). */
nwattn_status nw_input_array(nw_call *call, const char *name, const void *data, size_t elem,
                             size_t count);

/* A single (batch-less) rows×cols matrix of elem-byte elements that is an output: doubles,
 * bytes or size_t counts of the regression functions. Checks NULL, ld and overflow. */
nwattn_status nw_output_elems(nw_call *call, const char *name, const void *data, size_t elem,
                              size_t rows, size_t cols, size_t ld);

/* Fails with NWATTN_ERR_ALIASING if an output shares an element with an input or another
 * output.
 *
 * The rule: an operand is the set of its elements, data + b·stride + i·ld + j for b < batch,
 * i < rows, j < cols (in elements of its own size: floats, doubles, bytes or size_t; stride
 * ignored for batch 1, ld for one row), and two operands conflict only if some byte belongs to
 * an element of both. Spans may interleave freely: O in the spare columns of a [Q | O] buffer,
 * batch items of two operands alternating in one buffer, any padding between rows or items.
 * An in-place call (nwattn.h: the same pointer and ld, and stride when batch > 1) does not
 * register the input at all; any other layout of the same pointer shares the first element.
 *
 * The test (lattice.c) is exact and never walks elements: disjoint spans are O(1); otherwise
 * each operand is seen as rows of bytes, operands made of consecutive rows of one pitch
 * (dense batches, sliding windows) are one item, a gcd of all pitches can rule sharing out in
 * O(log), and then the items of the operand with fewer items in the other's span are paired
 * with the other's items in their span (O(batch) pairs when one side's items do not overlap).
 * A pair of items is O(log) when their row pitches are equal, or when the rows overlapping
 * each other's span cover a period of the pitches' residues; only rows of different pitches
 * that interleave cost one step per row of the operand with fewer rows there. */
nwattn_status nw_check_disjoint(const nw_call *call);

/* Whether every leading dimension fits the BLAS integer. */
int nw_call_blas_ok(const nw_call *call);

/* Validates a public score description against d, registers its bandwidths array (if used) as
 * an input of call, and copies it into *out. Call it after the operands that fix d. */
nwattn_status nw_check_score(nw_call *call, const nwattn_score *score, size_t d,
                             nw_score *out);

/* Validates a public mask (NULL: none) for batch items of m×n, registers its arrays as inputs
 * of call, and fills *out. Valid lengths are read to check they are <= n. */
nwattn_status nw_check_mask(nw_call *call, const nwattn_mask *mask, size_t m, size_t n,
                            nw_mask *out);

/* The same for a shard of keys key_offset .. key_offset+n-1 (nwattn_pool_partial): valid
 * lengths may take any value. */
nwattn_status nw_check_shard_mask(nw_call *call, const nwattn_mask *mask, size_t m, size_t n,
                                  size_t key_offset, nw_mask *out);

struct nw_pool_args;
/* Registers the pooling inputs of args (q, k, v) with call; nw_check_score, called after it,
 * registers the score's bandwidths. */
nwattn_status nw_check_pool_inputs(nw_call *call, const struct nw_pool_args *args);

/* Registers the three arrays of a partial state (batch × m rows of dv) as outputs of call, or
 * as inputs when `output` is 0. names: static strings for acc, max, sum and the state itself
 * (the ranges keep pointers to them). */
nwattn_status nw_check_state(nw_call *call, const char *const names[4],
                             const nwattn_pool_state *state, size_t m, size_t dv, int output);

#endif /* NWATTN_CHECKS_H */
