#!/usr/bin/env bash
# test_trainer.sh: what every trainer gets from the shared loop
# (common/train.c), tried on 03_ddp/ddp: outputs checked before step 1, the
# checkpoint directory's lock, damaged and foreign checkpoints, short disks,
# a stalled rank, and the numbers the log and the CSV report. Usage:
# test_trainer.sh CASE; exit 0 when the property holds. Runs mpirun itself.
set -euo pipefail
cd "$(dirname "$0")/.."
P=./03_ddp/ddp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/trainer_test.XXXXXX)
cleanup() { mountpoint -q "$dir/small" 2>/dev/null && umount "$dir/small"; rm -rf "$dir"; }
trap cleanup EXIT

run() {  # NP LOG FLAGS...: one run that must succeed
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$P" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $P $*"; tail -n 20 "$log"; exit 1
    fi
}
refused() {  # NP LOG PATTERN FLAGS...: a run that must fail with PATTERN on stderr and no step run
    local np=$1 log=$2 pat=$3; shift 3
    if mpirun -np "$np" "$P" "$@" >"$log" 2>&1; then echo "error: accepted: $*"; exit 1; fi
    grep -m1 '^error' "$log" || true
    grep -q -- "$pat" "$log" || { echo "error: the refusal does not say '$pat':"; tail -n 5 "$log"; exit 1; }
}
no_steps() { ! grep -q '^step ' "$1" || { echo "error: training ran before the refusal"; exit 1; }; }
corrupt() {  # FILE OFFSET: flip one byte
    local b; b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $(( (b + 1) % 256 )))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

case "$1" in
bad-csv-path)  # under mpirun, on every rank, at once: no rank left waiting in a collective
    refused 2 "$dir/a.log" "cannot write there" "${TINY[@]}" --steps 3 --csv /nonexistent/d/x.csv
    no_steps "$dir/a.log" ;;
csv-other-columns)
    echo "a,b,c" > "$dir/x.csv"
    refused 2 "$dir/a.log" "has other columns" "${TINY[@]}" --steps 3 --csv "$dir/x.csv"
    no_steps "$dir/a.log" ;;
bad-output-paths)  # each refused before any training, so no result is lost at the end
    for f in save-final trace dump; do
        refused 2 "$dir/$f.log" "--$f /nonexistent/d/out: cannot write there" "${TINY[@]}" --steps 3 --$f /nonexistent/d/out
        no_steps "$dir/$f.log"
        echo "--$f refused before step 1"
    done ;;
ckpt-dir-no-trail)  # a directory that cannot be made leaves none of its parents behind
    long=$(printf 'x%.0s' $(seq 300))
    refused 2 "$dir/a.log" "cannot create checkpoint directory" "${TINY[@]}" --steps 3 --ckpt-dir "$dir/a/b/$long/c"
    [ ! -e "$dir/a" ] || { echo "error: $dir/a was left behind"; exit 1; } ;;
lock)  # a second run on a checkpoint directory in use is refused, naming the holder
    mpirun -np 2 "$P" "${TINY[@]}" --steps 100000 --ckpt-dir "$dir/ckpt" >"$dir/a.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q '^step ' "$dir/a.log" && break; sleep 0.05; done
    set +e
    refused 1 "$dir/b.log" "is in use by 03_ddp/ddp (pid" "${TINY[@]}" --steps 3 --ckpt-dir "$dir/ckpt"
    rc=$?
    kill $pid; wait $pid 2>/dev/null
    exit $rc ;;
fallback)  # the newest checkpoint damaged: resume from the one before, say so, end the same
    run 2 "$dir/ref.log" "${TINY[@]}" --steps 8 --clip 0 --save-final "$dir/ref.bin"
    run 2 "$dir/a.log" "${TINY[@]}" --steps 8 --clip 0 --ckpt-every 2 --ckpt-dir "$dir/ckpt"
    ls "$dir/ckpt"
    corrupt "$dir/ckpt/step_00000008/part_00000.ckpt" 20000
    run 3 "$dir/b.log" "${TINY[@]}" --steps 8 --clip 0 --ckpt-dir "$dir/ckpt" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    grep -q "step_00000008/part_00000.ckpt is corrupt: checksum mismatch" "$dir/b.log"
    grep -q "using step 6" "$dir/b.log"
    $CMP "$dir/b.bin" "$dir/ref.bin" --tol 1e-5 ;;
