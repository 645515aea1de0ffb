#!/usr/bin/env bash
# Robustness stages of CI (issue 7): valgrind, ThreadSanitizer, fuzzing, ABI. .ci/run calls
# them after its configurations (whose asan, batch-shim and dim-limit builds already run every
# test, the robustness ones included, under AddressSanitizer + UBSan). Alone:
#
#   bash .ci/robustness.sh [STAGE...]      (default: all four, in the order below)
#
# Stages (each builds into build-ci-<name> next to .ci/run's):
#   robust_valgrind  every unit and robustness test and the example under valgrind memcheck
#                    (RelWithDebInfo): any error or leak fails
#   robust_tsan      clang, -fsanitize=thread: the thread stress test and the other tests
#   robust_fuzz      clang libFuzzer + ASan + UBSan: replays tests/fuzz/corpus, then fuzzes for
#                    $NWATTN_FUZZ_SECONDS (default 60) from it
#   robust_abi       RelWithDebInfo library against abi/libnwattn-0.1.0.abi, and the checker's
#                    self-test
# Packages: clang, libclang-rt-14-dev, valgrind, abigail-tools (.ci/run installs them; run alone,
# this script does through .ci/install-deps).
set -euo pipefail

NWATTN_CI_ROOT=${NWATTN_CI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
NWATTN_CI_BUILD=${NWATTN_CI_BUILD:-$NWATTN_CI_ROOT}
NWATTN_CI_JOBS=${NWATTN_CI_JOBS:-2}

robust_log() { printf '\n=== %s: %s\n' "${FUNCNAME[1]}" "$*"; }

# A clean configure + build of one stage's tree; extra arguments go to the configure step.
robust_build() {
    local dir=$1
    shift
    rm -rf "$dir"
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

robust_valgrind() {
    robust_log "valgrind memcheck on every unit and robustness test and the example"
    local dir=$NWATTN_CI_BUILD/build-ci-valgrind
    # No suppressions are needed today; if OpenBLAS's thread pool ever shows up, suppress only
    # frames inside libopenblas, in .ci/valgrind.supp, with a comment saying why.
    local options="--error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible"
    options+=" --errors-for-leak-kinds=definite,indirect,possible"
    if [[ -f $NWATTN_CI_ROOT/.ci/valgrind.supp ]]; then
        options+=" --suppressions=$NWATTN_CI_ROOT/.ci/valgrind.supp"
    fi
    # Optimised with debug information: valgrind's cost grows with the instructions run.
    robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_BUILD_BENCHMARKS=OFF \
        -DNWATTN_TEST_TIMEOUT_SCALE=10 \
        -DMEMORYCHECK_COMMAND="$(command -v valgrind)" -DMEMORYCHECK_COMMAND_OPTIONS="$options"
    # One BLAS thread keeps valgrind's serialised threads fast; the stress test runs fewer rounds.
    # Not under valgrind: the Python tests (the interpreter's own allocations are not ours to
    # check) and example_nw_experiments (minutes under valgrind; its paths are the unit tests').
    OPENBLAS_NUM_THREADS=1 NWATTN_STRESS_ROUNDS=2 \
        ctest --test-dir "$dir" -T memcheck -L 'unit|robust|example' -LE python \
              -E '^example_nw_experiments$' --output-on-failure -j "$NWATTN_CI_JOBS"
}

robust_tsan() {
    robust_log "clang ThreadSanitizer"
    local dir=$NWATTN_CI_BUILD/build-ci-tsan
    CC=clang robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_SANITIZE=thread \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF
    # OpenBLAS's own thread pool hands work over through spin-waits in uninstrumented code,
    # which ThreadSanitizer cannot see, so its workers' writes show up as races (in
    # sgemm_beta, say). With one BLAS thread the BLAS runs on the calling threads: everything
    # the library and the tests synchronise themselves (the stress test's threads, the fused
    # path's workers) is still checked, and nothing needs suppressing.
    OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        ctest --test-dir "$dir" -L 'unit|robust' --output-on-failure
}

robust_fuzz() {
    local seconds=${NWATTN_FUZZ_SECONDS:-60}
    robust_log "libFuzzer for ${seconds}s"
    local dir=$NWATTN_CI_BUILD/build-ci-fuzz
    CC=clang robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_BUILD_FUZZERS=ON \
        -DNWATTN_SANITIZE=address,undefined -DNWATTN_BUILD_EXAMPLES=OFF \
        -DNWATTN_BUILD_BENCHMARKS=OFF
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
    local dir=$NWATTN_CI_BUILD/build-ci-abi
    robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF
    local lib
    lib=$(readlink -f "$dir/src/libnwattn.so")
    bash "$NWATTN_CI_ROOT/abi/check-abi.sh" "$lib"
    bash "$NWATTN_CI_ROOT/abi/selftest-abi.sh" "$lib"
}

ROBUST_STAGES=(robust_valgrind robust_tsan robust_fuzz robust_abi)

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
    [[ ${NWATTN_CI_NO_DEPS:-0} == 1 ]] || robust_deps
    robust_run "$@"
fi
