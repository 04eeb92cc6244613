#!/usr/bin/env bash
# test_hsdp.sh: the multi-run tests of chapter 05 (listed in tests/hsdp.tests).
# 05_hsdp/hsdp is 04_fsdp's module on a 2D mesh, so the cases of
# 04_fsdp/test_fsdp.sh (equiv, same, resume, numbers, emu) run here on it;
# this file adds what the mesh brings. Usage: test_hsdp.sh CASE [ARGS...].
set -euo pipefail
cd "$(dirname "$0")/.."
export P=./05_hsdp/hsdp
DEV=${DEV:-cpu}
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3)
dir=$(mktemp -d /tmp/hsdp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

case "$1" in
link)  # K: 4 ranks on 2 simulated nodes of 2 with a slow link: the bytes that cross and
    # their alpha-beta time against check_fsdp.py's, and the same results bit for bit as
    # without the link model (it changes when bytes arrive, never what they are)
    K=$2
    flags=("${TINY[@]}" --steps 4 --shard "$K" --peak 1000)
    link=(--node-size 2 --inter-gbps 2 --inter-us 50)
    mpirun -np 4 "$P" "${flags[@]}" --save-final "$dir/a.bin" >"$dir/a.log" 2>&1 || { tail "$dir/a.log"; exit 1; }
    mpirun -np 4 "$P" "${flags[@]}" "${link[@]}" --csv "$dir/b.csv" --save-final "$dir/b.bin" >"$dir/b.log" 2>&1 \
        || { tail "$dir/b.log"; exit 1; }
    grep '^hsdp\|^link' "$dir/b.log"
    python3 04_fsdp/check_fsdp.py "$dir/b.log" "$dir/b.csv" --shard "$K" "${link[@]}"
    ./build/tests/compare "$dir/b.bin" "$dir/a.bin" --exact
    ;;
replicas)  # ZEROFLAGS...: groups of 2 inside nodes of 2, so only the all-reduce across the
    # groups crosses: its ring over R replicas runs 2 (R-1) steps per unit, each crossing, so
    # the slow links add 2 (R-1) x units x latency + the bytes the run counted crossing / bandwidth
    # (printed to 0.01 ms, the bytes to 0.001 MB: 0.0055 ms of rounding)
    shift
    mpirun -np 4 "$P" "${TINY[@]}" --steps 2 --shard 2 --node-size 2 --inter-gbps 0.2 --inter-us 50 "$@" \
        >"$dir/a.log" 2>&1 || { tail "$dir/a.log"; exit 1; }
    grep '^hsdp\|^link\|units in pieces' "$dir/a.log"
    awk '/^hsdp:/ { for (i = 1; i <= NF; i++) if ($i ~ /^replica/) R = $(i - 1) }
         / units in pieces/ { for (i = 1; i <= NF; i++) if ($i == "units") U = $(i - 1) }
         /^link: +per step/ { mb = $4; for (i = 1; i <= NF; i++) if ($i == "add") ms = $(i + 1) }
         END { want = 1e3 * (2 * (R - 1) * U * 50e-6 + mb * 1e6 / 0.2e9)
               printf "%d replicas, %d units, %.3f MB crossed per rank: 2 (R-1) U x 50 us + bytes / 0.2 GB/s = %.4f ms, printed %s ms\n", R, U, mb, want, ms
               if (R < 2 || U < 1 || ms == "") { print "error: no hsdp, zero or link line to read"; exit 1 }
               if (ms - want > 0.0055 || want - ms > 0.0055) { print "error: the slow links add " ms " ms, the ring steps give " want; exit 1 } }' "$dir/a.log"
    ;;
*)  # not exec: the EXIT trap removes $dir
    bash 04_fsdp/test_fsdp.sh "$@" ;;
esac
