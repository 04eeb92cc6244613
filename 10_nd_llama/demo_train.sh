# 10_nd_llama's trainer in make demo (sourced by scripts/demo.sh, which
# defines step): the 4D trainer on a mesh of 8 ranks with every axis at 2
# but the data axis, a dry run of Llama 3 405B on 4 ranks, and MFU with the
# step by cause on every mesh of 8 ranks (plots/data/mfu_4d.csv, drawn by
# 10_nd_llama/mfu_4d.gp).
step mpirun -np 8 ./10_nd_llama/train --device cpu --threads 1 --preset nd-small --tp 2 --cp 2 --pp 2 --sp \
    --steps 10
step mpirun -np 4 ./10_nd_llama/train --device cpu --preset llama3-405b --tp 2 --pp 2 --dtype bf16 --dry-run
step env STEPS=5 bash 10_nd_llama/sweep_mfu_4d.sh plots/data/mfu_4d.csv --device cpu
