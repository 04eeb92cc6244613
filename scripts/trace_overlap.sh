#!/usr/bin/env bash
# trace_overlap.sh CSV NP PROGRAM FLAGS...: one traced run of a trainer on NP
# ranks (mpirun -np NP PROGRAM FLAGS --trace ...), cut to its middle
# recorded step with every rank's compute and communication intervals
# (scripts/trace_step.py), the rows ending with the run's provenance
# columns (cores, ranks, threads, CPU, load before and after): the data of
# 03's ddp_overlap.png and 04's fsdp_overlap.png. Pass --threads in FLAGS
# (the provenance records it).
#   bash scripts/trace_overlap.sh plots/data/ddp_overlap.csv 2 ./03_ddp/ddp --device cpu --threads 1
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?CSV}; np=${2:?NP}; shift 2
threads=1
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --threads ] && { j=$((i + 1)); threads=${!j}; }; done
source scripts/provenance.sh
tmp=$(mktemp -d /tmp/trace_overlap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
prov_begin
mpirun -np "$np" "$@" --trace "$tmp/trace.json" > "$tmp/log"
python3 scripts/trace_step.py "$tmp/trace.json" "$out" --prov "$(prov_cols "$np" "$threads" measured)"
if [ -n "${KEEP_TRACE:-}" ]; then cp "$tmp/trace.json" "$KEEP_TRACE"; fi
