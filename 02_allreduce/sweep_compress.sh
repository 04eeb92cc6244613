#!/usr/bin/env bash
# sweep_compress.sh [CSV] [FLAGS...]: the compressed all-reduce of one fp32
# gradient (SIZE, 1 MiB) on 2..MAXNP ranks (default 4), every compressor,
# into CSV (default plots/data/allreduce_compress.csv): the data of
# 02_allreduce/allreduce_compress.gp. Flags after CSV go to every run.
#   bash 02_allreduce/sweep_compress.sh plots/data/allreduce_compress.csv --device cpu
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/allreduce_compress.csv}
shift || true
source 03_ddp/sweep_common.sh
mkdir -p "$(dirname "$out")"
rm -f "$out"
for np in $(seq 2 "${MAXNP:-4}"); do
    mpirun -np "$np" ./02_allreduce/allreduce --comm mpi --compress all --minbytes "${SIZE:-1M}" \
        --maxbytes "${SIZE:-1M}" --iters "${ITERS:-4}" --csv "$out" "$@" | grep -v '^#'
done
echo "wrote $out"
