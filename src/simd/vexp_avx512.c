/* The AVX-512 vector kernels, sixteen floats at a time (see simd_map.h, vexp_impl.h): the
 * generic exponential's algorithm, except that 2^n is applied by vscalefps, which rounds once
 * also into the denormal range. This file alone is compiled with the AVX-512 flags of
 * src/CMakeLists.txt; nw_simd_select hands its table out only where nw_simd_level() (cpu.h)
 * says the CPU and the OS support them. */
#define NW_SIMD_MAP NW_SIMD_LEVEL_AVX512
#include "vexp_impl.h"
