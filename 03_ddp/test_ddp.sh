#!/usr/bin/env bash
# test_ddp.sh: the multi-run tests of chapter 03 (listed in tests/ddp.tests).
# Each case trains tiny models with 03_ddp/ddp and compares the runs with
# build/03_ddp/compare, which prints what it compared and the worst
# difference. Usage: test_ddp.sh CASE [ARGS...]; exit 0 when the property
# holds. Runs mpirun itself (the runner's NP is 0).
set -euo pipefail
cd "$(dirname "$0")/.."
DDP=./03_ddp/ddp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# A tiny model: 35k parameters, 12 sequences per step (divisible by 1-4 ranks
# x 1-3 micro-batches), a few ms per step.
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/ddp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP OUT-LOG FLAGS...: one training run, quietly unless it fails
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$DDP" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $DDP $*"; tail -n 20 "$log"; exit 1
    fi
}
source tests/reference_run.sh
ref() {  # LOG PROG FLAGS...: the 1-rank reference run (tests/reference_run.sh), quietly unless it fails
    reference_run "$@" || { echo "the 1-rank reference run failed: $2 ${*:3}"; tail -n 20 "$1"; exit 1; }
}

case "$1" in
equiv)  # NP TOL [FLAGS...]: NP ranks vs 1 rank on the same global batch
    np=$2; tol=$3; shift 3
    ref "$dir/one.log" "$DDP" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin"
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/many.bin"
    echo "1 rank vs $np ranks, 6 steps, $*"
    grep '^step' "$dir/many.log" | tail -n 2
    $CMP "$dir/many.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
same)  # NP TOL "FLAGS A" "FLAGS B": two variants on NP ranks (TOL 0: bit for bit)
    np=$2; tol=$3
    read -r -a a <<<"$4"; read -r -a b <<<"$5"
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 6 "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$dir/b.log" "${TINY[@]}" --steps 6 "${b[@]}" --save-final "$dir/b.bin"
    echo "$np ranks: [$4] vs [$5]"
    grep -h '^ddp:\|^batch:' "$dir/a.log" "$dir/b.log"
    if [ "$tol" = 0 ]; then $CMP "$dir/a.bin" "$dir/b.bin" --exact; else $CMP "$dir/a.bin" "$dir/b.bin" --tol "$tol"; fi
    ;;
