#!/usr/bin/env bash
# replay_cli.sh: replay/replay on a hand-written record, its rows against
# times worked out here. Rank 0 computes 1 s of CPU time with the FLOPs of a
# 4096^3 GEMM, rank 1 0.01 s without FLOPs, then both all-reduce 1 GB.
#   replayed (--gbps 1 --alpha-us 10): the all-reduce starts at 1 s and takes
#     2 (N - 1) (alpha + X / (N B)) = 2 (1e-5 + 0.5) s: step 2.00002 s
#   modeled (a cluster file: 1000 TFLOP/s, NVLink 100 GB/s and 10 us, memory
#     1000 GB/s; --host-gbps 10): rank 0's GEMM at chapter 01's bf16
#     efficiency at 4096 (read here from the CSV: 72.78%: 0.19 ms), later than
#     rank 1's 0.01 s x 10 / 1000 = 0.1 ms; the all-reduce 2 (1e-5 + 0.5e9 / 100e9) s
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/replay_cli.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/r.rec" <<'REC'
record 1 2
group 0 0 2 0 1
0 mark step
0 compute 1 137438953472 F0
0 all-reduce 0 0 0 0 1000000000
0 mark end
group 1 0 2 0 1
1 mark step
1 compute 0.01 0 -
1 all-reduce 0 0 0 0 1000000000
1 mark end
REC
cat > "$dir/c.txt" <<'CL'
# a made-up cluster
name test cluster
gpus_per_node 8
peak_tflops 1000
mem_gb 80
nvlink_gbps 100
nvlink_us 10
network_gbps 10
network_us 20
mem_gbps 1000
gemm_eff 0.5
CL
./replay/replay --record "$dir/r.rec" --gbps 1 --alpha-us 10 --cluster "$dir/c.txt" --host-gbps 10 > "$dir/out.csv"
eff=$(awk -F, '$1 == "cublas_bf16" && $4 == 4096 { print $10 / 100 }' 01_matmul_hfu/reference/h100_hfu.csv)
awk -F, -v eff="$eff" 'NR > 1 {
    want = $1 == "replayed" ? 2.00002 : 2 * 4096^3 / (1e15 * eff) + 2 * (1e-5 + 0.5e9 / 100e9)
    printf "%-8s step %.9g s, worked out %.9g s\n", $1, $7, want
    if ($7 < want * (1 - 1e-5) || $7 > want * (1 + 1e-5)) { print "  differs beyond the 6 digits of the CSV"; bad = 1 }
    n++ }
    END { if (n != 2) print "expected 2 rows, got " n; exit bad || n != 2 }' "$dir/out.csv"
# refusals: one line starting "error", status 2
for args in "" "--record $dir/none.rec" "--record $dir/r.rec --cluster h100x3" "--record $dir/r.rec --comm-only --cluster h100x1"; do
    set +e
    ./replay/replay $args > /dev/null 2> "$dir/err"
    rc=$?
    set -e
    [ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 1 ] && grep -q '^error' "$dir/err" ||
        { echo "replay/replay $args: status $rc, stderr:"; cat "$dir/err"; exit 1; }
done
echo "refusals: 4 bad invocations each refused with one error line and status 2"
