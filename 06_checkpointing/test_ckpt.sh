#!/usr/bin/env bash
# test_ckpt.sh: the multi-run tests of chapter 06 (listed in
# tests/06_checkpointing.tests). Each case trains tiny models with
# 06_checkpointing/ckpt (through supervise.sh where failures are injected)
# and compares the runs with build/tests/compare, which prints what it
# compared and the worst difference. Usage: test_ckpt.sh CASE [ARGS...];
# exit 0 when the property holds. Runs mpirun itself (the runner's NP is 0).
set -euo pipefail
cd "$(dirname "$0")/.."
P=${P:-./06_checkpointing/ckpt}
CMP=./build/tests/compare
SUP="bash 06_checkpointing/supervise.sh"
DEV=${DEV:-cpu}
# A tiny model: 4 layers (so that every:3 leaves a short last segment and
# sqrt is every:2), 12 sequences per step (divisible by 1-4 ranks).
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 4 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/ckpt_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP LOG FLAGS...: one training run, quietly unless it fails
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$P" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $P $*"; tail -n 20 "$log"; exit 1
    fi
}
source tests/reference_run.sh
ref() {  # LOG PROG FLAGS...: the 1-rank reference run (tests/reference_run.sh), quietly unless it fails
    reference_run "$@" || { echo "the 1-rank reference run failed: $2 ${*:3}"; tail -n 20 "$1"; exit 1; }
}

case "$1" in
same)  # NP "FLAGS A" "FLAGS B": bit for bit, 6 steps
    np=$2
    read -r -a a <<<"$3"; read -r -a b <<<"$4"
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 6 "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$dir/b.log" "${TINY[@]}" --steps 6 "${b[@]}" --save-final "$dir/b.bin"
    echo "$np ranks: [$3] vs [$4]"
    grep -h '^recompute: .*keeps' "$dir/a.log" "$dir/b.log"
    $CMP "$dir/a.bin" "$dir/b.bin" --exact
    ;;
equiv)  # NP TOL [FLAGS...]: NP ranks vs 1 rank on the same global batch
    np=$2; tol=$3; shift 3
    ref "$dir/one.log" "$P" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin"
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/many.bin"
    echo "1 rank vs $np ranks, 6 steps, $*"
    $CMP "$dir/many.bin" "$dir/one.bin" --tol "$tol"
    ;;
numbers)  # NP POLICY: every number the log and the CSVs report, against its formula
    np=$2; pol=$3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 5 --micro 2 --peak 1000 --recompute "$pol" \
        --csv "$dir/a.csv" --bench-csv "$dir/b.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000 --ddp
    python3 06_checkpointing/check_numbers.py "$dir/a.log" "$dir/a.csv" "$dir/b.csv"
    ;;
