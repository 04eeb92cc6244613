#!/usr/bin/env bash
# sweep_recompute.sh: every recomputation policy on one deep, thin model;
# one row per policy in plots/data/recompute.csv (or $1), drawn by
# 06_checkpointing/recompute.gp: the activation high-water mark, the
# recomputed FLOPs, the step time and the time spent recomputing, each
# beside its model. Flags after the CSV name go to every run (e.g. --device
# cuda, or --layers 32 with POLICIES to match).
#
# Memory and FLOPs are the same in every run; times are not, on a shared
# machine. So every policy runs REPEATS times (default 3), the policies
# interleaved (every policy once, then every policy again), so that a change
# in the machine's load spreads over all of them; the row kept is each
# policy's median run by step time (scripts/repeats.awk), with the number of
# runs and the fastest and slowest step time appended.
#   NP=1 STEPS=8 REPEATS=3 bash 06_checkpointing/sweep_recompute.sh plots/data/recompute.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/recompute.csv}
shift || true
np=${NP:-1}; repeats=${REPEATS:-3}
policies=${POLICIES:-"none selective every:1 every:2 every:3 every:4 every:6 every:8 every:16 block:4 block:8 block:12"}
tmp=$(mktemp -d /tmp/recompute.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
for ((r = 1; r <= repeats; r++)); do
    for p in $policies; do
        mpirun -np "$np" ./06_checkpointing/ckpt --dim 64 --layers 16 --heads 4 --kv-heads 2 --seq 128 \
            --batch 4 --steps "${STEPS:-8}" --threads 1 --recompute "$p" --bench-csv "$tmp/runs.csv" "$@" \
            >"$tmp/run.log" || { tail -n 20 "$tmp/run.log"; exit 1; }
    done
    echo "repeat $r of $repeats done"
done
awk -F, -v keys=policy -v by=step_ms -f scripts/repeats.awk "$tmp/runs.csv" > "$out"
# One line per policy from the rows kept (the chart's numbers).
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { printf "%-10s acts %8.4f MB, high-water %8.4f MB | step %7.1f ms (%d runs: %.1f-%.1f) | recomputing %6.1f ms (model %6.1f) | MFU %4.1f%% HFU %4.1f%%\n",
        $c["policy"], $c["acts_mb"], $c["acts_peak_mb"], $c["step_ms"], $c["runs"], $c["step_ms_min"],
        $c["step_ms_max"], $c["recompute_ms"], $c["recompute_model_ms"], $c["mfu"], $c["hfu"] }' "$out"
echo "wrote $out"
