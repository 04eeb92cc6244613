#!/bin/bash
# Chapter 10 on a Slurm allocation: the mesh tp = ranks per node (inside a node), dp = nodes (across).
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch [--nodes N] [--ntasks-per-node R] scripts/slurm/10_nd_llama.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=10_nd_llama
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
per_node=$((SLURM_NTASKS / SLURM_JOB_NUM_NODES))   # ranks on each node
mpirun -np "$SLURM_NTASKS" ./10_nd_llama/train --tp "$per_node" --dp "$SLURM_JOB_NUM_NODES" "$@"
