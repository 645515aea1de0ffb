#!/usr/bin/env bash
# The README's first quick-start command: on a fresh Debian 12 machine, installs what is missing
# (apt-get, through sudo unless root: .ci/install-deps lists the packages, python3-numpy and
# python3-matplotlib among them), builds the library, and runs the main demo,
# examples/demo.py, through the Python binding with Debian's own /usr/bin/python3 (which has
# python3-numpy and python3-matplotlib; another python3 on PATH may lack them).
# The PNG files (and the numbers behind them as CSV) go to OUTDIR, by default examples/out/.
#
# usage: bash examples/run_demo.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-examples/out}

bash .ci/install-deps
cmake -S . -B build
cmake --build build -j"$(nproc)" --target nwattn
NWATTN_LIBRARY="$PWD/build/src" /usr/bin/python3 examples/demo.py --out "$out"