kill)  # NP WHAT [NP_RESUME [FLAGS...]]: kill -9 a run part-way, resume, compare with an uninterrupted run
    # WHAT: "all" kills mpirun and every rank at once (a node losing power),
    # "rank" kills one rank (mpirun then ends the job). The kill comes as
    # soon as the checkpoint of step 8 exists (stdout arrives through mpirun
    # late, the files do not); a step takes a few ms, so it lands in the
    # middle of a later step or of a later save.
    # FLAGS go to every run (--compress: the compressor's state must be
    # resumed too, or the weights differ).
    np=$2; what=$3; np2=${4:-$2}; shift $(( $# < 4 ? $# : 4 ))
    base=("${TINY[@]}" --dim 64 --seq 64 --steps 60 "$@")
    flags=("${base[@]}" --ckpt-every 4 --ckpt-dir "$dir/ckpt")
    run "$np" "$dir/ref.log" "${base[@]}" --save-final "$dir/ref.bin"
    setsid mpirun -np "$np" "$DDP" "${flags[@]}" >"$dir/a.log" 2>&1 &
    pid=$!
    for _ in $(seq 3000); do   # at most 60 s
        [ -e "$dir/ckpt/step_00000008/meta.ckpt" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.02
    done
    if [ "$what" = all ]; then
        pkill -9 -s $pid   # the whole session: mpirun and its ranks (each in its own group)
    else
        victim=$(pgrep -P $pid | head -n 1)
        echo "killing rank process $victim"
        kill -9 "$victim"
    fi
    wait $pid 2>/dev/null || true
    for _ in $(seq 100); do pgrep -s $pid >/dev/null || break; sleep 0.05; done
    echo "killed with these checkpoints: $(ls "$dir/ckpt" | tr '\n' ' ')"
    if [ -e "$dir/ckpt/step_00000060" ]; then echo "error: the run finished before it was killed"; exit 1; fi
    run "$np2" "$dir/b.log" "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    if [ "$np2" = "$np" ]; then
        $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    else
        $CMP "$dir/b.bin" "$dir/ref.bin" --tol 1e-5
    fi
    ;;
crash-in-save)  # NP: a rank dies half-way through writing a checkpoint; resume from the previous one
    np=$2
    flags=("${TINY[@]}" --steps 12 --ckpt-every 3 --ckpt-dir "$dir/ckpt")
    run "$np" "$dir/ref.log" "${TINY[@]}" --steps 12 --save-final "$dir/ref.bin"
    if mpirun -np "$np" "$DDP" "${flags[@]}" --crash-in-save 9 >"$dir/a.log" 2>&1; then
        echo "error: the run with --crash-in-save 9 did not crash"; exit 1
    fi
    ls "$dir/ckpt"
    [ -e "$dir/ckpt/step_00000009.tmp/part_00000.ckpt.tmp" ] || { echo "error: no half-written temporary file"; exit 1; }
    [ ! -e "$dir/ckpt/step_00000009" ] || { echo "error: a half-written checkpoint has the final name"; exit 1; }
    run "$np" "$dir/b.log" "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    grep -q 'step_00000006: step 6' "$dir/b.log" || { echo "error: did not resume from step 6"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
compress-ranks)  # a checkpoint of int8 gradients on 2 ranks, resumed on 3: refused for the
    # compressor's state (each rank's residual), with exit 2
    flags=("${TINY[@]}" --steps 4 --compress int8 --ckpt-dir "$dir/ckpt")
    run 2 "$dir/a.log" "${flags[@]}"
    rc=0; mpirun -np 3 "$DDP" "${flags[@]}" --resume >"$dir/b.log" 2>&1 || rc=$?
    grep '^error' "$dir/b.log" || true
    [ "$rc" = 2 ] || { echo "error: exit status $rc, expected 2"; exit 1; }
    grep -q 'holds the gradient compressor state of 2 ranks, this run keeps it on 3' "$dir/b.log"
    ;;
damaged-newest)  # the newest set damaged (its meta.ckpt a directory): the resume falls back
    # to the set before, moves the damaged one aside (step_N.damaged, said on
    # stdout), saves that step again and ends bit for bit like an uninterrupted run
    flags=("${TINY[@]}" --steps 8 --ckpt-every 2 --ckpt-dir "$dir/ckpt")
    run 2 "$dir/ref.log" "${TINY[@]}" --steps 8 --save-final "$dir/ref.bin"
    run 2 "$dir/a.log" "${flags[@]}"
    rm -rf "$dir/ckpt/step_00000008"; mkdir -p "$dir/ckpt/step_00000008/meta.ckpt"
    cp "$dir/ckpt/step_00000006/part_00000.ckpt" "$dir/ckpt/step_00000008/meta.ckpt/x"
    cp "$dir/ckpt/step_00000006/part_00000.ckpt" "$dir/ckpt/step_00000008/"
    run 2 "$dir/b.log" "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume\|^ckpt' "$dir/b.log"
    echo "checkpoints now: $(ls "$dir/ckpt" | tr '\n' ' ')"
    grep -q "moved the damaged set of step 8 aside: $dir/ckpt/step_00000008.damaged" "$dir/b.log" ||
        { echo "error: the damaged set was not moved aside"; exit 1; }
    [ -f "$dir/ckpt/step_00000008/meta.ckpt" ] || { echo "error: step 8 was not saved again"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
local-bytes-tail)  # NP H S: S steps, no multiple of H: ceil(S/H) averages (the last after
    # step S), and the printed bytes per step are the bytes sent, 2 (N-1)/N 4 P ceil(S/H) / S
    np=$2; h=$3; S=$4
    run "$np" "$dir/local.log" "${TINY[@]}" --steps "$S" --local-steps "$h"
    grep '^local:' "$dir/local.log"
    P=$(sed -n 's/^local:.*MB sent per rank per step = .* x \([0-9]*\) \/ .*/\1/p' "$dir/local.log")
    printed=$(sed -n 's/^local:.*; \([0-9.e+-]*\) MB sent per rank per step = .*/\1/p' "$dir/local.log")
    measured=$(sed -n 's/^local:.*; \([0-9.e+-]*\) MB sent per rank per step (counted: each call.s ring bytes)/\1/p' "$dir/local.log")
    avgs=$(sed -n 's/^local:   \([0-9]*\) weight average.*/\1/p' "$dir/local.log")
    awk -v N="$np" -v H="$h" -v S="$S" -v P="$P" -v printed="$printed" -v measured="$measured" -v avgs="$avgs" '
        function off(a, b) { return (a - b) / b < 0 ? (b - a) / b : (a - b) / b }
        BEGIN {
            A = int((S + H - 1) / H); want = 2 * (N - 1) / N * 4 * P * A / S / 1e6
            printf "%d steps, H %d: %d averages (done %s); 2 (N-1)/N x 4 x %d x %d / %d = %.7g MB; printed %s, measured %s\n",
                   S, H, A, avgs, P, A, S, want, printed, measured
            bad = avgs != A
            if (printed == "" || off(printed, want) > 1e-6) { print "error: the printed bytes differ from the formula"; bad = 1 }
            if (measured == "" || off(measured, printed) > 1e-6) { print "error: the printed bytes differ from those sent"; bad = 1 }
            exit bad }'
    ;;
