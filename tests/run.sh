#!/usr/bin/env bash
# The test runner behind `make test`.
#
# Test lists are the files tests/*.tests, sourced in name order. Each line
# registers tests with one of:
#   t     NAME SECONDS NP CMD...   passes when CMD exits 0
#   tfail NAME SECONDS NP CMD...   passes when CMD is refused cleanly: exit
#                                  status 1 or 2 (no crash, no time-out) and
#                                  a line starting "error" on stderr
#   unit  BIN SECONDS NP [FORMAT [VAR=VALUE...]]
#                                  one test per name that `BIN --list` prints,
#                                  reported as printf FORMAT NAME (default %s),
#                                  run with those variables set
#   in_order                       the list's tests after this line run one
#                                  after another, in list order (they share
#                                  what the first sets up), beside others
# NP 0 runs CMD directly (one rank, no mpirun); NP >= 1 runs it under
# `mpirun -np NP`. Every test runs under its time limit, so a hang fails.
# A limit is there to catch hangs, never to judge speed: each is at least
# 60 s and at least 15 times the test's time on a 2-core machine, so a
# loaded machine or one core (`taskset -c 0 make test`) stays within it.
# In CMD, $DEV is the device under test (DEVICE=cpu|cuda, default cpu).
# The lists are read first, then the tests run: a list's variables are
# expanded when it registers a test, and EMU_SEED (the emulator's seed,
# which tests/cuda_emu.tests changes half-way) is taken per test then too.
#
# Tests run side by side, up to three times as many ranks at once as the
# machine has cores (TEST_JOBS=K to change; each test counts as its NP ranks,
# at least 1 and at most the cores). More than one, because a test spends
# much of its time starting processes (Open MPI's daemons, shared-memory
# set-up) or waiting for a rank that shares its core, with its core idle: on
# one core, the fsdp and hsdp tests took 83 s one rank at a time, 56 s two at
# a time, 49 s four at a time. With a waiting rank asleep (below), three
# times is still the best measured on 2 quiet cores (2026-11-29, one run
# each, the emulator's build included): the tests took 476 s at three times
# the cores, 545 s at two and 512 s at four. Started longest time limit
# first instead of in list order they took 502 s: the long tests each start
# many ranks, and then all at once.
# Tests are independent: each writes its own files. A unit binary's tests
# run in one process (one mpirun); any test of it that fails there, or that
# a crash or a hang left without a verdict, runs again alone under its own
# limit, and that run is the one reported.
#
# EMU_BUILD=COMMAND (make test sets it) builds the CUDA emulator's programs
# (build/emu/*, build/tests/cuda_emu_*) beside the tests: it runs first, as
# the test build_emulated_programs weighing one rank per core, and a test
# that runs one of them (its command names one, or a test script's emu mode)
# starts once it has ended, the others meanwhile. A list tests for such a
# binary with `built BIN`, and `unit` asks it for its names when its tests
# start.
#
# Environment: TESTS=REGEX runs only the matching tests; VERBOSE=1 prints
# every test's output; TEST_TIME_SCALE=K multiplies every time limit by K
# (for a machine slower still: an emulator, a sanitizer build on one core).
# Each result line ends with the progress: [done/total, time left]. The last
# line is "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
if [ -z "${EPOCHREALTIME:-}" ]; then echo "error: tests/run.sh needs bash 5 or later" >&2; exit 2; fi

export DEV="${DEVICE:-cpu}"
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)
# Open MPI on one node, as root, with more ranks than cores; a rank waiting
# for a message gives its core away, since other tests' ranks share them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# A program started without mpirun (a singleton) starts no daemon of its own:
# none of the suite's programs spawns processes, and starting the daemon made
# MPI_Init take 0.38 s instead of 0.25 s.
export OMPI_MCA_ess_singleton_isolated=1
# Tests share the machine with their own ranks: one thread per rank.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# AddressSanitizer (the emulator's programs, SANITIZE=1) wants its runtime
# first among the preloaded libraries; idle_wait.so (below) defines only
# sched_yield, which it does not intercept.
export ASAN_OPTIONS=verify_asan_link_order=0
if [ "${SANITIZE:-0}" = 1 ]; then
    # Open MPI's own allocations are never freed; leaks are not ours to judge.
    export ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0:abort_on_error=1:protect_shadow_gap=0
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fi

