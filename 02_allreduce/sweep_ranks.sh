#!/usr/bin/env bash
# sweep_ranks.sh CSV [SIZE] [FLAGS...]: all-reduce of one size on 2 to 8
# ranks, every algorithm, each point repeated (--repeat 5), rows appended to
# CSV: the data of allreduce_ranks.gp (time against the rank count, with the
# alpha-beta model's lines). SIZE defaults to 1M; FLAGS go to allreduce.
# On a machine with fewer cores than ranks the ranks share cores
# (oversubscribed), which is part of what the chart shows.
#   bash 02_allreduce/sweep_ranks.sh plots/data/allreduce_ranks.csv 1M --device cpu
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 CSV [SIZE] [FLAGS...]" >&2; exit 2; }
out=$1; size=${2:-1M}; shift $(( $# >= 2 ? 2 : 1 ))
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$(dirname "$out")"
before=$( [ -s "$out" ] && wc -l < "$out" || echo 1 )
for np in 2 3 4 5 6 7 8; do
    echo "\$ mpirun -np $np ./02_allreduce/allreduce --op allreduce --algo all --minbytes $size --maxbytes $size --repeat 5 --csv $out $*"
    mpirun -np "$np" ./02_allreduce/allreduce --op allreduce --algo all --minbytes "$size" \
        --maxbytes "$size" --repeat 5 --csv "$out" "$@" > /dev/null
done
# The rows just written, one line per rank count and algorithm.
tail -n +"$((before + 1))" "$out" | awk -F, '
    BEGIN { printf "%6s %8s %12s %12s %12s %12s\n", "ranks", "algo", "time (us)", "min", "max", "model (us)" }
    { printf "%6s %8s %12.1f %12.1f %12.1f %12s\n", $3, $2, $7, $8, $9, $12 == "nan" ? "-" : sprintf("%.1f", $12) }'
