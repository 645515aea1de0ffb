#!/usr/bin/env bash
# libnwattn_mpi as a user gets it from the installed prefix: the files are there, the core
# library does not depend on MPI while libnwattn_mpi depends on libnwattn.so.0, and the
# consumer examples/consumers/mpi builds both documented ways (pkg-config nwattn-mpi; CMake
# find_package(nwattn COMPONENTS mpi) from a moved copy of the prefix) and runs on 2 ranks.
#
# usage: consumer_mpi.sh CMAKE GENERATOR PREFIX LIBDIR PCDIR CMAKEDIR INCLUDEDIR CC WORKDIR
#                        VERSION SOVERSION MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
cmake_tool=$1 generator=$2 prefix=$3 libdir=$4 pcdir=$5 cmakedir=$6 includedir=$7 cc=$8
work=$9 version=${10} soversion=${11} mpiexec=${12}
shift 12
flags=("$@")
src=$(cd "$(dirname "$0")/../../examples/consumers/mpi" && pwd)

fail() { echo "FAIL: $*" >&2; exit 1; }
under_prefix() { if [[ $1 == /* ]]; then echo "$1"; else echo "$prefix/$1"; fi; }
lib=$(under_prefix "$libdir") pc=$(under_prefix "$pcdir") cm=$(under_prefix "$cmakedir")
inc=$(under_prefix "$includedir")

for f in "$inc/nwattn_mpi.h" "$lib/libnwattn_mpi.so.$version" "$pc/nwattn-mpi.pc" \
         "$cm/nwattnMpiTargets.cmake"; do
    [[ -f $f ]] || fail "not installed: $f"
done
[[ $(readlink "$lib/libnwattn_mpi.so.$soversion") == "libnwattn_mpi.so.$version" ]] ||
    fail "libnwattn_mpi.so.$soversion is not a link to libnwattn_mpi.so.$version"

needed() { "${READELF:-readelf}" -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'; }
core_needs=$(needed "$lib/libnwattn.so.$version")
mpi_needs=$(needed "$lib/libnwattn_mpi.so.$version")
grep -q 'libmpi' <<<"$core_needs" && fail "libnwattn.so needs MPI: $core_needs"
grep -qx "libnwattn.so.$soversion" <<<"$mpi_needs" ||
    fail "libnwattn_mpi.so does not need libnwattn.so.$soversion: $mpi_needs"
grep -q 'libmpi' <<<"$mpi_needs" || fail "libnwattn_mpi.so does not need libmpi: $mpi_needs"
if grep -qw 'MPI\|mpi\.h' "$inc/nwattn.h"; then fail "nwattn.h mentions MPI"; fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$work"
mkdir -p "$work"

# 1. pkg-config
export PKG_CONFIG_PATH="$pc"
[[ $(pkg-config --modversion nwattn-mpi) == "$version" ]] || fail "nwattn-mpi.pc version"
echo "pkg-config --cflags --libs nwattn-mpi: $(pkg-config --cflags --libs nwattn-mpi)"
# shellcheck disable=SC2046  # word splitting of the flags is intended
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$work/consumer_pc" "$src/consumer_mpi.c" \
    $(pkg-config --cflags --libs nwattn-mpi) -Wl,-rpath,"$lib" -lm
"$mpiexec" -n 2 "${flags[@]}" "$work/consumer_pc"

# 2. CMake, from a moved copy of the prefix
moved="$work/moved-prefix"
cp -a "$prefix" "$moved"
"$cmake_tool" -S "$src" -B "$work/build" -G "$generator" -DCMAKE_PREFIX_PATH="$moved" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release
"$cmake_tool" --build "$work/build"
# (ldd's output is kept first: `ldd | grep -q` fails under pipefail when grep stops early.)
loaded=$(ldd "$work/build/consumer_mpi")
grep -qF "$moved/" <<<"$loaded" || fail "the CMake consumer does not load libnwattn_mpi from $moved"
"$mpiexec" -n 2 "${flags[@]}" "$work/build/consumer_mpi"
echo "ok: libnwattn_mpi installed, split from the core, usable through pkg-config and CMake"