corrupt-only)  # nothing readable: refused, with the checksum as the reason
    run 2 "$dir/a.log" "${TINY[@]}" --steps 4 --ckpt-every 4 --ckpt-dir "$dir/ckpt"
    corrupt "$dir/ckpt/step_00000004/part_00000.ckpt" 20000
    refused 2 "$dir/b.log" "no readable checkpoint in .*checksum mismatch in 'master'" \
        "${TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt" --resume ;;
truncated)
    run 2 "$dir/a.log" "${TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt"
    truncate -s 5000 "$dir/ckpt/step_00000004/part_00000.ckpt"
    refused 2 "$dir/b.log" "is truncated: 5000 bytes" "${TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt" --resume ;;
missing-part)
    run 2 "$dir/a.log" "${TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt"
    rm "$dir/ckpt/step_00000004/part_00000.ckpt"
    refused 2 "$dir/b.log" "has 0 of its 1 parts" "${TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt" --resume ;;
other-model)  # sound, but of another configuration: refused outright, naming the setting
    run 2 "$dir/a.log" "${TINY[@]}" --steps 2 --ckpt-dir "$dir/ckpt"
    refused 2 "$dir/b.log" "was written for dim 32, but this run has dim 64" \
        "${TINY[@]}" --dim 64 --steps 2 --ckpt-dir "$dir/ckpt" --resume ;;
disk-short)  # room for 2 checkpoints, not 3: the oldest goes first, the run completes
    mkdir -p "$dir/small"
    if ! mount -t tmpfs -o size=1200k tmpfs "$dir/small" 2>/dev/null; then
        echo "cannot mount a small tmpfs here: nothing to test"; exit 0
    fi
    run 2 "$dir/ref.log" "${TINY[@]}" --steps 8 --save-final "$dir/ref.bin"
    run 2 "$dir/a.log" "${TINY[@]}" --steps 8 --ckpt-every 2 --ckpt-dir "$dir/small/ckpt" --save-final "$dir/a.bin"
    grep '^ckpt' "$dir/a.log"
    grep -q "removed the oldest checkpoint first" "$dir/a.log"
    ls "$dir/small/ckpt"
    $CMP "$dir/a.bin" "$dir/ref.bin" --exact ;;
disk-full)  # not even one fits: the run says how much is missing
    mkdir -p "$dir/small"
    if ! mount -t tmpfs -o size=200k tmpfs "$dir/small" 2>/dev/null; then
        echo "cannot mount a small tmpfs here: nothing to test"; exit 0
    fi
    refused 2 "$dir/a.log" "not enough space in .* it needs 0.4 MB, 0.2 MB are free" \
        "${TINY[@]}" --steps 2 --ckpt-dir "$dir/small/ckpt" ;;
stalled-rank)  # a stopped rank: its peer's watchdog ends the job, naming what it waited for
    mpirun -np 2 "$P" "${TINY[@]}" --steps 100000 --timeout-s 3 >"$dir/a.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q '^step ' "$dir/a.log" && break; sleep 0.05; done
    victim=$(pgrep -P $pid | tail -n 1)
    kill -STOP "$victim"
    t0=$(date +%s)
    for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    kill -CONT "$victim" 2>/dev/null || true
    if kill -0 $pid 2>/dev/null; then kill -9 $pid; echo "error: the job did not end within 30 s"; exit 1; fi
    wait $pid && { echo "error: the job ended with status 0"; exit 1; }
    echo "job ended $(( $(date +%s) - t0 )) s after the stop"
    grep -m1 "no progress for 3 s in" "$dir/a.log" ;;
impossible-hfu)  # a peak below what the run achieves gives HFU above 100%: refused
    refused 2 "$dir/a.log" "is impossible: the peak" "${TINY[@]}" --steps 2 --peak 1e-9 ;;
csv-consistent)  # every number of the log line and the CSV row, recomputed from the others
    run 2 "$dir/a.log" "${TINY[@]}" --steps 6 --micro 2 --peak 1000 --csv "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000 --ddp ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