resume-none)  # --resume with an empty directory starts at step 0 and says so
    run 2 "$dir/a.log" "${TINY[@]}" --steps 3 --ckpt-dir "$dir/ckpt" --resume
    grep '^resume' "$dir/a.log"
    grep -q "no checkpoint in $dir/ckpt yet: starting from step 0" "$dir/a.log"
    grep -q '^step     1/3' "$dir/a.log"
    ;;
corrupt)  # one flipped byte in the only checkpoint, resumed with the very same flags:
    # refused, and for its checksum (any other setting changed on resume would
    # be refused for that setting, whether the checksum is checked or not)
    flags=("${TINY[@]}" --steps 4 --ckpt-every 4 --ckpt-dir "$dir/ckpt")
    run 2 "$dir/a.log" "${flags[@]}"
    f="$dir/ckpt/step_00000004/part_00000.ckpt"
    byte=$(od -An -tu1 -j 20000 -N1 "$f" | tr -d ' ')
    printf "$(printf '\\%03o' $(( (byte + 1) % 256 )))" | dd of="$f" bs=1 seek=20000 conv=notrunc status=none
    if mpirun -np 2 "$DDP" "${flags[@]}" --resume >"$dir/b.log" 2>&1; then
        echo "error: a checkpoint with a flipped byte was accepted"; grep '^resume\|^step' "$dir/b.log"; exit 1
    fi
    grep -m1 '^error' "$dir/b.log" || { echo "error: refused without an 'error' line"; tail -n 5 "$dir/b.log"; exit 1; }
    grep -q "step_00000004/part_00000.ckpt is corrupt: checksum mismatch in '" "$dir/b.log" ||
        { echo "error: the refusal does not name the checksum"; exit 1; }
    ;;
mismatch)  # a checkpoint of another model is refused (the test expects the refusal)
    run 2 "$dir/a.log" "${TINY[@]}" --steps 2 --ckpt-dir "$dir/ckpt"
    mpirun -np 2 "$DDP" "${TINY[@]}" --dim 64 --steps 4 --ckpt-dir "$dir/ckpt" --resume  # not exec: the EXIT trap removes $dir
    ;;
trace)  # --trace writes one Chrome trace with every rank's compute and comm spans
    run 2 "$dir/a.log" "${TINY[@]}" --steps 5 --bucket-mb 0.01 --trace "$dir/t.json"
    grep '^trace' "$dir/a.log"
    for want in '"name": "rank 0"' '"name": "rank 1"' '"name": "compute"' '"name": "comm"' \
                '"name": "bwd layer 1"' '"name": "allreduce b0' '"name": "optimizer"'; do
        grep -q "$want" "$dir/t.json" || { echo "error: trace lacks $want"; exit 1; }
    done
    n=$(grep -c '"ph": "X"' "$dir/t.json")
    echo "$n spans"
    [ "$n" -ge 40 ]
    ;;
dump)  # --dump: the gradient file of step 1 is the same from 1 rank and from 3
    run 1 "$dir/a.log" "${TINY[@]}" --steps 1 --dump "$dir/one.dump"
    run 3 "$dir/b.log" "${TINY[@]}" --steps 1 --dump "$dir/three.dump"
    $CMP --dumps "$dir/three.dump" "$dir/one.dump" --tol 1e-5
    ;;
text)  # --data FILE: byte-level text, 2 ranks equal 1 (on a fixed text: a file of the
    # suite would change the trajectory whenever it is edited)
    python3 -c 'import random; r = random.Random(7); w = ["the", "model", "rank", "gradient", "sum", "of", "a", "layer", "and", "is"]; print(" ".join(r.choice(w) for _ in range(4000)))' > "$dir/text.txt"
    run 1 "$dir/one.log" "${TINY[@]}" --vocab 256 --steps 5 --data "$dir/text.txt" --save-final "$dir/one.bin"
    run 2 "$dir/two.log" "${TINY[@]}" --vocab 256 --steps 5 --data "$dir/text.txt" --save-final "$dir/two.bin"
    grep '^data' "$dir/two.log"
    $CMP "$dir/two.bin" "$dir/one.bin" --tol 1e-5
    ;;
