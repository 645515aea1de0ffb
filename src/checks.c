/* Argument checking: NULLs, leading dimensions, strides, overflow, aliasing, parameters. */
#include <math.h>
#include <string.h>

#include "checks.h"
#include "score/score.h"
#include "pool.h"

void nw_call_init(nw_call *call, nwattn_context *ctx, size_t batch) {
    memset(call, 0, sizeof *call);
    call->ctx = ctx;
    call->batch = batch;
}

/* Bytes spanned by the operand: ((batch-1)·stride + (rows-1)·ld + cols) · elem. */
static nwattn_status operand_range(nwattn_context *ctx, size_t batch, const char *name,
                                   const void *data, size_t elem, size_t rows, size_t cols,
                                   size_t ld, size_t stride, nw_range *range) {
    if (data == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "%s is NULL", name);
    if (ld < cols) /* ld = 0 is fine for rows of length 0: nothing is addressed */
        return nw_fail(ctx, NWATTN_ERR_BAD_LEADING_DIM,
                       "leading dimension of %s is %zu, smaller than its row of %zu", name, ld,
                       cols);
    range->name = name;
    range->begin = range->end = (uintptr_t)data;
    nw_lattice_make(&range->elems, (uintptr_t)data, elem, 0, 0, 0, 0, 0); /* empty */
    if (batch == 0 || rows == 0 || cols == 0)
        return NWATTN_OK;
    size_t items_span, rows_span, elems, bytes;
    if (!nw_mul(batch - 1, stride, &items_span) || !nw_mul(rows - 1, ld, &rows_span) ||
        !nw_add(items_span, rows_span, &elems) || !nw_add(elems, cols, &elems) ||
        !nw_mul(elems, elem, &bytes) || bytes > UINTPTR_MAX - (uintptr_t)data)
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW,
                       "%s spans more bytes than size_t holds (batch %zu, %zu×%zu, ld %zu, "
                       "stride %zu)",
                       name, batch, rows, cols, ld, stride);
    range->end = range->begin + bytes;
    nw_lattice_make(&range->elems, (uintptr_t)data, elem, batch, rows, cols, ld, stride);
    return NWATTN_OK;
}

/* Registers an input; `blas` says whether its leading dimension reaches a BLAS call. */
static nwattn_status add_input(nw_call *call, size_t batch, int blas, const char *name,
                               const void *data, size_t elem, size_t rows, size_t cols,
                               size_t ld, size_t stride) {
    if (call->n_inputs == NW_MAX_OPERANDS)
        return nw_fail(call->ctx, NWATTN_ERR_UNSUPPORTED, "internal: too many operands");
    NW_TRY(operand_range(call->ctx, batch, name, data, elem, rows, cols, ld, stride,
                         &call->inputs[call->n_inputs]));
    call->n_inputs++;
    if (blas && ld > call->max_ld)
        call->max_ld = ld;
    return NWATTN_OK;
}

nwattn_status nw_input(nw_call *call, const char *name, const float *data, size_t rows,
                       size_t cols, size_t ld, size_t stride) {
    return add_input(call, call->batch, 1, name, data, sizeof(float), rows, cols, ld, stride);
}

nwattn_status nw_input_array(nw_call *call, const char *name, const void *data, size_t elem,
                             size_t count) {
    return add_input(call, 1, 0, name, data, elem, 1, count, count == 0 ? 1 : count, 0);
}

nwattn_status nw_output(nw_call *call, const char *name, const float *data, size_t rows,
                        size_t cols, size_t ld, size_t stride) {
    if (call->n_outputs == NW_MAX_OPERANDS)
        return nw_fail(call->ctx, NWATTN_ERR_UNSUPPORTED, "internal: too many operands");
    NW_TRY(operand_range(call->ctx, call->batch, name, data, sizeof(float), rows, cols, ld,
                         stride, &call->outputs[call->n_outputs]));
    if (call->batch > 1 && rows > 0 && cols > 0) {
        /* The item must end before the next begins: (rows-1)·ld + cols <= stride. */
        size_t item = (rows - 1) * ld + cols; /* cannot overflow: the range above did not */
        if (stride < item)
            return nw_fail(call->ctx, NWATTN_ERR_BAD_STRIDE,
                           "batch stride of %s is %zu but one item spans %zu elements", name,
                           stride, item);
    }
    call->n_outputs++;
    if (ld > call->max_ld)
        call->max_ld = ld;
    return NWATTN_OK;
}

nwattn_status nw_output_elems(nw_call *call, const char *name, const void *data, size_t elem,
                              size_t rows, size_t cols, size_t ld) {
    if (call->n_outputs == NW_MAX_OPERANDS)
        return nw_fail(call->ctx, NWATTN_ERR_UNSUPPORTED, "internal: too many operands");
    NW_TRY(operand_range(call->ctx, 1, name, data, elem, rows, cols, ld, 0,
                         &call->outputs[call->n_outputs]));
    call->n_outputs++;
    return NWATTN_OK;
}

/* Whether a and b share an element (checks.h); disjoint spans are the quick answer. */
static int overlap(const nw_range *a, const nw_range *b) {
    if (a->begin == a->end || b->begin == b->end)
        return 0;
    if (!(a->begin < b->end && b->begin < a->end))
        return 0;
    return nw_lattices_share(&a->elems, &b->elems);
}

