/* Run-time choice of the vector kernels, called once per context (no global state). */
#include "simd.h"

const nw_simd *nw_simd_select(void) {
#if NWATTN_HAVE_X86_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return &nw_simd_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &nw_simd_avx2;
#endif
    return &nw_simd_generic;
}
