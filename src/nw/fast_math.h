/* Branch-free float helpers that compilers vectorise (no libm calls, no float selects, which
 * GCC will not if-convert without -ffast-math). Used by the fast row engine only. */
#ifndef NWATTN_NW_FAST_MATH_H
#define NWATTN_NW_FAST_MATH_H

#include <stdint.h>
#include <string.h>

static inline uint32_t nw_float_bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline float nw_bits_float(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* min(t, cap) for t >= 0 (and +inf, which becomes cap), by comparing bit patterns. */
static inline float nw_min_nonneg(float t, float cap) {
    uint32_t b = nw_float_bits(t), c = nw_float_bits(cap);
    return nw_bits_float(b < c ? b : c);
}

/* exp(x) for x <= 0, relative error below 1.5e-7; x < -86 is taken as -86 (e^-86 ~ 4e-38:
 * negligible next to the weight 1 of the nearest point, and never a denormal). Cody-Waite
 * reduction x = k ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial, 2^k through the exponent
 * bits. */
static inline float nw_expf_neg(float x) {
    uint32_t mag = nw_float_bits(x) & 0x7fffffffu;
    mag = mag < 0x42ac0000u ? mag : 0x42ac0000u; /* |x| <= 86 */
    x = nw_bits_float(mag | 0x80000000u);
    const float shifter = 0x1.8p23f; /* adding it rounds to an integer held in the low bits */
    float kf = x * 0x1.715476p0f + shifter;
    uint32_t kbits = nw_float_bits(kf);
    kf -= shifter;
    float r = x - kf * 0x1.62e4p-1f - kf * 0x1.7f7d1cp-20f;
    float p =
        1.0f +
        r * (1.0f +
             r * (0.5f +
                  r * (1.0f / 6 +
                       r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    return nw_bits_float(nw_float_bits(p) + (kbits << 23));
}

#endif /* NWATTN_NW_FAST_MATH_H */
