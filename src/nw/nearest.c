/* The nearest training points of a query: the result NWATTN_EMPTY_NEAREST gives a row whose
 * support is empty (the h -> 0 limit of the Gaussian estimate, ties sharing equally). */
#include <math.h>

#include "nw.h"

static double scaled_distance(size_t d, const float *xj, const float *q, const double *inv_h) {
    double t = 0.0;
    for (size_t k = 0; k < d; k++) {
        double u = ((double)xj[k] - (double)q[k]) * inv_h[k];
        t += u * u;
    }
    return t;
}

size_t nw_nearest_scan(size_t n, size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                       size_t ldy, const float *q, const double *inv_h, size_t skip, double *best,
                       double *sum) {
    size_t count = 0;
    *best = (double)INFINITY;
    for (size_t c = 0; c < dv; c++)
        sum[c] = 0.0;
    for (size_t j = 0; j < n; j++) {
        if (j == skip)
            continue;
        double t = scaled_distance(d, x + j * ldx, q, inv_h);
        if (t < *best) {
            *best = t;
            count = 0;
            for (size_t c = 0; c < dv; c++)
                sum[c] = 0.0;
        }
        if (t == *best) {
            count++;
            for (size_t c = 0; c < dv; c++)
                sum[c] += (double)y[j * ldy + c];
        }
    }
    return count;
}

void nw_nearest_weights(size_t n, size_t d, const float *x, size_t ldx, const float *q,
                        const double *inv_h, size_t skip, double best, size_t count,
                        float *weights) {
    for (size_t j = 0; j < n; j++)
        weights[j] = j != skip && count > 0 && scaled_distance(d, x + j * ldx, q, inv_h) == best
                         ? (float)(1.0 / (double)count)
                         : 0.0f;
}

size_t nw_nearest(size_t n, size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                  size_t ldy, const float *q, const double *inv_h, size_t skip, double *mean,
                  float *weights) {
    double best;
    const size_t count = nw_nearest_scan(n, d, dv, x, ldx, y, ldy, q, inv_h, skip, &best, mean);
    for (size_t c = 0; c < dv && count > 0; c++)
        mean[c] /= (double)count;
    if (weights != NULL)
        nw_nearest_weights(n, d, x, ldx, q, inv_h, skip, best, count, weights);
    return count;
}
