/* nwattn_positional_encoding: d2l's sinusoids, evaluated in double. */
#include <math.h>

#include "checks.h"

nwattn_status nwattn_positional_encoding(nwattn_context *ctx, size_t t, size_t d, size_t first,
                                         float *p, size_t ldp) {
    NW_TRY(nw_begin(ctx));
    if (d == 0)
        return nw_fail(ctx, NWATTN_ERR_BAD_DIMENSION, "d is 0: an encoding needs columns");
    size_t last;
    if (t > 0 && !nw_add(first, t - 1, &last))
        return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "first + t - 1 overflows size_t");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_output(&call, "p", p, t, d, ldp, 0));
    for (size_t c = 0; c < d; c += 2) {
        /* 10000^(-2j/d) with 2j = c, shared by the sine column c and the cosine column c+1. */
        const double frequency = pow(10000.0, -(double)c / (double)d);
        for (size_t i = 0; i < t; i++) {
            const double angle = (double)(first + i) * frequency;
            p[i * ldp + c] = (float)sin(angle);
            if (c + 1 < d)
                p[i * ldp + c + 1] = (float)cos(angle);
        }
    }
    return NWATTN_OK;
}
