#!/usr/bin/env bash
# Proves that check-abi.sh can fail: runs it against doctored copies of the baseline, each of
# which makes the given library look as if it had changed in one known way, and checks the
# verdict:
#   grown public struct (nwattn_mask lost its last member in the "old" ABI)  -> rejected
#   removed function (the "old" ABI had nwattn_bmm under another name)       -> rejected
#   added function (the "old" ABI lacked nwattn_bmm)                         -> accepted
#   the grown struct with a different SONAME named in the CHANGELOG          -> accepted
#   the grown struct with a different SONAME the CHANGELOG does not name     -> rejected
#
# usage: abi/selftest-abi.sh LIBRARY   (built with -g from an ABI-compatible tree)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:?usage: selftest-abi.sh LIBRARY}
baseline=$here/libnwattn-0.1.0.abi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$baseline" "$work" <<'EOF'
import re, sys
base, work = sys.argv[1], sys.argv[2]
xml = open(base).read()

def write(name, text):
    assert text != xml, name + ": the doctoring changed nothing"
    open(f"{work}/{name}.abi", "w").write(text)

# nwattn_mask without its last member: the library's mask looks grown.
i = xml.index("<var-decl name='stride_keep'")
start, end = xml.rfind("<data-member", 0, i), xml.index("</data-member>", i) + len("</data-member>")
grown = xml[:start] + xml[end:]
grown = re.sub(r"(name='nwattn_mask' size-in-bits=')512'", r"\g<1>448'", grown)
write("grown", grown)
write("grown-other-soname", grown.replace("soname='libnwattn.so.0'", "soname='libnwattn.so.7'", 1))

# nwattn_bmm renamed in the old ABI: the library lost nwattn_bmm_v0 (and gained nwattn_bmm).
write("removed", xml.replace("'nwattn_bmm'", "'nwattn_bmm_v0'").replace("nwattn_bmm@@", "nwattn_bmm_v0@@"))

# nwattn_bmm absent from the old ABI: the library added it.
added = re.sub(r"\s*<elf-symbol name='nwattn_bmm'[^>]*/>", "", xml, count=1)
start = added.index("<function-decl name='nwattn_bmm'")
added = added[:start] + added[added.index("</function-decl>", start) + len("</function-decl>"):]
write("added", added)
EOF

printf '## [Unreleased]\n### Changed\n- ABI break: SONAME libnwattn.so.0 (test)\n' >"$work/declared.md"
printf '## [Unreleased]\n' >"$work/silent.md"

failures=0
expect() { # expect pass|fail BASELINE CHANGELOG
    local want=$1 verdict
    if "$here/check-abi.sh" "$lib" "$work/$2.abi" "$work/$3" >"$work/out" 2>&1; then
        verdict=pass
    else
        verdict=fail
    fi
    if [[ $verdict != "$want" ]]; then
        echo "selftest-abi: $2 with $3: $verdict, expected $want" >&2
        cat "$work/out" >&2
        failures=$((failures + 1))
    else
        echo "selftest-abi: $2 ($3): $verdict as expected"
    fi
}
expect fail grown silent.md
expect fail removed silent.md
expect pass added silent.md
expect pass grown-other-soname declared.md
expect fail grown-other-soname silent.md
exit $(( failures > 0 ))
