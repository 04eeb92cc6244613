#!/usr/bin/env bash
# sweep_memory.sh: every ZeRO stage (0 = DDP) on 1, 2, 4 and 8 ranks, 3 steps
# each; one row per run (04_fsdp/bench.c's --bench-csv: memory per kind
# measured and predicted, bytes sent) in plots/data/zero_memory.csv (or $1),
# drawn by 04_fsdp/zero_memory.gp. Flags after the CSV name go to every run.
#   bash 04_fsdp/sweep_memory.sh plots/data/zero_memory.csv --device cpu
# The model (dim 256, 8 layers, vocab 2048: 7.35M parameters) is big enough
# that the training state dominates the activations of its 64-token sequences.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/zero_memory.csv}
shift || true
mkdir -p "$(dirname "$out")"
rm -f "$out"
for zero in 0 1 2 3; do
    for np in ${RANKS:-1 2 4 8}; do
        flags=(--dim 256 --heads 8 --kv-heads 8 --layers 8 --vocab 2048 --seq 64 --batch 8 --steps 3
               --threads 1 --dtype ${DTYPE:-bf16} --zero "$zero" --bench-csv "$out" "$@")
        line=$(mpirun -np "$np" ./04_fsdp/fsdp "${flags[@]}" | grep -E '^ +total +[0-9]')
        printf 'zero %d on %d rank%s | %s\n' "$zero" "$np" "$([ "$np" = 1 ] || echo s)" "$(echo "$line" | sed 's/^ *//')"
    done
done
echo "wrote $out"
