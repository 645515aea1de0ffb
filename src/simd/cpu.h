/* The library's one CPU probe: the instruction-set level this machine runs, used by both the
 * pooling's vector kernels (simd_select.c) and the regression engine's copies
 * (nw/fast_rows.c), so that the two always agree.
 *
 * Levels, each including the ones below:
 *   NW_SIMD_LEVEL_GENERIC  portable C, every CPU;
 *   NW_SIMD_LEVEL_AVX2     x86-64 with AVX2 and FMA, and an OS that saves the ymm registers;
 *   NW_SIMD_LEVEL_AVX512   also AVX-512 F, VL, DQ and BW, and an OS that saves the zmm and
 *                          opmask registers (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4 ...;
 *                          not Knights Landing, which lacks VL, DQ and BW).
 * NWATTN_SIMD_LEVEL (0, 1 or 2, set by the build option NWATTN_SIMD) is the highest level
 * compiled in; nw_simd_level() never returns more, so that building with NWATTN_SIMD=AVX2
 * makes an AVX-512 machine run the AVX2 code everywhere. */
#ifndef NWATTN_SIMD_CPU_H
#define NWATTN_SIMD_CPU_H

#define NW_SIMD_LEVEL_GENERIC 0
#define NW_SIMD_LEVEL_AVX2 1
#define NW_SIMD_LEVEL_AVX512 2

#ifndef NWATTN_SIMD_LEVEL
#error "NWATTN_SIMD_LEVEL is set by src/CMakeLists.txt (build option NWATTN_SIMD)"
#endif

/* What the CPU and the OS support, whatever was compiled in. Probed once (CPUID, XGETBV) and
 * kept in an atomic: every thread computes the same value, so a race only repeats the work. */
int nw_cpu_level(void);

/* The level to run: nw_cpu_level(), at most NWATTN_SIMD_LEVEL. */
int nw_simd_level(void);

#endif /* NWATTN_SIMD_CPU_H */
