#!/usr/bin/env bash
# shellcheck disable=SC2001  # sed indents the multi-line lists below
# Only the public API leaves libnwattn.so: every dynamic symbol the library defines is an
# nwattn_* function (or one the linker makes itself), every one of them is versioned NWATTN_0,
# and it is exactly the set of functions that nwattn.h declares NWATTN_API.
#
# usage: check_exports.sh NM LIBRARY HEADER [PREFIX NODE MACRO]
# (defaults nwattn_, NWATTN_0, NWATTN_API; libnwattn_mpi: nwattn_mpi_, NWATTN_MPI_0, NWATTN_MPI_API)
set -euo pipefail
nm_tool=$1 lib=$2 header=$3 prefix=${4:-nwattn_} node=${5:-NWATTN_0} macro=${6:-NWATTN_API}

fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -f $lib ]] || fail "no library at $lib"
[[ -f $header ]] || fail "no header at $header"

# Symbols the static linker adds on its own (and the version node itself, an ABS symbol).
linker_made="^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|${node})\$"

# "ADDRESS TYPE NAME[@@VERSION]"; ABS symbols have an address as well.
mapfile -t rows < <("$nm_tool" -D --defined-only "$lib" | awk 'NF >= 3 {print $2, $3}')
(( ${#rows[@]} > 0 )) || fail "nm -D --defined-only printed nothing for $lib"

declare -a exported=() stray=() unversioned=()
for row in "${rows[@]}"; do
    type=${row%% *} full=${row#* }
    name=${full%%@*}
    if [[ $name =~ $linker_made ]]; then
        continue
    fi
    if [[ $name != "$prefix"* ]]; then
        stray+=("$type $full")
        continue
    fi
    [[ $type == T ]] || stray+=("$type $full (an $prefix symbol that is not a function)")
    [[ $full == *@@"$node" ]] || unversioned+=("$full")
    exported+=("$name")
done

status=0
if (( ${#stray[@]} )); then
    echo "FAIL: symbols other than the $prefix API are exported:" >&2
    printf '    %s\n' "${stray[@]}" >&2
    status=1
fi
if (( ${#unversioned[@]} )); then
    echo "FAIL: API symbols without the version node $node:" >&2
    printf '    %s\n' "${unversioned[@]}" >&2
    status=1
fi

# Declarations look like "NWATTN_API <type> <name>(" on one line (the arguments may wrap).
mapfile -t declared < <(grep -E "^[[:space:]]*${macro}[[:space:]]" "$header" \
    | grep -oE "\\b${prefix}[A-Za-z0-9_]+[[:space:]]*\\(" | tr -d '( \t' | sort -u)
(( ${#declared[@]} > 0 )) || fail "found no $macro declarations in $header"

mapfile -t exported_sorted < <(printf '%s\n' "${exported[@]}" | sort -u)
missing=$(comm -23 <(printf '%s\n' "${declared[@]}") <(printf '%s\n' "${exported_sorted[@]}"))
extra=$(comm -13 <(printf '%s\n' "${declared[@]}") <(printf '%s\n' "${exported_sorted[@]}"))
if [[ -n $missing ]]; then
    echo "FAIL: declared $macro in $(basename "$header") but not exported:" >&2
    sed 's/^/    /' <<<"$missing" >&2
    status=1
fi
if [[ -n $extra ]]; then
    echo "FAIL: exported but not declared in $(basename "$header") (an ABI leak):" >&2
    sed 's/^/    /' <<<"$extra" >&2
    status=1
fi

if (( status == 0 )); then
    echo "ok: $(basename "$lib") exports exactly the ${#declared[@]} $macro functions, all @@$node"
fi
exit $status
