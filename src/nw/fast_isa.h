/* The copies of the fast row engine, one per instruction set (fast_rows_impl.h). */
#ifndef NWATTN_NW_FAST_ISA_H
#define NWATTN_NW_FAST_ISA_H

#include "nw.h"

#define NW_FAST_CHUNK ((size_t)256)

#define NW_FAST_CAT_(a, b) a##_##b
#define NW_FAST_CAT(a, b) NW_FAST_CAT_(a, b)
#define NW_FAST_NAME(name) NW_FAST_CAT(name, NW_FAST_ISA)

void nw_fast_row_base(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                      nw_sums *s);
void nw_fast_row_weights_base(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                              const double *coef, float *weights);
void nw_fast_row_avx2(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                      nw_sums *s);
void nw_fast_row_weights_avx2(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                              const double *coef, float *weights);
void nw_fast_row_avx512(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                        nw_sums *s);
void nw_fast_row_weights_avx512(const nw_fast *f, const float *q, const float *inv_h, size_t skip,
                                const double *coef, float *weights);

#endif /* NWATTN_NW_FAST_ISA_H */
