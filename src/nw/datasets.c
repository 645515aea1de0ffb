/* The seeds' data sets: d2l's (seed 2) and the noisy sine of seed 1. */
#include <math.h>

#include "nw.h"

/* The noise-free functions, or NAN for an unknown data set (checked before). */
static double truth(nwattn_dataset dataset, double x) {
    switch (dataset) {
    case NWATTN_DATASET_D2L:
        return 2.0 * sin(x) + pow(x, 0.8);
    case NWATTN_DATASET_SINE:
        return sin(x);
    }
    return NAN;
}

static nwattn_status check_dataset(nwattn_context *ctx, nwattn_dataset dataset) {
    if (dataset != NWATTN_DATASET_D2L && dataset != NWATTN_DATASET_SINE)
        return nw_fail(ctx, NWATTN_ERR_BAD_ENUM, "unknown data set %d", (int)dataset);
    return NWATTN_OK;
}

nwattn_status nwattn_dataset_generate(nwattn_context *ctx, nwattn_dataset dataset, nwattn_rng *rng,
                                      size_t n, float *x, float *y) {
    NW_TRY(nw_begin(ctx));
    NW_TRY(check_dataset(ctx, dataset));
    if (rng == NULL)
        return nw_fail(ctx, NWATTN_ERR_NULL_POINTER, "rng is NULL");
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_output(&call, "x", x, 1, n, n > 0 ? n : 1, 0));
    NW_TRY(nw_output(&call, "y", y, 1, n, n > 0 ? n : 1, 0));
    /* The state is written too: x or y over it would change the stream while it is drawn. */
    NW_TRY(nw_output_elems(&call, "rng", rng, sizeof *rng, 1, 1, 1));
    NW_TRY(nw_check_disjoint(&call));
    const int d2l = dataset == NWATTN_DATASET_D2L;
    float *scratch = NULL;
    if (d2l && n > 1) { /* the sort's scratch, had before anything is written */
        size_t bytes;
        if (!nw_mul(n, sizeof(float), &bytes))
            return nw_fail(ctx, NWATTN_ERR_OVERFLOW, "n = %zu floats overflow size_t", n);
        void *mem;
        NW_TRY(nw_workspace(ctx, bytes, &mem));
        scratch = mem;
    }
    const double range = d2l ? 5.0 : 10.0, noise = d2l ? 0.5 : 0.2;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(range * nwattn_rng_uniform(rng));
    if (scratch != NULL) /* d2l sorts the inputs before drawing the noise */
        nw_sort_floats(n, x, scratch);
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(truth(dataset, (double)x[i]) + noise * nwattn_rng_normal(rng));
    return NWATTN_OK;
}

nwattn_status nwattn_dataset_truth(nwattn_context *ctx, nwattn_dataset dataset, size_t m,
                                   const float *x, float *f) {
    NW_TRY(nw_begin(ctx));
    NW_TRY(check_dataset(ctx, dataset));
    nw_call call;
    nw_call_init(&call, ctx, 1);
    NW_TRY(nw_input(&call, "x", x, 1, m, m > 0 ? m : 1, 0));
    NW_TRY(nw_output(&call, "f", f, 1, m, m > 0 ? m : 1, 0));
    NW_TRY(nw_check_disjoint(&call));
    NW_TRY(nw_check_finite(ctx, "x", x, 1, m, m > 0 ? m : 1));
    for (size_t i = 0; i < m; i++)
        if (dataset == NWATTN_DATASET_D2L && x[i] < 0.0f)
            return nw_fail(ctx, NWATTN_ERR_BAD_PARAMETER,
                           "x[%zu] = %g: 2 sin x + x^0.8 needs x >= 0", i, (double)x[i]);
    for (size_t i = 0; i < m; i++)
        f[i] = (float)truth(dataset, (double)x[i]);
    return NWATTN_OK;
}
