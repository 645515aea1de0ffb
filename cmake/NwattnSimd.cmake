# The build option NWATTN_SIMD (AUTO, AVX512, AVX2, GENERIC), resolved into
#   NWATTN_SIMD_LEVEL          0 (generic), 1 (AVX2 + FMA) or 2 (AVX-512): the highest level
#                              compiled in, for the pooling's vector kernels (src/simd/) and the
#                              regression engine's copies (src/nw/fast_rows*.c) alike;
#   NWATTN_SIMD_AVX2_FLAGS     the compiler flags of the AVX2 files,
#   NWATTN_SIMD_AVX512_FLAGS   those of the AVX-512 files (F, VL, DQ, BW: the set the CPU probe
#                              src/simd/cpu.c asks for).
# The deprecated options NWATTN_X86_SIMD (OFF: GENERIC) and NWATTN_MULTIVERSION (OFF: GENERIC,
# AVX2: AVX2, ON: no limit) still work for this release: when set they lower NWATTN_SIMD, which
# is then kept in the cache in their place.
include(CheckCCompilerFlag)

set(NWATTN_SIMD_AVX2_FLAGS -mavx2 -mfma)
set(NWATTN_SIMD_AVX512_FLAGS -mavx512f -mavx512vl -mavx512dq -mavx512bw -mavx2 -mfma)

set(_nw_simd_levels GENERIC AVX2 AVX512)
string(TOUPPER "${NWATTN_SIMD}" _nw_simd)
if(NOT _nw_simd STREQUAL "AUTO" AND NOT _nw_simd IN_LIST _nw_simd_levels)
  message(FATAL_ERROR "NWATTN_SIMD is '${NWATTN_SIMD}': use AUTO, AVX512, AVX2 or GENERIC")
endif()

# What this compiler and target can build.
set(_nw_simd_possible 0)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  string(REPLACE ";" " " _flags "${NWATTN_SIMD_AVX2_FLAGS}")
  check_c_compiler_flag("${_flags}" NWATTN_COMPILER_HAS_AVX2)
  string(REPLACE ";" " " _flags "${NWATTN_SIMD_AVX512_FLAGS}")
  check_c_compiler_flag("${_flags}" NWATTN_COMPILER_HAS_AVX512)
  if(NWATTN_COMPILER_HAS_AVX512)
    set(_nw_simd_possible 2)
  elseif(NWATTN_COMPILER_HAS_AVX2)
    set(_nw_simd_possible 1)
  endif()
endif()

if(_nw_simd STREQUAL "AUTO")
  set(_nw_simd_wanted 2)
else()
  list(FIND _nw_simd_levels "${_nw_simd}" _nw_simd_wanted)
endif()

# The deprecated aliases.
set(_nw_simd_alias_cap 2)
if(DEFINED NWATTN_X86_SIMD)
  message(DEPRECATION "NWATTN_X86_SIMD is deprecated: use NWATTN_SIMD (OFF is NWATTN_SIMD=GENERIC)")
  if(NOT NWATTN_X86_SIMD)
    set(_nw_simd_alias_cap 0)
  endif()
  unset(NWATTN_X86_SIMD CACHE)
  unset(NWATTN_X86_SIMD)
endif()
if(DEFINED NWATTN_MULTIVERSION)
  message(DEPRECATION
    "NWATTN_MULTIVERSION is deprecated: use NWATTN_SIMD (OFF is GENERIC, AVX2 is AVX2, ON is AUTO)")
  string(TOUPPER "${NWATTN_MULTIVERSION}" _mv)
  if(_mv STREQUAL "AVX2" AND _nw_simd_alias_cap GREATER 1)
    set(_nw_simd_alias_cap 1)
  elseif(NOT _mv STREQUAL "AVX2" AND NOT NWATTN_MULTIVERSION)
    set(_nw_simd_alias_cap 0)
  endif()
  unset(NWATTN_MULTIVERSION CACHE)
  unset(NWATTN_MULTIVERSION)
endif()
if(_nw_simd_alias_cap LESS _nw_simd_wanted)
  set(_nw_simd_wanted ${_nw_simd_alias_cap})
  list(GET _nw_simd_levels ${_nw_simd_wanted} _nw_simd)
  set_property(CACHE NWATTN_SIMD PROPERTY VALUE "${_nw_simd}")
endif()

if(_nw_simd STREQUAL "AUTO" OR _nw_simd_wanted LESS_EQUAL _nw_simd_possible)
  if(_nw_simd_wanted LESS _nw_simd_possible)
    set(NWATTN_SIMD_LEVEL ${_nw_simd_wanted})
  else()
    set(NWATTN_SIMD_LEVEL ${_nw_simd_possible})
  endif()
else()
  message(FATAL_ERROR "NWATTN_SIMD=${_nw_simd}: this compiler or target (${CMAKE_C_COMPILER_ID}, "
    "${CMAKE_SYSTEM_PROCESSOR}) cannot build it; use AUTO or a lower level")
endif()
list(GET _nw_simd_levels ${NWATTN_SIMD_LEVEL} _nw_simd_name)
message(STATUS "nwattn: SIMD levels compiled in: up to ${_nw_simd_name} (NWATTN_SIMD=${NWATTN_SIMD})")
