#!/usr/bin/env bash
# sweep_buckets.sh: step time split into compute and exposed communication
# against the bucket size, with overlap on and off; one row per run in
# plots/data/ddp_buckets.csv (or $1), drawn by 03_ddp/ddp_buckets.gp.
#
# The model is chosen so that communication matters: many parameters (6.0M,
# 24 MB of fp32 gradients, 3 MB per layer) and few tokens per step (2 x 16), so the
# all-reduce is a visible share of the step, as it is on GPUs, where compute
# is fast. Flags after the CSV name go to every run (e.g. --device cuda).
#   NP=2 bash 03_ddp/sweep_buckets.sh plots/data/ddp_buckets.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_buckets.csv}
shift || true
np=${NP:-2}
sizes=${SIZES:-"0.5 2 4 8 16 32"}
mkdir -p "$(dirname "$out")"
rm -f "$out"
for mb in $sizes; do
    for overlap in on off; do
        flags=(--dim 256 --heads 8 --kv-heads 4 --layers 8 --seq 16 --batch 2 --steps ${STEPS:-12}
               --threads 1 --bucket-mb "$mb" --bench-csv "$out" "$@")
        [ "$overlap" = off ] && flags+=(--no-overlap)
        line=$(mpirun -np "$np" ./03_ddp/ddp "${flags[@]}" | grep -E '^mean|^weights.*after')
        printf 'bucket %5s MiB, overlap %-3s | %s\n' "$mb" "$overlap" "$(echo "$line" | head -n 1 | cut -c1-110)"
    done
done
echo "wrote $out"
