#!/bin/bash
# Chapter 04 on a Slurm allocation: the model sharded over every task's rank.
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch [--nodes N] [--ntasks-per-node R] scripts/slurm/04_fsdp.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=04_fsdp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
mpirun -np "$SLURM_NTASKS" ./04_fsdp/fsdp "$@"
