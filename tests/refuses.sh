#!/usr/bin/env bash
# refuses.sh NP PATTERN CMD...: CMD on NP ranks (mpirun; NP 0: directly) is
# refused as the suite refuses a bad input: exit status 2, one line starting
# "error" (every rank refuses together, rank 0 speaks), no MPI abort, and
# that line matches PATTERN (grep -E). Prints the line and what differed.
set -u
np=$1; pattern=$2; shift 2
err=$(mktemp); trap 'rm -f "$err"' EXIT
if [ "$np" = 0 ]; then "$@" >/dev/null 2>"$err"; else mpirun -np "$np" "$@" >/dev/null 2>"$err"; fi
rc=$?
grep '^error' "$err"
n=$(grep -c '^error' "$err")
[ "$rc" = 2 ] || { echo "exit status $rc, expected 2"; tail -n 5 "$err"; exit 1; }
[ "$n" = 1 ] || { echo "$n error lines, expected 1"; exit 1; }
! grep -q MPI_ABORT "$err" || { echo "the job was aborted (some rank did not refuse)"; exit 1; }
grep -qE "^error.*$pattern" "$err" || { echo "the error line does not say: $pattern"; exit 1; }
