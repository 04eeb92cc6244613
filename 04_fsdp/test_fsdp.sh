#!/usr/bin/env bash
# test_fsdp.sh: the multi-run tests of chapter 04 (listed in tests/fsdp.tests).
# Each case trains tiny models with 04_fsdp/fsdp and compares runs with
# build/tests/compare, or checks the printed memory and bytes against
# 04_fsdp/check_fsdp.py's own computation. Usage: test_fsdp.sh CASE [ARGS...];
# exit 0 when the property holds. Runs mpirun itself.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${P:-./04_fsdp/fsdp}
REF=./04_fsdp/fsdp   # the reference: 1 rank of plain DDP (--zero 0)
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# A tiny model: 34,976 parameters (not a multiple of 3: 3 ranks pad their
# pieces), 12 sequences per step (divisible by 1-4 ranks x 1-3 micro-batches).
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/fsdp_test.XXXXXX)
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
ref_flags() {  # FLAGS...: the same flags for the DDP reference, without --zero N,
    # --shard K and --reshard-after-backward X (ZeRO-3's alone) -> $ref
    ref=(); local skip=0 a
    for a in "$@"; do
        if [ $skip = 1 ]; then skip=0; continue; fi
        if [ "$a" = --zero ] || [ "$a" = --shard ] || [ "$a" = --reshard-after-backward ]; then skip=1; continue; fi
        ref+=("$a")
    done
}
cmp_runs() {  # A B TOL: TOL 0 means bit for bit
    if [ "$3" = 0 ]; then $CMP "$1" "$2" --exact; else $CMP "$1" "$2" --tol "$3" ${WTOL:+--wtol "$WTOL"}; fi
}

case "$1" in
equiv)  # NP TOL FLAGS...: NP ranks vs 1 rank of plain DDP on the same global batch
    np=$2; tol=$3; shift 3
    ref_flags "$@"
    ref "$dir/one.log" "$REF" "${TINY[@]}" --steps 6 --zero 0 "${ref[@]}" --save-final "$dir/one.bin"
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/many.bin"
    echo "1 rank of DDP vs $np ranks, 6 steps: $*"
    grep -h '^zero' "$dir/many.log"
    grep '^step' "$dir/many.log" | tail -n 1
    cmp_runs "$dir/many.bin" "$dir/one.bin" "$tol"
    ;;
same)  # NP TOL "FLAGS A" "FLAGS B": two variants on NP ranks
    np=$2; tol=$3
    read -r -a a <<<"$4"; read -r -a b <<<"$5"
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 6 "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$dir/b.log" "${TINY[@]}" --steps 6 "${b[@]}" --save-final "$dir/b.bin"
    echo "$np ranks: [$4] vs [$5]"
    grep -h '^zero\|^    ' "$dir/a.log" "$dir/b.log" | head -n 4
    cmp_runs "$dir/a.bin" "$dir/b.bin" "$tol"
    ;;
resume)  # NP "FLAGS A" NP2 "FLAGS B": a run of 12 steps on NP ranks with checkpoints every
    # 4; its later checkpoints removed, resumed from step 4 on NP2 ranks with other flags;
    # the same losses and weights as the run that never stopped (sums in another order).
    np=$2; np2=$4
    read -r -a a <<<"$3"; read -r -a b <<<"$5"
    base=("${TINY[@]}" --steps 12 --clip 0)
    run "$np" "$dir/ref.log" "${base[@]}" "${a[@]}" --save-final "$dir/ref.bin"
    run "$np" "$dir/a.log" "${base[@]}" "${a[@]}" --ckpt-every 4 --ckpt-keep 3 --ckpt-dir "$dir/ckpt"
    grep '^ckpt' "$dir/a.log"
    rm -rf "$dir/ckpt/step_00000008" "$dir/ckpt/step_00000012"
    run "$np2" "$dir/b.log" "${base[@]}" "${b[@]}" --ckpt-dir "$dir/ckpt" --resume --save-final "$dir/b.bin"
    grep '^resume\|^zero' "$dir/b.log"
    grep -q 'continuing at step 5' "$dir/b.log" || { echo "error: did not resume from step 4"; exit 1; }
    $CMP "$dir/b.bin" "$dir/ref.bin" --tol 1e-5
    ;;