learns)  # the loss falls well below the corpus's unigram entropy
    run 2 "$dir/a.log" --device "$DEV" --threads 1 --dim 64 --layers 2 --heads 4 --kv-heads 2 --seq 32 \
        --batch 16 --steps 100 --lr 5e-3
    h=$(grep -o 'unigram entropy [0-9.]*' "$dir/a.log" | awk '{print $3}')
    loss=$(grep '^step   100/' "$dir/a.log" | awk '{print $5}')
    echo "unigram entropy $h nats, loss after 100 steps $loss"
    awk -v l="$loss" -v h="$h" 'BEGIN { exit !(l < h - 1.0) }' || { echo "error: loss not 1 nat below the unigram entropy"; exit 1; }
    ;;
numbers)  # NP [FLAGS...]: every number the program prints, recomputed from the model's shape
    # (03_ddp/check_numbers.py): parameters, gradient bytes, buckets, memory
    # per kind, bytes sent, the bench row. The default model's widths (MB
    # printed to 2 decimals need megabytes), few tokens.
    np=$2; shift 2
    run "$np" "$dir/a.log" --device "$DEV" --threads 1 --seq 16 --batch 12 --steps 3 --csv "$dir/a.csv" \
        --bench-csv "$dir/bench.csv" "$@"
    grep -h '^model\|^ddp\|^memory' "$dir/a.log"
    python3 03_ddp/check_numbers.py "$dir/a.log" "$dir/a.csv" "$dir/bench.csv"
    ;;
dp)  # N TOL [FLAGS...]: dataparallel with N replicas (one process) vs ddp on N ranks
    # and on 1 rank, the same global batch, 6 steps
    n=$2; tol=$3; shift 3
    ref "$dir/one.log" "$DDP" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin"
    run "$n" "$dir/ddp.log" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/ddp.bin"
    if ! ./03_ddp/dataparallel "${TINY[@]}" --replicas "$n" --steps 6 "$@" --save-final "$dir/dp.bin" \
            >"$dir/dp.log" 2>&1; then
        echo "run failed: 03_ddp/dataparallel --replicas $n $*"; tail -n 20 "$dir/dp.log"; exit 1
    fi
    echo "dataparallel with $n replicas vs ddp on $n ranks and on 1 rank, 6 steps, $*"
    grep '^dataparallel' "$dir/dp.log"
    $CMP "$dir/dp.bin" "$dir/ddp.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    $CMP "$dir/dp.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
dp-numbers)  # N [FLAGS...]: dataparallel's printed bytes and its bench row against their formulas
    n=$2; shift 2
    ./03_ddp/dataparallel --device "$DEV" --threads 1 --seq 16 --batch 12 --steps 3 --replicas "$n" \
        --bench-csv "$dir/bench.csv" "$@" >"$dir/a.log"
    grep -h '^model\|^dataparallel' "$dir/a.log"
    python3 03_ddp/check_numbers.py --dataparallel "$n" "$dir/a.log" "$dir/bench.csv"
    ;;
repeats)  # repeats.awk on made-up runs: 3 repeats of "1,on", 2 of "1,off", 1 of "2,on"
    printf '%s\n' bucket_mb,overlap,step_ms,compute_ms 1,on,30,20 1,off,50,30 2,on,7,5 1,on,10,9 \
        1,off,40,35 1,on,20,15 > "$dir/runs.csv"
    awk -v keys=bucket_mb,overlap -v by=step_ms -v extra=cores=2 -f scripts/repeats.awk "$dir/runs.csv" | tee "$dir/sum.csv"
    want='bucket_mb,overlap,step_ms,compute_ms,runs,step_ms_min,step_ms_max,cores
1,on,20,15,3,10,30,2
1,off,40,35,2,40,50,2
2,on,7,5,1,7,7,2'
    [ "$(cat "$dir/sum.csv")" = "$want" ] || { echo "error: expected"; echo "$want"; exit 1; }
    # the provenance columns (from cores on, common/perf.h) stay last, each the median run's own
    printf '%s\n' bucket_mb,step_ms,cores,ranks,load_after,source 1,30,2,1,3.5,measured 1,10,2,1,1.5,measured \
        1,20,2,1,2.5,measured > "$dir/prov.csv"
    awk -v keys=bucket_mb -v by=step_ms -f scripts/repeats.awk "$dir/prov.csv" | tee "$dir/psum.csv"
    want='bucket_mb,step_ms,runs,step_ms_min,step_ms_max,cores,ranks,load_after,source
1,20,3,10,30,2,1,2.5,measured'
    [ "$(cat "$dir/psum.csv")" = "$want" ] || { echo "error: expected"; echo "$want"; exit 1; }
    ;;
