/* Pieces of the centred distance expansion shared by the BLAS scores and the fused tiles:
 * |q' - k'|^2 = |q'|^2 + |k'|^2 - 2 q'·k' on q' = (q - c) / h and k' = (k - c) / h, where c is
 * the mean key. Centring removes most of the cancellation the expansion suffers when the data
 * sit far from the origin (x in [100, 101], say); the product q'·k' goes through sgemm. */
#ifndef NWATTN_BLAS_DISTANCE_H
#define NWATTN_BLAS_DISTANCE_H

#include "internal.h"

/* inv_h[j] = 1 / h_j for the d coordinates. */
void nw_inverse_bandwidths(const nw_score *score, size_t d, float *inv_h);

/* centre = mean of the n key rows (zeros if n == 0), summed in double. */
void nw_mean_key(size_t n, size_t d, const float *k, size_t ldk, float *centre);

/* out = (x - centre) · inv_h row by row (pitch d); norms = squared row lengths. */
void nw_rescale_rows(size_t rows, size_t d, const float *x, size_t ldx, const float *centre,
                     const float *inv_h, float *out, float *norms);

/* s holds -2 q'·k' (m×n); turns it into the Gaussian or Laplace score in place. */
void nw_distance_scores(nwattn_score_kind kind, size_t m, size_t n, const float *qnorm,
                        const float *knorm, float *s, size_t lds);

/* d == 1: the Gaussian or Laplace scores of m queries against n keys from (q - k) / h directly,
 * as the expansion would only lose accuracy there (and a rank-1 sgemm gains nothing). */
void nw_distance_scores_1d(nwattn_score_kind kind, size_t m, size_t n, const float *q,
                           size_t ldq, const float *k, size_t ldk, float inv_h, float *s,
                           size_t lds);

#endif /* NWATTN_BLAS_DISTANCE_H */
