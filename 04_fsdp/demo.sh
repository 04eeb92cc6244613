# 04_fsdp's part of make demo (sourced by scripts/demo.sh, which defines step):
# every ZeRO stage's memory on 1 to 8 ranks against the formulas (the
# zero_memory chart), then a model that a memory budget of 12 MiB per rank
# refuses under DDP and trains under ZeRO-3 on 4 ranks.
step bash 04_fsdp/sweep_memory.sh plots/data/zero_memory.csv --device cpu
fit=(--device cpu --threads 1 --dim 128 --layers 4 --heads 4 --kv-heads 4 --seq 32 --vocab 256 --batch 4
     --steps 20 --mem-limit 12M)
step bash -c "mpirun -np 4 ./04_fsdp/fsdp ${fit[*]} --zero 0 || echo '(refused: DDP does not fit)'"
step mpirun -np 4 ./04_fsdp/fsdp "${fit[@]}" --zero 3
# One step of ZeRO-3's trace on 2 ranks, the prefetched all-gathers and the
# reduce-scatters against the compute (fsdp_overlap.png; a few seconds).
step bash scripts/trace_overlap.sh plots/data/fsdp_overlap.csv 2 ./04_fsdp/fsdp --device cpu --threads 1 --dim 256 \
    --heads 8 --kv-heads 4 --layers 8 --seq 16 --batch 2 --zero 3 --prefetch 1 --steps 5
