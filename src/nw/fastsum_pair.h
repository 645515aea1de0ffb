/* Pairs of doubles for the fast sums (fastsum.c: the two vectors of one pair side by side;
 * fastsum_gauss.c: two points side by side). The same IEEE operation on each half in both
 * spellings (SSE2, or two scalars elsewhere), so results do not depend on which one is
 * compiled. */
#ifndef NWATTN_NW_FASTSUM_PAIR_H
#define NWATTN_NW_FASTSUM_PAIR_H

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
typedef __m128d fs_pair;
static inline fs_pair p_load(const double *p) { return _mm_loadu_pd(p); }
static inline void p_store(double *p, fs_pair a) { _mm_storeu_pd(p, a); }
static inline fs_pair p_set(double lo, double hi) { return _mm_set_pd(hi, lo); }
static inline fs_pair p_dup(double a) { return _mm_set1_pd(a); }
static inline fs_pair p_zero(void) { return _mm_setzero_pd(); }
static inline fs_pair p_add(fs_pair a, fs_pair b) { return _mm_add_pd(a, b); }
static inline fs_pair p_mul(fs_pair a, fs_pair b) { return _mm_mul_pd(a, b); }
#else
typedef struct fs_pair {
    double lo, hi;
} fs_pair;
static inline fs_pair p_load(const double *p) { return (fs_pair){p[0], p[1]}; }
static inline void p_store(double *p, fs_pair a) { p[0] = a.lo, p[1] = a.hi; }
static inline fs_pair p_set(double lo, double hi) { return (fs_pair){lo, hi}; }
static inline fs_pair p_dup(double a) { return (fs_pair){a, a}; }
static inline fs_pair p_zero(void) { return (fs_pair){0.0, 0.0}; }
static inline fs_pair p_add(fs_pair a, fs_pair b) { return (fs_pair){a.lo + b.lo, a.hi + b.hi}; }
static inline fs_pair p_mul(fs_pair a, fs_pair b) { return (fs_pair){a.lo * b.lo, a.hi * b.hi}; }
#endif
static inline double p_sum(fs_pair a) {
    double h[2];
    p_store(h, a);
    return h[0] + h[1];
}

#endif /* NWATTN_NW_FASTSUM_PAIR_H */
