#!/usr/bin/env bash
# make reference-charts refuses a measured series taken on a busy machine and
# names it, and the busy criterion (scripts/provenance.awk) counts only the
# others' load during the run: not the run's own ranks x threads, not the
# load an earlier run left in the 1-minute average. Rows written here, with
# the load figures chosen: for a run of t s from load L0, with n tasks
# runnable throughout, the kernel's average ends at L0 d + n (1 - d),
# d = exp(-t/60).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/refcharts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
end() { awk -v l0="$1" -v n="$2" -v t="$3" 'BEGIN { d = exp(-t / 60); printf "%.2f", l0 * d + n * (1 - d) }'; }
h=variant,device,dtype,m,n,k,time_ms,tflops,peak_tflops,hfu,cores,ranks,threads,cpu,load_before,load_after,run_s,source
{
    echo "$h"
    # quiet: 2 threads of its own on 2 cores, after a run that left the average at 4
    echo "openblas_sgemm,cpu,fp32,512,512,512,1,1,1,1,2,1,2,CPU,4.00,$(end 4 2 30),30,measured"
    # busy: 2 threads of its own and 2 more tasks (1 per core) all along
    echo "cpu_naive,cpu,fp32,512,512,512,1,1,1,1,2,1,2,CPU,4.00,$(end 4 4 30),30,measured"
    # oversubscribed (not drawn as measured, so not judged) and modeled rows
    echo "cpu_v1_ikj,cpu,fp32,512,512,512,1,1,1,1,2,4,1,CPU,9.00,$(end 9 9 30),30,measured"
    echo "h100_table,cpu,fp32,512,512,512,1,1,1,1,2,1,1,CPU,9.00,9.00,30,modeled"
} > "$tmp/hfu.csv"
busy=$(awk -v mode=busy -f scripts/provenance.awk "$tmp/hfu.csv")
echo "$busy"
[ "$(echo "$busy" | grep -c .)" = 1 ] && [[ $busy == *"series cpu_naive: 1 measured row"* ]] ||
    { echo "FAIL: expected exactly the series cpu_naive to be busy, got: '$busy'"; exit 1; }
# Runs under 5 s that saw no update of the average (the same load before and
# after) are judged by the chart's runs that saw one: a 1-thread run at 2.60
# left by the sweep before it passes beside a quiet run that saw an update;
# a chart whose every run is such a short one is judged by them.
h2=policy,step_ms,cores,ranks,threads,cpu,load_before,load_after,run_s,source
{
    echo "$h2"
    echo "none,140,2,1,1,CPU,2.17,$(end 2.17 1 5),1.6,measured"
    echo "every:1,160,2,1,1,CPU,2.60,2.60,1.6,measured"
} > "$tmp/short_seen.csv"
short=$(awk -v mode=busy -f scripts/provenance.awk "$tmp/short_seen.csv")
[ -z "$short" ] || { echo "FAIL: a short run without an update beside a quiet one was judged busy: '$short'"; exit 1; }
{
    echo "$h2"
    echo "none,140,2,1,1,CPU,2.60,2.60,1.6,measured"
    echo "every:1,160,2,1,1,CPU,0.40,0.40,1.6,measured"
} > "$tmp/short_unseen.csv"
short=$(awk -v mode=busy -f scripts/provenance.awk "$tmp/short_unseen.csv")
echo "$short"
[[ $short == *"series none: 1 measured row"* ]] && [ "$(echo "$short" | grep -c .)" = 1 ] ||
    { echo "FAIL: a chart of short runs that saw no update was not judged by them: '$short'"; exit 1; }
# the checked-in figure must not change: compare its bytes after the refusal
before=$(cksum < 01_matmul_hfu/figures/hfu.png)
set +e
bash scripts/reference_charts.sh --from "$tmp" > "$tmp/out" 2> "$tmp/err"
rc=$?
set -e
cat "$tmp/out" "$tmp/err"
[ $rc = 1 ] || { echo "FAIL: reference_charts.sh exited $rc on a busy series, not 1"; exit 1; }
grep -q '^error: measured on a busy machine' "$tmp/err" || { echo "FAIL: no error line"; exit 1; }
grep -q 'series cpu_naive' "$tmp/err" || { echo "FAIL: the busy series is not named"; exit 1; }
[ "$(cksum < 01_matmul_hfu/figures/hfu.png)" = "$before" ] || { echo "FAIL: a figure was replaced"; exit 1; }
echo "ok: the busy series refused and named, the quiet, oversubscribed and modeled rows not judged, short runs judged by the runs that saw an update"
