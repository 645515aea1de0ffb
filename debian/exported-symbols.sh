#!/usr/bin/env bash
# The dynamic symbols a libnwattn library exports, one "NAME NODE" line each, sorted
# (version-node symbols such as NWATTN_0 included, as dpkg-gensymbols lists them); or, with
# --minver NODE, the release that a version node belongs to (docs/releasing.md, "Versions"):
# NWATTN_0 -> 0.1.0, NWATTN_X.Y -> X.Y.0, and the same for the MPI library's NWATTN_MPI_* nodes.
# --package LIBRARY prints the Debian runtime and development package names for the library's
# SONAME (libnwattn.so.0 -> libnwattn0 libnwattn-dev; libnwattn_mpi.so.0 -> libnwattn-mpi0
# libnwattn-mpi-dev). Shared by debian/update-symbols.sh and abi/check-symbols.sh.
#
# usage: exported-symbols.sh LIBRARY | --minver NODE | --package LIBRARY
set -euo pipefail
if [[ ${1:-} == --minver ]]; then
    node=${2:?usage: exported-symbols.sh --minver NODE}
    if [[ $node =~ ^NWATTN_(MPI_)?0$ ]]; then
        echo 0.1.0
    elif [[ $node =~ ^NWATTN_(MPI_)?([0-9]+)\.([0-9]+)$ ]]; then
        echo "${BASH_REMATCH[2]}.${BASH_REMATCH[3]}.0"
    else
        echo "exported-symbols.sh: version node '$node' is not NWATTN_[MPI_]0 or NWATTN_[MPI_]X.Y" >&2
        exit 1
    fi
    exit 0
fi
if [[ ${1:-} == --package ]]; then
    soname=$(readelf -d "${2:?usage: exported-symbols.sh --package LIBRARY}" |
             sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [[ ! $soname =~ ^(libnwattn(_mpi)?)\.so\.([0-9]+)$ ]]; then
        echo "exported-symbols.sh: unexpected SONAME '$soname'" >&2
        exit 1
    fi
    base=${BASH_REMATCH[1]//_/-}
    echo "$base${BASH_REMATCH[3]} $base-dev"
    exit 0
fi
lib=${1:?usage: exported-symbols.sh LIBRARY}
# readelf --dyn-syms -W: "Num: Value Size Type Bind Vis Ndx Name@@NODE"; defined (Ndx not UND)
# global or weak symbols only. A version node's own symbol is "NWATTN_0" at Ndx ABS.
readelf --dyn-syms -W "$lib" |
    awk '$5 != "LOCAL" && $7 != "UND" && $8 ~ /@/ { split($8, p, "@+"); print p[1], p[2] }
         $5 != "LOCAL" && $7 == "ABS" && $8 ~ /^NWATTN_(MPI_)?[0-9.]+$/ { print $8, $8 }' |
    LC_ALL=C sort -u
