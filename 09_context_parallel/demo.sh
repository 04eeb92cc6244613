# 09_context_parallel's part of make demo (sourced by scripts/demo.sh, which
# defines step): ring attention on 2 ranks with the causal load balanced and
# in order (each rank's attention work and time), Ulysses, then the sweep over
# sequence length, C and algorithm behind plots/cp.png.
CP_LONG=(--dim 64 --heads 4 --kv-heads 2 --layers 2 --batch 1 --seq 4096 --steps 4 --threads 1 --device cpu)
step mpirun -np 2 ./09_context_parallel/cp --device cpu --steps 40 --threads 1
step mpirun -np 2 ./09_context_parallel/cp "${CP_LONG[@]}" --cp-algo ring
step mpirun -np 2 ./09_context_parallel/cp "${CP_LONG[@]}" --cp-algo ring --no-balance
step mpirun -np 2 ./09_context_parallel/cp "${CP_LONG[@]}" --cp-algo ulysses
step bash 09_context_parallel/sweep_cp.sh plots/data/cp.csv --device cpu
