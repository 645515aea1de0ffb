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

size_t nw_nearest(size_t n, size_t d, size_t dv, const float *x, size_t ldx, const float *y,
                  size_t ldy, const float *q, const double *inv_h, size_t skip, double *mean,
                  float *weights) {
    double best = (double)INFINITY;
    size_t count = 0;
    for (size_t c = 0; c < dv; c++)
        mean[c] = 0.0;
    for (size_t j = 0; j < n; j++) {
        if (j == skip)
            continue;
        double t = scaled_distance(d, x + j * ldx, q, inv_h);
        if (t < best) {
            best = t;
            count = 0;
            for (size_t c = 0; c < dv; c++)
                mean[c] = 0.0;
        }
        if (t == best) {
            count++;
            for (size_t c = 0; c < dv; c++)
                mean[c] += (double)y[j * ldy + c];
        }
    }
    for (size_t c = 0; c < dv && count > 0; c++)
        mean[c] /= (double)count;
    if (weights != NULL)
        for (size_t j = 0; j < n; j++)
            weights[j] = j != skip && count > 0 && scaled_distance(d, x + j * ldx, q, inv_h) == best
                             ? (float)(1.0 / (double)count)
                             : 0.0f;
    return count;
}
