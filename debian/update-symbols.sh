#!/usr/bin/env bash
# Regenerates debian/libnwattn0.symbols from the library's exports: one line per exported
# symbol, name@NODE and the first release that has it, read off its version node
# (src/nwattn.map): NWATTN_0 -> 0.1.0, NWATTN_X.Y -> X.Y.0 (docs/releasing.md, "Versions").
# Run it after adding (or, with a declared SONAME bump, removing) a public function, and commit
# the result; the package build (dpkg-gensymbols -c4) and CI's abi stage fail until then.
#
# usage: bash debian/update-symbols.sh [LIBRARY]
#   LIBRARY: a built libnwattn.so.0*; without it the library is built in build-symbols/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=${1:-}
if [[ -z $lib ]]; then
    cmake -S "$root" -B "$root/build-symbols" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build "$root/build-symbols" -j2 --target nwattn >/dev/null
    lib=$(readlink -f "$root/build-symbols/src/libnwattn.so")
fi
out=$root/debian/libnwattn0.symbols
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libnwattn\.so\.([0-9]+)$ ]] || { echo "unexpected SONAME '$soname'" >&2; exit 1; }
package=libnwattn${BASH_REMATCH[1]}

{
    echo "$soname $package #MINVER#"
    echo "* Build-Depends-Package: libnwattn-dev"
    bash "$root/debian/exported-symbols.sh" "$lib" | while read -r name node; do
        echo " $name@$node $(bash "$root/debian/exported-symbols.sh" --minver "$node")"
    done
} >"$out.new"
mv "$out.new" "$out"
echo "wrote $out ($(($(wc -l <"$out") - 2)) symbols of $soname)"
