#!/usr/bin/env bash
# stop_rank.sh NP RANK CMD...: runs `mpirun -np NP CMD...`, stops world rank
# RANK (SIGSTOP) once the first step (or parameter-server update) is logged,
# and passes when the job then ends by itself with a non-zero status, the
# first watchdog line (another rank's) names RANK as the one showing no sign
# of life, and no line is RANK's
# (mpirun resumes it before ending the job: it must not blame its peers for
# the time it was stopped itself). CMD sets a small --timeout-s; the caller's
# time limit must be well above it.
set -uo pipefail
np=$1 rank=$2; shift 2
log=$(mktemp /tmp/stop_rank.XXXXXX)
trap 'rm -f "$log"' EXIT
mpirun -np "$np" "$@" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1200); do grep -Eq '^(step|update) ' "$log" && break; sleep 0.05; done
grep -Eq '^(step|update) ' "$log" || { echo "error: no step or update within 60 s"; tail -n 5 "$log"; kill $pid; exit 1; }
victim=""
for c in $(pgrep -P $pid); do   # Open MPI tells each rank its world rank in the environment
    tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && victim=$c
done
[ -n "$victim" ] || { echo "error: no process of rank $rank among mpirun's children"; kill $pid; exit 1; }
kill -STOP "$victim"
t0=$(date +%s%N)
wait $pid
rc=$?
kill -CONT "$victim" 2>/dev/null
echo "job ended $(( ($(date +%s%N) - t0) / 1000000 )) ms after rank $rank was stopped, exit status $rc"
grep '^error' "$log" | head -n 4
[ $rc -ne 0 ] || { echo "error: the job ended with status 0"; exit 1; }
grep -m1 "^error (rank [0-9]*): no progress" "$log" | grep -q "rank $rank shows no sign of life" ||
    { echo "error: the first watchdog line does not name rank $rank as the one that stopped"; exit 1; }
! grep -q "^error (rank $rank): no progress" "$log" ||
    { echo "error: the stopped rank, once resumed, blamed its peers"; exit 1; }
