#!/usr/bin/env bash
# sweep_local.sh [CSV] [FLAGS...]: local SGD against DDP, the loss against
# the step and against the bytes each rank sent. Runs DDP (gradients
# all-reduced every step), local SGD with each H of HS (weights averaged
# every H steps) and DiLoCo (H 16, outer lr 0.7, Nesterov momentum 0.9, the
# paper's), all AdamW, on the same model, data and global batch, and writes
# every step of every run to CSV (default plots/data/ddp_local.csv), the data
# of 03_ddp/ddp_local.gp:
#   variant,local_steps,step,loss,sent_mb,total_mb, then each run's provenance
#   columns (common/perf.h)
# loss is the mean over the ranks of each rank's own loss on its own share of
# the batch, with its own weights (the same weights on every rank for DDP,
# and for local SGD at the first step after an average); sent_mb the MB (1e6)
# each rank sent that step, total_mb their sum so far. Then a table: the
# loss at the end (mean of the last 16 steps) and the MB each rank sent
# until the loss first fell to TARGET. Flags after CSV go to every run.
#   bash 03_ddp/sweep_local.sh plots/data/ddp_local.csv --device cpu
# Environment: NP (ranks, 2), HS ("1 4 16"), STEPS (320), TARGET (1.0).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_local.csv}
shift || true
np=${NP:-2}
source 03_ddp/sweep_common.sh
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d /tmp/sweep_local.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
model=(--dim 96 --heads 4 --kv-heads 2 --layers 2 --seq 64 --batch 16 --threads 1 --steps "${STEPS:-320}")
source scripts/provenance.sh
echo "variant,local_steps,step,loss,sent_mb,total_mb,$PROV_HEADER" > "$out"
one() {  # VARIANT H FLAGS...: one run, its rows appended to out
    local v=$1 h=$2; shift 2
    mpirun -np "$np" ./03_ddp/ddp "${model[@]}" --csv "$tmp/$v$h.csv" "$@" "${extra[@]}" > "$tmp/$v$h.log"
    printf '%-7s H %-3s | %s\n' "$v" "$h" "$(grep '^local:.*measured\|^ddp: *[0-9]* buckets* per step' "$tmp/$v$h.log")"
    awk -F, -v v="$v" -v h="$h" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { total += $c["sent_mb"]
          prov = ""; for (i = c["cores"]; i <= NF; i++) prov = prov "," $i
          printf "%s,%d,%d,%.6f,%.4f,%.4f%s\n", v, h, $c["step"], $c["loss"], $c["sent_mb"], total, prov }' \
        "$tmp/$v$h.csv" >> "$out"
}
extra=("$@")
one ddp 1
for h in ${HS:-1 4 16}; do one local "$h" --local-steps "$h"; done
one diloco 16 --local-steps 16 --outer-lr 0.7 --outer-momentum 0.9
awk -F, -v target="${TARGET:-1.0}" 'NR == 1 { next }
    { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      last[k, $3 % 16] = $4; steps[k] = $3; mb[k] = $6
      if (!(k in reach) && $4 <= target) reach[k] = $6 }
    END {
        printf "%-10s %3s %14s %14s %22s\n", "variant", "H", "MB/rank/step", "loss (last 16)", "MB/rank to loss " target
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, " "); s = 0
            for (j = 0; j < 16; j++) s += last[k, j]
            printf "%-10s %3d %14.4f %14.4f %22s\n", p[1], p[2], mb[k] / steps[k], s / 16, \
                   (k in reach) ? sprintf("%.2f", reach[k]) : "not reached"
        }
    }' "$out"
