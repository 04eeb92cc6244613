# 04_fsdp's part of make demo (sourced by scripts/demo.sh, which defines step):
# every ZeRO stage's memory on 1 to 8 ranks against the formulas (the
# zero_memory chart), then a model that a memory budget of 12 MiB per rank
# refuses under DDP and trains under ZeRO-3 on 4 ranks.
step bash 04_fsdp/sweep_memory.sh plots/data/zero_memory.csv --device cpu
fit=(--device cpu --threads 1 --dim 128 --layers 4 --heads 4 --kv-heads 4 --seq 32 --vocab 256 --batch 4
     --steps 20 --mem-limit 12M)
step bash -c "mpirun -np 4 ./04_fsdp/fsdp ${fit[*]} --zero 0 || echo '(refused: DDP does not fit)'"
step mpirun -np 4 ./04_fsdp/fsdp "${fit[@]}" --zero 3
