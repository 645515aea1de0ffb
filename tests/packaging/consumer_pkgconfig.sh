#!/usr/bin/env bash
# Builds examples/consumers/consumer.c against the installed prefix the way the README says,
#   cc consumer.c $(pkg-config --cflags --libs nwattn)
# with only PKG_CONFIG_PATH pointing at the prefix, then runs it.
#
# usage: consumer_pkgconfig.sh PREFIX PKGCONFIGDIR CC WORKDIR VERSION [EXTRA_FLAGS]
# EXTRA_FLAGS (one word list) is added to the compile line, e.g. the sanitizer flags the library
# was built with.
set -euo pipefail
prefix=$1 pcdir=$2 cc=$3 work=$4 version=$5 extra=${6:-}
src=$(cd "$(dirname "$0")/../../examples/consumers" && pwd)/consumer.c

fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $pcdir == /* ]] || pcdir="$prefix/$pcdir"

export PKG_CONFIG_PATH="$pcdir"
pkg-config --exists --print-errors nwattn || fail "pkg-config cannot find nwattn in $pcdir"
[[ $(pkg-config --modversion nwattn) == "$version" ]] ||
    fail "pkg-config --modversion nwattn says $(pkg-config --modversion nwattn), expected $version"

libs=$(pkg-config --libs nwattn)
static_libs=$(pkg-config --static --libs nwattn)
echo "pkg-config --cflags --libs nwattn: $(pkg-config --cflags --libs nwattn)"
echo "pkg-config --static --libs nwattn: $static_libs"
[[ " $libs " == *" -lnwattn "* ]] || fail "--libs lacks -lnwattn"
[[ " $libs " != *" -lopenblas "* ]] || fail "--libs names OpenBLAS, a private dependency"
[[ " $static_libs " == *" -lopenblas "* ]] || fail "--static --libs lacks -lopenblas"
[[ " $libs " != *" -llapacke "* ]] || fail "--libs names LAPACKE, a private dependency"
[[ " $static_libs " == *" -llapacke "* ]] || fail "--static --libs lacks -llapacke"
[[ " $static_libs " == *" -lm "* ]] || fail "--static --libs lacks -lm"

rm -rf "$work"
mkdir -p "$work"
libdir=$(pkg-config --variable=libdir nwattn)
# shellcheck disable=SC2046,SC2086  # word splitting of the flags is intended
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror $extra -o "$work/consumer" "$src" \
    $(pkg-config --cflags --libs nwattn) -Wl,-rpath,"$libdir" -lm

# The program finds the library of the prefix, not the one in the build tree.
# (ldd's output is kept first: `ldd | grep -q` fails under pipefail when grep stops early.)
if command -v ldd >/dev/null; then
    loaded=$(ldd "$work/consumer")
    grep -F "libnwattn.so" <<<"$loaded" || true
    grep -qF "$libdir/libnwattn.so." <<<"$loaded" ||
        fail "the consumer does not load libnwattn from $libdir"
fi
"$work/consumer"
