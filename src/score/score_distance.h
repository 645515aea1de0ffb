/* What the Gaussian and Laplace scores share: both are functions of the scaled squared
 * distance t = sum_l ((q_l - k_l) / h_l)^2 (Gaussian -t/2, Laplace -sqrt(t)).
 *
 * Fast scores come two ways:
 * - direct, for d <= NW_DIRECT_MAX_D: u_l = (q_l - k_l) · (1/h_l) in float, no expansion, so no
 *   cancellation wherever the data sit (score error about (d + 4)·2^-24·|score|);
 * - the expansion |q'|^2 + |k'|^2 - 2 q'·k' on q' = (q - c) / h, k' = (k - c) / h with c the
 *   mean key, the product through sgemm; for wider rows, where the GEMM pays. Coordinates that
 *   would over- or underflow are stored times 2^-exponent (chosen from the keys alone), and
 *   the scores carry 2^(2·exponent) (Gaussian) or 2^exponent (Laplace).
 * A row whose query does not fit the chosen form is exact (score.h). */
#ifndef NWATTN_SCORE_DISTANCE_H
#define NWATTN_SCORE_DISTANCE_H

#include "score.h"

/* Widest rows scored directly: the measured crossover with the expansion lies between 8 and 16
 * (docs/numerics.md, "NWATTN_SCORE_GAUSSIAN"). */
#define NW_DIRECT_MAX_D ((size_t)8)

nwattn_status nw_distance_check(struct nw_call *call, const nwattn_score *score, size_t d,
                                nw_score *out);
/* t for one pair, in double (the definition). */
double nw_distance_ref_t(const nw_score *score, size_t d, const float *q, const float *k);

size_t nw_distance_info_doubles(size_t d);
void nw_distance_keys_info(const nw_score *score, size_t n, size_t d, const float *k,
                           size_t ldk, double *store, nw_keys_info *info);
int nw_distance_row_fast(const nw_score *score, size_t d, const float *q,
                         const nw_keys_info *info);
size_t nw_distance_prep_floats(size_t n, size_t d);
size_t nw_distance_row_floats(size_t m, size_t d);
void nw_distance_prepare(const nw_score *score, const nw_keys_info *info, const nw_simd *simd,
                         size_t n, size_t d, const float *k, size_t ldk, float *kp);
void nw_distance_prepare_rows(const nw_score *score, const nw_keys_info *info, size_t m,
                              size_t d, const float *q, size_t ldq, float *qs);
/* The fast scores: Gaussian (gaussian != 0) or Laplace. */
void nw_distance_block(int gaussian, const nw_keys_info *info, const nw_simd *simd, size_t m,
                       size_t n, size_t d, const float *q, size_t ldq, const float *qs,
                       const float *kp, size_t np, float *t, size_t ldt);

#endif /* NWATTN_SCORE_DISTANCE_H */
