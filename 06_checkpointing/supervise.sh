#!/usr/bin/env bash
# supervise.sh: run a training job to completion through its failures, as a
# cluster's job supervisor does (Slurm's requeue, torchrun's elastic agent):
# after a failed attempt, start the job again from its newest complete
# checkpoint (the program's --resume), possibly on fewer ranks, until an
# attempt ends well. Then report the goodput: useful steps per second of
# wall clock, and against a failure-free run when its time is given.
#
#   bash 06_checkpointing/supervise.sh [--np N] [--restart-np M] [--max-attempts K]
#        [--stall-attempts S] [--baseline-s SECONDS] [--logs DIR] -- PROGRAM FLAGS...
#
#   --np N              ranks of the first attempt (default 2)
#   --restart-np M      ranks of every later attempt (default N: a spare
#                       replaces the failed node; fewer: it is not replaced)
#   --max-attempts K    give up after K attempts (default 50)
#   --stall-attempts S  give up after S failed attempts in a row that added
#                       no checkpoint: failures come faster than the job can
#                       save its progress (default 4)
#   --baseline-s T      wall seconds of the same job without failures
#   --logs DIR          keep each attempt's output in DIR/attempt_K.log
#
# Attempt k runs `mpirun -np N PROGRAM FLAGS --attempt k --resume`; the
# program's --fail-* flags decide whether and how attempt k fails (failure.h).
# Prints one line per attempt and a summary; the last line is
#   supervise: result wall_s=.. attempts=.. failures=.. steps=.. computed=.. goodput_steps_s=..
# Exit status: 0 when the job completed; 2 when the program refused its
# flags; 1 when the supervisor gave up.
set -uo pipefail
np=2; restart_np=""; max_attempts=50; stall_attempts=4; baseline=""; logs=""
usage() { echo "error: supervise.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --np|--restart-np|--max-attempts|--stall-attempts|--baseline-s|--logs)
            [ $# -ge 2 ] && [[ $2 != --* ]] || usage "$1 needs a value" ;;&
        --np) np=$2; shift 2 ;;
        --restart-np) restart_np=$2; shift 2 ;;
        --max-attempts) max_attempts=$2; shift 2 ;;
        --stall-attempts) stall_attempts=$2; shift 2 ;;
        --baseline-s) baseline=$2; shift 2 ;;
        --logs) logs=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: supervise.sh: unknown option $1 (the program's flags go after --)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "error: supervise.sh: no program to run (... -- PROGRAM FLAGS)" >&2; exit 2; }
restart_np=${restart_np:-$np}
# Whole numbers of at most 9 digits (bash's arithmetic stays exact), at least 1.
for opt in "--np $np" "--restart-np $restart_np" "--max-attempts $max_attempts" "--stall-attempts $stall_attempts"; do
    v=${opt#* }
    [[ $v =~ ^[0-9]{1,9}$ ]] && [ $((10#$v)) -ge 1 ] || usage "${opt%% *} must be a whole number of 1 or more, got '$v'"
done
if [ -n "$baseline" ] && ! [[ $baseline =~ ^[0-9]{1,9}(\.[0-9]+)?$ && $baseline =~ [1-9] ]]; then
    usage "--baseline-s must be a number of seconds above 0, got '$baseline'"
fi
prog=("$@")
# Open MPI waits a second between asking the other ranks to stop and killing
# them after one has died; a supervisor that restarts at once needs no grace.
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}

# The flags the supervisor reads: the checkpoint directory and the steps.
ckpt_dir=""; steps=""
for ((i = 0; i < ${#prog[@]}; i++)); do
    case "${prog[i]}" in
        --ckpt-dir) ckpt_dir=${prog[i+1]:-} ;;
        --ckpt-dir=*) ckpt_dir=${prog[i]#--ckpt-dir=} ;;
        --steps) steps=${prog[i+1]:-} ;;
        --steps=*) steps=${prog[i]#--steps=} ;;
    esac
done
tmp=$(mktemp -d /tmp/supervise.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ -n "$logs" ] && mkdir -p "$logs"

newest() {  # the newest complete checkpoint's step (0: none)
    local best=0 d s
    [ -n "$ckpt_dir" ] || { echo 0; return; }
    for d in "$ckpt_dir"/step_*; do
        # a set being written is step_N.tmp, and holds meta.ckpt for a moment
        # before its rename: a failure then leaves it, incomplete
        case $d in *.tmp) continue ;; esac
        [ -e "$d/meta.ckpt" ] || continue
        s=${d##*/step_}; s=$((10#$s))
        [ "$s" -gt "$best" ] && best=$s
    done
    echo $best
}

t_start=$(date +%s.%N)
attempt=0; failures=0; computed=0; stalled=0
while :; do
    n=$([ $attempt -eq 0 ] && echo $np || echo $restart_np)
    log=${logs:+$logs/attempt_$attempt.log}; log=${log:-$tmp/attempt.log}
    before=$(newest)
    # --resume only once a complete checkpoint exists: the program refuses to
    # resume from nothing but incomplete sets (a crash in the first save)
    resume=(); [ "$before" -gt 0 ] && resume=(--resume)
    t0=$(date +%s.%N)
    mpirun -np "$n" "${prog[@]}" --attempt $attempt "${resume[@]}" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    first=$(sed -n 's/^resume: .* continuing at step \([0-9]*\)$/\1/p' "$log" | tail -n 1)
    first=${first:-1}
    last=$(sed -n 's/^step *\([0-9]*\)\/.*/\1/p' "$log" | tail -n 1)
    last=${last:-$((first - 1))}
    # a rank killed at the end of step N computed step N, even when mpirun
    # ended the job before passing on rank 0's line of that step
    killed=$(sed -n 's/.* killed at the end of step \([0-9]*\) (injected)$/\1/p' "$log" | tail -n 1)
    [ -z "$killed" ] || [ "$killed" -le "$last" ] || last=$killed
    [ -n "$steps" ] || steps=$(sed -n 's/^step *[0-9]*\/\([0-9]*\) .*/\1/p' "$log" | tail -n 1)
    computed=$((computed + last - first + 1))
    after=$(newest)
    secs=$(echo "$t1 - $t0" | bc -l)
    if [ $rc -eq 0 ]; then
        printf 'supervise: attempt %d on %d ranks: steps %d-%d in %.2f s, completed\n' $attempt "$n" "$first" "$last" "$secs"
        break
    fi
    why=$(grep -m1 -o 'rank [0-9]* (pid [0-9]*) killed .* (injected)' "$log" || grep -m1 '^error' "$log" ||
          echo "exit status $rc: $(grep -v '^ *$' "$log" | tail -n 1 | cut -c1-160)")
    printf 'supervise: attempt %d on %d ranks: steps %d-%d in %.2f s, failed (%s); newest complete checkpoint: step %d\n' \
        $attempt "$n" "$first" "$last" "$secs" "$why" "$after"
    if [ $rc -eq 2 ]; then   # the program refused its flags: running it again changes nothing
        grep -m1 '^error' "$log" >&2
        exit 2
    fi
    failures=$((failures + 1))
    attempt=$((attempt + 1))
    if [ "$after" -gt "$before" ]; then stalled=0; else stalled=$((stalled + 1)); fi
    if [ $stalled -ge "$stall_attempts" ]; then
        echo "error: supervise.sh: no progress: $stalled attempts in a row failed before saving a new checkpoint (newest: step $after); failures come faster than start-up plus one checkpoint interval" >&2
        exit 1
    fi
    if [ $attempt -ge "$max_attempts" ]; then
        echo "error: supervise.sh: gave up after $attempt attempts (newest checkpoint: step $after of $steps)" >&2
        exit 1
    fi
done
wall=$(echo "$(date +%s.%N) - $t_start" | bc -l)
rate=$(echo "$steps / $wall" | bc -l)
printf 'supervise: completed %d steps in %d attempt%s (%d failure%s) in %.2f s | %d steps computed, %d lost to failures | goodput %.3f steps/s' \
    "$steps" $((attempt + 1)) "$([ $attempt -eq 0 ] || echo s)" $failures "$([ $failures -eq 1 ] || echo s)" \
    "$wall" $computed $((computed - steps)) "$rate"
if [ -n "$baseline" ]; then
    printf ' = %.1f%% of the failure-free run (%.2f s)' "$(echo "100 * $baseline / $wall" | bc -l)" "$baseline"
fi
echo
printf 'supervise: result wall_s=%.4f attempts=%d failures=%d steps=%d computed=%d goodput_steps_s=%.5f\n' \
    "$wall" $((attempt + 1)) $failures "$steps" $computed "$rate"
