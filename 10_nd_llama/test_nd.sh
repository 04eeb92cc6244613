#!/usr/bin/env bash
# test_nd.sh: the multi-run tests of chapter 10's trainer (listed in
# tests/nd.tests). equiv and emu (tests/split_cases.sh) compare an N-rank run
# of 10_nd_llama/train on a [tp, cp, pp, dp] mesh with 03_ddp's 1-rank run of
# the same global batch (build/tests/compare prints what it compared and the
# worst difference); formulas checks every printed number (check_nd.py and
# tests/check_trainer_csv.py); resume saves on one mesh and resumes on
# another; dry-run prints the per-rank table of a model too large to build.
# Usage: test_nd.sh CASE [ARGS...]; exit 0 when the property holds.
set -euo pipefail
cd "$(dirname "$0")/.."
PROG=./10_nd_llama/train
EMU_PROG=build/emu/train
DEV=${DEV:-cpu}
# A tiny model: 4 layers (2 stages x 2 chunks), 4 heads on 2 kv heads, ffn
# 128, vocab 32; 16 sequences of 16 tokens per step in 4 micro-batches per
# data-parallel rank. Every token of the vocabulary occurs in every batch: with
# vocab 64 some never do, their embedding rows get gradients of pure rounding
# noise, and Adam turns noise of 1e-12 into steps of lr (03_ddp's own 2-rank
# run then differs from its 1-rank run by 2e-5).
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 4 --heads 4 --kv-heads 2 --seq 16 --vocab 32
      --batch 16 --micro 4 --lr 3e-3)
dir=$(mktemp -d /tmp/nd_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
source tests/split_cases.sh

case "$1" in
equiv) shift; equiv_case "$@" ;;   # NP TOL "MESH FLAGS" [FLAGS...]
emu) shift; emu_case "$@" ;;       # NP GPUS COMM TOL WTOL "MESH FLAGS" [FLAGS...]
same)  # NP "FLAGS A" "FLAGS B": two runs on NP ranks end with bit-identical losses, norms and weights
    np=$2; read -r -a fa <<<"$3"; read -r -a fb <<<"$4"
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 6 "${fa[@]}" --save-final "$dir/a.bin"
    run "$np" "$dir/b.log" "${TINY[@]}" --steps 6 "${fb[@]}" --save-final "$dir/b.bin"
    grep '^dp:\|^mean' "$dir/a.log" "$dir/b.log"
    if [[ " ${fa[*]} " == *" --recompute "* ]] && ! grep -q '^mean of steps.*HFU' "$dir/a.log"; then
        echo "error: the run with --recompute recomputed nothing (no HFU beside MFU)"; exit 1
    fi
    ./build/tests/compare "$dir/a.bin" "$dir/b.bin" --exact
    ;;
formulas)  # NP "MESH FLAGS" [FLAGS...]: the step notes, causes, bytes, CSV and bench row against their sums and formulas
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 4 "${par[@]}" "$@" --peak 1000 --csv "$dir/a.csv" --bench-csv "$dir/b.csv"
    python3 10_nd_llama/check_nd.py "$dir/a.log" "$dir/a.csv" "$dir/b.csv" --peak 1000
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000
    ;;
notes)  # NP "MESH FLAGS": every step line carries ZeRO's bytes note, then the axis times (added in that order)
    np=$2; read -r -a par <<<"$3"
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 2 "${par[@]}"
    grep '^step' "$dir/a.log"
    n=$(grep -cE '^step .* \| sent [0-9.]+ MB \(gather [0-9.]+, reduce-scatter [0-9.]+\) \| tp [0-9.]+ cp [0-9.]+ dp [0-9.]+ ms$' \
        "$dir/a.log" || true)
    [ "$n" = 2 ] || { echo "error: $n of 2 step lines carry ZeRO's note followed by the axis times"; exit 1; }
    ;;
resume)  # NP1 "MESH1" NP2 "MESH2": 6 steps saved on mesh 1, resumed from step 3 on mesh 2 = 6 uninterrupted steps on 1 rank
    np1=$2; read -r -a m1 <<<"$3"; np2=$4; read -r -a m2 <<<"$5"
    reference "$dir/ref.bin" 6
    run "$np1" "$dir/a.log" "${TINY[@]}" --steps 6 "${m1[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every 3 --ckpt-keep 2
    rm -rf "$dir/ckpt/step_00000006"   # as if the run had stopped after step 3's checkpoint
    run "$np2" "$dir/b.log" "${TINY[@]}" --steps 6 "${m2[@]}" --ckpt-dir "$dir/ckpt" --resume --save-final "$dir/b.bin"
    grep '^resume\|^nd:' "$dir/b.log"
    grep '^step' "$dir/b.log" | head -n 1
    grep -Eq '^step +4/6' "$dir/b.log" || { echo "error: the resumed run did not start at step 4"; exit 1; }
    ./build/tests/compare "$dir/b.bin" "$dir/ref.bin" --tol 1e-5
    ;;
dry-run)  # NP "MESH FLAGS" [FLAGS...]: the table of a dry run, checked against the shard arithmetic
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" --device "$DEV" --threads 1 "${par[@]}" "$@" --dry-run
    cat "$dir/a.log" | grep -v '^  *[0-9]' | head -n 30
    grep '^  *[0-9]' "$dir/a.log" | head -n 8
    python3 10_nd_llama/check_nd.py "$dir/a.log" --dry-run
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
