#!/bin/bash
# Chapter 08 on a Slurm allocation: tensor parallelism inside each node, data parallelism across the nodes.
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch [--nodes N] [--ntasks-per-node R] scripts/slurm/08_tensor_parallel.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=08_tensor_parallel
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
per_node=$((SLURM_NTASKS / SLURM_JOB_NUM_NODES))   # ranks on each node
mpirun -np "$SLURM_NTASKS" ./08_tensor_parallel/tp --tp "$per_node" "$@"
