#!/usr/bin/env bash
# record_step.sh: a recorded step is the whole measured step, the
# optimizer's update and what follows it included. ZeRO-1 on 2 ranks
# all-gathers the updated weights after the update: the communication that
# rank 0's record lists between a step's marks, counted as the comm layer
# counts it (a ring: all-reduce 2 (N - 1) / N X, reduce-scatter and
# all-gather (N - 1) / N X), must be the bytes per rank per step that the
# program's CSV prints (sent_mb), within its rounding.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/record_step.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mpirun -np 2 ./04_fsdp/fsdp --device cpu --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 \
    --batch 8 --steps 3 --zero 1 --record "$dir/r.rec" --csv "$dir/s.csv" >/dev/null
printed=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                   $c["step"] > 1 { s += $c["sent_mb"]; n++ } END { printf "%.6f", s / n }' "$dir/s.csv")
awk -v printed="$printed" '
    $1 == "group" && $2 == 0 { size[$3] = $4; next }
    $1 != 0 { next }
    $2 == "mark" && $3 == "step" { steps++; inside = 1; next }
    $2 == "mark" && $3 == "end" { inside = 0; next }
    !inside || $2 == "compute" || $2 == "wait" { next }
    { n = size[$4]; f = $2 == "all-reduce" ? 2 * (n - 1) / n : ($2 == "reduce-scatter" || $2 == "all-gather") ? (n - 1) / n : 0
      if (f == 0 && $2 != "barrier") { print "unexpected call: " $0; bad = 1 }
      bytes[$2] += f * $7 }
    END {
        for (k in bytes) { total += bytes[k]; printf "record: %s %.0f bytes per step\n", k, bytes[k] / steps }
        total /= steps
        printf "record: %.0f bytes per rank per step over %d steps; the CSV prints %.4f MB\n", total, steps, printed
        if (!bytes["all-gather"]) { print "the record lists no all-gather: the update is not in the recorded step"; exit 1 }
        if (bad || total / 1e6 - printed > 6e-5 || printed - total / 1e6 > 6e-5) { print "they differ"; exit 1 }
    }' "$dir/r.rec"
