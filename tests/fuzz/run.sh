#!/bin/sh
# Runs every libFuzzer harness for a set time (make fuzz): ./tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]
# FUZZ_RUNS=N (environment) also stops each harness after N executions, whichever comes first.
# Each harness starts from its committed corpus (tests/fuzz/corpus/<name>, read only) and a working corpus in
# BUILD_DIR/corpus/<name> that grows across runs. Crashes, leaks, UB and timeouts are saved to
# BUILD_DIR/artifacts/<name>/; the script prints the executions of each run and fails when any harness failed.
set -u
build=${1:?usage: run.sh BUILD_DIR SECONDS [HARNESS...]}
seconds=${2:?usage: run.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
harnesses=${*:-safetensors config npy torch_checkpoint image}

# libgomp/OpenBLAS threads add nothing to single inputs; torch ops run on one thread.
export OMP_NUM_THREADS=1
# Leaks are failures (detect_leaks); UB aborts already (-fno-sanitize-recover). The LSan suppressions cover
# LibTorch's own one-time allocations only (see the file).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$here/../sanitizers/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

status=0
summary=""
for name in $harnesses; do
    bin="$build/tests/fuzz/fuzz_$name"
    [ -x "$bin" ] || { echo "run.sh: $bin is not built (make fuzz builds it)" >&2; exit 2; }
    work="$build/corpus/$name"
    artifacts="$build/artifacts/$name/"
    log="$build/fuzz-$name.log"
    mkdir -p "$work" "$artifacts"
    runs_flag=""
    [ -n "${FUZZ_RUNS:-}" ] && runs_flag="-runs=$FUZZ_RUNS"
    dict=""
    [ -f "$here/$name.dict" ] && dict="-dict=$here/$name.dict"
    # decodeImage sends fd 2 to a temporary file while OpenCV decodes: libFuzzer's own report of a crash, leak,
    # timeout or oversized malloc there would be lost, so for `image` libFuzzer writes to a copy of stderr
    # (close_fd_mask=2); the harness writes its failures and the sanitizer reports to that copy too.
    extra=""
    [ "$name" = image ] && extra="-close_fd_mask=2"
    echo "== fuzz_$name for ${seconds}s (log: $log)"
    # shellcheck disable=SC2086
    nice -n 10 "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$artifacts" $runs_flag $dict $extra "$work" "$here/corpus/$name" > "$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$log" | tail -n 1)
    [ -n "$runs" ] || runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1) runs (stopped early)"
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz_$name FAILED (exit $rc) after $runs; artifacts in $artifacts"
        grep -m 5 -E "ERROR: |SUMMARY: |runtime error|harness check failed|uncaught exception|terminate" "$log"
        summary="$summary
fuzz_$name: FAILED after $runs"
    else
        echo "fuzz_$name: $runs, no crash, leak or UB"
        summary="$summary
fuzz_$name: $runs, clean"
    fi
done
echo "== summary$summary"
exit $status
