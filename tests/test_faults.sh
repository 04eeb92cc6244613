#!/usr/bin/env bash
# test_faults.sh: output lost to a full disk, checkpoints on a short one, and
# resuming from nothing complete (listed in tests/faults.tests). Usage:
# test_faults.sh CASE; exit 0 when the property holds. Runs mpirun itself
# (the runner's NP is 0).
#
# A short disk is a small tmpfs mounted in a mount namespace of this script's
# own (unshare -m as root, as CI runs; unshare -rm, a user namespace,
# otherwise), so nothing is left mounted whatever happens. Where neither is
# allowed, the case prints "skipped: needs root or user namespaces" and
# passes: it tested nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

case "$1" in
*-disk*)
    if [ -z "${FAULTS_NS:-}" ]; then
        ns=(unshare -m --propagation private)
        [ "$(id -u)" -eq 0 ] || ns=(unshare -rm --propagation private)
        if ! "${ns[@]}" true 2>/dev/null; then echo "skipped: needs root or user namespaces"; exit 0; fi
        FAULTS_NS=1 exec "${ns[@]}" bash "$0" "$@"
    fi ;;
esac

DEV=${DEV:-cpu}
CMP=./build/tests/compare
dir=$(mktemp -d /tmp/faults_test.XXXXXX)
trap 'umount "$dir/small" 2>/dev/null || true; rm -rf "$dir"' EXIT

small_disk() {  # SIZE FREE: a tmpfs of SIZE at $dir/small, filled up to FREE bytes left (0: full, all: empty)
    mkdir -p "$dir/small"
    mount -t tmpfs -o "size=$1" tmpfs "$dir/small"
    if [ "$2" = 0 ]; then
        cat /dev/zero >"$dir/small/fill" 2>/dev/null || true
    elif [ "$2" != all ]; then
        head -c $(( $(stat -f -c '%a * %S' "$dir/small") - $2 )) /dev/zero >"$dir/small/fill"
    fi
    echo "disk: $(df -k --output=size,avail "$dir/small" | tail -n 1 | awk '{print $1 " KiB, " $2 " KiB free"}')"
}

run() {  # NP LOG PROGRAM FLAGS...: a run that must succeed
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $*"; tail -n 20 "$log"; exit 1
    fi
}

refused() {  # NP LOG PATTERN PROGRAM FLAGS...: a run that must fail, saying PATTERN on an "error" line
    local np=$1 log=$2 pat=$3; shift 3   # NP 0: the program alone, without mpirun
    local mpi=(mpirun -np "$np"); [ "$np" -eq 0 ] && mpi=()
    if "${mpi[@]}" "$@" >"$log" 2>"$log.err"; then
        echo "error: exit status 0 from: $*"; tail -n 5 "$log"; ls -l "$dir/small" 2>/dev/null; exit 1
    fi
    grep -m1 '^error' "$log.err" || { echo "error: no 'error' line:"; tail -n 8 "$log.err"; exit 1; }
    grep '^error' "$log.err" | grep -q -- "$pat" || { echo "error: the refusal does not say '$pat'"; exit 1; }
}

DDP=./03_ddp/ddp
DDP_TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64 --batch 12)
PIPE=./07_pipeline/pipeline
PIPE_TINY=(--device "$DEV" --threads 1 --dim 32 --layers 8 --heads 4 --kv-heads 2 --seq 16 --vocab 64 --batch 12
           --micro 4 --replay none)
ND=./10_nd_llama/train
ND_TINY=(--device "$DEV" --threads 1 --dim 32 --layers 4 --heads 4 --kv-heads 2 --seq 16 --vocab 32 --batch 16
         --micro 4 --lr 3e-3)

case "$1" in
csv-full-disk)  # the trainer's --csv and the chapters' --bench-csv on a full disk: an error naming the file
    small_disk 64k 0
    refused 2 "$dir/a.log" "writing $dir/small/a.csv: No space left" $DDP "${DDP_TINY[@]}" --steps 2 \
        --csv "$dir/small/a.csv"
    refused 2 "$dir/b.log" "writing $dir/small/b.csv: No space left" $DDP "${DDP_TINY[@]}" --steps 2 \
        --bench-csv "$dir/small/b.csv" ;;
pipeline-csv-full-disk)  # chapter 07's three CSVs, each alone on a full disk
    small_disk 64k 0
    for f in bubble gantt memory; do
        refused 2 "$dir/$f.log" "writing $dir/small/$f.csv: No space left" $PIPE "${PIPE_TINY[@]}" \
            --steps 2 --"$f"-csv "$dir/small/$f.csv"
    done ;;
