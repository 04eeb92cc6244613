#!/usr/bin/env bash
# check_allreduce_anchor.sh [CSV]: the modeled line of chapter 02's chart
# that its README sets beside NCCL's published busbw: every modeled row of
# the library's all-reduce (one comm-layer call) on the h100x1 preset equals
# the ring's cost recomputed here, 2 (N-1) (alpha + X / (N B)) with the
# preset's alpha 5 us and B 360 GB/s (10_nd_llama/cost.h), within 1%, and the
# README's busbw at 16 MiB is that row's.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=${1:-02_allreduce/figures/data/allreduce_replay.csv}
quoted=$(grep -o 'one ring call, reaches [0-9.]* GB/s at 16 MiB' 02_allreduce/README.md | grep -o '[0-9.]* GB/s' | cut -d' ' -f1)
awk -F, -v quoted="$quoted" '$1 == "modeled" && $2 == "h100x1" && $4 ~ /^allreduce:lib:/ {
    split($4, k, ":"); X = k[3]; N = $5; n++
    model = 2 * (N - 1) * (5e-6 + X / (N * 360e9))
    busbw = 2 * (N - 1) / N * X / $7 / 1e9
    printf "%d ranks, %9d B: modeled %.2f us, ring cost %.2f us, busbw %.1f GB/s\n", N, X, 1e6 * $7, 1e6 * model, busbw
    if ($7 / model > 1.01 || $7 / model < 0.99) { print "FAIL: the modeled row is off the ring cost"; bad = 1 }
    if (X == 16777216 && N == 4) { at16 = sprintf("%.1f", busbw) } }
    END { if (!n) { print "FAIL: no modeled lib rows"; exit 1 }
          if (at16 != quoted) { printf "FAIL: the README quotes %s GB/s at 16 MiB, the data gives %s\n", quoted, at16; exit 1 }
          exit bad }' "$csv"
