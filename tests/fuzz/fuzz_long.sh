#!/usr/bin/env bash
# The long fuzzing runs recorded in docs/robustness.md (off CI): CHUNKS runs of SECONDS each of
# the harness BINARY under `nice -n 19`, all growing one scratch corpus WORK (seeded from
# tests/fuzz/corpus, which is only read), each chunk's libFuzzer statistics appended to LOG.
# A chunk that finds something stops early and leaves its input as WORK/../crash-*; the next
# chunk goes on. Sum the executions with:  grep number_of_executed_units LOG | awk '{s+=$2} END {print s}'
#
# usage: tests/fuzz/fuzz_long.sh BINARY WORK LOG CHUNKS SECONDS [LIBFUZZER_FLAG...]
set -uo pipefail
binary=$1 work=$2 log=$3 chunks=$4 seconds=$5
shift 5
seeds="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/corpus"
mkdir -p "$work"
for ((i = 1; i <= chunks; i++)); do
    echo "=== chunk $i/$chunks $(date -u +%FT%TZ): $binary -max_total_time=$seconds $*" >>"$log"
    OPENBLAS_NUM_THREADS=1 nice -n 19 "$binary" -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=20 -rss_limit_mb=4096 -artifact_prefix="$(dirname "$work")/" "$@" \
        "$work" "$seeds" 2>&1 | grep -E '^(stat::|==|SUMMARY|fuzz_nwattn:|#[0-9]+ +DONE|artifact_prefix|Test unit written|INFO: seed)' >>"$log"
done
echo "=== finished $(date -u +%FT%TZ)" >>"$log"
