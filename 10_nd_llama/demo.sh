# 10_nd_llama's part of make demo (sourced by scripts/demo.sh, which defines
# step). The 4D trainer on a mesh of 8 ranks with every axis at 2 but the
# data axis, a dry run of Llama 3 405B on 4 ranks, and MFU with the step by
# cause on every mesh of 8 ranks (plots/data/mfu_4d.csv); then the planner:
# its answer for Llama 3 405B on 16,384 H100s with 16M tokens per batch (the
# best plans' memory per GPU becomes a chart) and Llama 3's table 4 predicted
# beside the published MFU (the other chart).
step mpirun -np 8 ./10_nd_llama/train --device cpu --threads 1 --preset nd-small --tp 2 --cp 2 --pp 2 --sp \
    --steps 10
step mpirun -np 4 ./10_nd_llama/train --device cpu --preset llama3-405b --tp 2 --pp 2 --dtype bf16 --dry-run
step env STEPS=5 bash 10_nd_llama/sweep_mfu_4d.sh plots/data/mfu_4d.csv --device cpu
step ./10_nd_llama/plan --preset llama3-405b --gpus 16384 --batch 2048 --top 10 --csv plots/data/plan_memory.csv
step ./10_nd_llama/plan --llama3-table4 --csv plots/data/llama3_table4.csv
# The 4D mesh of 16 ranks as the trainer builds it: coordinates and groups
# (mesh.png; a few seconds).
step mpirun -np 16 ./10_nd_llama/mesh --tp 2 --cp 2 --pp 2 --dp 2 --csv plots/data/mesh.csv
