#!/usr/bin/env bash
# Robustness stages of CI (issue 7): valgrind, ThreadSanitizer, fuzzing, ABI. .ci/run calls
# them after its configurations (whose asan, batch-shim and dim-limit builds already run every
# test, the robustness ones included, under AddressSanitizer + UBSan). Alone:
#
#   bash .ci/robustness.sh [STAGE...]      (default: all four, in the order below)
#
# Stages (each builds into build-ci-<name> next to .ci/run's):
#   robust_valgrind  every unit and robustness test, both examples and the Python binding's
#                    tests under valgrind memcheck (RelWithDebInfo): any error or leak fails
#   robust_tsan      clang, -fsanitize=thread: the thread stress test and the other tests
#   robust_fuzz      clang libFuzzer + ASan + UBSan: replays tests/fuzz/corpus, then fuzzes for
#                    $NWATTN_FUZZ_SECONDS (default 60) from it
#   robust_abi       RelWithDebInfo library against abi/libnwattn-0.1.0.abi, and the checker's
#                    self-test; debian/libnwattn0.symbols against the library and the baseline
#                    (abi/check-symbols.sh) and that checker's self-test; the same check for
#                    libnwattn_mpi and debian/libnwattn-mpi0.symbols (no released baseline yet)
# Packages: clang, libclang-rt-14-dev, valgrind, abigail-tools, libopenmpi-dev (.ci/run installs
# them; run alone, this script does through .ci/install-deps).
set -euo pipefail

