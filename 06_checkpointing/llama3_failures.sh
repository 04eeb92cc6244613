#!/usr/bin/env bash
# llama3_failures.sh [CSV]: the data of llama3_failures.png: Llama 3's
# unexpected interruptions by root cause, as published (Dubey et al. 2024,
# "The Llama 3 Herd of Models", arXiv:2407.21783, section 3.3.4, table 5:
# 419 unexpected of 466 interruptions in a 54-day snapshot of pre-training
# on 16,384 H100s; reference/llama3_interruptions.csv, copied from the
# table), then what Young's and Daly's intervals make of that failure rate:
# M = 54 days / 466 interruptions, a 10-minute restart, and a checkpoint
# that stalls training 60 s (written in the foreground) or 5 s (a snapshot
# written in the background), each curve and interval from
# `ckpt --goodput-model` (failure.c). Rows (replaced):
#   kind,name,category,interruptions,published_percent,delta_s,mtbf_s,restart_s,interval_s,goodput
#   kind: cause (a row of the table), model (Daly's goodput at an interval),
#   young, daly (the interval and its goodput)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/llama3_failures.csv}
mkdir -p "$(dirname "$out")"
mtbf=$(awk 'BEGIN { printf "%.6f", 54 * 86400 / 466 }')
restart=600
{
    echo "kind,name,category,interruptions,published_percent,delta_s,mtbf_s,restart_s,interval_s,goodput"
    awk -F, 'NR > 1 { printf "cause,%s,%s,%s,%s,,,,,\n", $1, $2, $3, $4 }' 06_checkpointing/reference/llama3_interruptions.csv
    for delta in 60 5; do
        ./06_checkpointing/ckpt --goodput-model "$delta,$mtbf,$restart" | awk -F, -v d=$delta -v m=$mtbf -v r=$restart '
            /^# young/ { split($0, w, " "); printf "young,,,,,%s,%s,%s,%s,%s\n", d, m, r, w[3], substr(w[6], 1, length(w[6]) - 2)
                         printf "daly,,,,,%s,%s,%s,%s,%s\n", d, m, r, w[8], substr(w[11], 1, length(w[11]) - 1) }
            /^[0-9]/ { printf "model,,,,,%s,%s,%s,%s,%s\n", d, m, r, $1, $2 }'
    done
} > "$out"
echo "wrote $out"
