#!/usr/bin/env bash
# sweep_zbh1.sh: ZB-H1 against 1F1B, the bubble against the micro-batch
# count: both schedules measured on 2 stages (2 ranks, one core each), each
# ZB-H1 run also replayed with its own action times, as ZB-H1 and as 1F1B
# (B + W in one backward), and both replayed at 4 stages from the layer
# times; rows in plots/data/zbh1.csv (or $1), drawn by 07_pipeline/zbh1.gp.
# Flags after the CSV name go to every run. The model is sweep_bubble.sh's.
#   bash 07_pipeline/sweep_zbh1.sh plots/data/zbh1.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/zbh1.csv}
shift || true
mkdir -p "$(dirname "$out")"
rm -f "$out"
for m in ${MICROS:-2 4 8}; do
    for s in 1f1b zbh1; do
        flags=(--dim 256 --heads 8 --kv-heads 4 --layers 16 --seq 32 --batch 16 --steps ${STEPS:-4}
               --threads 1 --schedule "$s" --micro "$m" --replay 4 --bubble-csv "$out" "$@")
        log=$(mpirun -np 2 ./07_pipeline/pipeline "${flags[@]}")
        printf '%-5s M %-2s | %s\n' "$s" "$m" "$(grep -A1 '^bubble:' <<<"$log" | tail -n 1 | sed 's/^ *//')"
        grep '1F1B replayed with the same' <<<"$log" | sed 's/^ */             /' || true
    done
done
echo "wrote $out"
