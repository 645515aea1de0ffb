/* The portable vector kernels: plain C over four-float lanes that compilers may vectorise for
 * the baseline ISA, without fused multiply-adds (see simd_map.h, vexp_impl.h). */
#define NW_SIMD_MAP NW_SIMD_LEVEL_GENERIC
#include "vexp_impl.h"
