/* Checks and signatures shared by the entry points (args.h). */
#include "args.h"

nwattn_status nm_check_output(nm_call *call, const char *name, const float *data, size_t batch,
                              size_t rows, size_t cols, size_t ld, size_t stride) {
    if (batch == 0 || rows == 0 || cols == 0)
        return NWATTN_OK;
    if (data == NULL)
        return nm_fail(call, NWATTN_ERR_NULL_POINTER, "%s is NULL", name);
    if (ld < cols)
        return nm_fail(call, NWATTN_ERR_BAD_LEADING_DIM,
                       "leading dimension of %s is %zu, smaller than its row of %zu", name, ld,
                       cols);
    if (rows - 1 > (SIZE_MAX - cols) / (ld ? ld : 1))
        return nm_fail(call, NWATTN_ERR_OVERFLOW, "%s spans more than size_t holds", name);
    const size_t span = (rows - 1) * ld + cols;
    if (batch > 1 && stride < span)
        return nm_fail(call, NWATTN_ERR_BAD_STRIDE,
                       "batch stride of %s is %zu, smaller than one item (%zu): items overlap",
                       name, stride, span);
    if (batch > 1 && (batch - 1) > (SIZE_MAX - span) / stride)
        return nm_fail(call, NWATTN_ERR_OVERFLOW, "%s spans more than size_t holds", name);
    return NWATTN_OK;
}

void nm_sign_score(nm_call *call, const nwattn_score *score, size_t d) {
    /* the same entries whatever the arguments: the agreement compares them by position */
    const nwattn_score none = {0};
    nm_signature(call, "score (NULL or not)", score != NULL, NWATTN_ERR_BAD_PARAMETER);
    if (score == NULL)
        score = &none;
    nm_signature(call, "score.kind", (uint64_t)score->kind, NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "score.scale and bandwidth (bits)",
                 nm_float_bits(score->scale) << 32 | nm_float_bits(score->bandwidth),
                 NWATTN_ERR_BAD_PARAMETER);
    nm_signature(call, "score.bandwidths (hash)",
                 score->bandwidths ? nm_hash(score->bandwidths, d * sizeof(float)) : 0,
                 NWATTN_ERR_BAD_PARAMETER);
}

void nm_shard_fix(nm_shard *shard, const float *data, size_t ld, size_t rows, size_t cols) {
    shard->data = data;
    shard->ld = ld;
    shard->dummy = 0.0f;
    if (rows == 0) {
        shard->data = &shard->dummy;
        shard->ld = cols;
    }
}