NWATTN_CI_ROOT=${NWATTN_CI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
NWATTN_CI_BUILD=${NWATTN_CI_BUILD:-$NWATTN_CI_ROOT}
NWATTN_CI_JOBS=${NWATTN_CI_JOBS:-2}

robust_log() { printf '\n=== %s: %s\n' "${FUNCNAME[1]}" "$*"; }

# A clean configure + build of one stage's tree; extra arguments go to the configure step.
# $ROBUST_TARGET, when set, names the one target to build (and what it needs).
robust_build() {
    local dir=$1
    shift
    rm -rf "$dir"
    cmake -S "$NWATTN_CI_ROOT" -B "$dir" -DNWATTN_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$NWATTN_CI_JOBS" ${ROBUST_TARGET:+--target "$ROBUST_TARGET"}
}

robust_deps() {
    robust_log "packages for the robustness stages"
    if [[ -x $NWATTN_CI_ROOT/.ci/install-deps ]] || [[ -f $NWATTN_CI_ROOT/.ci/install-deps ]]; then
        bash "$NWATTN_CI_ROOT/.ci/install-deps" clang libclang-rt-14-dev valgrind abigail-tools \
            libopenmpi-dev
    else
        local missing=()
        for p in clang libclang-rt-14-dev valgrind abigail-tools libcmocka-dev libopenblas-dev \
                 libopenmpi-dev cmake pkg-config; do
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
    robust_log "valgrind memcheck on every unit and robustness test, the examples and the Python tests"
    local dir=$NWATTN_CI_BUILD/build-ci-valgrind
    # Suppressions (.ci/valgrind.supp): only frames outside libnwattn, each explained there.
    local supp="--suppressions=$NWATTN_CI_ROOT/.ci/valgrind.supp"
    local options="--error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible"
    options+=" --errors-for-leak-kinds=definite,indirect,possible $supp"
    # Optimised with debug information: valgrind's cost grows with the instructions run.
    robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNWATTN_BUILD_BENCHMARKS=OFF \
        -DNWATTN_TEST_TIMEOUT_SCALE=10 \
        -DMEMORYCHECK_COMMAND="$(command -v valgrind)" -DMEMORYCHECK_COMMAND_OPTIONS="$options"
    # The Python binding's tests in the interpreter under memcheck, on this build's library,
    # in the background while the C tests run (ctest's last tests leave a core idle), their
    # output kept for after. Every error counts; leaks only definite ones, and the
    # interpreter's own (blocks that python3 itself allocates and keeps until exit) are
    # suppressed by valgrind's python3.supp and .ci/valgrind-python.supp, so that a block
    # libnwattn allocates and loses still fails. PYTHONMALLOC=malloc: pymalloc's arenas would
    # hide the binding's objects from memcheck. Without torch (minutes to import under
    # memcheck) and scipy (its Boost ufuncs fail to initialise under valgrind, and
    # scikit-learn and statsmodels need it): conftest.py.
    local python_supp=(--suppressions=/usr/lib/valgrind/python3.supp
                       "--suppressions=$NWATTN_CI_ROOT/.ci/valgrind-python.supp")
    [[ -f /usr/lib/valgrind/python3.supp ]] || python_supp=("${python_supp[@]:1}")
    local python_log python_pid t0=$SECONDS
    python_log=$(mktemp)
    # shellcheck disable=SC2086  # $supp is one option
    (
        t1=$SECONDS status=0
        OPENBLAS_NUM_THREADS=1 PYTHONMALLOC=malloc PYTHONDONTWRITEBYTECODE=1 NWATTN_TEST_SMALL=1 \
            NWATTN_LIBRARY="$dir/src/libnwattn.so.0" \
            NWATTN_TESTS_WITHOUT=torch,scipy,sklearn,statsmodels \
            valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
                --errors-for-leak-kinds=definite $supp "${python_supp[@]}" \
                /usr/bin/python3 "$NWATTN_CI_ROOT/python/tests/run_ctest.py" || status=$?
        echo "valgrind: Python tests in $((SECONDS - t1)) s (exit status $status)"
        exit "$status"
    ) </dev/null >"$python_log" 2>&1 &
    python_pid=$!
    # One BLAS thread keeps valgrind's serialised threads fast; the stress test runs fewer
    # threads and rounds (tsan below runs it whole), and NWATTN_TEST_SMALL gives the heaviest
    # tests smaller data, fewer cases or score kinds through the same code (tests/test_env.h;
    # test_backward's key groups alone took 275 s of this stage's 835 s on a Zen 3).
    local c_status=0 python_status=0
    OPENBLAS_NUM_THREADS=1 NWATTN_STRESS_THREADS=4 NWATTN_STRESS_ROUNDS=2 NWATTN_TEST_SMALL=1 \
        ctest --test-dir "$dir" -T memcheck -L 'unit|robust|example' -LE python \
              --output-on-failure -j "$NWATTN_CI_JOBS" || c_status=$?
    echo "valgrind: C tests and examples in $((SECONDS - t0)) s"
    wait "$python_pid" || python_status=$?
    cat "$python_log"
    rm -f "$python_log"
    echo "valgrind: both done in $((SECONDS - t0)) s"
    (( c_status == 0 && python_status == 0 ))
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
    # path's workers) is still checked, and nothing needs suppressing. NWATTN_TEST_SMALL: the
    # heaviest tests' smaller data through the same threaded code (tests/test_env.h); the
    # stress test runs whole.
    OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        NWATTN_TEST_SMALL=1 \
        ctest --test-dir "$dir" -L 'unit|robust' --output-on-failure -j "$NWATTN_CI_JOBS"
}

robust_fuzz() {
    local seconds=${NWATTN_FUZZ_SECONDS:-60}
    robust_log "libFuzzer for ${seconds}s"
    local dir=$NWATTN_CI_BUILD/build-ci-fuzz
    # Only the harness (the unit tests run sanitized in .ci/run's configurations).
    CC=clang ROBUST_TARGET=fuzz_nwattn robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DNWATTN_BUILD_FUZZERS=ON -DNWATTN_SANITIZE=address,undefined \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF
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
    # NWATTN_MPI=ON: libnwattn_mpi too, for its symbols file (the Debian package has it).
    robust_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
        -DNWATTN_BUILD_EXAMPLES=OFF -DNWATTN_BUILD_BENCHMARKS=OFF -DNWATTN_MPI=ON
    local lib
    lib=$(readlink -f "$dir/src/libnwattn.so")
    bash "$NWATTN_CI_ROOT/abi/check-abi.sh" "$lib"
    bash "$NWATTN_CI_ROOT/abi/selftest-abi.sh" "$lib"
    # The Debian symbols file against the same library and baseline (docs/releasing.md).
    bash "$NWATTN_CI_ROOT/abi/check-symbols.sh" "$lib"
    bash "$NWATTN_CI_ROOT/abi/selftest-symbols.sh" "$lib"
    # debian/libnwattn-mpi0.symbols against libnwattn_mpi. No release has shipped it yet, so
    # its baseline does not exist and the released-symbols step says it is skipped; the first
    # release with MPI commits abi/libnwattn_mpi-X.Y.Z.abi and names it here.
    bash "$NWATTN_CI_ROOT/abi/check-symbols.sh" "$(readlink -f "$dir/mpi/libnwattn_mpi.so")" \
        "$NWATTN_CI_ROOT/debian/libnwattn-mpi0.symbols" \
        "$NWATTN_CI_ROOT/abi/libnwattn_mpi-0.1.0.abi"
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
