#!/usr/bin/env bash
# Proves that check-symbols.sh can fail: doctored copies of debian/libnwattn0.symbols (a symbol
# missing, one too many, a wrong node, a wrong minimal version, a wrong SONAME) and of the
# baseline (a released symbol the library no longer has) must each be refused; the committed
# files must pass.
#
# usage: abi/selftest-symbols.sh LIBRARY
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:?usage: selftest-symbols.sh LIBRARY}
symbols=$here/../debian/libnwattn0.symbols
baseline=$here/libnwattn-0.1.0.abi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

expect() { # expect pass|fail LABEL SYMBOLS BASELINE
    local want=$1 label=$2
    if bash "$here/check-symbols.sh" "$lib" "$3" "$4" >"$tmp/out" 2>&1; then got=pass; else got=fail; fi
    if [[ $got == "$want" ]]; then
        echo "ok: $label -> $got"
    else
        echo "WRONG: $label -> $got, expected $want"; cat "$tmp/out"; bad=1
    fi
}

expect pass "committed files" "$symbols" "$baseline"
sed '/nwattn_pool@/d' "$symbols" >"$tmp/missing"
expect fail "a symbol missing" "$tmp/missing" "$baseline"
{ cat "$symbols"; echo " nwattn_no_such_function@NWATTN_0 0.1.0"; } >"$tmp/extra"
expect fail "a symbol too many" "$tmp/extra" "$baseline"
sed 's/^ nwattn_pool@NWATTN_0 / nwattn_pool@NWATTN_0.2 /' "$symbols" >"$tmp/node"
expect fail "a wrong version node" "$tmp/node" "$baseline"
sed 's/^\( nwattn_pool@NWATTN_0\) 0\.1\.0/\1 0.0.9/' "$symbols" >"$tmp/minver"
expect fail "a wrong minimal version" "$tmp/minver" "$baseline"
sed '1s/^libnwattn\.so\.0 /libnwattn.so.1 /' "$symbols" >"$tmp/soname"
expect fail "a wrong SONAME" "$tmp/soname" "$baseline"
sed "s/<elf-symbol name='nwattn_bmm'/<elf-symbol name='nwattn_bmm_gone'/" "$baseline" >"$tmp/base.abi"
expect fail "a released symbol gone" "$symbols" "$tmp/base.abi"
exit $bad
