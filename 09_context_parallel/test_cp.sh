#!/usr/bin/env bash
# test_cp.sh: the multi-run tests of chapter 09 (listed in tests/cp.tests).
# equiv and emu (tests/split_cases.sh) compare an N-rank run of
# 09_context_parallel/cp with the 1-rank run of the same global batch
# (build/tests/compare prints what it compared and the worst difference);
# formulas checks the printed attention work and bytes against check_cp.py's
# own arithmetic; linear, the memory per rank against the sequence length.
# Usage: test_cp.sh CASE [ARGS...]; exit 0 when the property holds.
set -euo pipefail
cd "$(dirname "$0")/.."
PROG=./09_context_parallel/cp
EMU_PROG=build/emu/cp
DEV=${DEV:-cpu}
# A tiny model: 4 heads on 2 kv heads (Ulysses on 4 ranks shares each kv
# head between 2), 12 sequences of 24 tokens per step: 24 splits into 2C
# chunks for C = 2, 3 and 4.
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 24 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/cp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
source tests/split_cases.sh

case "$1" in
equiv) shift; equiv_case "$@" ;;   # NP TOL "PARALLEL FLAGS" [FLAGS...]
emu) shift; emu_case "$@" ;;       # NP GPUS COMM TOL WTOL "PARALLEL FLAGS" [FLAGS...]
formulas)  # NP "PARALLEL FLAGS" [FLAGS...]: printed work, bytes and CSV against the formulas
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 3 "${par[@]}" "$@" --peak 1000 --csv "$dir/a.csv"
    grep '^cp' "$dir/a.log"
    python3 09_context_parallel/check_cp.py "$dir/a.log" "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000
    ;;
linear)  # ALGO: activation memory per rank grows linearly in the sequence (no T x T anywhere)
    algo=$2
    for T in 64 128 256; do
        run 2 "$dir/$T.log" "${TINY[@]}" --steps 2 --batch 2 --seq $T --cp-algo "$algo" \
            --bench-csv "$dir/mem.csv"
    done
    cat "$dir/mem.csv"
    python3 - "$dir/mem.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
acts = [(int(r["seq"]), float(r["acts_mb"]), float(r["mem_peak_mb"])) for r in rows]
(t0, a0, p0), (t1, a1, p1), (t2, a2, p2) = acts
# linear: equal increments for equal steps in T (doubling twice: 64 -> 128 -> 256)
for what, x0, x1, x2 in (("activations", a0, a1, a2), ("device memory high-water", p0, p1, p2)):
    d1, d2 = x1 - x0, (x2 - x1) / 2
    print("%s: %.4f, %.4f, %.4f MiB at T = %d, %d, %d: growth %.4f then %.4f MiB per %d tokens"
          % (what, x0, x1, x2, t0, t1, t2, d1, d2, t1 - t0))
    if abs(d2 - d1) > 1e-3 * max(d1, 1e-9) + 1e-4:
        sys.exit("error: %s grows faster than linearly in the sequence length" % what)
print("memory per rank is linear in the sequence length")
PY
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
