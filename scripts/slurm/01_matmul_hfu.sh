#!/bin/bash
# Chapter 01 on one task of an allocation: one device's matmul HFU.
# Submit from the suite's folder, on a real cluster or on the nodes of
# scripts/cluster.sh (with build/cluster/login before sbatch):
#   sbatch scripts/slurm/01_matmul_hfu.sh [FLAGS...]
# FLAGS go to the program; the ranks and the mesh come from the allocation.
#SBATCH --job-name=01_matmul_hfu
#SBATCH --ntasks=1
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail
./01_matmul_hfu/hfu "$@"   # one process, started by the batch step itself
