/* Constants of the vector exponential shared by every instruction set (see simd.h). */
#ifndef NWATTN_VEXP_CONSTANTS_H
#define NWATTN_VEXP_CONSTANTS_H

/* Inputs are clamped to [NW_VEXP_LO, NW_VEXP_HI] (NaN is restored afterwards): below, the
 * result rounds to +0 (exp(-105) < 2^-150); above, 2^n overflows to +inf. */
#define NW_VEXP_LO (-105.0f)
#define NW_VEXP_HI 88.8f
/* The softmax-term exponential (simd_map.h nw_exp_term, simd.h dist1_exp_dot), for x <= 0:
 * inputs below NW_VEXP_TERM_LO count as NW_VEXP_TERM_LO (exp(-86) = 4.5e-38), so that 2^n is
 * normal and comes from the bits of x / ln 2 + NW_VEXP_TERM_MAGIC (1.5 · 2^23 + 127: the
 * addition rounds to an integer and leaves n + 127 in the low bits); the polynomial is
 * optimized-routines' degree-5 expf polynomial (Arm, MIT licence), by Horner's rule:
 * exp(r) ~ 1 + r (T4 + r (T3 + r (T2 + r (T1 + r T0)))). */
#define NW_VEXP_TERM_LO (-86.0f)
#define NW_VEXP_TERM_MAGIC 12583039.0f
#define NW_VEXP_T0 0x1.0e4020p-7f
#define NW_VEXP_T1 0x1.573e2ep-5f
#define NW_VEXP_T2 0x1.555e66p-3f
#define NW_VEXP_T3 0x1.fffdb6p-2f
#define NW_VEXP_T4 0x1.ffffecp-1f
#define NW_VEXP_LOG2E 1.44269504088896341f
/* The same polynomial for 2^r (simd_map.h nw_exp2_term, dist1_exp_dot's terms, whose exponent
 * is formed in base 2 so that r = x - round(x) needs no Cody-Waite reduction): the
 * coefficients above times ln 2 ^ k, rounded to float, 2^r ~ 1 + r (B4 + r (B3 + ... r B0)).
 * Inputs below NW_VEXP2_TERM_LO (2^-124 = 4.7e-38) count as NW_VEXP2_TERM_LO. */
#define NW_VEXP2_TERM_LO (-124.0f)
#define NW_VEXP2_B0 0x1.59ed2cp-10f
#define NW_VEXP2_B1 0x1.3cee16p-7f
#define NW_VEXP2_B2 0x1.c6bcap-5f
#define NW_VEXP2_B3 0x1.ebf9acp-3f
#define NW_VEXP2_B4 0x1.62e422p-1f
/* ln 2 = C1 + C2, C1 with 9 significant bits so that n · C1 is exact for |n| <= 151. */
#define NW_VEXP_C1 0.693359375f
#define NW_VEXP_C2 (-2.12194440e-4f)
/* Cephes expf's coefficients: exp(r) ~ 1 + r + r^2 (P0 r^5 + P1 r^4 + P2 r^3 + P3 r^2 + P4 r + P5),
 * evaluated by Horner's rule down to the last two coefficients (1, 1). */
#define NW_VEXP_P0 1.9875691500e-4f
#define NW_VEXP_P1 1.3981999507e-3f
#define NW_VEXP_P2 8.3334519073e-3f
#define NW_VEXP_P3 4.1665795894e-2f
#define NW_VEXP_P4 1.6666665459e-1f
#define NW_VEXP_P5 5.0000001201e-1f

#endif /* NWATTN_VEXP_CONSTANTS_H */