numbers)  # NP FLAGS...: the memory table, the bytes per collective (each step's line, the
    # summary, the CSV) against check_fsdp.py's independent computation, and every
    # number of the log line and CSV row against the shared trainer's formulas
    np=$2; shift 2
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 4 --peak 1000 "$@" --csv "$dir/a.csv"
    python3 04_fsdp/check_fsdp.py "$dir/a.log" "$dir/a.csv" "$@"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000
    ;;
trace)  # ZeRO-3 with prefetch: all-gathers and reduce-scatters on lanes of their own, and a
    # prefetched all-gather in flight while another unit computes
    run 2 "$dir/a.log" "${TINY[@]}" --steps 5 --zero 3 --prefetch 2 --trace "$dir/t.json"
    grep '^trace' "$dir/a.log"
    python3 - "$dir/t.json" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
spans = [e for e in ev if e.get("ph") == "X"]
lane = lambda e: names.get((e["pid"], e["tid"]), "?")
gathers = [e for e in spans if e["name"].startswith("all-gather unit")]
rs = [e for e in spans if e["name"].startswith("reduce-scatter")]
comp = [e for e in spans if lane(e) == "compute" and e["name"].startswith(("fwd", "bwd"))]
print("%d all-gather spans on %s, %d reduce-scatter spans on %s, %d compute spans" % (
    len(gathers), sorted({lane(e) for e in gathers}), len(rs), sorted({lane(e) for e in rs}), len(comp)))
bad = [e for e in gathers + rs if lane(e) == "compute"]
if not gathers or not rs or bad:
    sys.exit("error: collectives missing, or on the compute track")
# a gather launched before a unit's compute started and finishing after it started: overlap
over = sum(1 for g in gathers for c in comp if g["pid"] == c["pid"] and g["ts"] < c["ts"] < g["ts"] + g["dur"])
print("%d (all-gather, unit compute) pairs overlap" % over)
if over == 0:
    sys.exit("error: no all-gather overlaps a unit's compute")
EOF
    ;;
prefetch-depth)  # K: ZeRO-3 with --prefetch K on 2 ranks, 4 layers: when a unit's compute
    # ends, the all-gathers of the next K units are in flight (started, not yet waited
    # for), counted from the trace: at most K at any unit, exactly K at some unit
    k=$2
    run 2 "$dir/a.log" "${TINY[@]}" --layers 4 --steps 5 --zero 3 --prefetch "$k" --trace "$dir/t.json"
    grep '^zero' "$dir/a.log"
    python3 - "$dir/t.json" "$k" <<'EOF'
import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
k = int(sys.argv[2])
spans = [e for e in ev if e.get("ph") == "X"]
gathers = [e for e in spans if e["name"].startswith("all-gather unit")]
comp = [e for e in spans if e["name"].startswith(("fwd ", "bwd "))]
depth = collections.Counter()
for c in comp:
    end = c["ts"] + c["dur"]
    ahead = {g["name"].split()[2] for g in gathers if g["pid"] == c["pid"] and g["ts"] < end < g["ts"] + g["dur"]}
    depth[len(ahead)] += 1
print("--prefetch %d: %d unit computes; units gathered ahead when one ends: %s" % (
    k, len(comp), ", ".join("%d at %d" % (d, n) for d, n in sorted(depth.items()))))
if not comp or max(depth) != k:
    sys.exit("error: at most %d units' all-gathers in flight ahead of their unit, --prefetch %d asks for %d"
             % (max(depth, default=0), k, k))
EOF
    ;;
