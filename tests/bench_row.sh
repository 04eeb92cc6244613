#!/usr/bin/env bash
# bench_row.sh PROGRAM NP [FLAGS...]: one short run of a chapter's trainer on
# NP ranks with --bench-csv, and its row checked column by column against
# the run's log (tests/check_bench_row.py).
set -u
prog=$1 np=$2; shift 2
TINY=(--device "${DEV:-cpu}" --threads 1 --dim 32 --layers 4 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 16 --steps 4)
dir=$(mktemp -d /tmp/bench_row.XXXXXX)
trap 'rm -rf "$dir"' EXIT
if ! mpirun -np "$np" "$prog" "${TINY[@]}" "$@" --bench-csv "$dir/b.csv" >"$dir/a.log" 2>&1; then
    cat "$dir/a.log"
    echo "error: $prog failed"
    exit 1
fi
python3 tests/check_bench_row.py "$dir/a.log" "$dir/b.csv"
