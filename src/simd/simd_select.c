/* Run-time choice of the vector kernels, called once per context (no global state). */
#include "cpu.h"
#include "simd.h"

const nw_simd *nw_simd_for_level(int level) {
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX512
    if (level >= NW_SIMD_LEVEL_AVX512)
        return &nw_simd_avx512;
#endif
#if NWATTN_SIMD_LEVEL >= NW_SIMD_LEVEL_AVX2
    if (level >= NW_SIMD_LEVEL_AVX2)
        return &nw_simd_avx2;
#endif
    (void)level;
    return &nw_simd_generic;
}

const nw_simd *nw_simd_select(void) { return nw_simd_for_level(nw_simd_level()); }
