#!/usr/bin/env bash
# Compares a built libnwattn.so (with debug info: -g) against the committed ABI baseline with
# libabigail's abidiff, and decides:
#
#   identical, or only additions (new functions, variables, enumerators appended)  -> pass
#   anything removed or changed (a function's parameters, a public struct's layout, ...)
#     -> fail, unless the library's SONAME differs from the baseline's AND CHANGELOG.md names
#        the new SONAME (e.g. "ABI break: SONAME libnwattn.so.1"), i.e. the break is declared.
#
# abidiff's exit bits alone do not suffice: it sets ABI_INCOMPATIBLE_CHANGE (8) only for
# removed symbols and reports type changes such as a grown struct as ABI_CHANGE (4), the same
# bit as harmless additions. So the verdict reads its change summary.
#
# usage: abi/check-abi.sh LIBRARY [BASELINE.abi] [CHANGELOG.md]
#   Environment: ABIDIFF (default abidiff), NWATTN_ABI_HEADERS (default: include/ next to abi/).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:?usage: check-abi.sh LIBRARY [BASELINE.abi] [CHANGELOG.md]}
baseline=${2:-$here/libnwattn-0.1.0.abi}
changelog=${3:-$here/../CHANGELOG.md}
headers=${NWATTN_ABI_HEADERS:-$here/../include}
abidiff=${ABIDIFF:-abidiff}

# Without DWARF abidiff compares symbols only and would miss every type change (and
# --fail-no-debug-info does not catch that for an abixml baseline in libabigail 2.2).
if ! readelf -S "$lib" | grep '\.debug_info' >/dev/null; then
    echo "check-abi: $lib has no debug info; build it with -g (e.g. CMAKE_BUILD_TYPE=RelWithDebInfo)" >&2
    exit 2
fi

report=$(mktemp)
trap 'rm -f "$report"' EXIT

set +e
"$abidiff" --fail-no-debug-info --drop-private-types --headers-dir2 "$headers" \
    "$baseline" "$lib" >"$report" 2>&1
status=$?
set -e
cat "$report"

if (( status & 3 )); then # 1: abidiff failed, 2: usage error
    echo "check-abi: abidiff could not compare (exit $status); is $lib built with -g?" >&2
    exit 2
fi

# Removed or changed entries in any summary line ("N Removed", "N Changed").
broken=0
while read -r line; do
    removed=$(sed -n 's/.*: \([0-9]\+\) Removed.*/\1/p' <<<"$line")
    changed=$(sed -n 's/.*Removed, \([0-9]\+\) Changed.*/\1/p' <<<"$line")
    if (( ${removed:-0} > 0 || ${changed:-0} > 0 )); then
        broken=1
    fi
done < <(grep -E 'changes summary:' "$report" || true)
if (( status & 8 )); then
    broken=1
fi

if (( !broken )); then
    if (( status & 4 )); then
        echo "check-abi: compatible: only additions to the 0.1.0 ABI"
    else
        echo "check-abi: compatible: no ABI change from the baseline"
    fi
    exit 0
fi

old_soname=$(sed -n "s/.*soname='\([^']*\)'.*/\1/p" "$baseline" | head -n 1)
new_soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [[ -n "$new_soname" && "$new_soname" != "$old_soname" ]] &&
   [[ -f "$changelog" ]] && grep -qF "$new_soname" "$changelog"; then
    echo "check-abi: incompatible change, declared: SONAME $old_soname -> $new_soname and" \
         "CHANGELOG.md says so"
    exit 0
fi
echo "check-abi: INCOMPATIBLE ABI change against $old_soname (see the report above)." >&2
echo "  Keep the change compatible, or bump NWATTN_SOVERSION in CMakeLists.txt and name the" >&2
echo "  new SONAME (now $new_soname) in CHANGELOG.md, then commit a new baseline (abi/README.md)." >&2
exit 1
