/* The AVX2 + FMA vector kernels, eight floats at a time (see simd_map.h, vexp_impl.h). This
 * file alone is compiled with the AVX2 flags of src/CMakeLists.txt; nw_simd_select hands its
 * table out only where nw_simd_level() (cpu.h) says the CPU and the OS support them. */
#define NW_SIMD_MAP NW_SIMD_LEVEL_AVX2
#include "vexp_impl.h"
