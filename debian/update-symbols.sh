#!/usr/bin/env bash
# Regenerates the Debian symbols files from the libraries' exports: debian/libnwattn0.symbols
# (and debian/libnwattn-mpi0.symbols when the MPI library is built), one line per exported
# symbol, name@NODE and the first release that has it, read off its version node
# (src/nwattn.map): NWATTN_0 -> 0.1.0, NWATTN_X.Y -> X.Y.0 (docs/releasing.md, "Versions").
# Run it after adding (or, with a declared SONAME bump, removing) a public function, and commit
# the result; the package build (dpkg-gensymbols -c4) and CI's abi stage fail until then.
#
# usage: bash debian/update-symbols.sh [LIBRARY...]
#   LIBRARY: a built libnwattn.so.0* (or libnwattn_mpi.so.0*); without one the libraries are
#   built in build-symbols/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exported=$root/debian/exported-symbols.sh
libs=("$@")
if (( ${#libs[@]} == 0 )); then
    cmake -S "$root" -B "$root/build-symbols" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build "$root/build-symbols" -j2 >/dev/null
    while IFS= read -r -d '' lib; do
        libs+=("$lib")
    done < <(find "$root/build-symbols" -name 'libnwattn*.so' -type l -print0)
fi

for lib in "${libs[@]}"; do
    lib=$(readlink -f "$lib")
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    read -r package dev < <(bash "$exported" --package "$lib")
    out=$root/debian/$package.symbols
    {
        echo "$soname $package #MINVER#"
        echo "* Build-Depends-Package: $dev"
        bash "$exported" "$lib" | while read -r name node; do
            echo " $name@$node $(bash "$exported" --minver "$node")"
        done
    } >"$out.new"
    mv "$out.new" "$out"
    echo "wrote $out ($(($(wc -l <"$out") - 2)) symbols of $soname)"
done
