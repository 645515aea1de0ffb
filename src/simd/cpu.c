/* The CPU probe (see cpu.h). */
#include "cpu.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
#include <cpuid.h>

/* XCR0, the register state the OS saves on a context switch (XGETBV with ecx = 0); inline
 * assembly, so that this file needs no -mxsave for _xgetbv. CPUID.1:ECX.OSXSAVE, checked
 * first, says the instruction exists. */
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int probe(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return NW_SIMD_LEVEL_GENERIC;
    const unsigned fma = 1u << 12, osxsave = 1u << 27, avx = 1u << 28;
    if ((c & (fma | osxsave | avx)) != (fma | osxsave | avx))
        return NW_SIMD_LEVEL_GENERIC;
    const uint64_t xcr = xcr0();
    const uint64_t sse_avx_state = 0x6;  /* XMM, YMM upper halves */
    const uint64_t avx512_state = 0xe0;  /* opmask, ZMM0-15 upper halves, ZMM16-31 */
    if ((xcr & sse_avx_state) != sse_avx_state || __get_cpuid_max(0, NULL) < 7)
        return NW_SIMD_LEVEL_GENERIC;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned avx2 = 1u << 5;
    if (!(b & avx2))
        return NW_SIMD_LEVEL_GENERIC;
    const unsigned f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    if ((b & (f | dq | bw | vl)) == (f | dq | bw | vl) && (xcr & avx512_state) == avx512_state)
        return NW_SIMD_LEVEL_AVX512;
    return NW_SIMD_LEVEL_AVX2;
}
#else
static int probe(void) { return NW_SIMD_LEVEL_GENERIC; }
#endif

int nw_cpu_level(void) {
    /* -1: not probed yet. The value depends on the machine only, never on a caller. */
    static atomic_int cached = -1;
    int level = atomic_load_explicit(&cached, memory_order_relaxed);
    if (level < 0) {
        level = probe();
        atomic_store_explicit(&cached, level, memory_order_relaxed);
    }
    return level;
}

int nw_simd_level(void) {
    const int level = nw_cpu_level();
    return level < NWATTN_SIMD_LEVEL ? level : NWATTN_SIMD_LEVEL;
}