plan-csv-short-disk)  # room for the header and a few rows, not for 1000: an error, not a cut-off file
    small_disk 64k 4096
    refused 0 "$dir/a.log" "writing $dir/small/plans.csv: No space left" ./10_nd_llama/plan \
        --preset llama3-70b --gpus 512 --top 1000 --csv "$dir/small/plans.csv" ;;
save-final-short-disk)  # the final weights (120 KB) on a 64 KB disk: an error, not a cut-off file
    small_disk 64k 32768
    refused 2 "$dir/a.log" "writing $dir/small/final.bin: No space left" $DDP "${DDP_TINY[@]}" --steps 1 \
        --save-final "$dir/small/final.bin" ;;
keep-1-short-disk)  # --ckpt-keep 1 with room for 1.5 checkpoints: the save of step 4 is refused before
    # anything is removed (it would have crashed half-way, --crash-in-save), step 2 survives, and,
    # given room again, --resume continues from it to the weights of an uninterrupted run
    small_disk 1200k all
    mesh=(--tp 2 --pp 2)
    run 4 "$dir/ref.log" $ND "${ND_TINY[@]}" "${mesh[@]}" --steps 6 --save-final "$dir/ref.bin"
    refused 4 "$dir/a.log" "not enough space .* MB missing" $ND "${ND_TINY[@]}" "${mesh[@]}" --steps 6 \
        --ckpt-every 2 --ckpt-keep 1 --ckpt-dir "$dir/small/ckpt" --crash-in-save 4
    echo "left on the disk: $(cd "$dir/small/ckpt" && echo step_*)"
    [ -e "$dir/small/ckpt/step_00000002/meta.ckpt" ] || { echo "error: the checkpoint of step 2 is gone"; exit 1; }
    mount -o remount,size=4m "$dir/small"   # room again, to resume
    run 4 "$dir/b.log" $ND "${ND_TINY[@]}" "${mesh[@]}" --steps 6 --ckpt-dir "$dir/small/ckpt" --ckpt-keep 1 \
        --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    grep -q '^resume: .* continuing at step 3$' "$dir/b.log" || { echo "error: did not resume at step 3"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact ;;
resume-incomplete)  # the first save crashed: --resume finds nothing complete and says so
    if mpirun -np 2 $DDP "${DDP_TINY[@]}" --steps 4 --ckpt-every 2 --ckpt-dir "$dir/ckpt" --crash-in-save 2 \
        >"$dir/a.log" 2>&1; then echo "error: the crash in the save did not happen"; exit 1; fi
    echo "left: $(cd "$dir/ckpt" && echo step_*)"
    refused 2 "$dir/b.log" "no complete checkpoint, only incomplete ones (step_00000002.tmp" \
        $DDP "${DDP_TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt" --resume ;;
resume-set-dir)  # --ckpt-dir names one step's set instead of the directory of sets
    run 2 "$dir/a.log" $DDP "${DDP_TINY[@]}" --steps 2 --ckpt-dir "$dir/ckpt"
    refused 2 "$dir/b.log" "is one checkpoint set, not a checkpoint directory" \
        $DDP "${DDP_TINY[@]}" --steps 4 --ckpt-dir "$dir/ckpt/step_00000002" --resume ;;
fresh-run-over-later-set)  # a new run in a directory holding an earlier job's step 10: its own saves
    # are what it keeps (--ckpt-keep 1), so after a crash it resumes from its step 4, not from step 10
    run 2 "$dir/a.log" $DDP "${DDP_TINY[@]}" --steps 10 --ckpt-every 10 --ckpt-dir "$dir/ckpt"
    if mpirun -np 2 $DDP "${DDP_TINY[@]}" --steps 10 --ckpt-every 2 --ckpt-keep 1 --ckpt-dir "$dir/ckpt" \
        --crash-in-save 6 >"$dir/b.log" 2>&1; then echo "error: the crash in the save did not happen"; exit 1; fi
    echo "left: $(cd "$dir/ckpt" && echo step_*)"
    run 2 "$dir/c.log" $DDP "${DDP_TINY[@]}" --steps 10 --ckpt-every 2 --ckpt-keep 1 --ckpt-dir "$dir/ckpt" --resume
    grep '^resume' "$dir/c.log"
    grep -q '^resume: .* continuing at step 5$' "$dir/c.log" || { echo "error: did not resume at step 5"; exit 1; } ;;
supervise-after-incomplete)  # a job whose first save never finished starts over under the supervisor
    mkdir -p "$dir/ckpt/step_00000002.tmp"
    bash 06_checkpointing/supervise.sh --np 2 -- ./06_checkpointing/ckpt "${DDP_TINY[@]}" --steps 4 \
        --ckpt-every 2 --ckpt-dir "$dir/ckpt" | tee "$dir/sup.log"
    grep -q 'completed' "$dir/sup.log" ;;
*) echo "error: unknown case $1"; exit 2 ;;
esac
