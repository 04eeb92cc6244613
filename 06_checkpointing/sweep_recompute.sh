#!/usr/bin/env bash
# sweep_recompute.sh: every recomputation policy on one deep, thin model;
# one row per run in plots/data/recompute.csv (or $1), drawn by
# 06_checkpointing/recompute.gp: the activation high-water mark, the
# recomputed FLOPs, the step time and the time spent recomputing, each
# beside its model. Flags after the CSV name go to every run (e.g. --device
# cuda, or --layers 32 with POLICIES to match).
#   NP=1 STEPS=6 bash 06_checkpointing/sweep_recompute.sh plots/data/recompute.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/recompute.csv}
shift || true
np=${NP:-1}
policies=${POLICIES:-"none selective every:1 every:2 every:3 every:4 every:6 every:8 every:16 block:4 block:8 block:12"}
mkdir -p "$(dirname "$out")"
rm -f "$out"
for p in $policies; do
    line=$(mpirun -np "$np" ./06_checkpointing/ckpt --dim 64 --layers 16 --heads 4 --kv-heads 2 --seq 128 \
               --batch 4 --steps "${STEPS:-6}" --threads 1 --recompute "$p" --bench-csv "$out" "$@" |
           grep -E '^recompute: .* \| activations|^mean' | sed -E 's/ \(model [^)]*\)//g; s/activations of a micro-batch/acts/')
    printf '%-10s %s\n' "$p" "$(echo "$line" | head -n 1 | cut -d'|' -f2,3 | cut -c1-60) |$(echo "$line" | tail -n 1 | cut -d: -f2 | cut -d'|' -f1,3,4)"
done
echo "wrote $out"
