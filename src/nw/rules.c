/* Rules of thumb for a starting bandwidth (Silverman, Scott, normal reference). */
#include <math.h>

#include "nw.h"

void nw_sort_floats(size_t n, float *a, float *tmp) {
    float *src = a, *dst = tmp;
    for (size_t width = 1; width<n; width = width> n / 2 ? n : 2 * width) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = mid + width < n ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = src[j] < src[i] ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        float *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != a)
        for (size_t i = 0; i < n; i++)
            a[i] = src[i];
}

/* Quantile of sorted values by linear interpolation between order statistics (numpy's default,
 * R's type 7). */
static double quantile(size_t n, const float *sorted, double prob) {
    double pos = prob * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return (double)sorted[n - 1];
    double frac = pos - (double)lo;
    return (double)sorted[lo] + frac * ((double)sorted[lo + 1] - (double)sorted[lo]);
}

void nw_rule_of_thumb(nwattn_bandwidth_rule rule, size_t n, size_t d, const float *x, size_t ldx,
                      double *h, float *scratch) {
    const double rate = pow((double)n, -1.0 / (double)(d + 4));
    for (size_t k = 0; k < d; k++) {
        double mean = 0.0, ss = 0.0;
        for (size_t i = 0; i < n; i++)
            mean += (double)x[i * ldx + k];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double r = (double)x[i * ldx + k] - mean;
            ss += r * r;
        }
        const double sd = sqrt(ss / (double)(n - 1));
        double spread = sd;
        if (rule != NWATTN_RULE_NORMAL_REFERENCE) {
            for (size_t i = 0; i < n; i++)
                scratch[i] = x[i * ldx + k];
            nw_sort_floats(n, scratch, scratch + n);
            const double iqr = quantile(n, scratch, 0.75) - quantile(n, scratch, 0.25);
            if (iqr > 0.0)
                spread = fmin(sd, iqr / 1.34);
        }
        const double factor = rule == NWATTN_RULE_SILVERMAN ? 0.9 : 1.06;
        h[k] = factor * spread * rate;
    }
}
