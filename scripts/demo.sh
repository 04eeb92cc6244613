#!/usr/bin/env bash
# make demo: every chapter that exists, on this machine, with the built-in
# data, then the charts. Each step prints its command, so a student can run
# it again by hand with other flags.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p plots/data
rm -f plots/data/*.csv

step() { echo; echo "\$ $*"; "$@"; }

if [ -x 01_matmul_hfu/hfu ]; then
    step ./01_matmul_hfu/hfu --device cpu --csv plots/data/hfu.csv
    step ./01_matmul_hfu/hfu --peaks --csv plots/data/gpu_peaks.csv
fi
if [ -x 02_allreduce/allreduce ]; then
    step mpirun -np 4 ./02_allreduce/allreduce --device cpu --op allreduce --algo all \
        --minbytes 1K --maxbytes 16M --stepfactor 4 --csv plots/data/allreduce.csv
    step bash 02_allreduce/sweep_ranks.sh plots/data/allreduce_ranks.csv 1M --device cpu --iters 10
fi
# Chapters 03 on: each chapter's demo.sh, in chapter order, with step() and
# the environment above.
export -f step
for d in [0-9][0-9]_*/demo.sh; do
    [ -e "$d" ] || continue
    case "$d" in 01_*|02_*) continue ;; esac
    # shellcheck source=/dev/null
    source "$d"
done
echo
bash scripts/plots.sh
