#!/usr/bin/env bash
# bench_replay.sh [FLAGS...]: a benchmark, not a test. Records a 2-rank DDP
# run (chapter 03's bucket-sweep model, one thread per rank) and prints its
# measured mean step beside the replayed one (one core per rank, the
# record's CPU times, the link that chapter 02's ping-pong measures between
# the same 2 ranks): on a quiet machine with 2 free cores the ratio says how
# far the replay is from a measurement that means something; on a busy one,
# how far the measurement is from the replay. The load before and after is
# printed with it.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
dir=$(mktemp -d /tmp/bench_replay.XXXXXX)
trap 'rm -rf "$dir"' EXIT
before=$(cut -d' ' -f1 /proc/loadavg)
mpirun -np 2 ./03_ddp/ddp --device cpu --threads 1 --dim 256 --heads 8 --kv-heads 4 --layers 8 --seq 64 --batch 4 \
    --steps 8 --bench-csv "$dir/b.csv" --record "$dir/r.rec" "$@" >/dev/null
after=$(cut -d' ' -f1 /proc/loadavg)
# the link: chapter 02's ping-pong of the same 2 ranks (alpha, 1/beta)
read -r alpha gbps < <(mpirun -np 2 ./02_allreduce/allreduce --device cpu --threads 1 --op allreduce --algo ring \
    --minbytes 4 --maxbytes 4 --iters 1 --warmup 0 --repeat 1 | sed -n 's/^# link: .* alpha \([0-9.]*\) us, 1\/beta \([0-9.]*\) GB\/s.*/\1 \2/p')
./replay/replay --record "$dir/r.rec" --alpha-us "$alpha" --gbps "$gbps" --csv "$dir/r.csv"
measured=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["step_ms"] }' "$dir/b.csv")
replayed=$(awk -F, '$1 == "replayed" && $4 == "step" { print 1e3 * $7 }' "$dir/r.csv")
awk -v m="$measured" -v r="$replayed" -v b="$before" -v a="$after" -v c="$(nproc)" 'BEGIN {
    printf "2 ranks x 1 thread on %d cores, load average %s before, %s after\n", c, b, a
    printf "step: measured %.1f ms, replayed on one core per rank %.1f ms, replayed / measured %.3f\n", m, r, r / m }'
echo "link: chapter 02's ping-pong of the 2 ranks, alpha $alpha us, 1/beta $gbps GB/s"
