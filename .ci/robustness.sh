#!/usr/bin/env bash
# Robustness stages of CI (issue 7): sanitizers, valgrind, ThreadSanitizer, fuzzing, ABI.
# .ci/run sources this file and calls the stage functions after its own stages; run alone as
#
#   bash .ci/robustness.sh [STAGE...]      (default: all stages, in the order below)
#
# Stages (each builds into $NWATTN_CI_BUILD/<stage>, default build-ci/):
#   robust_asan       gcc, -fsanitize=address,undefined: unit and robustness tests
#   robust_dim_limit  BLAS calls split at 7 (NWATTN_BLAS_DIM_LIMIT) and the sgemm_batch shim,
#                     under ASan + UBSan: unit and robustness tests on the splitting and
#                     batch-API paths (OpenBLAS 0.3.21 lacks cblas_sgemm_batch, so only the
#                     shim builds that path here)
#   robust_valgrind   Debug build, every unit and robustness test under valgrind memcheck:
#                     any error or leak fails
#   robust_tsan       clang, -fsanitize=thread: the thread stress test and the other tests
#   robust_fuzz       clang libFuzzer + ASan + UBSan: replays tests/fuzz/corpus, then fuzzes for
#                     $NWATTN_FUZZ_SECONDS (default 60) from it
#   robust_abi        RelWithDebInfo library against abi/libnwattn-0.1.0.abi, and the checker's
#                     self-test
# Packages: clang, libclang-rt-14-dev, valgrind, abigail-tools (installed by robust_deps).
set -euo pipefail

NWATTN_CI_ROOT=${NWATTN_CI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
NWATTN_CI_BUILD=${NWATTN_CI_BUILD:-$NWATTN_CI_ROOT/build-ci}
NWATTN_CI_JOBS=${NWATTN_CI_JOBS:-2}

robust_log() { printf '\n=== %s: %s\n' "${FUNCNAME[1]}" "$*"; }

# cmake configure + build of one stage's tree; extra arguments go to the configure step.
robust_build() {
    local dir=$1
    shift
    cmake -S "$NWATTN_CI_ROOT" -B "$dir" -DNWATTN_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$NWATTN_CI_JOBS"
}

robust_deps() {
    robust_log "packages for the robustness stages"
    if [[ -x $NWATTN_CI_ROOT/.ci/install-deps ]] || [[ -f $NWATTN_CI_ROOT/.ci/install-deps ]]; then
        bash "$NWATTN_CI_ROOT/.ci/install-deps" clang libclang-rt-14-dev valgrind abigail-tools
    else
        local missing=()
        for p in clang libclang-rt-14-dev valgrind abigail-tools libcmocka-dev libopenblas-dev \
                 cmake pkg-config; do
            dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
                missing+=("$p")
        done
        if (( ${#missing[@]} )); then
            DEBIAN_FRONTEND=noninteractive apt-get update -q
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                "${missing[@]}"
        fi
    fi
}

robust_asan() {
    robust_log "gcc AddressSanitizer + UBSan"
    local dir=$NWATTN_CI_BUILD/asan
    CC=gcc robust_build "$dir" -DCMAKE_BUILD_TYPE=Debug -DNWATTN_SANITIZE=address,undefined
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir "$dir" -L 'unit|robust' --output-on-failure -j "$NWATTN_CI_JOBS"
}

robust_dim_limit() {
    robust_log "BLAS calls split at 7, sgemm_batch shim, ASan + UBSan"
    local dir=$NWATTN_CI_BUILD/dim-limit
    CC=gcc robust_build "$dir" -DCMAKE_BUILD_TYPE=Debug -DNWATTN_SANITIZE=address,undefined \
        -DNWATTN_BLAS_DIM_LIMIT=7 -DNWATTN_SGEMM_BATCH=SHIM
    ctest --test-dir "$dir" -L 'unit|robust' --output-on-failure -j "$NWATTN_CI_JOBS"
}

robust_valgrind() {
    robust_log "valgrind memcheck on every unit and robustness test"
    local dir=$NWATTN_CI_BUILD/valgrind
    # No suppressions are needed today; if OpenBLAS's thread pool ever shows up, suppress only
    # frames inside libopenblas, in .ci/valgrind.supp, with a comment saying why.
    local options="--error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible"
    options+=" --errors-for-leak-kinds=definite,indirect,possible"
    if [[ -f $NWATTN_CI_ROOT/.ci/valgrind.supp ]]; then
        options+=" --suppressions=$NWATTN_CI_ROOT/.ci/valgrind.supp"
    fi
    robust_build "$dir" -DCMAKE_BUILD_TYPE=Debug \
        -DMEMORYCHECK_COMMAND="$(command -v valgrind)" -DMEMORYCHECK_COMMAND_OPTIONS="$options"
    # One BLAS thread keeps valgrind's serialised threads fast; the stress test runs fewer rounds.
    OPENBLAS_NUM_THREADS=1 NWATTN_STRESS_ROUNDS=2 \
        ctest --test-dir "$dir" -T memcheck -L 'unit|robust' --output-on-failure \
              -j "$NWATTN_CI_JOBS"
}

robust_tsan() {
    robust_log "clang ThreadSanitizer"
    local dir=$NWATTN_CI_BUILD/tsan
    CC=clang robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_SANITIZE=thread
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        ctest --test-dir "$dir" -L 'unit|robust' --output-on-failure
}

robust_fuzz() {
    local seconds=${NWATTN_FUZZ_SECONDS:-60}
    robust_log "libFuzzer for ${seconds}s"
    local dir=$NWATTN_CI_BUILD/fuzz
    CC=clang robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_BUILD_FUZZERS=ON \
        -DNWATTN_SANITIZE=address,undefined
    ctest --test-dir "$dir" -L fuzz --output-on-failure
    local corpus
    corpus=$(mktemp -d)
    # New inputs go to a scratch directory; the seeds in the repository are only read.
    OPENBLAS_NUM_THREADS=1 "$dir/tests/fuzz/fuzz_nwattn" -max_total_time="$seconds" \
        -print_final_stats=1 -artifact_prefix="$dir/" "$corpus" \
        "$NWATTN_CI_ROOT/tests/fuzz/corpus" 2>&1 | grep -Ev '^#[0-9]+.*(NEW|REDUCE|pulse)'
    rm -rf "$corpus"
}

robust_abi() {
    robust_log "ABI against abi/libnwattn-0.1.0.abi"
    local dir=$NWATTN_CI_BUILD/abi
    robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF
    local lib
    lib=$(readlink -f "$dir/src/libnwattn.so")
    bash "$NWATTN_CI_ROOT/abi/check-abi.sh" "$lib"
    bash "$NWATTN_CI_ROOT/abi/selftest-abi.sh" "$lib"
}

ROBUST_STAGES=(robust_asan robust_dim_limit robust_valgrind robust_tsan robust_fuzz robust_abi)

# Runs the given stages (default all), timing each.
robust_run() {
    local stages=("$@")
    (( ${#stages[@]} )) || stages=("${ROBUST_STAGES[@]}")
    for stage in "${stages[@]}"; do
        local start=$SECONDS
        "$stage"
        printf '=== %s: done in %ds\n' "$stage" $((SECONDS - start))
    done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    robust_deps
    robust_run "$@"
fi
