#!/usr/bin/env bash
# sweep_cp.sh: attention time and memory per rank against the sequence length,
# for C = 1, 2, 4 context-parallel ranks and both algorithms; one row per run
# in plots/data/cp.csv (or $1), drawn by 09_context_parallel/cp.gp.
#
# One sequence per step through a narrow model (dim 64, 4 heads of 16 on 2 kv
# heads, 2 layers), so attention, which grows as T^2 while the rest grows as
# T, is most of the work from a few thousand tokens on: the regime context
# parallelism is for. C = 1 runs the ring core on one rank (no exchange), so
# every point is timed by the same code. Flags after the CSV name go to every
# run (e.g. --device cuda --dtype bf16).
#   SEQS="512 1024 2048 4096 8192" bash 09_context_parallel/sweep_cp.sh plots/data/cp.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/cp.csv}
shift || true
seqs=${SEQS:-"512 1024 2048 4096 8192"}
configs=${CONFIGS:-"1:ring 2:ring 2:ulysses 4:ring 4:ulysses"}
mkdir -p "$(dirname "$out")"
rm -f "$out"
for T in $seqs; do
    for c in $configs; do
        C=${c%%:*} algo=${c#*:}
        line=$(mpirun -np "$C" ./09_context_parallel/cp --dim 64 --heads 4 --kv-heads 2 --layers 2 \
                   --vocab 256 --batch 1 --seq "$T" --steps ${STEPS:-3} --threads 1 --cp-algo "$algo" \
                   --bench-csv "$out" "$@" | grep -E '^mean')
        printf 'seq %5d, cp %d %-7s | %s\n' "$T" "$C" "$algo" "$(echo "$line" | cut -c1-90)"
    done
done
echo "wrote $out"
