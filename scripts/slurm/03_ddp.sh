#!/bin/bash
# Chapter 03 on a Slurm allocation: one data-parallel replica per task.
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch [--nodes N] [--ntasks-per-node R] scripts/slurm/03_ddp.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=03_ddp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
mpirun -np "$SLURM_NTASKS" ./03_ddp/ddp "$@"
