#!/usr/bin/env bash
# sweep_bubble.sh: the bubble against the micro-batch count for every
# schedule, measured on 2 stages (2 ranks, one core each) and replayed at 4
# and 8 stages from the same runs' layer times (TeraPipe with 4 token slices
# per micro-batch); rows in plots/data/bubble.csv
# (or $1), drawn by 07_pipeline/bubble.gp. Flags after the CSV name go to
# every run (e.g. --device cuda, or another model).
#
# The model has 16 layers so that 8 stages x 2 chunks still get one layer
# each, and enough work per micro-batch (tens of ms) that the microseconds of
# a message and of a wake-up do not count.
#   bash 07_pipeline/sweep_bubble.sh plots/data/bubble.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/bubble.csv}
shift || true
micros=${MICROS:-"1 2 4 8"}
mkdir -p "$(dirname "$out")"
rm -f "$out"
for s in naive gpipe 1f1b interleaved terapipe; do
    for m in $micros; do
        [ "$s" = interleaved ] && [ $((m % 2)) -ne 0 ] && continue   # groups of P = 2
        flags=(--dim 256 --heads 8 --kv-heads 4 --layers 16 --seq 32 --batch 16 --steps ${STEPS:-5}
               --threads 1 --schedule "$s" --micro "$m" --replay 4,8 --bubble-csv "$out" "$@")
        [ "$s" = terapipe ] && flags+=(--slices 4)
        line=$(mpirun -np 2 ./07_pipeline/pipeline "${flags[@]}" | grep -A1 '^bubble:' | tail -n 1)
        printf '%-11s M %-2s | %s\n' "$s" "$m" "$(echo "$line" | sed 's/^ *//')"
    done
done
echo "wrote $out"
