#!/usr/bin/env bash
# The shared library is named and linked like a Debian library: the real file
# libnwattn.so.VERSION, its SONAME libnwattn.so.SOVERSION (a link to the real file) and the
# development link libnwattn.so (a link to the SONAME).
#
# usage: check_soname.sh READELF LIBDIR VERSION SOVERSION [NAME]   (NAME: libnwattn)
set -euo pipefail
readelf_tool=$1 libdir=$2 version=$3 soversion=$4 name=${5:-libnwattn}

fail() { echo "FAIL: $*" >&2; exit 1; }

real="$name.so.$version"
soname="$name.so.$soversion"
devlink="$name.so"

[[ -f $libdir/$real && ! -L $libdir/$real ]] || fail "$libdir/$real is not a regular file"
[[ -L $libdir/$soname ]] || fail "$libdir/$soname is not a symbolic link"
[[ $(readlink "$libdir/$soname") == "$real" ]] ||
    fail "$soname points to '$(readlink "$libdir/$soname")', not to $real"
[[ -L $libdir/$devlink ]] || fail "$libdir/$devlink is not a symbolic link"
[[ $(readlink "$libdir/$devlink") == "$soname" ]] ||
    fail "$devlink points to '$(readlink "$libdir/$devlink")', not to $soname"

dynamic=$("$readelf_tool" -dW "$libdir/$real")
got=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' <<<"$dynamic")
[[ $got == "$soname" ]] || fail "SONAME of $real is '$got', expected $soname"

# The library must not carry a RUNPATH/RPATH into somebody's build tree once installed; in the
# build tree CMake may add one, so only report it.
if grep -qE '\((RUNPATH|RPATH)\)' <<<"$dynamic"; then
    echo "note: $(grep -E '\((RUNPATH|RPATH)\)' <<<"$dynamic" | sed 's/^ *//')"
fi
echo "ok: $real, SONAME $soname, links $soname -> $real and $devlink -> $soname"
