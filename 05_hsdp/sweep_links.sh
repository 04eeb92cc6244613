#!/usr/bin/env bash
# sweep_links.sh: hybrid sharding on 4 ranks laid out as 2 simulated nodes of
# 2 (the link model, common/comm.h), for shard groups of K = 1 (DDP), 2 (one
# group per node) and 4 (FSDP across both nodes), without the link model, with
# a fast inter-node link and with a slow one. One row per (K, link) in
# plots/data/hsdp.csv (or $1): the measured step, the step without the link
# model (base), the link time predicted by alpha-beta and their sum, and the
# bytes per rank that crossed between nodes; drawn by 05_hsdp/hsdp.gp.
# Every run also records its actions (--record) into CSV's *_replay.csv:
# rows shard,link,source,cluster,step_ms,link_pred_ms,cross_mb,cross_pred_mb,
# the step replayed on one core per rank with the run's own links
# (replay/replay --node-size 2 and its inter-node link; inside a node, and
# everywhere for the run without the link model, the fast link's figures,
# as fast as shared memory on a quiet machine), and once per K
# (the run without the link model) modeled on 2 nodes of 2 H100s
# (05_hsdp/h100_2x2.cluster). Flags after the CSV name go to every run.
#   bash 05_hsdp/sweep_links.sh plots/data/hsdp.csv --device cpu
# The model (1.77M parameters, 7.1 MB of fp32 weights) meets few tokens per
# step (4 x 32), so that communication is a visible share of the step.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/hsdp.csv}
shift || true
# The slow link is scaled to the small model: its 7.1 MB of weights take
# 0.14 s at 0.05 GB/s, far above the step's compute, as a large model's do
# on a slow network; the fast one makes the links nearly free.
FAST=${FAST:-"12.5 5"}     # GB/s, microseconds
SLOW=${SLOW:-"0.05 100"}
# 4 ranks on a machine with fewer cores: waiting ranks yield their core
export OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$(dirname "$out")"
tmp=$(mktemp /tmp/hsdp_sweep.XXXXXX)
rec=$(mktemp /tmp/hsdp_record.XXXXXX)
trap 'rm -f "$tmp" "$rec"' EXIT
rm -f "$tmp"
replayed=${out%.csv}_replay.csv
rm -f "$replayed"
source scripts/provenance.sh
echo "shard,link,inter_gbps,inter_us,step_ms,base_ms,link_pred_ms,pred_ms,cross_mb,cross_pred_mb,sent_mb,$PROV_HEADER" > "$out"
for K in 1 2 4; do
    for link in none fast slow; do
        flags=(--dim 128 --heads 4 --kv-heads 4 --layers 8 --vocab 256 --seq 32 --batch 4 --steps ${STEPS:-16}
               --threads 1 --shard "$K" --bench-csv "$tmp" --record "$rec" "$@")
        links=()
        case $link in
        fast) read -r gbps us <<<"$FAST"; links=(--node-size 2 --inter-gbps "$gbps" --inter-us "$us") ;;
        slow) read -r gbps us <<<"$SLOW"; links=(--node-size 2 --inter-gbps "$gbps" --inter-us "$us") ;;
        esac
        line=$(mpirun -np 4 ./05_hsdp/hsdp "${flags[@]}" "${links[@]}" | grep -E '^mean')
        printf 'shard %d, link %-4s | %s\n' "$K" "$link" "$(echo "$line" | cut -c1-100)"
        # this run's summary row: the link's alpha-beta time and the bytes that crossed
        read -r pred cross cross_pred < <(awk -F, 'END { print $13, $11, $12 }' "$tmp")
        cluster=()
        [ "$link" = none ] && cluster=(--cluster 05_hsdp/h100_2x2.cluster)
        ./replay/replay --record "$rec" --gbps "${FAST% *}" --alpha-us "${FAST#* }" "${links[@]}" "${cluster[@]}" |
            awk -F, -v k="$K,$link" -v tail="$pred,$cross,$cross_pred" \
                'NR > 1 && $4 == "step" { printf "%s,%s,%s,%.4f,%s\n", k, $1, $2, 1e3 * $7, tail }' >> "$replayed"
    done
done
# rows of $tmp: shard,replicas,ranks,node_size,inter_gbps,inter_us,zero,dtype,step_ms,exposed_ms,
# cross_mb,cross_pred_mb,link_pred_ms,sent_mb,mem_mb, the provenance; three per K: none, fast, slow
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n++; link = (n - 1) % 3; if (link == 0) base = $9
    name = link == 0 ? "none" : link == 1 ? "fast" : "slow"
    prov = ""; for (i = c["cores"]; i <= NF; i++) prov = prov "," $i
    printf "%s,%s,%s,%s,%s,%s,%s,%.3f,%s,%s,%s%s\n", $1, name, $5, $6, $9, base, $13, base + $13, $11, $12, $14, prov }' \
    "$tmp" >> "$out"
echo "wrote $out and $replayed"