local-equiv)  # NP: local SGD with H = 1 and plain SGD against DDP's gradient averaging on NP ranks
    # (a large lr, so that the weights move well beyond rounding in 6 steps)
    np=$2
    flags=("${TINY[@]}" --steps 6 --optim sgd --clip 0 --lr 0.5)
    run "$np" "$dir/ddp.log" "${flags[@]}" --save-final "$dir/ddp.bin"
    run "$np" "$dir/local.log" "${flags[@]}" --local-steps 1 --save-final "$dir/local.bin"
    echo "$np ranks, plain SGD: DDP vs --local-steps 1"
    grep -h '^local:' "$dir/local.log"
    # local SGD logs rank 0's own gradient norm: the losses and weights are compared
    $CMP "$dir/local.bin" "$dir/ddp.bin" --tol 1e-5 --no-norms
    ;;
local-bytes)  # NP H: bytes per rank per step = 2 (N-1)/N x 4 P / H, printed, measured, and DDP's / H
    np=$2; h=$3
    run "$np" "$dir/ddp.log" "${TINY[@]}" --steps $((2 * h)) --csv "$dir/ddp.csv"
    run "$np" "$dir/local.log" "${TINY[@]}" --steps $((2 * h)) --local-steps "$h"
    grep '^local:' "$dir/local.log"
    printed=$(sed -n 's/^local:.*; \([0-9.e+-]*\) MB sent per rank per step = .* x \([0-9]*\) \/ .*/\1 \2/p' "$dir/local.log")
    measured=$(sed -n 's/^local:.*; \([0-9.e+-]*\) MB sent per rank per step (counted: each call.s ring bytes)/\1/p' "$dir/local.log")
    awk -F, -v N="$np" -v H="$h" -v printed="$printed" -v measured="$measured" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { ddp += $c["sent_mb"]; rows++ }
        function off(a, b) { return (a - b) / b < 0 ? (b - a) / b : (a - b) / b }
        END {
            split(printed, p, " ")
            want = 2 * (N - 1) / N * 4 * p[2] / H / 1e6; ddp /= rows
            printf "formula 2 (N-1)/N x 4 x %d / %d = %.7g MB; printed %s, measured %s; DDP %.4f MB / %d = %.7g\n",
                   p[2], H, want, p[1], measured, ddp, H, ddp / H
            bad = 0
            if (p[1] == "" || off(p[1], want) > 1e-5) { print "error: the printed bytes differ from the formula"; bad = 1 }
            if (measured == "" || off(measured, want) > 1e-5) { print "error: the measured bytes differ from the formula"; bad = 1 }
            if (off(measured * H, ddp) > 1e-3) { print "error: measured x H differs from DDP bytes per step"; bad = 1 }
            exit bad
        }' "$dir/ddp.csv"
    ;;
fedavg-ddp)  # NP [FLAGS...]: one FedAvg round of 4 clients x 3 samples (every client, E 1, plain
    # SGD, no deadline) against one 1-rank DDP step on the 12 samples; fedavg's loss is the
    # clients' training loss (norms: not logged). FED=build/emu/fedavg DEV=cuda: the emulated GPUs.
    np=$2; shift 2
    flags=("${TINY[@]}" --steps 1 --warmup 0 --optim sgd --clip 0 --lr 5)
    run 1 "$dir/ddp.log" "${flags[@]}" --device cpu --save-final "$dir/ddp.bin"
    DDP=${FED:-./03_ddp/fedavg} run "$np" "$dir/fed.log" "${flags[@]}" --clients 4 --client-samples 3 \
        --fraction 1 --local-epochs 1 "$@" --save-final "$dir/fed.bin"
    echo "DDP step on 12 samples vs a FedAvg round on $np ranks: $*"
    grep -h '^fedavg:\|^round' "$dir/fed.log"
    if grep -qi nan "$dir/fed.log"; then echo "error: fedavg printed nan"; exit 1; fi
    $CMP "$dir/fed.bin" "$dir/ddp.bin" --tol 1e-5 --no-norms
    ;;
fedavg-ranks)  # NP [FLAGS...]: FedAvg (non-IID, C 0.5, E 2, a deadline) on NP ranks = on 1 CPU rank, within
    # 1e-5 (FED, DEV: as fedavg-ddp)
    np=$2; shift 2
    flags=("${TINY[@]}" --steps 4 --clients 8 --client-samples 12 --batch 4 --fraction 0.5 --local-epochs 2
           --deadline 40 --alpha 0.5 --lr 0.5)
    DDP=./03_ddp/fedavg run 1 "$dir/one.log" "${flags[@]}" --device cpu --save-final "$dir/one.bin"
    DDP=${FED:-./03_ddp/fedavg} run "$np" "$dir/many.log" "${flags[@]}" "$@" --save-final "$dir/many.bin"
    grep -h '^round' "$dir/many.log"
    $CMP "$dir/many.bin" "$dir/one.bin" --tol 1e-5 --no-norms
    ;;
