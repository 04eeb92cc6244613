#!/usr/bin/env bash
# The test runner behind `make test`.
#
# Test lists are the files tests/*.tests, sourced in name order. Each line
# registers tests with one of:
#   t     NAME SECONDS NP CMD...   passes when CMD exits 0
#   tfail NAME SECONDS NP CMD...   passes when CMD is refused cleanly: exit
#                                  status 1 or 2 (no crash, no time-out) and
#                                  a line starting "error" on stderr
#   unit  BIN SECONDS NP           one test per name that `BIN --list` prints,
#                                  each run as `BIN NAME`
# NP 0 runs CMD directly (one rank, no mpirun); NP >= 1 runs it under
# `mpirun -np NP`. Every test runs under its time limit, so a hang fails.
# A limit is there to catch hangs, never to judge speed: each is at least
# 60 s and at least 15 times the test's time on a 2-core machine, so a
# loaded machine or one core (`taskset -c 0 make test`) stays within it.
# In CMD, $DEV is the device under test (DEVICE=cpu|cuda, default cpu).
#
# Environment: TESTS=REGEX runs only the matching tests; VERBOSE=1 prints
# every test's output; TEST_TIME_SCALE=K multiplies every time limit by K
# (for a machine slower still: an emulator, a sanitizer build on one core).
# The last line is "N passed, N failed".
set -u
cd "$(dirname "$0")/.."

export DEV="${DEVICE:-cpu}"
# Open MPI on one node, as root, with more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Tests share the machine with their own ranks: one thread per rank.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
if [ "${SANITIZE:-0}" = 1 ]; then
    # Open MPI's own allocations are never freed; leaks are not ours to judge.
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:protect_shadow_gap=0
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fi

filter="${TESTS:-}"
scale="${TEST_TIME_SCALE:-1}"
if ! awk -v k="$scale" 'BEGIN { exit !(k ~ /^[0-9]*\.?[0-9]+$/ && k > 0) }'; then
    echo "error: TEST_TIME_SCALE must be a positive number, got '$scale'" >&2
    exit 2
fi
passed=0; failed=0; failures=()
log=$(mktemp); trap 'rm -f "$log" "$log.err"' EXIT

report() {  # NAME STATUS(0=pass) SECONDS DETAIL
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
        printf 'PASS %-58s %6s s\n' "$1" "$3"
        [ "${VERBOSE:-0}" = 1 ] && sed 's/^/     | /' "$log" "$log.err"
    else
        failed=$((failed + 1)); failures+=("$1")
        printf 'FAIL %-58s %6s s  %s\n' "$1" "$3" "$4"
        cat "$log" "$log.err" | tail -n 25 | sed 's/^/     | /'
    fi
}

selected() { [ -z "$filter" ] || [[ "$1" =~ $filter ]]; }

run_one() {  # MODE NAME SECONDS NP CMD...
    local mode=$1 name=$2 secs=$3 np=$4; shift 4
    selected "$name" || return 0
    secs=$(awk -v s="$secs" -v k="$scale" 'BEGIN { printf "%d", s * k + 0.999 }')
    local t0 rc detail=""
    t0=$(date +%s%N)
    timeout -k 5 "$secs" bash -c 'np=$1; shift; if [ "$np" -eq 0 ]; then exec "$@"; else exec mpirun -np "$np" "$@"; fi' \
        _ "$np" "$@" >"$log" 2>"$log.err" </dev/null
    rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    local secs_taken; secs_taken=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
    local ok=1
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        detail="timed out after ${secs} s"
    elif [ "$mode" = pass ]; then
        [ $rc -eq 0 ] && ok=0 || detail="exit status $rc"
    else
        if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then
            detail="expected a clean refusal (exit 1 or 2), got exit status $rc"
        elif ! grep -q '^error' "$log.err"; then
            detail="refused without an 'error...' line on stderr"
        else
            ok=0
        fi
    fi
    report "$name" $ok "$secs_taken" "$detail"
}

t()     { run_one pass "$@"; }
tfail() { run_one fail "$@"; }
unit() {  # BIN SECONDS NP
    local bin=$1 secs=$2 np=$3 names
    if ! names=$("$bin" --list 2>&1); then
        failed=$((failed + 1)); failures+=("$bin --list")
        echo "FAIL $bin --list: $names"; return
    fi
    for n in $names; do run_one pass "$n" "$secs" "$np" "$bin" "$n"; done
}

for f in tests/*.tests; do
    [ -e "$f" ] || continue
    echo "== $f"
    # shellcheck source=/dev/null
    source "$f"
done

if [ $failed -gt 0 ]; then
    echo
    echo "failed tests:"
    printf '  %s\n' "${failures[@]}"
fi
echo
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