memlimit)  # under --mem-limit, DDP is refused naming the bytes; ZeRO-3 on 4 ranks trains
    flags=(--device "$DEV" --threads 1 --dim 128 --layers 4 --heads 4 --kv-heads 4 --seq 32 --vocab 256
           --batch 4 --steps 3 --mem-limit 12M)
    if mpirun -np 4 "$P" "${flags[@]}" --zero 0 >"$dir/a.log" 2>&1; then
        echo "error: DDP was not refused"; exit 1
    fi
    grep -m1 '^error' "$dir/a.log"
    grep -q -- "--mem-limit 12582912 bytes (12.58 MB) per rank: DDP on 4 ranks needs [0-9]* bytes" "$dir/a.log" \
        || { echo "error: the refusal does not name the bytes"; exit 1; }
    run 4 "$dir/b.log" "${flags[@]}" --zero 3
    grep '^memory' "$dir/b.log" | head -n 2
    grep '^step     3/3' "$dir/b.log"
    ;;
memlimit-stages)  # under --mem-limit, only the last pipeline stage's ranks (the head and the final
                  # norm, against the first's embedding: 1280 bytes more) exceed it; every rank
                  # refuses together: exit 2, one line, the lowest refusing rank's (rank 2)
    flags=(--device "$DEV" --threads 1 --dim 64 --layers 3 --heads 4 --kv-heads 4 --seq 16 --vocab 4096
           --batch 8 --micro 2 --steps 1 --pp 3 --dp 2 --zero 1)
    # the first stage's ZeRO-1 need, exactly: it fits, the last stage's does not
    rc=0; mpirun -np 6 ./10_nd_llama/train "${flags[@]}" --mem-limit 6096896 >"$dir/a.out" 2>"$dir/a.err" || rc=$?
    grep '^error' "$dir/a.err" || true
    [ "$rc" = 2 ] || { echo "error: exit status $rc, expected 2"; exit 1; }
    [ "$(grep -c '^error' "$dir/a.err")" = 1 ] || { echo "error: not exactly one error line"; exit 1; }
    grep -q '^error: --mem-limit 6096896 bytes (6.10 MB) per rank: ZeRO-1 on 2 ranks needs 6098176 bytes (6.10 MB) on rank 2 for' \
        "$dir/a.err" || { echo "error: the line is not rank 2's refusal (the lowest rank of the last stage)"; exit 1; }
    ;;
acts-limit)  # ZeRO-1's state fits 12 MiB per rank but its activations do not: the device's cap
    # ends the job at the allocation that would pass it, naming the bytes
    flags=(--device "$DEV" --threads 1 --dim 128 --layers 4 --heads 4 --kv-heads 4 --seq 32 --vocab 256
           --batch 4 --steps 3 --mem-limit 12M)
    if mpirun -np 4 "$P" "${flags[@]}" --zero 1 >"$dir/a.log" 2>&1; then
        echo "error: ZeRO-1 was not refused"; exit 1
    fi
    grep -m1 '^error' "$dir/a.log"
    grep -q "memory limit: [0-9]* more bytes (.*) of [a-z]* would bring this rank to [0-9]* bytes .*, above its limit of 12582912 bytes" \
        "$dir/a.log" || { echo "error: not refused by the device's cap"; exit 1; }
    ;;
emu)  # NP GPUS COMM TOL WTOL FLAGS...: the CUDA path on emulated GPUs (tests/cuda_emu)
    # against the CPU's 1-rank DDP run, 3 steps (as 03_ddp/test_ddp.sh emu)
    np=$2; gpus=$3; comm=$4; tol=$5; wtol=$6; shift 6
    ref_flags "$@"
    $REF "${TINY[@]}" --device cpu --steps 3 --zero 0 "${ref[@]}" --save-final "$dir/cpu.bin" >"$dir/cpu.log"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" "build/emu/$(basename "$P")" "${TINY[@]}" --device cuda \
            --comm "$comm" --steps 3 "$@" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^zero' "$dir/gpu.log"
    $CMP "$dir/gpu.bin" "$dir/cpu.bin" --tol "$tol" --wtol "$wtol"
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
