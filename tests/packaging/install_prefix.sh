#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, the way a user or a packager would
# (`cmake --install BUILD --prefix PREFIX`), and checks what lands there.
#
# usage: install_prefix.sh CMAKE BUILD_DIR PREFIX LIBDIR INCLUDEDIR CMAKEDIR PKGCONFIGDIR VERSION SOVERSION
# LIBDIR etc. are the project's CMAKE_INSTALL_* values (relative to the prefix, or absolute).
set -euo pipefail
cmake_tool=$1 build=$2 prefix=$3 libdir=$4 includedir=$5 cmakedir=$6 pcdir=$7 version=$8 soversion=$9

fail() { echo "FAIL: $*" >&2; exit 1; }
under_prefix() { if [[ $1 == /* ]]; then echo "$1"; else echo "$prefix/$1"; fi; }

rm -rf "$prefix"
"$cmake_tool" --install "$build" --prefix "$prefix"

lib=$(under_prefix "$libdir")
inc=$(under_prefix "$includedir")
cm=$(under_prefix "$cmakedir")
pc=$(under_prefix "$pcdir")

for f in "$inc/nwattn.h" "$lib/libnwattn.so.$version" "$pc/nwattn.pc" \
         "$cm/nwattnConfig.cmake" "$cm/nwattnConfigVersion.cmake" "$cm/nwattnTargets.cmake"; do
    [[ -f $f ]] || fail "not installed: $f"
done
cmp -s "$inc/nwattn.h" "$(dirname "$0")/../../include/nwattn.h" ||
    fail "the installed header differs from include/nwattn.h"
[[ $(readlink "$lib/libnwattn.so.$soversion") == "libnwattn.so.$version" ]] ||
    fail "$lib/libnwattn.so.$soversion is not a link to libnwattn.so.$version"
[[ $(readlink "$lib/libnwattn.so") == "libnwattn.so.$soversion" ]] ||
    fail "$lib/libnwattn.so is not a link to libnwattn.so.$soversion"

# The installed library must not point back into the build tree.
if "${READELF:-readelf}" -dW "$lib/libnwattn.so.$version" | grep -E '\((RUNPATH|RPATH)\)'; then
    fail "the installed library carries a RUNPATH/RPATH"
fi

# No build-tree path may leak into the installed text files, and the CMake files must be
# relocatable: they may not name the prefix they were installed to.
# (The prefix of this test lies inside the build directory, so lines naming it are fine.)
for dir in "$build" "$(cd "$build" && pwd -P)"; do
    if grep -rF -e "$dir" "$inc" "$pc/nwattn.pc" "$cm" | grep -vF -e "$prefix"; then
        fail "installed files name the build directory $dir"
    fi
done
if grep -rlF -e "$prefix" "$cm"; then
    fail "the installed CMake package names its prefix $prefix: it is not relocatable"
fi

# nwattn.pc: the right version and paths; OpenBLAS and libm only for static linking.
pcfile="$pc/nwattn.pc"
grep -qx 'Requires.private: openblas' "$pcfile" || fail "nwattn.pc lacks 'Requires.private: openblas'"
grep -qE '^Libs.private:.*-lm\b' "$pcfile" || fail "nwattn.pc lacks 'Libs.private: -lm'"
grep -qE '^Requires:' "$pcfile" && fail "nwattn.pc has a public Requires: line"
grep -qx "Version: $version" "$pcfile" || fail "nwattn.pc does not say Version: $version"
grep -qx "prefix=$prefix" "$pcfile" || fail "nwattn.pc does not say prefix=$prefix"

echo "installed into $prefix:"
(cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's/^\.\//    /')
echo "ok: header, libnwattn.so.$version with its links, nwattn.pc and the CMake package"