fedavg-all-dropped)  # a deadline every client misses: the weights end as they started
    DDP=./03_ddp/fedavg run 2 "$dir/fed.log" "${TINY[@]}" --steps 3 --deadline 1e-9
    grep -h '^weights\|dropped' "$dir/fed.log"
    a=$(sed -n 's/^weights: initialised.*checksum \([0-9a-f]*\) .*/\1/p' "$dir/fed.log")
    b=$(sed -n 's/^weights: checksum \([0-9a-f]*\) .*/\1/p' "$dir/fed.log")
    grep -q '^fedavg:  \([0-9]*\) of \1 selected clients dropped (100.0%)' "$dir/fed.log" \
        || { echo "error: not every client was dropped"; exit 1; }
    [ -n "$a" ] && [ "$a" = "$b" ] || { echo "error: weights changed from $a to $b with every client dropped"; exit 1; }
    ;;
fedavg-bytes)  # NP: each round's MB = 4 P (selected + finished) / 1e6, P = DDP's fp32 gradient MB / 4
    np=$2
    run 1 "$dir/ddp.log" "${TINY[@]}" --steps 1
    DDP=./03_ddp/fedavg run "$np" "$dir/fed.log" "${TINY[@]}" --steps 6 --clients 10 --fraction 0.6 \
        --local-epochs 2 --deadline 30 --fed-csv "$dir/fed.csv"
    grep -h '^ddp:\|^fedavg:' "$dir/ddp.log" "$dir/fed.log"
    P=$(sed -n 's/^fedavg:  bytes per round 4 x \([0-9]*\) .*/\1/p' "$dir/fed.log")
    G=$(sed -n 's/^ddp: .*; \([0-9.]*\) MB of gradients per step/\1/p' "$dir/ddp.log")
    awk -F, -v P="$P" -v G="$G" '
        function off(a, b) { return (a - b) / b < 0 ? (b - a) / b : (a - b) / b }
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { want = 4 * P * (2 * $c["selected"] - $c["dropped"]) / 1e6; dd = 2 * ($c["selected"] - 1) * 4 * P / 1e6
          printf "round %d: %d selected, %d dropped: %s MB, formula %.6f; DDP %s MB, formula %.6f\n", $c["round"],
                 $c["selected"], $c["dropped"], $c["mb_per_round"], want, $c["ddp_mb_per_step"], dd
          if (off($c["mb_per_round"], want) > 1e-6 || off($c["ddp_mb_per_step"], dd) > 1e-6) bad = 1; rows++ }
        END {
            if (off(4 * P / 1e6, G) > 1e-3) { printf "error: P = %s is not DDP'"'"'s %s MB / 4\n", P, G; bad = 1 }
            if (rows != 6) { print "error: expected 6 rounds"; bad = 1 }
            if (bad) print "error: bytes differ from the formula"; exit bad
        }' "$dir/fed.csv"
    ;;
fedavg-clients)  # NP ALPHA: the clients' table against the formulas, and each round's drops against it
    # (C 1: every client selected): the shards hold K n samples, IID shards are equal, t_k = E n_k /
    # s_k with speeds drawn afresh each round, a round drops exactly the clients with t_k > D, and
    # the j-th client that makes the deadline runs on rank j mod NP (the ranks run clients at once)
    np=$2; alpha=$3
    DDP=./03_ddp/fedavg run "$np" "$dir/fed.log" "${TINY[@]}" --steps 3 --clients 12 --client-samples 10 \
        --batch 4 --alpha "$alpha" --fraction 1 --local-epochs 3 --deadline 20 --clients-csv "$dir/clients.csv" \
        --fed-csv "$dir/fed.csv"
    grep -h '^fedavg:' "$dir/fed.log"
    awk -F, -v np="$np" -v alpha="$alpha" '
        FNR == 1 { for (i = 1; i <= NF; i++) c[FILENAME, $i] = i; next }
        FILENAME ~ /clients/ {
            r = $c[FILENAME, "round"]; k = $c[FILENAME, "client"]; n = $c[FILENAME, "samples"]
            s = $c[FILENAME, "speed"]; t = $c[FILENAME, "seconds"]; d = $c[FILENAME, "dropped"]
            rows[r]++; late[r] += t > 20
            if (r == 1) { total += n; K++ }
            if ((k, "n") in seen && seen[k, "n"] != n) { printf "error: client %d holds %d, then %d samples\n", k, seen[k, "n"], n; bad = 1 }
            seen[k, "n"] = n
            if (r > 1 && s != speed[k]) changed++
            if (r > 1 && d != was[k]) flipped++
            speed[k] = s; was[k] = d
            want = d ? -1 : fin[r]++ % np
            if ($c[FILENAME, "rank"] != want) { printf "error: round %d client %d ran on rank %d, expected %d\n", r, k, $c[FILENAME, "rank"], want; bad = 1 }
            if (d != (t > 20)) { printf "error: round %d client %d: %g s, dropped %d\n", r, k, t, d; bad = 1 }
            if (alpha == 0 && n != 10) { printf "error: IID client %d holds %d samples, not 10\n", k, n; bad = 1 }
            if (s < 0.25 || s >= 4) { printf "error: client %d speed %g outside [0.25, 4)\n", k, s; bad = 1 }
            if ((t - 3 * n / s) ^ 2 > 1e-18 * t * t) { printf "error: client %d: %g s, not 3 x %d / %g\n", k, t, n, s; bad = 1 }
            next }
        { r = $c[FILENAME, "round"]; rounds++
          if ($c[FILENAME, "dropped"] != late[r] || rows[r] != 12) {
              printf "error: round %d dropped %d of %d rows, %d clients are late\n", r, $c[FILENAME, "dropped"], rows[r], late[r]; bad = 1 } }
        END { printf "%d clients, %d samples (want 120); late per round: %d %d %d; %d speeds redrawn, %d clients dropped in one round and not the next\n",
                     K, total, late[1], late[2], late[3], changed, flipped
              if (total != 120 || K != 12 || rounds != 3) { print "error: expected 12 clients, 120 samples, 3 rounds"; bad = 1 }
              if (changed != 24) { print "error: not every speed was drawn afresh each round"; bad = 1 }
              if (flipped == 0) { print "error: the same clients were dropped in every round"; bad = 1 }
              exit bad }' "$dir/clients.csv" "$dir/fed.csv"
    ;;
