#!/usr/bin/env bash
# sweep_paramserver.sh [CSV] [FLAGS...]: the parameter server's three modes
# (bsp, async, ssp:2) without and with a straggler (the last worker's compute
# FACTOR times as long), one row per update into CSV (default
# plots/data/paramserver.csv): the data of 03_ddp/paramserver.gp, the loss
# against the virtual clock's seconds and against updates. 1 server, 3
# workers, one thread each; every worker's compute is its thread CPU time,
# every message 20 us + bytes at 10 GB/s (the defaults of --inter-us and
# --inter-gbps), so the seconds mean the same on any machine, however many
# cores it has. Flags after CSV go to every run (--compute-s 0.1: a fixed
# compute, the same chart exactly on every machine).
#   bash 03_ddp/sweep_paramserver.sh plots/data/paramserver.csv --device cpu
# Environment: STEPS (60 clocks per worker), FACTOR (4).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/paramserver.csv}
shift || true
source 03_ddp/sweep_common.sh
mkdir -p "$(dirname "$out")"
rm -f "$out"
for slow in none "3:${FACTOR:-4}"; do
    for sync in bsp async ssp:2; do
        straggler=()
        [ "$slow" = none ] || straggler=(--straggler "$slow")
        mpirun -np 4 ./03_ddp/paramserver --threads 1 --dim 64 --layers 2 --heads 4 --kv-heads 2 --seq 64 \
            --batch 12 --steps "${STEPS:-60}" --sync "$sync" "${straggler[@]}" --csv "$out" "$@" |
            grep '^server\|^time' | sed "s/^/$sync, straggler $slow | /"
    done
done