# The emulator's build is this run's: a test that starts a runner of its own
# (a grader's, in a copy) must not inherit it.
emu_build="${EMU_BUILD:-}"; unset EMU_BUILD
filter="${TESTS:-}"
scale="${TEST_TIME_SCALE:-1}"
jobs="${TEST_JOBS:-$((3 * cores))}"
if ! awk -v k="$scale" 'BEGIN { exit !(k ~ /^[0-9]*\.?[0-9]+$/ && k > 0) }'; then
    echo "error: TEST_TIME_SCALE must be a positive number, got '$scale'" >&2
    exit 2
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: TEST_JOBS must be a positive integer, got '$jobs'" >&2
    exit 2
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export TEST_CACHE="$work/cache"   # tests/reference_run.sh: 1-rank references run once
# A rank waiting for a message sleeps after 100 us instead of polling, so its
# core goes to the other tests' ranks (tests/idle_wait.c).
if ! "${CC:-cc}" -O2 -shared -fPIC tests/idle_wait.c -o "$work/idle_wait.so"; then
    echo "error: cannot compile tests/idle_wait.c with ${CC:-cc}" >&2; exit 2
fi
export LD_PRELOAD="$work/idle_wait.so${LD_PRELOAD:+:$LD_PRELOAD}"
# Starting an MPI job costs CPU that the tests' own work hardly exceeds (a
# run starts about a thousand): each mpirun and each process started without
# it reads the machine's topology from one file written here instead of
# probing /sys (tests/topology.c; skipped where hwloc's header is missing),
# and PMIx keeps a job's data in each process (gds hash) instead of setting
# up a shared-memory store per job. An empty 2-rank job then takes 0.11 s of
# CPU instead of 0.15 s, a singleton 0.027 s instead of 0.044 s.
if "${CC:-cc}" -O1 tests/topology.c -o "$work/topology" -lhwloc 2>/dev/null &&
   "$work/topology" "$work/topology.xml"; then
    export HWLOC_XMLFILE="$work/topology.xml" HWLOC_THISSYSTEM=1
fi
export PMIX_MCA_gds=hash

