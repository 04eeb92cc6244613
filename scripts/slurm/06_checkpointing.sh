#!/bin/bash
# Chapter 06 on a Slurm allocation: a data-parallel run that checkpoints (--ckpt-dir on a file system every node sees).
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch [--nodes N] [--ntasks-per-node R] scripts/slurm/06_checkpointing.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=06_checkpointing
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
mpirun -np "$SLURM_NTASKS" ./06_checkpointing/ckpt "$@"
