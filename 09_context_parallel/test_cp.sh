#!/usr/bin/env bash
# test_cp.sh: the multi-run tests of chapter 09 (listed in tests/cp.tests).
# Each case trains tiny models with 09_context_parallel/cp and compares an
# N-rank run with the 1-rank run of the same global batch by 03_ddp/ddp,
# the model with no seam and its own attention core (build/tests/compare
# prints what it compared and the worst difference), or checks the printed
# attention work and bytes against the formulas (check_cp.py). Usage:
# test_cp.sh CASE [ARGS...]; exit 0 when the property holds.
set -euo pipefail
cd "$(dirname "$0")/.."
CP=./09_context_parallel/cp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# A tiny model: 4 heads on 2 kv heads (Ulysses on 4 ranks shares each kv
# head between 2), 12 sequences of 24 tokens per step: 24 splits into 2C
# chunks for C = 2, 3 and 4.
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 24 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/cp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP LOG FLAGS...: one training run, quietly unless it fails
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$CP" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $CP $*"; tail -n 20 "$log"; exit 1
    fi
}

case "$1" in
equiv)  # NP TOL "PARALLEL FLAGS" [FLAGS...]: NP ranks vs 1 rank on the same global batch
    np=$2; tol=$3; read -r -a par <<<"$4"; shift 4
    # the reference: chapter 03's trainer on one rank (the model's own attention core)
    mpirun -np 1 ./03_ddp/ddp "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin" >"$dir/one.log" 2>&1 ||
        { echo "the 1-rank reference run failed"; tail -n 20 "$dir/one.log"; exit 1; }
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "${par[@]}" "$@" --save-final "$dir/many.bin"
    echo "1 rank vs $np ranks, 6 steps, ${par[*]} $*"
    grep '^cp:\|^dp:' "$dir/many.log"
    grep '^step' "$dir/many.log" | tail -n 2
    $CMP "$dir/many.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
formulas)  # NP "PARALLEL FLAGS" [FLAGS...]: printed work, bytes and CSV against the formulas
    np=$2; read -r -a par <<<"$3"; shift 3
    run "$np" "$dir/a.log" "${TINY[@]}" --steps 3 "${par[@]}" "$@" --peak 0.05 --csv "$dir/a.csv"
    grep '^cp' "$dir/a.log"
    python3 09_context_parallel/check_cp.py "$dir/a.log" "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 0.05
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
emu)  # NP GPUS COMM TOL WTOL "PARALLEL FLAGS" [FLAGS...]: the CUDA path on emulated GPUs
    # (tests/cuda_emu) against the CPU's 1-rank run, 6 steps.
    np=$2; gpus=$3; comm=$4; tol=$5; wtol=$6; read -r -a par <<<"$7"; shift 7
    ./03_ddp/ddp "${TINY[@]}" --device cpu --steps 6 "$@" --save-final "$dir/cpu.bin" >"$dir/cpu.log"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/cp "${TINY[@]}" --device cuda --comm "$comm" \
            --steps 6 "${par[@]}" "$@" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^cp:\|^weights.*after' "$dir/gpu.log"
    $CMP "$dir/gpu.bin" "$dir/cpu.bin" --tol "$tol" --wtol "$wtol"
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