# ---- reading the lists -------------------------------------------------------
# One entry per test: its mode (pass, fail, or unit: a binary's tests in one
# process), name, limit, NP, its in_order chain (0: none), and its command line.
MODE=(); NAME=(); SECS=(); NP=(); CHAIN=(); CMD=(); UNITS=()
chain_now=0; chains=0
selected() { [ -z "$filter" ] || [[ "$1" =~ $filter ]]; }
add() {  # MODE NAME SECONDS NP CMD...
    local mode=$1 name=$2 secs=$3 np=$4; shift 4
    MODE+=("$mode"); NAME+=("$name"); NP+=("$np"); CHAIN+=("$chain_now")
    if [ "$scale" = 1 ]; then SECS+=("$secs")
    else SECS+=("$(awk -v s="$secs" -v k="$scale" 'BEGIN { printf "%d", s * k + 0.999 }')"); fi
    local seed=""; [ -n "${EMU_SEED+x}" ] && seed="EMU_SEED=$EMU_SEED"
    CMD+=("$(printf '%q ' env ${seed:+"$seed"} "$@")")
}
t()     { selected "$1" && add pass "$@"; return 0; }
tfail() { selected "$1" && add fail "$@"; return 0; }
in_order() { chains=$((chains + 1)); chain_now=$chains; }
# emu_made BIN: EMU_BUILD makes BIN
emu_made() { [ -n "$emu_build" ] && [[ $1 =~ ^build/(emu/|tests/cuda_emu_) ]]; }
built() { [ -x "$1" ] || emu_made "$1"; }
unit() {  # BIN SECONDS NP [FORMAT [VAR=VALUE...]]
    local bin=$1 secs=$2 np=$3 fmt=${4:-%s} names n picked=()
    shift $(($# < 4 ? $# : 4))
    if emu_made "$bin"; then   # names when its tests start: "-" for now
        add unit "$bin" "$secs" "$np" "$@" "$bin"
        UNITS[$((${#CMD[@]} - 1))]="$secs $fmt -"; return 0
    fi
    if ! names=$("$bin" --list 2>&1); then
        add pass "${bin}_--list" 60 0 sh -c "echo \"\$1\"; exit 1" _ "$names"; return 0
    fi
    # shellcheck disable=SC2059
    for n in $names; do selected "$(printf "$fmt" "$n")" && picked+=("$n"); done
    [ ${#picked[@]} -gt 0 ] || return 0
    add unit "$bin" $((secs * ${#picked[@]})) "$np" "$@" "$bin"
    UNITS[$((${#CMD[@]} - 1))]="$secs $fmt ${picked[*]}"
}
for f in tests/*.tests; do
    [ -e "$f" ] || continue
    chain_now=0
    # shellcheck source=/dev/null
    source "$f"
done
# needs_emu I: test I runs an emulated program
needs_emu() { [[ " ${CMD[$1]} " =~ build/(emu/|tests/cuda_emu_)|\ emu(-async)?\  ]]; }
build=""   # the index of the emulator's build, when it runs
if [ -n "$emu_build" ]; then
    for i in "${!MODE[@]}"; do
        needs_emu "$i" || continue
        chain_now=0; add pass build_emulated_programs 1200 0 bash -c "$emu_build"
        build=$((${#MODE[@]} - 1)); break
    done
fi
total=0
for i in "${!MODE[@]}"; do
    if [ "${MODE[$i]}" = unit ]; then set -- ${UNITS[$i]}; total=$((total + $# - 2)); else total=$((total + 1)); fi
done

# ---- running one test ----------------------------------------------------------
# run CMDLINE SECONDS NP OUT: CMDLINE under its limit, under mpirun for NP >= 1;
# OUT.log and OUT.err get its output, OUT.rc its exit status and OUT.ms its time.
# Each run has a temporary folder of its own (a short path: Open MPI puts
# sockets in it): singletons (above) all name their session folder jf.0, and
# one ending removes it under another starting.
# What a failed run leaves running (the ranks of a job it gave up on, each
# in a process group of its own) is killed when it ends, not left to slow the
# tests after it: its processes are those whose TMPDIR is the run's. (Not a
# session of its own: the kernel shares the CPU between sessions first, and
# the emulated tests then took 25% longer.)
run() {
    local t0=${EPOCHREALTIME//[!0-9]/} tmp rc p; tmp=$(mktemp -d "$work/t.XXXXXX")
    TMPDIR="$tmp" timeout -k 5 "$2" bash -c 'np=$1; shift; if [ "$np" -eq 0 ]; then eval "$*"; else eval "mpirun -np $np $*"; fi' \
        _ "$3" "$1" >"$4.log" 2>"$4.err" </dev/null
    rc=$?
    echo $rc >"$4.rc"
    if [ $rc -ne 0 ]; then
        for p in $(grep -lzx "TMPDIR=$tmp" /proc/[0-9]*/environ 2>/dev/null); do p=${p#/proc/}; kill -9 "${p%/environ}" 2>/dev/null; done
    fi
    rm -rf "$tmp"
    echo $(((${EPOCHREALTIME//[!0-9]/} - t0) / 1000)) >"$4.ms"
}
# verdict MODE OUT: "" when the run passed, else why not
verdict() {
    local rc; rc=$(cat "$2.rc")
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "timed out"
    elif [ "$1" = pass ]; then [ "$rc" -eq 0 ] || echo "exit status $rc"
    elif [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then echo "expected a clean refusal (exit 1 or 2), got exit status $rc"
    elif ! grep -q '^error' "$2.err"; then echo "refused without an 'error...' line on stderr"
    fi
}
# A unit binary's tests in one process; each name it gives no "unit: PASS"
# line for runs again alone, and that run is its result.
run_unit() {  # I OUT
    local i=$1 out=$2 secs fmt names n st shown limit=${SECS[$i]}
    read -r secs fmt names <<<"${UNITS[$i]}"
    if [ "$names" = - ]; then   # listed now; SECS holds the limit per test
        if ! names=$("${NAME[$i]}" --list 2>"$out.err"); then
            echo "$names" >"$out.log"; echo 1 >"$out.rc"; echo 0 >"$out.ms"
            echo "FAIL ${NAME[$i]}_--list 0 $out" >>"$out.res"; return
        fi
        local picked=()
        # shellcheck disable=SC2059
        for n in $names; do selected "$(printf "$fmt" "$n")" && picked+=("$n"); done
        [ ${#picked[@]} -gt 0 ] || return 0
        names="${picked[*]}"; limit=$((limit * ${#picked[@]}))
    fi
    run "${CMD[$i]} $names" "$limit" "${NP[$i]}" "$out"
    for n in $names; do
        # shellcheck disable=SC2059
        shown=$(printf "$fmt" "$n")
        st=$(awk -v n="$n" '$1 == "unit:" && $3 == n { print $2 " " $4 }' "$out.log")
        if [ "${st% *}" = PASS ]; then
            echo "PASS $shown ${st#* } -" >>"$out.res"
        else
            run "${CMD[$i]} $n" "$secs" "${NP[$i]}" "$out.$n"
            # alone it may pass where the shared process failed it: that is a
            # test leaking state into the next, a failure too
            printf '%s %s %s %s\n' "$([ -z "$(verdict pass "$out.$n")" ] && [ "${st% *}" != FAIL ] && echo PASS || echo FAIL)" \
                "$shown" "$(cat "$out.$n.ms")" "$out.$n" >>"$out.res"
        fi
    done
}
run_test() {  # I: its results in $work/I.res, written when it has ended
    local i=$1 out="$work/$1"
    if [ "${MODE[$i]}" = unit ]; then
        touch "$out.u.res"; run_unit "$i" "$out.u"
    else
        run "${CMD[$i]}" "${SECS[$i]}" "${NP[$i]}" "$out.u"
        printf '%s %s %s %s\n' "$([ -z "$(verdict "${MODE[$i]}" "$out.u")" ] && echo PASS || echo FAIL)" \
            "${NAME[$i]}" "$(cat "$out.u.ms")" "$out.u" >"$out.u.res"
    fi
    mv "$out.u.res" "$out.res"
}

# ---- reporting -----------------------------------------------------------------
passed=0; failed=0; failures=(); SECONDS=0
leak="passed alone, failed in one process after its binary's other tests"
report() {  # I: print test I's results with the progress so far
    local i=$1 st name ms out detail mode=${MODE[$1]} secs=${SECS[$1]}
    [ "$mode" = unit ] && { mode=pass; read -r secs _ <<<"${UNITS[$i]}"; }
    while read -r st name ms out; do
        local s; s=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
        local done_=$((passed + failed + 1)) el=$SECONDS
        local left=$(( el * (total - done_) / done_ ))
        local prog; prog=$(printf '[%d/%d, %dm%02ds left]' $done_ $total $((left / 60)) $((left % 60)))
        if [ "$st" = PASS ]; then
            passed=$((passed + 1))
            printf 'PASS %-58s %6s s  %s\n' "$name" "$s" "$prog"
            [ "${VERBOSE:-0}" = 1 ] && [ "$out" != - ] && sed 's/^/     | /' "$out.log" "$out.err"
        else
            failed=$((failed + 1)); failures+=("$name")
            detail="its runner was killed"; [ "$out" = - ] || detail=$(verdict "$mode" "$out")
            [ "$detail" = "timed out" ] && detail="timed out after ${secs} s"
            printf 'FAIL %-58s %6s s  %s  %s\n' "$name" "$s" "${detail:-$leak}" "$prog"
            [ "$out" = - ] || cat "$out.log" "$out.err" | tail -n 25 | sed 's/^/     | /'
        fi
    done <"$work/$i.res"
}

# ---- the schedule: list order, up to $jobs ranks at once ------------------------
# A job is one test, or an in_order chain of tests run one after another;
# it weighs as its heaviest test. The emulator's build goes first; the jobs
# that need it wait aside, in list order, and go next once it has ended.
declare -A running=() weighs=()   # pid -> the job's test indices, its weight
busy=0; building=""               # building: the build's pid while it runs
# A test weighs its ranks, at most the machine's cores: more ranks than that
# share the cores anyway, and a heavier test would hold back every test
# listed after it until the machine had emptied for it.
most=$(( cores < jobs ? cores : jobs ))
weight() { local w=${NP[$1]}; [ "$w" -lt 1 ] && w=1; [ "$w" -gt "$most" ] && w=$most; echo "$w"; }
reap() {  # wait until a running job ends, report every one that has
    local pid i ended=0
    wait -n 2>/dev/null
    for pid in "${!running[@]}"; do
        ! kill -0 "$pid" 2>/dev/null || continue
        for i in ${running[$pid]}; do
            [ -e "$work/$i.res" ] || echo "FAIL ${NAME[$i]} 0 -" >"$work/$i.res"   # killed from outside
            # a unit listed when it ran counted as one test till now
            [ "${MODE[$i]}" = unit ] && [ "${UNITS[$i]##* }" = - ] && total=$((total + $(wc -l <"$work/$i.res") - 1))
            report "$i"
        done
        [ "$pid" = "$building" ] && building=""
        busy=$((busy - ${weighs[$pid]})); unset "running[$pid]" "weighs[$pid]"; ended=1
    done
    [ $ended = 1 ] || sleep 0.1
}
launch() {  # JOB WEIGHT: start the job once WEIGHT ranks are free
    while [ ${#running[@]} -gt 0 ] && [ $((busy + $2)) -gt "$jobs" ]; do reap; done
    { for j in $1; do run_test "$j"; done; } & running[$!]=$1; weighs[$!]=$2; busy=$((busy + $2))
}
waiting=()   # "WEIGHT JOB" of the jobs that wait for the build
start_waiting() { local x; for x in "${waiting[@]}"; do launch "${x#* }" "${x%% *}"; done; waiting=(); }
n=${#MODE[@]}
if [ -n "$build" ]; then
    n=$build; launch "$build" "$most"; building=$!
fi
for ((i = 0; i < n; i++)); do
    job=$i; w=$(weight "$i"); emu=0; needs_emu "$i" && emu=1
    while [ "${CHAIN[$i]}" != 0 ] && [ $((i + 1)) -lt "$n" ] && [ "${CHAIN[$((i + 1))]}" = "${CHAIN[$i]}" ]; do
        i=$((i + 1)); job="$job $i"; needs_emu "$i" && emu=1
        [ "$(weight "$i")" -gt "$w" ] && w=$(weight "$i")
    done
    if [ -n "$building" ] && [ $emu = 1 ]; then waiting+=("$w $job"); continue; fi
    [ -z "$building" ] && start_waiting
    launch "$job" "$w"
done
while [ -n "$building" ]; do reap; done
start_waiting
while [ ${#running[@]} -gt 0 ]; do reap; done

if [ $failed -gt 0 ]; then
    echo
    echo "failed tests:"
    printf '  %s\n' "${failures[@]}"
fi
echo
echo "tests took $SECONDS s, up to $jobs ranks at once"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
