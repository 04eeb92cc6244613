#!/usr/bin/env bash
# test_tp.sh: the multi-run tests of chapter 08 (listed in tests/tp.tests).
# Each case trains tiny models with 08_tensor_parallel/tp and compares an
# N-rank run with the 1-rank run of the same global batch by 03_ddp/ddp,
# the model with no seam and its own attention core (build/tests/compare
# prints what it compared and the worst difference), or checks the printed
# bytes and memory against the formulas (check_tp.py). Usage:
# test_tp.sh CASE [ARGS...]; exit 0 when the property holds.
set -euo pipefail
cd "$(dirname "$0")/.."
TP=./08_tensor_parallel/tp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# A tiny model: 4 heads on 2 kv heads (tp 4 shares each kv head between 2
# ranks), ffn 128, vocab 64, 12 sequences of 16 tokens per step.
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/tp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP LOG FLAGS...: one training run, quietly unless it fails
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$TP" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $TP $*"; tail -n 20 "$log"; exit 1
    fi
}

case "$1" in
equiv)  # NP TOL "PARALLEL FLAGS" [FLAGS...]: NP ranks vs 1 rank on the same global batch
    np=$2; tol=$3; read -r -a par <<<"$4"; shift 4
    # the reference: chapter 03's trainer on one rank (no seam, the model's own attention)
    mpirun -np 1 ./03_ddp/ddp "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin" >"$dir/one.log" 2>&1 ||
        { echo "the 1-rank reference run failed"; tail -n 20 "$dir/one.log"; exit 1; }
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "${par[@]}" "$@" --save-final "$dir/many.bin"
    echo "1 rank vs $np ranks, 6 steps, ${par[*]} $*"
    grep '^tp:\|^dp:' "$dir/many.log"
    grep '^step' "$dir/many.log" | tail -n 2
    $CMP "$dir/many.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
formulas)  # NP "PARALLEL FLAGS" [FLAGS...]: printed bytes, memory and CSV against the formulas
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 3 "${par[@]}" "$@" --peak 0.05 --csv "$dir/a.csv"
    python3 08_tensor_parallel/check_tp.py "$dir/a.log" "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 0.05
    ;;
emu)  # NP GPUS COMM TOL WTOL "PARALLEL FLAGS" [FLAGS...]: the CUDA path on emulated GPUs
    # (tests/cuda_emu) against the CPU's 1-rank run, 6 steps.
    np=$2; gpus=$3; comm=$4; tol=$5; wtol=$6; read -r -a par <<<"$7"; shift 7
    ./03_ddp/ddp "${TINY[@]}" --device cpu --steps 6 "$@" --save-final "$dir/cpu.bin" >"$dir/cpu.log"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/tp "${TINY[@]}" --device cuda --comm "$comm" \
            --steps 6 "${par[@]}" "$@" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^tp:\|^weights.*after' "$dir/gpu.log"
    $CMP "$dir/gpu.bin" "$dir/cpu.bin" --tol "$tol" --wtol "$wtol"
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
