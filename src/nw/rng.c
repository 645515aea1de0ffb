/* The library's random numbers: SplitMix64 and normals by the polar method, with a logarithm
 * of its own in plain IEEE-754 arithmetic so that every platform draws the same normals.
 * (Built with -ffp-contract=off: a fused multiply-add would change the last bits.) */
#include <math.h>

#include "nwattn.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

void nwattn_rng_seed(nwattn_rng *rng, uint64_t seed) {
    if (rng != NULL)
        rng->state = seed;
}

uint64_t nwattn_rng_next(nwattn_rng *rng) {
    if (rng == NULL)
        return 0;
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double nwattn_rng_uniform(nwattn_rng *rng) {
    if (rng == NULL)
        return 0.0;
    return (double)(nwattn_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* ln(s) for 0 < s < 1 with only +, -, *, / and the exact frexp: s = m 2^e with
 * m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(f), f = (m - 1) / (m + 1), |f| < 0.1716, by its
 * series to f^29 (truncation below 1e-23 relative); ln 2 in two parts. */
static double portable_log(double s) {
    int e;
    double m = frexp(s, &e);
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    const double f = (m - 1.0) / (m + 1.0), f2 = f * f;
    double series = 1.0 / 29.0;
    for (int k = 27; k >= 1; k -= 2)
        series = 1.0 / (double)k + f2 * series;
    const double ln2_hi = 0x1.62e42fefa3800p-1, ln2_lo = 0x1.ef35793c76730p-45;
    return ((double)e * ln2_hi + 2.0 * f * series) + (double)e * ln2_lo;
}

double nwattn_rng_normal(nwattn_rng *rng) {
    if (rng == NULL)
        return 0.0;
    for (;;) {
        double u = 2.0 * nwattn_rng_uniform(rng) - 1.0;
        double v = 2.0 * nwattn_rng_uniform(rng) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0)
            return u * sqrt(-2.0 * portable_log(s) / s);
    }
}
