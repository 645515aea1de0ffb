/* The softmax row contract, written once. Every path that turns a row of values into weights
 * uses it: the reference softmax and pooling (in double), the BLAS softmax, the fused tiles'
 * online softmax, partial states, their merge and finish, the learnable-w model.
 *
 * A row's state is the shift M and the sum L = sum_j exp(x_j - M) over its live values x_j
 * (score + additive, in double; a masked key has x = -INFINITY and is never looked at again).
 * The rules (docs/numerics.md, "The softmax row"):
 *   no live key yet        M = -inf, L = 0            -> weights 0, output 0, lse -inf;
 *   a live NaN             L = NaN from then on       -> live weights NaN, masked 0, lse NaN;
 *   c live +INFINITY       M = +inf, L = c            -> weight 1/c on each, 0 elsewhere,
 *                                                        lse +inf (the limit);
 *   otherwise              the max-shifted softmax.
 * A tile of values updates the state in three steps: nw_tile_see on each value, nw_row_rescale
 * (the new shift and the factor alpha the row's accumulator and L are multiplied by), then each
 * value's factor relative to the new shift (nw_row_factor), whose sum nw_row_add adds to L.
 * The fast float path (nw_row_update_fast) is the same three steps for a tile with no +inf,
 * with the exponentials from the vector kernels. */
#ifndef NWATTN_ROW_STATE_H
#define NWATTN_ROW_STATE_H

#include <math.h>
#include <stddef.h>

#include "nwattn.h"
#include "simd/simd.h"

typedef struct nw_row {
    double max; /* M */
    double sum; /* L */
} nw_row;

static inline nw_row nw_row_empty(void) {
    nw_row r = {-INFINITY, 0.0};
    return r;
}

/* What a tile holds: its largest finite live value, its count of +inf values and whether one
 * is NaN (masked keys hold -inf). */
typedef struct nw_tile {
    double max;
    size_t pos_inf;
    int nan;
} nw_tile;

static inline nw_tile nw_tile_empty(void) {
    nw_tile t = {-INFINITY, 0, 0};
    return t;
}

static inline void nw_tile_see(nw_tile *t, double x) {
    if (x == INFINITY)
        t->pos_inf++;
    else if (x > t->max)
        t->max = x;
    else if (x != x)
        t->nan = 1;
}

/* Moves the row to the shift the tile asks for; returns alpha = exp(M_old - M_new) (1 when the
 * shift stays, 0 when the row enters the +inf limit or had no live key). L is rescaled. */
static inline double nw_row_rescale(nw_row *r, const nw_tile *t) {
    if (t->nan)
        r->sum = NAN; /* sticky: every later sum stays NaN */
    const double old = r->max;
    const double next = t->pos_inf > 0 ? INFINITY : (t->max > old ? t->max : old);
    if (next == old)
        return 1.0;
    const double alpha = exp(old - next); /* old = -inf or next = +inf: 0 */
    r->max = next;
    r->sum *= alpha;
    return alpha;
}

/* nw_row_rescale for the fast float path (a finite or -inf tile maximum, no NaN, a float
 * shift): alpha from expf, which costs less than the double exp when tiles are a few dozen
 * keys wide. */
static inline float nw_row_rescalef(nw_row *r, float tile_max) {
    const float old = (float)r->max;
    const float next = tile_max > old ? tile_max : old;
    if (next == old)
        return 1.0f;
    const float alpha = expf(old - next); /* old = -inf: 0 */
    r->max = (double)next;
    r->sum *= (double)alpha;
    return alpha;
}

/* The factor of a value relative to the row's current shift: exp(x - M); masked keys 0; in the
 * +inf limit 1 for +inf values and 0 for finite ones; NaN stays NaN. */
static inline double nw_row_factor(const nw_row *r, double x) {
    if (x == -INFINITY)
        return 0.0;
    if (r->max == INFINITY)
        return x == INFINITY ? 1.0 : (isnan(x) ? NAN : 0.0);
    return exp(x - r->max); /* M = -inf only if nothing finite is live: x is NaN */
}

/* The same factor in float, for the fast path's exponentials (x - M rounded once). */
static inline float nw_row_factorf(const nw_row *r, double x) {
    if (x == -INFINITY)
        return 0.0f;
    if (r->max == INFINITY)
        return x == INFINITY ? 1.0f : (isnan(x) ? NAN : 0.0f);
    return expf((float)(x - r->max));
}

static inline void nw_row_add(nw_row *r, double tile_sum) { r->sum += tile_sum; }

/* The fast path's tile: s holds float values, masked keys -inf, no +inf (tile_max, the largest
 * of them, is finite or -inf). s becomes the factors exp(s - M); returns alpha. `whole`: s is
 * a whole row of any length (sum accumulated in double) rather than a tile of a few hundred
 * keys (float lanes). */
static inline float nw_row_update_fast(nw_row *r, const nw_simd *simd, float *s, size_t cols,
                                       float tile_max, int whole) {
    const float alpha = nw_row_rescalef(r, tile_max);
    if (r->max == -INFINITY) { /* nothing live yet: masked keys give 0, NaN stays NaN */
        double tile_sum = 0.0;
        for (size_t j = 0; j < cols; j++) {
            s[j] = s[j] == -INFINITY ? 0.0f : s[j];
            tile_sum += (double)s[j];
        }
        nw_row_add(r, tile_sum);
        return alpha;
    }
    const float shift = (float)r->max; /* a float on this path */
    nw_row_add(r, whole ? simd->exp_sum(s, cols, shift) : (double)simd->exp_sumf(s, cols, shift));
    return alpha;
}

/* What multiplies the accumulator at the end: 1/L, 0 for a row without a live key, NaN for a
 * NaN row. */
static inline double nw_row_inverse(const nw_row *r) {
    return r->sum == 0.0 ? 0.0 : 1.0 / r->sum;
}

/* The row's log-sum-exp M + log L: -inf without a live key, +inf in the limit, NaN. */
static inline double nw_row_lse(const nw_row *r) {
    if (r->sum == 0.0)
        return -INFINITY;
    if (isnan(r->sum))
        return NAN;
    return r->max + log(r->sum);
}

/* The final weight of a value x of the finished row. */
static inline double nw_row_weight(const nw_row *r, double x) {
    if (x == -INFINITY)
        return 0.0;
    if (isnan(r->sum))
        return NAN;
    return nw_row_factor(r, x) * nw_row_inverse(r);
}

/* ---- Partial states ------------------------------------------------------------------------ */
/* The state as nwattn_pool_state stores it: the shift as a float, L brought to that shift.
 * Returns the factor the row's accumulator must be multiplied by (exp(M - stored)); NaN when
 * the row cannot be held (a live NaN, or a shift beyond the float range): the whole state,
 * accumulator included, is then NaN. */
double nw_row_store(const nw_row *r, float *max, float *sum);

/* The state of a stored row. */
static inline nw_row nw_row_load(float max, float sum) {
    nw_row r = {(double)max, (double)sum};
    if (sum == 0.0f)
        r.max = -INFINITY;
    return r;
}

/* into = into merged with from; *a_into and *a_from receive the factors of the two
 * accumulators (the merged one is a_into · acc_into + a_from · acc_from). */
void nw_row_merge(nw_row *into, const nw_row *from, double *a_into, double *a_from);

#endif /* NWATTN_ROW_STATE_H */