fedavg-sampling)  # every client is selected with the same probability m / K (the last one too): 10
    # clients, 3 a round, 1000 rounds (each client dropped by a deadline none meets, so nothing
    # trains); the selection counts pass a chi-square test at p = 0.001 (9 degrees of freedom: 27.88)
    DDP=./03_ddp/fedavg run 1 "$dir/fed.log" "${TINY[@]}" --steps 1000 --clients 10 --client-samples 2 \
        --fraction 0.3 --deadline 1e-9 --eval-batches 1 --clients-csv "$dir/clients.csv"
    awk -F, 'NR > 1 { n[$2]++; rows++ }
        END { for (k = 0; k < 10; k++) { chi += (n[k] - 300) ^ 2 / 300; printf "client %d: %d\n", k, n[k]; if (!n[k]) bad = 1 }
              printf "%d selections (want 3000), chi-square %.2f (bound 27.88)\n", rows, chi
              if (rows != 3000 || chi > 27.88 || bad) { print "error: the clients are not selected uniformly"; exit 1 } }' \
        "$dir/clients.csv"
    ;;
fedavg-epochs)  # E local epochs are E x the client's steps: one client of 8 samples, B 4 (2 steps an
    # epoch), plain SGD at a small lr (3e-4: --lr 0.003 in a 1-round run is its lr / 10, where SGD is
    # nearly linear: measured 0.7% off): the move from w0 with E 3 is 3 x the move with E 1, which is
    # 2 x the move of one full-batch step (the mean gradient of 8 samples, where B 4 steps twice)
    flags=("${TINY[@]}" --steps 1 --warmup 0 --clip 0 --clients 1 --client-samples 8 --alpha 0 --batch 4 --lr 0.003)
    DDP=./03_ddp/fedavg run 1 "$dir/w0.log" "${flags[@]}" --lr 0 --save-final "$dir/w0.bin"
    DDP=./03_ddp/fedavg run 1 "$dir/e1.log" "${flags[@]}" --local-epochs 1 --save-final "$dir/e1.bin"
    DDP=./03_ddp/fedavg run 1 "$dir/e3.log" "${flags[@]}" --local-epochs 3 --save-final "$dir/e3.bin"
    DDP=./03_ddp/fedavg run 1 "$dir/full.log" "${flags[@]}" --full-batch --save-final "$dir/full.bin"
    python3 03_ddp/check_moves.py "$dir/w0.bin" "$dir/e3.bin" 3 "$dir/e1.bin" 0.02
    python3 03_ddp/check_moves.py "$dir/w0.bin" "$dir/e1.bin" 2 "$dir/full.bin" 0.02
    ;;
