#!/usr/bin/env bash
# sweep_buckets.sh [CSV] [FLAGS...]: step time split into compute and exposed
# communication against the bucket size, overlap on and off, every point
# repeated. Writes one row per run to CSV's *_runs.csv and, per point, the
# median run with the fastest and slowest step of its repeats to CSV
# (default plots/data/ddp_buckets.csv): the data of 03_ddp/ddp_buckets.gp.
#
# The model is chosen so that communication matters: many parameters (6.0M,
# 24 MB of fp32 gradients, 3 MB per layer) and few tokens per step (2 x 16),
# so the all-reduce is a visible share of the step, as it is on GPUs, where
# compute is fast. The repeats run interleaved (every point once, then every
# point again), so a change in the machine's load spreads over all points
# instead of landing on one. The first repeat of each point also records its
# actions (--record) and replays them (replay/replay) into CSV's
# *_replay.csv: the step on one core per rank (replayed) and on one 8-GPU
# H100 node (modeled). Flags after CSV go to every run.
#   REPEATS=5 bash 03_ddp/sweep_buckets.sh plots/data/ddp_buckets.csv --device cpu
# Environment: NP (ranks, 2), SIZES (MiB), REPEATS (3), STEPS (12).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_buckets.csv}
shift || true
np=${NP:-2}
sizes=${SIZES:-"0.5 2 4 8 16 32"}
repeats=${REPEATS:-3}
source 03_ddp/sweep_common.sh
sweep_begin "$out"
for r in $(seq "$repeats"); do
    for mb in $sizes; do
        for overlap in on off; do
            flags=(--dim 256 --heads 8 --kv-heads 4 --layers 8 --seq 16 --batch 2 --steps "${STEPS:-12}"
                   --threads 1 --bucket-mb "$mb" --bench-csv "$runs" "$@")
            [ "$overlap" = off ] && flags+=(--no-overlap)
            if [ "$r" = 1 ]; then flags+=(--record "$rec"); fi
            line=$(mpirun -np "$np" ./03_ddp/ddp "${flags[@]}" | grep '^mean')
            if [ "$r" = 1 ]; then replay_rows "$mb,$overlap"; fi
            printf 'run %d/%d, bucket %5s MiB, overlap %-3s | %s\n' "$r" "$repeats" "$mb" "$overlap" \
                "$(echo "$line" | cut -c1-90)"
        done
    done
done
sweep_end bucket_mb,overlap,ranks
# The table of the README: median run (step = compute + exposed) and the range of the step.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
                   printf "%8s %8s %8s %28s %16s\n", "bucket", "buckets", "overlap", "median run: step = compute + exposed", "step min-max"; next }
    { printf "%8s %8s %8s %14.1f = %5.1f + %5.1f %9.1f-%-6.1f\n", $c["bucket_mb"], $c["buckets"], $c["overlap"],
             $c["step_ms"], $c["compute_ms"], $c["exposed_comm_ms"], $c["step_ms_min"], $c["step_ms_max"] }' "$out"
echo "wrote $out (medians of $repeats runs) and $runs (every run)"