nwattn_status nw_check_disjoint(const nw_call *call) {
    for (int o = 0; o < call->n_outputs; o++) {
        const nw_range *out = &call->outputs[o];
        for (int i = 0; i < call->n_inputs; i++)
            if (overlap(out, &call->inputs[i]))
                return nw_fail(call->ctx, NWATTN_ERR_ALIASING,
                               "output %s overlaps input %s (an element in common)", out->name,
                               call->inputs[i].name);
        for (int p = 0; p < o; p++)
            if (overlap(out, &call->outputs[p]))
                return nw_fail(call->ctx, NWATTN_ERR_ALIASING,
                               "output %s overlaps output %s (an element in common)", out->name,
                               call->outputs[p].name);
    }
    return NWATTN_OK;
}

int nw_call_blas_ok(const nw_call *call) { return call->max_ld <= NW_BLAS_INT_MAX; }


nwattn_status nw_check_score(nw_call *call, const nwattn_score *score, size_t d,
                             nw_score *out) {
    nwattn_context *ctx = call->ctx;
    if (score == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "score is NULL");
    const nw_score_desc *desc = nw_score_desc_of(score->kind);
    if (desc == NULL)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown score kind %d", (int)score->kind);
    nw_score checked = {.desc = desc, .kind = score->kind, .scale = score->scale};
    NW_TRY(desc->check(call, score, d, &checked));
    *out = checked;
    return NWATTN_OK;
}

static const unsigned known_mask_flags =
    NWATTN_MASK_LEAVE_ONE_OUT | NWATTN_MASK_CAUSAL | NWATTN_MASK_LENS_PER_ROW;

static nwattn_status check_mask(nw_call *call, const nwattn_mask *mask, size_t m, size_t n,
                                size_t max_len, nw_mask *out) {
    memset(out, 0, sizeof *out);
    out->m = m;
    if (mask == NULL)
        return NWATTN_OK;
    nwattn_context *ctx = call->ctx;
    if (mask->flags & ~known_mask_flags)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown mask flag bits 0x%x",
                       mask->flags & ~known_mask_flags);
    if ((mask->flags & NWATTN_MASK_LENS_PER_ROW) && mask->valid_lens == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER,
                       "NWATTN_MASK_LENS_PER_ROW is set but valid_lens is NULL");
    out->flags = mask->flags;
    if (mask->valid_lens != NULL) {
        size_t count = call->batch;
        if ((mask->flags & NWATTN_MASK_LENS_PER_ROW) && !nw_mul(call->batch, m, &count))
            return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "batch·m valid lengths overflow size_t");
        NW_TRY(nw_input_array(call, "mask.valid_lens", mask->valid_lens, sizeof(size_t), count));
        for (size_t i = 0; i < count; i++)
            if (mask->valid_lens[i] > max_len)
                return nw_fail(ctx, NWATTN_ERR_BAD_MASK, "mask.valid_lens[%zu] = %zu exceeds n = %zu",
                               i, mask->valid_lens[i], n);
        out->valid_lens = mask->valid_lens;
    }
    if (mask->additive != NULL) {
        NW_TRY(add_input(call, call->batch, 0, "mask.additive", mask->additive, sizeof(float), m,
                         n, mask->ld_additive, mask->stride_additive));
        out->additive = mask->additive;
        out->ld_additive = mask->ld_additive;
        out->stride_additive = mask->stride_additive;
    }
    if (mask->keep != NULL) {
        NW_TRY(add_input(call, call->batch, 0, "mask.keep", mask->keep, 1, m, n, mask->ld_keep,
                         mask->stride_keep));
        out->keep = mask->keep;
        out->ld_keep = mask->ld_keep;
        out->stride_keep = mask->stride_keep;
    }
    return NWATTN_OK;
}

nwattn_status nw_check_mask(nw_call *call, const nwattn_mask *mask, size_t m, size_t n,
                            nw_mask *out) {
    return check_mask(call, mask, m, n, n, out);
}

nwattn_status nw_check_shard_mask(nw_call *call, const nwattn_mask *mask, size_t m, size_t n,
                                  size_t key_offset, nw_mask *out) {
    NW_TRY(check_mask(call, mask, m, n, SIZE_MAX, out));
    out->key_offset = key_offset;
    return NWATTN_OK;
}

nwattn_status nw_check_state(nw_call *call, const char *const names[4],
                             const nwattn_pool_state *state, size_t m, size_t dv, int output) {
    if (state == NULL)
        return nw_fail(call->ctx, NWATTN_ERR_NULL_POINTER, "%s is NULL", names[3]);
    nwattn_status (*add)(nw_call *, const char *, const float *, size_t, size_t, size_t,
                         size_t) = output ? nw_output : nw_input;
    const size_t ld_stats = m > 0 ? m : 1;
    NW_TRY(add(call, names[0], state->acc, m, dv, state->ld_acc, state->stride_acc));
    NW_TRY(add(call, names[1], state->max, 1, m, ld_stats, state->stride_stats));
    NW_TRY(add(call, names[2], state->sum, 1, m, ld_stats, state->stride_stats));
    return NWATTN_OK;
}

nwattn_status nw_check_pool_inputs(nw_call *call, const nw_pool_args *a) {
    NW_TRY(nw_input(call, "q", a->q, a->m, a->d, a->ldq, a->stride_q));
    NW_TRY(nw_input(call, "k", a->k, a->n, a->d, a->ldk, a->stride_k));
    NW_TRY(nw_input(call, "v", a->v, a->n, a->dv, a->ldv, a->stride_v));
    return NWATTN_OK;
}
