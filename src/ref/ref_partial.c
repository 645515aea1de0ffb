/* Reference partial states: for every row, masked scores in double, their maximum M, the sum
 * L = sum_j exp(s_j - M) and the accumulator A = sum_j exp(s_j - M) v_j, with the rules of
 * docs/numerics.md, "The softmax row contract" and "Partial states and merging" (a live NaN,
 * the +inf limit, shifts beyond the float range). */
#include <float.h>
#include <math.h>

#include "mask.h"
#include "pool.h"
#include "ref_kernels.h"

/* Scratch: n masked scores and dv accumulator entries, in double. */
size_t nw_ref_partial_workspace(const nw_pool_args *a, size_t threads) {
    (void)threads;
    size_t count, bytes;
    if (!nw_add(a->n, a->dv, &count) || !nw_mul(count, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

static void partial_row(const nw_pool_args *a, size_t b, size_t h, size_t i, double *values,
                        double *acc) {
    const nw_mask_row row = nw_mask_row_get(&a->mask, b, i, a->n);
    const float *q = NW_ITEM(a, q, b, h) + i * a->ldq;
    const float *k = NW_ITEM(a, k, b, h);
    const float *v = NW_ITEM(a, v, b, h);
    size_t live = 0, pos_inf = 0;
    int nan = 0;
    double max = -INFINITY;
    for (size_t j = 0; j < a->n; j++) {
        double x = -INFINITY;
        if (j < row.limit && !nw_mask_row_drops(&row, j)) {
            const double add = row.additive != NULL ? (double)row.additive[j] : 0.0;
            const double s = nw_ref_score(&a->score, a->d, q, k + j * a->ldk);
            x = add == -INFINITY || s == -INFINITY ? -INFINITY : s + add;
        }
        values[j] = x;
        if (x == -INFINITY)
            continue;
        live++;
        if (isnan(x))
            nan = 1;
        else if (x == INFINITY)
            pos_inf++;
        else if (x > max)
            max = x;
    }
    const size_t at = b * a->stride_stats + h * a->hstride_stats + i;
    float *out = NW_ITEM(a, o, b, h) + i * a->ldo;
    if (nan || (pos_inf == 0 && isfinite(max) && fabs(max) > FLT_MAX)) {
        /* a live NaN, or a shift no float holds */
        a->state_max[at] = a->state_sum[at] = NAN;
        for (size_t c = 0; c < a->dv; c++)
            out[c] = NAN;
        return;
    }
    if (pos_inf > 0)
        max = INFINITY; /* the limit: each +inf key weighs 1 */
    else
        max = (double)(float)max; /* the shift that is stored, so that L and A match it */
    double sum = 0.0;
    for (size_t c = 0; c < a->dv; c++)
        acc[c] = 0.0;
    for (size_t j = 0; live && j < a->n; j++) {
        if (values[j] == -INFINITY || (pos_inf > 0 && values[j] != INFINITY))
            continue;
        const double e = pos_inf > 0 ? 1.0 : exp(values[j] - max);
        sum += e;
        for (size_t c = 0; c < a->dv; c++)
            acc[c] += e * (double)v[j * a->ldv + c];
    }
    a->state_max[at] = (float)max;
    a->state_sum[at] = (float)sum;
    for (size_t c = 0; c < a->dv; c++)
        out[c] = (float)acc[c];
}

void nw_ref_partial(const nw_pool_args *a, void *scratch, nw_workers *workers) {
    (void)workers;
    double *values = scratch;
    double *acc = values != NULL ? values + a->n : NULL; /* no scratch when n + dv == 0 */
    for (size_t b = 0; b < a->batch; b++)
        for (size_t h = 0; h < a->heads; h++)
            for (size_t i = 0; i < a->m; i++)
                partial_row(a, b, h, i, values, acc);
}
