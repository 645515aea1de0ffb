/* Pieces of the centred distance expansion shared by the BLAS scores and the fused tiles:
 * |q' - k'|^2 = |q'|^2 + |k'|^2 - 2 q'·k' on q' = (q - c) / h and k' = (k - c) / h, where c is
 * the mean key. Centring removes most of the cancellation the expansion suffers when the data
 * sit far from the origin (x in [100, 101], say); the product q'·k' goes through sgemm.
 *
 * Range: when |q'| or |k'| would make their squares overflow or underflow a float (bandwidths
 * of 1e-30 or 1e30, say), the coordinates are stored times 2^-exponent and the scores come out
 * divided by nw_distance_scale(kind, exponent), an exact power of two the caller carries along
 * (see nw_kernels). Also the range checks of dot products, and the scan for non-finite data,
 * which the callers hand to the reference formulas. */
#ifndef NWATTN_BLAS_DISTANCE_H
#define NWATTN_BLAS_DISTANCE_H

#include "internal.h"

/* inv_h[j] = 1 / h_j for the d coordinates, in double (1 / 1e-45 exceeds the float range). */
void nw_inverse_bandwidths(const nw_score *score, size_t d, double *inv_h);

/* centre = mean of the n key rows (zeros if n == 0), summed in double. */
void nw_mean_key(size_t n, size_t d, const float *k, size_t ldk, double *centre);

/* Largest |(x - centre) / h| over the rows. */
double nw_max_rescaled(size_t rows, size_t d, const float *x, size_t ldx, const double *centre,
                       const double *inv_h);

/* The exponent the rescaled coordinates need, given the largest of them: 0 when their squares
 * are safe in float, else e with largest < 2^e (coordinates then below 1 in magnitude). */
int nw_distance_exponent(double largest);

/* out = (x - centre) / h · 2^-exponent row by row (pitch d); norms = squared row lengths. */
void nw_rescale_rows(size_t rows, size_t d, const float *x, size_t ldx, const double *centre,
                     const double *inv_h, int exponent, float *out, float *norms);

/* s holds -2 q'·k' (m×n); turns it into the Gaussian or Laplace score in place, divided by
 * nw_distance_scale(kind, exponent). */
void nw_distance_scores(nwattn_score_kind kind, size_t m, size_t n, const float *qnorm,
                        const float *knorm, float *s, size_t lds);
double nw_distance_scale(nwattn_score_kind kind, int exponent);

/* Largest |x| over a rows×cols matrix, or -1 if an entry is NaN or infinite. */
double nw_max_abs(size_t rows, size_t cols, const float *x, size_t ldx);

/* Whether scale · q·k can go straight to sgemm for data of these largest magnitudes: no
 * product or sum of d of them over- or underflows a float. */
int nw_dot_in_range(double max_q, double max_k, size_t d, float scale);

/* d == 1: the Gaussian or Laplace scores from the rescaled coordinates qp (m) and kp (n) of
 * nw_rescale_rows directly, u = q' - k', as the expansion would only lose accuracy there (and
 * a rank-1 sgemm gains nothing). Divided by nw_distance_scale(kind, exponent) like
 * nw_distance_scores. */
void nw_distance_scores_1d(nwattn_score_kind kind, size_t m, size_t n, const float *qp,
                           const float *kp, float *s, size_t lds);

#endif /* NWATTN_BLAS_DISTANCE_H */