failures)  # NP MODE EVERY STEPS-LIST: injected failures at listed steps, restarts, bit for bit
    # MODE sync or async. With synchronous checkpoints every EVERY steps, the
    # steps lost to failure k at step f are f - (the last multiple of EVERY
    # below f): the supervisor's count of computed steps is checked too.
    np=$2; mode=$3; every=$4; list=$5; steps=30
    flags=("${TINY[@]}" --steps $steps)
    run "$np" "$dir/ref.log" "${flags[@]}" --save-final "$dir/ref.bin"
    extra=(); [ "$mode" = async ] && extra=(--ckpt-async)
    $SUP --np "$np" --logs "$dir/logs" -- "$P" "${flags[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every "$every" \
        "${extra[@]}" --fail-at-step "$list" --save-final "$dir/b.bin" | tee "$dir/sup.log"
    n=$(tr ',' '\n' <<<"$list" | wc -l)
    grep -q "failures=$n " "$dir/sup.log" || { echo "error: expected $n failures"; exit 1; }
    for f in $(tr ',' ' ' <<<"$list"); do
        grep -q "killed at the end of step $f (injected)" "$dir"/logs/attempt_*.log ||
            { echo "error: no failure at step $f"; exit 1; }
    done
    if [ "$mode" = sync ]; then
        lost=0
        for f in $(tr ',' ' ' <<<"$list"); do lost=$((lost + f - (f - 1) / every * every)); done
        want=$((steps + lost))
        grep -q "computed=$want " "$dir/sup.log" ||
            { echo "error: expected $want steps computed ($lost lost), the supervisor says $(grep -o 'computed=[0-9]*' "$dir/sup.log")"; exit 1; }
        echo "steps computed: $want = $steps + $lost lost, as the checkpoint interval predicts"
    fi
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
random)  # NP MTBF: failures of a random rank at random times (mean MTBF s), async checkpoints, bit for bit
    # On a busy machine a mean of MTBF s may end most attempts before their
    # first checkpoint, and the supervisor gives up: the mean becomes at least
    # 3 start-ups and 20 steps of the reference run, timed here, so each
    # attempt has the same chance to progress on any machine.
    np=$2; mtbf=$3
    flags=("${TINY[@]}" --dim 64 --seq 32 --steps 40)
    t0=$(date +%s%N)
    run "$np" "$dir/ref.log" "${flags[@]}" --save-final "$dir/ref.bin"
    mtbf=$(awk -v m="$mtbf" -v wall=$((($(date +%s%N) - t0) / 1000000)) -F'|' '/^step / { n++; ms += $5 + 0 }
        END { step = ms / n; start = wall - ms; if (start < 0) start = 0
              t = (3 * start + 20 * step) / 1000; printf "%.3f", (t > m ? t : m) }' "$dir/ref.log")
    echo "mean time between failures: $mtbf s"
    $SUP --np "$np" --stall-attempts 10 --logs "$dir/logs" -- "$P" "${flags[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every 2 --ckpt-async \
        --fail-every-s "$mtbf" --save-final "$dir/b.bin" | tee "$dir/sup.log"
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
shrink)  # NP NP2: a failure at step 7, the restart on NP2 ranks (no spare node): within 1e-5
    np=$2; np2=$3
    flags=("${TINY[@]}" --steps 12 --clip 0)
    run "$np" "$dir/ref.log" "${flags[@]}" --save-final "$dir/ref.bin"
    $SUP --np "$np" --restart-np "$np2" -- "$P" "${flags[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every 3 \
        --fail-at-step 7 --save-final "$dir/b.bin" | tee "$dir/sup.log"
    # the restart resumes from the checkpoint of step 6, not from the start
    grep -q "attempt 1 on $np2 ranks: steps 7-12 " "$dir/sup.log" ||
        { echo "error: attempt 1 did not run steps 7-12 on $np2 ranks"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --tol 1e-5
    ;;
async-files)  # the checkpoint files of a background save are those of a synchronous one, byte for byte
    run 2 "$dir/s.log" "${TINY[@]}" --steps 9 --ckpt-dir "$dir/s" --ckpt-every 4 --ckpt-keep 5
    run 2 "$dir/a.log" "${TINY[@]}" --steps 9 --ckpt-dir "$dir/a" --ckpt-every 4 --ckpt-keep 5 --ckpt-async
    grep -h '^saver:' "$dir/s.log" "$dir/a.log"
    for s in 4 8 9; do
        for f in part_00000.ckpt meta.ckpt; do
            cmp "$dir/s/step_0000000$s/$f" "$dir/a/step_0000000$s/$f" || { echo "error: step $s $f differs"; exit 1; }
        done
        echo "step $s: part and meta files identical"
    done
    ;;
async-crash)  # rank 0 dies half-way through a background write: resume from the previous set
    flags=("${TINY[@]}" --steps 12 --ckpt-every 3 --ckpt-dir "$dir/ckpt" --ckpt-async)
    run 2 "$dir/ref.log" "${TINY[@]}" --steps 12 --save-final "$dir/ref.bin"
    if mpirun -np 2 "$P" "${flags[@]}" --crash-in-save 9 >"$dir/a.log" 2>&1; then
        echo "error: the run with --crash-in-save 9 did not crash"; exit 1
    fi
    ls "$dir/ckpt"
    [ -e "$dir/ckpt/step_00000009.tmp/part_00000.ckpt.tmp" ] || { echo "error: no half-written part"; exit 1; }
    [ ! -e "$dir/ckpt/step_00000009" ] || { echo "error: a half-written set has the final name"; exit 1; }
    run 2 "$dir/b.log" "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    grep -q 'step_00000006: step 6' "$dir/b.log" || { echo "error: did not resume from step 6"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
