#!/usr/bin/env bash
# The Debian symbols file against the built library and the last released ABI baseline (CI
# stage `abi`, next to check-abi.sh; docs/releasing.md "Symbols"):
#   1. debian/libnwattn0.symbols lists exactly what LIBRARY exports, each symbol with its
#      version node (name@NWATTN_X.Y) and the SONAME of its first line;
#   2. each entry's minimal version is its node's release (NWATTN_0 -> 0.1.0, NWATTN_X.Y -> X.Y.0),
#      so that a package built against a symbol depends on the release that has it;
#   3. every symbol of the baseline (abi/libnwattn-*.abi) is still there with the same node,
#      unless the SONAME changed (a declared break: check-abi.sh judges that one).
# It fails saying what to run; the package build's dpkg-gensymbols -c4 checks 1 as well.
#
# usage: abi/check-symbols.sh LIBRARY [SYMBOLS_FILE] [BASELINE.abi]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:?usage: check-symbols.sh LIBRARY [SYMBOLS_FILE] [BASELINE.abi]}
package=$(bash "$here/../debian/exported-symbols.sh" --package "$lib" | cut -d' ' -f1)
symbols=${2:-$here/../debian/$package.symbols}
baseline=${3:-$here/libnwattn-0.1.0.abi}
exported="$here/../debian/exported-symbols.sh"
fail=0
problem() { echo "check-symbols: $*" >&2; fail=1; }

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
read -r file_soname _ <"$symbols"
[[ $file_soname == "$soname" ]] ||
    problem "$symbols is for $file_soname, the library's SONAME is $soname"

# 1. the same set of name@node
have=$(bash "$exported" "$lib" | awk '{ print $1 "@" $2 }')
listed=$(awk '/^ / { print $1 }' "$symbols" | LC_ALL=C sort)
if [[ $have != "$listed" ]]; then
    problem "the exports of $lib differ from $symbols (< exported, > listed):"
    diff <(echo "$have") <(echo "$listed") | grep '^[<>]' >&2 || true
fi

# 2. minimal versions follow the node
while read -r entry minver; do
    node=${entry#*@}
    want=$(bash "$exported" --minver "$node") || { problem "$entry: unknown node"; continue; }
    [[ $minver == "$want" ]] || problem "$entry has minimal version $minver, its node $node is $want"
done < <(awk '/^ / { print $1, $2 }' "$symbols")

# 3. the released ABI is still exported
# (A library without a released baseline yet, such as a new MPI library: pass a baseline
# path that does not exist, and this step is skipped with a note.)
base_soname=
if [[ -f $baseline ]]; then
    base_soname=$(grep -o "soname='[^']*'" "$baseline" | head -1 | cut -d"'" -f2)
else
    echo "check-symbols: no baseline $baseline: released symbols not checked"
fi
if [[ -n $base_soname && $base_soname == "$soname" ]]; then
    while read -r name node; do
        grep -qxF "$name@$node" <<<"$have" ||
            problem "$name@$node of the released ABI ($(basename "$baseline")) is no longer exported (that needs a SONAME bump)"
    done < <(grep -o "<elf-symbol name='[^']*' version='[^']*'" "$baseline" |
             sed "s/<elf-symbol name='\([^']*\)' version='\([^']*\)'/\1 \2/")
fi

if (( fail )); then
    echo >&2
    echo "check-symbols: if the change is intended (a new public function), regenerate and commit:" >&2
    echo "    bash debian/update-symbols.sh" >&2
    echo "  (docs/releasing.md, 'Symbols'; a removed symbol needs a SONAME bump, see 'Versions')." >&2
    exit 1
fi
echo "check-symbols: $symbols matches $soname ($(wc -l <<<"$have") symbols)${base_soname:+; the $(basename "$baseline") ABI is all there}"
