#!/usr/bin/env bash
# The library does not ask for an executable stack (GNU_STACK must be RW, not RWE), has no text
# relocations, and is linked with full RELRO (-z relro -z now) as its link options request.
#
# usage: check_hardening.sh READELF LIBRARY
set -euo pipefail
readelf_tool=$1 lib=$2

fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -f $lib ]] || fail "no library at $lib"

headers=$("$readelf_tool" -lW "$lib")
stack=$(grep -E '^[[:space:]]*GNU_STACK[[:space:]]' <<<"$headers" || true)
[[ -n $stack ]] || fail "no GNU_STACK program header: the loader would assume an executable stack"
# Columns: Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align; the flags may contain blanks.
flags=$(awk '{ f = ""; for (i = 7; i < NF; i++) f = f $i; print f }' <<<"$stack")
[[ $flags == *E* ]] && fail "executable stack: GNU_STACK flags are '$flags'"
[[ $flags == RW ]] || fail "unexpected GNU_STACK flags '$flags' (expected RW)"

grep -qE '^[[:space:]]*GNU_RELRO[[:space:]]' <<<"$headers" || fail "no GNU_RELRO segment"
dynamic=$("$readelf_tool" -dW "$lib")
grep -qE '\(TEXTREL\)' <<<"$dynamic" && fail "the library has text relocations"
grep -qE '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dynamic" || fail "not linked with -z now"

echo "ok: $(basename "$lib"): GNU_STACK $flags, GNU_RELRO, BIND_NOW, no TEXTREL"
