/* The fast row engine compiled for AVX2 + FMA (see fast_rows_impl.h and
 * src/CMakeLists.txt for the flags); chosen at run time by fast_rows.c. */
#include "nw.h"

#define NW_FAST_ISA avx2
#include "fast_rows_impl.h"
