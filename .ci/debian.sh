#!/usr/bin/env bash
# CI stage `debian` (issue 17): the Debian packages as a distribution builds them, then as users
# get them.
#   1. a copy of the tracked source tree (dpkg-buildpackage writes into the parent directory)
#      builds with `dpkg-buildpackage -us -uc -b`; DEB_BUILD_OPTIONS=nocheck by default, since
#      CI has run the test suite already (NWATTN_DEB_CHECK=1 runs it inside the build too).
#      dpkg-gensymbols -c4 fails the build when the exports differ from
#      debian/libnwattn0.symbols or debian/libnwattn-mpi0.symbols;
#   2. lintian on the .changes: any error or warning fails (overrides in debian/*.lintian-overrides);
#   3. the .debs are installed on this machine with apt, and debian/tests (the autopkgtest
#      scripts: C consumer through pkg-config, C++ consumer through find_package, the Python
#      binding and its tests, the MPI consumer through pkg-config on 2 ranks) run against /usr;
#   4. the packages are purged again, so that later runs see no libnwattn in /usr.
# Packages: debhelper dh-python dpkg-dev lintian mpi-default-dev mpi-default-bin (.ci/run
# installs them).
#
# usage: bash .ci/debian.sh     (as root, or with sudo)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
as_root=()
(( EUID == 0 )) || as_root=(sudo)

work=$(mktemp -d /tmp/nwattn-deb.XXXXXX)
installed=0
cleanup() {
    if (( installed )); then
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
            libnwattn0 libnwattn-dev libnwattn-mpi0 libnwattn-mpi-dev python3-nwattn \
            >/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

version=$(cd "$root" && dpkg-parsechangelog -SVersion)
src="$work/libnwattn-$version"
mkdir -p "$src"
# Tracked files only (with uncommitted edits, as in the work tree): no build trees.
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "$src" 2>/dev/null) || cp -a "$root/." "$src"

echo "=== dpkg-buildpackage -us -uc -b in $src"
opts=${DEB_BUILD_OPTIONS:-}
[[ ${NWATTN_DEB_CHECK:-0} == 1 ]] || opts="nocheck $opts"
t0=$SECONDS
(cd "$src" && DEB_BUILD_OPTIONS="$opts parallel=${NWATTN_CI_JOBS:-2}" \
    dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || {
    tail -60 "$work/build.log"
    if grep -q 'dpkg-gensymbols' "$work/build.log"; then
        echo
        echo "debian: a library's exports differ from its debian/*.symbols file (diff above)."
        echo "        If the change is intended (a new public function), regenerate and commit it:"
        echo "            bash debian/update-symbols.sh"
        echo "        (docs/releasing.md, 'Symbols'); a removed or renamed symbol needs a SONAME bump."
    fi
    exit 1
}
echo "built in $((SECONDS - t0)) s:"
ls -1 "$work"/*.deb

echo "=== lintian"
changes=$(ls "$work"/*.changes)
lintian --fail-on error,warning --display-info --info "$changes"

echo "=== install the packages"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "$work"/libnwattn0_*.deb "$work"/libnwattn-dev_*.deb "$work"/libnwattn-mpi0_*.deb \
    "$work"/libnwattn-mpi-dev_*.deb "$work"/python3-nwattn_*.deb
installed=1
dpkg -L libnwattn0 libnwattn-dev libnwattn-mpi0 libnwattn-mpi-dev python3-nwattn | grep -E '\.so|\.h$|\.pc$|(Config|Targets)\.cmake$|__init__'

echo "=== debian/tests against /usr"
for t in c-consumer cxx-consumer python-binding mpi-consumer; do
    echo "--- $t"
    tmp="$work/test-$t"
    mkdir -p "$tmp"
    (cd "$src" && AUTOPKGTEST_TMP="$tmp" sh "debian/tests/$t")
done
echo "debian: packages built, lintian clean, installed, consumers passed"
