#!/usr/bin/env bash
# sweep_tp.sh: step time and exposed communication against the tensor-parallel
# degree T (1, 2, 4) at a fast and a slow link; one row per run in
# plots/data/tp.csv (or $1), drawn by 08_tensor_parallel/tp.gp.
#
# Both links come from the link model (common/comm.h) with every rank its own
# simulated node (--node-size 1), so every seam crosses a link. Their speeds
# are scaled to this machine: an H100 computes 989 TFLOP/s (bf16) and moves
# about 450 GB/s per direction over NVLink inside its node and 50 GB/s over a
# 400 Gb/s InfiniBand NIC to other nodes: 2,200 and 20,000 FLOP per byte.
# The sweep measures this rank's peak (the header's peak line) and gives the
# links the same FLOP per byte: the "fast" link is to this CPU what NVLink is
# to an H100, the "slow" one what InfiniBand is. FAST_GBPS / SLOW_GBPS
# override them. Flags after the CSV name go to every run.
#   bash 08_tensor_parallel/sweep_tp.sh plots/data/tp.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/tp.csv}
shift || true
degrees=${DEGREES:-"1 2 4"}
model=(--dim 256 --heads 8 --kv-heads 4 --layers 4 --seq 128 --batch 8 --steps ${STEPS:-5} --threads 1)
mkdir -p "$(dirname "$out")"
rm -f "$out"
peak=$(./08_tensor_parallel/tp "${model[@]}" --tp 1 --steps 1 "$@" | sed -n 's/^peak: .* = \([0-9.]*\) GFLOP\/s.*/\1/p')
peak=${peak:-100}
fast=${FAST_GBPS:-$(awk -v p="$peak" 'BEGIN { printf "%.4g", p / 2200 }')}
slow=${SLOW_GBPS:-$(awk -v p="$peak" 'BEGIN { printf "%.4g", p / 20000 }')}
echo "peak $peak GFLOP/s per rank: fast link $fast GB/s (NVLink's 2,200 FLOP/byte), slow link $slow GB/s (InfiniBand's 20,000)"
for T in $degrees; do
    for link in fast slow; do
        gbps=$fast us=5
        [ "$link" = slow ] && gbps=$slow us=20
        line=$(mpirun -np "$T" ./08_tensor_parallel/tp "${model[@]}" --tp "$T" --node-size 1 \
                   --inter-gbps "$gbps" --inter-us "$us" --bench-csv "$out" "$@" | grep -E '^mean')
        printf 'tp %d, %-4s link (%s GB/s) | %s\n' "$T" "$link" "$gbps" "$(echo "$line" | cut -c1-100)"
    done
done
echo "wrote $out"
