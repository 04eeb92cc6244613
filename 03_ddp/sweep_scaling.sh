#!/usr/bin/env bash
# sweep_scaling.sh [CSV] [FLAGS...]: tokens per second against the number of
# data-parallel ranks (weak scaling: every rank keeps PER_RANK sequences, so
# the global batch grows with the ranks, as data parallelism is used), every
# point repeated. Writes one row per run to CSV's *_runs.csv and, per rank
# count, the median run with its fastest and slowest repeat to CSV (default
# plots/data/ddp_scaling.csv): the data of 03_ddp/ddp_scaling.gp.
#
# Every rank runs one thread (--threads 1), so 1 rank uses one core and N
# ranks ask for N. With more ranks than cores the ranks share them
# (oversubscribed): the chart then shows what time-sharing costs, not what
# more hardware would give. The first repeat of each rank count also records
# its actions (--record) and replays them (replay/replay) into CSV's
# *_replay.csv: the step on one core per rank (replayed) and on one 8-GPU
# H100 node (modeled), what the ranks would do with a core each. Flags after
# CSV go to every run.
#   bash 03_ddp/sweep_scaling.sh plots/data/ddp_scaling.csv --device cpu
# Environment: RANKS ("1 2 4"), PER_RANK (8), REPEATS (3), STEPS (12).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/ddp_scaling.csv}
shift || true
ranks=${RANKS:-"1 2 4"}
per_rank=${PER_RANK:-8}
repeats=${REPEATS:-3}
source 03_ddp/sweep_common.sh
sweep_begin "$out"
for r in $(seq "$repeats"); do
    for np in $ranks; do
        record=()
        if [ "$r" = 1 ]; then record=(--record "$rec"); fi
        line=$(mpirun -np "$np" ./03_ddp/ddp --threads 1 --batch $((per_rank * np)) --steps "${STEPS:-12}" \
               --bench-csv "$runs" "${record[@]}" "$@" | grep '^mean')
        if [ "$r" = 1 ]; then replay_rows "$np"; fi
        printf 'run %d/%d, %d rank%s x %d sequences | %s\n' "$r" "$repeats" "$np" \
            "$([ "$np" = 1 ] || echo s)" "$per_rank" "$(echo "$line" | cut -c1-90)"
    done
done
sweep_end ranks
# The table of the README: tokens/s of the median run, its range, and the
# efficiency against N times the 1-rank median.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
                   printf "%6s %8s %10s %12s %18s %11s\n", "ranks", "tokens", "step (ms)", "tok/s", "tok/s min-max", "efficiency"; next }
    { n = $c["ranks"]; tok = $c["tok_s"]; if (n == 1) one = tok
      printf "%6d %8d %10.1f %12.0f %9.0f-%-8.0f %10s\n", n, $c["tokens"], $c["step_ms"], tok,
             $c["tokens"] / ($c["step_ms_max"] / 1e3), $c["tokens"] / ($c["step_ms_min"] / 1e3),
             one ? sprintf("%.0f%%", 100 * tok / (n * one)) : "-" }' "$out"
echo "wrote $out (medians of $repeats runs) and $runs (every run)"