diloco-momentum)  # DiLoCo's outer Nesterov step against a hand computation (03_ddp/check_moves.py
    # --diloco), 2 ranks, H 2, plain SGD with an lr that does not depend on the run's length (inside
    # the warm-up, lr x step / 50): w0 (lr 0), the plain averages w1 after 2 steps and w2 after 4
    flags=("${TINY[@]}" --optim sgd --clip 0 --lr 10 --warmup 50 --local-steps 2)
    run 2 "$dir/w0.log" "${flags[@]}" --steps 2 --lr 0 --save-final "$dir/w0.bin"
    run 2 "$dir/w1.log" "${flags[@]}" --steps 2 --save-final "$dir/w1.bin"
    run 2 "$dir/w2.log" "${flags[@]}" --steps 4 --save-final "$dir/w2.bin"
    # one outer step, eta 0.5: w0 - eta (1 + mu) (w0 - w1), mu 0.9 and 0
    run 2 "$dir/m9.log" "${flags[@]}" --steps 2 --outer-lr 0.5 --outer-momentum 0.9 --save-final "$dir/m9.bin"
    run 2 "$dir/m0.log" "${flags[@]}" --steps 2 --outer-lr 0.5 --outer-momentum 0 --save-final "$dir/m0.bin"
    # two outer steps, eta 1 / 1.9, mu 0.9: the first lands on w1, the second on w2 - eta mu^2 (w0 - w1)
    run 2 "$dir/two.log" "${flags[@]}" --steps 4 --outer-lr 0.5263157894736842 --outer-momentum 0.9 \
        --save-final "$dir/two.bin"
    python3 03_ddp/check_moves.py --diloco "$dir"
    ;;
dp-timed)  # N: dataparallel's summary (the bench row) is the mean of every step but the first: its
    # step_ms and serial_ms against the trainer's CSV rows of steps 2..5 (ms, exposed_comm_ms)
    n=$2
    ./03_ddp/dataparallel "${TINY[@]}" --replicas "$n" --steps 5 --csv "$dir/steps.csv" --bench-csv "$dir/bench.csv" \
        >"$dir/dp.log" 2>&1 || { tail -n 20 "$dir/dp.log"; exit 1; }
    awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) c[FILENAME, $i] = i; next }
        FILENAME ~ /steps/ { if ($1 >= 2) { ms += $c[FILENAME, "ms"]; ex += $c[FILENAME, "exposed_comm_ms"]; k++ }
                             all += $c[FILENAME, "exposed_comm_ms"]; next }
        { step = $c[FILENAME, "step_ms"]; serial = $c[FILENAME, "serial_ms"] }
        END { ms /= k; ex /= k
              printf "steps 2-5: %.4f ms a step, %.4f ms serial; bench row: %s and %s; steps 1-5 serial: %.4f\n", ms, ex, step, serial, all / 5
              if (k != 4 || (ms - step) ^ 2 > 0.0015 ^ 2 || (ex - serial) ^ 2 > 0.0015 ^ 2) {
                  print "error: the bench row is not the mean of steps 2-5"; exit 1 } }' "$dir/steps.csv" "$dir/bench.csv"
    ;;
emu)  # NP GPUS COMM TOL WTOL [FLAGS...]: the CUDA path on emulated GPUs (tests/cuda_emu)
    # against the CPU's 1-rank run (CPU_NP=N: N ranks), 3 steps (the first and two with
    # Adam's moments: an emulated step costs a hundred CPU ones); CMP_FLAGS go to compare.
    np=$2; gpus=$3; comm=$4; tol=$5; wtol=$6; shift 6
    run "${CPU_NP:-1}" "$dir/cpu.log" "${TINY[@]}" --device cpu --steps 3 "$@" --save-final "$dir/cpu.bin"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/ddp "${TINY[@]}" --device cuda \
            --comm "$comm" --steps 3 --bucket-mb 0.01 "$@" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^weights.*after' "$dir/gpu.log"
    $CMP "$dir/gpu.bin" "$dir/cpu.bin" --tol "$tol" --wtol "$wtol" ${CMP_FLAGS:-}
    ;;
compress-bytes)  # NP SPEC [FLAGS...]: --compress SPEC's bytes per step against the formula
    np=$2; spec=$3; shift 3
    run "$np" "$dir/c.log" "${TINY[@]}" --steps 3 --compress "$spec" "$@" --csv "$dir/c.csv"
    python3 03_ddp/check_compress.py "$dir/c.log" "$dir/c.csv"
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
