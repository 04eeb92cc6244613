#!/usr/bin/env bash
# sweep_dataparallel.sh [CSV] [FLAGS...]: DataParallel (03_ddp/dataparallel,
# one process, N replica threads) against DDP (03_ddp/ddp, N processes) at
# the same global batch of BATCH sequences, one thread per replica or rank,
# for each N, every point repeated. Writes every run to CSV's *_runs.csv and
# *_ddp_runs.csv and, per N, the median run of each (by step time) side by
# side, with the MB a DDP rank sends and the MB device 0 moves per step,
# into CSV (default plots/data/dataparallel.csv): the data of
# 03_ddp/dataparallel.gp and of the README's table. Flags after CSV go to
# every run. Both start under mpirun --bind-to none: Open MPI otherwise pins
# each of up to 2 ranks to a core (one core for DDP's single rank, and for
# the whole DataParallel process with its N threads) but leaves 4 ranks
# unpinned, and the pinning, not the method, would decide the comparison.
#   bash 03_ddp/sweep_dataparallel.sh plots/data/dataparallel.csv --device cpu
# Environment: COUNTS ("1 2 4"), BATCH (16), REPEATS (3), STEPS (8).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/dataparallel.csv}
shift || true
counts=${COUNTS:-"1 2 4"}
batch=${BATCH:-16}
repeats=${REPEATS:-3}
source 03_ddp/sweep_common.sh
sweep_begin "$out"
ddp_runs=${out%.csv}_ddp_runs.csv
rm -f "$ddp_runs"
common=(--threads 1 --batch "$batch" --steps "${STEPS:-8}")
for r in $(seq "$repeats"); do
    for n in $counts; do
        a=$(mpirun --bind-to none -np "$n" ./03_ddp/ddp "${common[@]}" --bench-csv "$ddp_runs" "$@" | grep '^mean')
        b=$(mpirun --bind-to none -np 1 ./03_ddp/dataparallel "${common[@]}" --replicas "$n" --bench-csv "$runs" "$@" |
            grep '^mean')
        printf 'run %d/%d, N = %d |          ddp: %s\n%*s | dataparallel: %s\n' "$r" "$repeats" "$n" \
            "$(echo "$a" | cut -c1-60)" 14 "" "$(echo "$b" | cut -c1-60)"
    done
done
# The medians of each side, joined on N (ranks = replicas).
med=$(mktemp); trap 'rm -f "$med"' EXIT
awk -v keys=ranks -v by=step_ms -f scripts/repeats.awk "$ddp_runs" > "$med"
awk -v keys=replicas -v by=step_ms -f scripts/repeats.awk "$runs" |
awk -F, -v OFS=, 'NR == FNR { if (FNR == 1) for (i = 1; i <= NF; i++) d[$i] = i
                             else { n = $d["ranks"]; step[n] = $d["step_ms"]; lo[n] = $d["step_ms_min"]
                                    hi[n] = $d["step_ms_max"]; comm[n] = $d["exposed_comm_ms"]
                                    sent[n] = 2 * (n - 1) / n * $d["grad_mb"] }   # ring all-reduce, per rank
                             next }
    # c: the first column of a name (threads: the bench row per replica, not the provenance total)
    FNR == 1 { for (i = NF; i >= 1; i--) c[$i] = i
               print "n,tokens,threads,ddp_step_ms,ddp_min,ddp_max,ddp_exposed_comm_ms,dp_step_ms,dp_min,dp_max," \
                     "dp_forward_ms,dp_backward_ms,dp_serial_ms,dp_optimizer_ms,ddp_rank_mb,dp_device0_mb," prov_header(); next }
    { n = $c["replicas"]
      print n, $c["tokens"], $c["threads"], step[n], lo[n], hi[n], comm[n], $c["step_ms"], $c["step_ms_min"],
            $c["step_ms_max"], $c["forward_ms"], $c["backward_ms"], $c["serial_ms"], $c["optimizer_ms"], sent[n],
            $c["device0_mb"] prov_row() }
    # the provenance of the DataParallel run (1 rank x N threads: the cores of DDP on N ranks)
    function prov_header(   i, s) { s = $c["cores"]; for (i = c["cores"] + 1; i <= NF; i++) s = s "," $i; return s }
    function prov_row(   i, s) { s = ""; for (i = c["cores"]; i <= NF; i++) s = s "," $i; return s }' \
    "$med" - > "$out"
# The README's table.
awk -F, 'NR == 1 { printf "%4s %14s %14s %18s %18s %10s %14s %16s\n", "N", "DDP step (ms)", "DP step (ms)", "DDP exposed comm",
                          "DP device 0 serial", "DP / DDP", "DDP MB/rank", "DP MB device 0"; next }
    { printf "%4d %14.1f %14.1f %15.1f ms %15.1f ms %9.2fx %14.2f %16.2f\n", $1, $4, $8, $7, $13, $8 / $4, $15, $16 }' "$out"
echo "wrote $out (medians of $repeats runs), $runs and $ddp_runs (every run)"
