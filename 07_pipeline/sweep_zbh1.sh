#!/usr/bin/env bash
# sweep_zbh1.sh: ZB-H1 against 1F1B, the bubble against the micro-batch
# count: both schedules measured on 2 stages (2 ranks, one core each), each
# ZB-H1 run also replayed with its own action times, as ZB-H1 and as 1F1B
# (B + W in one backward), and both replayed at 4 stages from the layer
# times; rows in plots/data/zbh1.csv (or $1), drawn by 07_pipeline/zbh1.gp.
# Every run, and a run of each on 4 stages (4 ranks), also records its
# actions (--record): replay/replay gives the rows of source "replayed" (one
# core per rank, compute in CPU time: what the measurement would be on a
# quiet machine with a core per rank) and "modeled" (on one 8-GPU H100
# node). Flags after the CSV name go to every run. The model is
# sweep_bubble.sh's.
#   bash 07_pipeline/sweep_zbh1.sh plots/data/zbh1.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/zbh1.csv}
shift || true
mkdir -p "$(dirname "$out")"
rm -f "$out"
rec=$(mktemp /tmp/zbh1_record.XXXXXX)
trap 'rm -f "$rec"' EXIT
# replayed and modeled rows of the record of schedule $1 on $2 stages at M = $3
replay_rows() {
    ./replay/replay --record "$rec" --cluster h100x1 |
        awk -F, -v s="$1" -v P="$2" -v M="$3" 'NR > 1 && $4 == "step" {
            f = (P - 1) / ((s == "zbh1" ? 3 * M : M) + P - 1)
            printf "%s,%d,%d,1,%s,%.5f,%.5f,%.4f\n", s, P, M, $1, $9, f, 1e3 * $7 }' >> "$out"
}
for m in ${MICROS:-2 4 8}; do
    for s in 1f1b zbh1; do
        flags=(--dim 256 --heads 8 --kv-heads 4 --layers 16 --seq 32 --batch 16 --steps ${STEPS:-4}
               --threads 1 --schedule "$s" --micro "$m" "$@")
        log=$(mpirun -np 2 ./07_pipeline/pipeline "${flags[@]}" --replay 4 --bubble-csv "$out" --record "$rec")
        replay_rows "$s" 2 "$m"
        printf '%-5s M %-2s | %s\n' "$s" "$m" "$(grep -A1 '^bubble:' <<<"$log" | tail -n 1 | sed 's/^ *//')"
        grep '1F1B replayed with the same' <<<"$log" | sed 's/^ */             /' || true
        mpirun -np 4 ./07_pipeline/pipeline "${flags[@]}" --replay none --record "$rec" >/dev/null
        replay_rows "$s" 4 "$m"
    done
done
awk -F, '$5 == "replayed" || $5 == "modeled" { printf "%-5s P %d M %-2s %-8s bubble %5.1f%% (formula %4.1f%%)\n", $1, $2, $3, $5, 100 * $6, 100 * $7 }' "$out"
echo "wrote $out"
