/* Constants of the vector exponential shared by every instruction set (see simd.h). */
#ifndef NWATTN_VEXP_CONSTANTS_H
#define NWATTN_VEXP_CONSTANTS_H

/* Inputs are clamped to [NW_VEXP_LO, NW_VEXP_HI] (NaN is restored afterwards): below, the
 * result rounds to +0 (exp(-105) < 2^-150); above, 2^n overflows to +inf. */
#define NW_VEXP_LO (-105.0f)
#define NW_VEXP_HI 88.8f
#define NW_VEXP_LOG2E 1.44269504088896341f
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
