#!/usr/bin/env bash
# Copies the installed prefix to a new place (the CMake package must be relocatable), then
# configures, builds and runs examples/consumers/ as its own CMake project with
# CMAKE_PREFIX_PATH=<the copy>, find_package(nwattn REQUIRED) and nwattn::nwattn.
#
# usage: consumer_cmake.sh CMAKE GENERATOR PREFIX WORKDIR VERSION [CXX] [EXTRA_FLAGS]
# CXX empty: CMake picks the C++ compiler. EXTRA_FLAGS are added to compiling and linking
# (the sanitizer flags the library was built with).
set -euo pipefail
cmake_tool=$1 generator=$2 prefix=$3 work=$4 version=$5 cxx=${6:-} extra=${7:-}
src=$(cd "$(dirname "$0")/../../examples/consumers" && pwd)

rm -rf "$work"
mkdir -p "$work"
moved="$work/moved-prefix"
cp -a "$prefix" "$moved"

args=(-S "$src" -B "$work/build" -G "$generator"
      -DCMAKE_PREFIX_PATH="$moved"
      -DNWATTN_EXPECTED_VERSION="$version"
      -DCMAKE_BUILD_TYPE=Release)
[[ -n $cxx ]] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
if [[ -n $extra ]]; then
    args+=(-DCMAKE_CXX_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra")
fi
"$cmake_tool" "${args[@]}"
"$cmake_tool" --build "$work/build"

# The program loads the library of the moved prefix (CMake's build RPATH points there).
if command -v ldd >/dev/null; then
    loaded=$(ldd "$work/build/consumer")
    grep -F "libnwattn.so" <<<"$loaded" || true
    if ! grep -qF "$moved/" <<<"$loaded"; then
        echo "FAIL: the consumer does not load libnwattn from $moved" >&2
        exit 1
    fi
fi
"$work/build/consumer"
