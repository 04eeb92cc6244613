#!/usr/bin/env bash
# test_tp.sh: the multi-run tests of chapter 08 (listed in tests/tp.tests).
# equiv and emu (tests/split_cases.sh) compare an N-rank run of
# 08_tensor_parallel/tp with the 1-rank run of the same global batch
# (build/tests/compare prints what it compared and the worst difference);
# formulas checks the printed bytes and memory against check_tp.py's own
# arithmetic. Usage: test_tp.sh CASE [ARGS...]; exit 0 when the property holds.
set -euo pipefail
cd "$(dirname "$0")/.."
PROG=./08_tensor_parallel/tp
EMU_PROG=build/emu/tp
DEV=${DEV:-cpu}
# A tiny model: 4 heads on 2 kv heads (tp 4 shares each kv head between 2
# ranks), ffn 128, vocab 64, 12 sequences of 16 tokens per step.
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/tp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
source tests/split_cases.sh

case "$1" in
equiv) shift; equiv_case "$@" ;;   # NP TOL "PARALLEL FLAGS" [FLAGS...]
emu) shift; emu_case "$@" ;;       # NP GPUS COMM TOL WTOL "PARALLEL FLAGS" [FLAGS...]
formulas)  # NP "PARALLEL FLAGS" [FLAGS...]: printed bytes, memory and CSV against the formulas
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 3 "${par[@]}" "$@" --peak 1000 --csv "$dir/a.csv"
    python3 08_tensor_parallel/check_tp.py "$dir/a.log" "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
