#!/usr/bin/env bash
# sweep_compress.sh [CSV] [FLAGS...]: the same training run with each gradient
# compressor (common/compress.h), with and without error feedback, against
# the uncompressed exchange, on a slow simulated link (the link model: every
# rank its own node, --inter-gbps between them). Writes every step of every
# run to CSV (default plots/data/ddp_compress.csv; the trainer's columns
# with compress and ef in front: the data of 03_ddp/ddp_compress.gp) and
# prints the summary: bytes per rank per step as counted and by the formula,
# final loss, mean step time. Flags after CSV go to every run.
#   bash 03_ddp/sweep_compress.sh plots/data/ddp_compress.csv --device cpu
# Environment: NP (ranks, 2), STEPS (60), GBPS (0.002: 2 MB/s), SPECS.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_compress.csv}
shift || true
np=${NP:-2}
specs=${SPECS:-"none int8 sign topk:0.01 powersgd:4"}
source 03_ddp/sweep_common.sh
mkdir -p "$(dirname "$out")"
tmp=${out%.csv}_run.csv
log=${out%.csv}_run.txt
rm -f "$out"
for spec in $specs; do
    for ef in on off; do
        [ "$spec" = none ] && [ "$ef" = off ] && continue   # nothing to feed back
        rm -f "$tmp"
        mpirun -np "$np" ./03_ddp/ddp --dim 64 --heads 4 --kv-heads 2 --layers 2 --threads 1 \
            --steps "${STEPS:-60}" --node-size 1 --inter-gbps "${GBPS:-0.002}" --compress "$spec" \
            --error-feedback "$ef" --csv "$tmp" "$@" > "$log"
        formula=$(sed -n 's/^compress: .* after backward: \([0-9]*\) B per rank.*/\1/p' "$log")
        [ -f "$out" ] || head -1 "$tmp" | sed 's/^/compress,ef,formula_bytes,/' > "$out"
        label=$ef; [ "$spec" = none ] && label=-
        tail -n +2 "$tmp" | sed "s/^/$spec,$label,$formula,/" >> "$out"
    done
done
rm -f "$tmp" "$log"
# The summary of the README: bytes per rank per step (the trainer's count and
# the formula), the last step's loss, the mean step time after the first.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
                   printf "%-11s %3s %14s %14s %11s %13s\n", "compress", "EF", "sent B/step*", "formula B", "final loss", "mean step ms"; next }
    { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      sent[k] = $c["sent_mb"] * 1e6; f[k] = $3; loss[k] = $c["loss"]
      if ($c["step"] > 1) { ms[k] += $c["ms"]; m[k]++ } }
    END { for (i = 1; i <= n; i++) { k = order[i]; split(k, p, " ")
          printf "%-11s %3s %14.0f %14d %11.4f %13.1f\n", p[1], p[2], sent[k], f[k], loss[k], ms[k] / m[k] } }' "$out"
echo "* sent B/step: the CSV's sent_mb, MB to 4 decimals; wrote $out"
