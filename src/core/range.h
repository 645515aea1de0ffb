/* Range handling, written once: which float computations of a score stay clear of overflow and
 * underflow, and the power of two that brings a row of double scores into the float range.
 * Every decision is taken per row from that row's query and its item's keys, so no row can
 * change another row's result. */
#ifndef NWATTN_RANGE_H
#define NWATTN_RANGE_H

#include <stddef.h>

/* Float values of magnitude 2^-NW_SAFE_EXPONENT .. 2^NW_SAFE_EXPONENT can be squared and summed
 * d at a time (d < 2^20) without overflow or harmful underflow. */
#define NW_SAFE_EXPONENT 40
/* Dot products whose largest term and sum stay within 2^-NW_DOT_SAFE .. 2^NW_DOT_SAFE go
 * straight to sgemm. */
#define NW_DOT_SAFE 100

/* Largest |x| over a rows×cols matrix, or -1 if an entry is NaN or infinite. */
double nw_max_abs(size_t rows, size_t cols, const float *x, size_t ldx);

/* Whether 2^-exponent <= x <= 2^exponent. */
int nw_in_range(double x, int exponent);

/* Whether scale · q·k can be formed in float for data of these largest magnitudes: no product
 * or sum of d of them over- or underflows. */
int nw_dot_in_range(double max_q, double max_k, size_t d, double scale);

/* The exponent e that brings coordinates whose largest magnitude is `largest` below 1
 * (largest < 2^e), or 0 when they are safe as they are. */
int nw_safe_exponent(double largest);

/* The power of two that brings the largest finite |x| of a row of n doubles down to 2^100
 * (1 if it is smaller): the row is then stored as float x / scale with scale kept in double. */
double nw_row_pow2_scale(size_t n, const double *x);

#endif /* NWATTN_RANGE_H */
