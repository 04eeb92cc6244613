#!/usr/bin/env bash
# sweep_mfu_4d.sh: the 4D trainer on every mesh of 8 ranks that splits the
# nd-small model (dim 128, 8 layers, 8 heads on 4 kv heads, seq 64, 32
# sequences per step in 4 micro-batches per replica): one row per mesh in
# plots/data/mfu_4d.csv (or $1), with MFU, HFU, the bubble and the exposed
# communication of each axis; drawn by 10_nd_llama/mfu_4d.gp. Flags after
# the CSV name go to every run (e.g. --device cuda, --dtype bf16).
#
# The 8 ranks share this machine's cores, so MFU is taken against the
# machine's peak, not 8 cores': each rank's peak is (cores x the measured
# peak of one core) / 8, passed as --peak. Times are means of steps 2-STEPS.
# Each run also records its actions (--record); replay/replay turns the
# record into two more rows per mesh in CSV's *_replay.csv: "replayed" (one
# core per rank, compute in CPU time; MFU against one core's peak) and
# "modeled" (the same actions on one 8-GPU H100 node; MFU against the H100's
# bf16 peak) -- what 8 ranks on 2 shared cores cannot measure.
#   bash 10_nd_llama/sweep_mfu_4d.sh plots/data/mfu_4d.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/mfu_4d.csv}
shift || true
mkdir -p "$(dirname "$out")"
replayed=${out%.csv}_replay.csv
rm -f "$out"
echo "config,source,cluster,step_ms,mfu,idle_share" > "$replayed"
rec=$(mktemp /tmp/mfu_4d_record.XXXXXX)
trap 'rm -f "$rec"' EXIT
model=(--preset nd-small --threads 1 --steps "${STEPS:-8}")
# one core's peak, from the header of a dry run
core=$(./10_nd_llama/train "${model[@]}" --dry-run "$@" | sed -n 's/^peak: .* = \([0-9.]*\) GFLOP\/s per rank.*/\1/p')
cores=$(getconf _NPROCESSORS_ONLN)   # nproc would obey OMP_NUM_THREADS
peak=$(python3 -c "print('%.6f' % ($cores * $core / 8 / 1000))")
echo "peak: $cores cores x $core GFLOP/s / 8 ranks = $peak TFLOP/s per rank"
meshes=(
    "--dp 8"
    "--tp 8"
    "--pp 8"
    "--tp 2 --dp 4"
    "--cp 2 --dp 4"
    "--pp 2 --dp 4"
    "--dp 8 --zero 3"
    "--tp 2 --cp 2 --dp 2"
    "--tp 2 --pp 2 --dp 2"
    "--cp 2 --pp 2 --dp 2"
    "--pp 2 --dp 4 --zero 3"
    "--tp 2 --pp 2 --dp 2 --zero 2"
    "--tp 2 --cp 2 --pp 2"
    "--tp 2 --cp 2 --pp 2 --sp --recompute selective"
)
for mesh in "${meshes[@]}"; do
    read -r -a m <<<"$mesh"
    line=$(mpirun -np 8 ./10_nd_llama/train "${model[@]}" "${m[@]}" --peak "$peak" --bench-csv "$out" --record "$rec" "$@" |
           grep '^cause: *compute')
    printf '%-48s | %s\n' "$mesh" "$(echo "$line" | sed 's/^cause: *//; s/ (means.*//')"
    ./replay/replay --record "$rec" --cluster h100x1 |
        awk -F, -v c="$(tail -n 1 "$out" | cut -d, -f1)" -v core="$core" 'NR > 1 && $4 == "step" {
            mfu = $1 == "modeled" ? $12 : $11 / (core / 1000)
            printf "%s,%s,%s,%.4f,%.5f,%.4f\n", c, $1, $2, 1e3 * $7, mfu, $9 }' >> "$replayed"
done
awk -F, 'NR > 1 { printf "%-40s %-9s step %9.3f ms, MFU %5.2f%%\n", $1, $2, $4, 100 * $5 }' "$replayed"
echo "wrote $out and $replayed"