stall-in-save)  # ZeRO-3 on 2 ranks (chapter 04's program: a part per rank, the shared
    # trainer's save): rank 1 stalls before writing its part of step 6 (a slow disk) while
    # rank 0's is on disk. The set keeps its .tmp name while the part is missing; killing
    # the stalled rank leaves no step_00000006; --resume continues from step 3, bit for bit.
    P=./04_fsdp/fsdp
    flags=("${TINY[@]}" --zero 3 --steps 9 --ckpt-every 3 --ckpt-dir "$dir/ckpt")
    run 2 "$dir/ref.log" "${TINY[@]}" --zero 3 --steps 9 --save-final "$dir/ref.bin"
    mpirun -np 2 "$P" "${flags[@]}" --stall-in-save 6 >"$dir/a.log" 2>&1 &
    job=$!
    pid=
    # a failed check leaves no job behind
    trap '{ [ -z "$pid" ] || kill -KILL "$pid"; kill $job; } 2>/dev/null || true; rm -rf "$dir"' EXIT
    set6="$dir/ckpt/step_00000006"
    # no clock decides the outcome: the wait ends when rank 0's part is on disk (under
    # either name of the set), or with the job
    until grep -q 'stalls before writing its part of step 6' "$dir/a.log" &&
            { [ -e "$set6.tmp/part_00000.ckpt" ] || [ -e "$set6/part_00000.ckpt" ]; }; do
        kill -0 $job 2>/dev/null || { echo "error: the job ended before the stall"; cat "$dir/a.log"; exit 1; }
        sleep 0.1
    done
    pid=$(sed -n 's/.*(pid \([0-9]*\)) stalls.*/\1/p' "$dir/a.log")
    echo "rank 1 (pid $pid) stalls; rank 0's part of step 6 is on disk"
    # rank 0 would name the set within microseconds of its own part if it did not wait:
    # watch the directory for 3 s
    for i in $(seq 30); do
        [ ! -e "$set6" ] || { echo "error: step 6 was named complete while rank 1's part was missing"; ls "$set6"; exit 1; }
        sleep 0.1
    done
    ls "$dir/ckpt" "$set6.tmp"
    kill -KILL "$pid"
    if wait $job; then echo "error: the job did not fail when a rank was killed"; exit 1; fi
    [ ! -e "$set6" ] || { echo "error: the crash left step 6 named complete"; exit 1; }
    [ -e "$dir/ckpt/step_00000003/meta.ckpt" ] || { echo "error: step 3 is not complete"; exit 1; }
    echo "after the crash: $(ls "$dir/ckpt" | tr '\n' ' ')"
    run 2 "$dir/b.log" "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    grep -q 'step_00000003: step 3, continuing at step 4' "$dir/b.log" || { echo "error: did not resume from step 3"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
no-progress)  # failures faster than a checkpoint: the supervisor gives up with one line (expects the refusal)
    # not exec: the EXIT trap must still remove $dir
    rc=0
    $SUP --np 2 --stall-attempts 3 -- "$P" "${TINY[@]}" --steps 100000 --ckpt-dir "$dir/ckpt" \
        --ckpt-every 50000 --fail-every-s 0.05 || rc=$?
    exit $rc
    ;;
goodput-model)  # the program's Young, Daly and goodput figures against an independent computation
    "$P" --goodput-model 0.25,12,1.5 >"$dir/m.txt"
    python3 - "$dir/m.txt" <<'EOF'
import math, re, sys
d, M, R = 0.25, 12.0, 1.5
t = open(sys.argv[1]).read()
young, daly = [float(x) for x in re.search(r"young ([0-9.e+-]+) s .* daly ([0-9.e+-]+) s", t).groups()]
r = d / (2 * M)
want_y, want_d = math.sqrt(2 * d * M), math.sqrt(2 * d * M) * (1 + math.sqrt(r) / 3 + r / 9) - d
def goodput(tau):  # Daly 2006: T = M e^(R/M) (e^((tau+d)/M) - 1) W / tau
    return tau / (M * math.exp(R / M) * (math.exp((tau + d) / M) - 1))
bad = 0
for name, got, want in (("young", young, want_y), ("daly", daly, want_d)):
    print("%s interval %.6g s, recomputed %.6g s" % (name, got, want))
    bad += abs(got - want) > 1e-5 * want
rows = [l.split(",") for l in t.splitlines() if re.match(r"^[0-9.]", l)]
worst = max(abs(float(g) - goodput(float(tau))) for tau, g in rows)
best = max(rows, key=lambda r: float(r[1]))
print("%d goodput points, worst difference %.2g; the grid's best interval %.4g s" % (len(rows), worst, float(best[0])))
bad += worst > 1e-5 or not (0.7 * want_d < float(best[0]) < 1.3 * want_d)
sys.exit(1 if bad else 0)
EOF
    ;;
emu)  # NP GPUS POLICY...: each policy on emulated GPUs (NCCL) bit for bit against none there
    np=$2; gpus=$3; shift 3
    run_emu() {
        if ! mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/ckpt "${TINY[@]}" --device cuda --steps 3 "$@" \
                >"$dir/e.log" 2>&1; then
            tail -n 30 "$dir/e.log"; exit 1
        fi
    }
    run_emu --recompute none --save-final "$dir/none.bin"
    grep '^device' "$dir/e.log"
    for pol in "$@"; do
        run_emu --recompute "$pol" --save-final "$dir/p.bin"
        echo "emulated GPUs: $pol against none"
        $CMP "$dir/p.bin" "$dir/none.bin" --exact | tail -n 1
    done
    ;;
emu-async)  # NP GPUS: injected failures and background checkpoints on emulated GPUs, bit for bit
    np=$2; gpus=$3
    flags=("${TINY[@]}" --device cuda --steps 8)
    mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/ckpt "${flags[@]}" --save-final "$dir/ref.bin" >"$dir/r.log" 2>&1 ||
        { tail -n 30 "$dir/r.log"; exit 1; }
    $SUP --np "$np" -- env EMU_GPUS="$gpus" build/emu/ckpt "${flags[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every 2 \
        --ckpt-async --fail-at-step 5 --save-final "$dir/b.bin"
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
