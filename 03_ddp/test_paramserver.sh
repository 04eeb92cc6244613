#!/usr/bin/env bash
# test_paramserver.sh: the parameter server's tests (03_ddp/paramserver,
# listed in tests/ddp.tests). Usage: test_paramserver.sh CASE [ARGS...];
# exit 0 when the property holds. Runs mpirun itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PS=./03_ddp/paramserver
DDP=./03_ddp/ddp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# The tiny model of test_ddp.sh: 12 sequences per clock (divisible by 1-4 workers).
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 12 --lr 3e-3 --steps 6)
dir=$(mktemp -d /tmp/ps_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP PROGRAM OUT-LOG FLAGS...: one run, quietly unless it fails
    local np=$1 prog=$2 log=$3; shift 3
    if ! mpirun -np "$np" "$prog" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $prog $*"; tail -n 20 "$log"; exit 1
    fi
}

case "$1" in
ddp)  # NP_DDP NP_PS "FLAGS OF BOTH" PS_FLAGS...: the parameter server = DDP on NP_DDP ranks (1e-5)
    nd=$2; np=$3; read -r -a both <<<"$4"; shift 4
    run "$nd" "$DDP" "$dir/ddp.log" "${TINY[@]}" "${both[@]}" --save-final "$dir/ddp.bin"
    run "$np" "$PS" "$dir/ps.log" "${TINY[@]}" "${both[@]}" "$@" --save-final "$dir/ps.bin"
    echo "ddp on $nd rank(s) vs paramserver on $np ranks [${both[*]}] $*"
    grep '^ps:\|^server' "$dir/ps.log"
    $CMP "$dir/ps.bin" "$dir/ddp.bin" --tol 1e-5
    ;;
differ)  # NP "FLAGS A" "FLAGS B": the two runs train different weights (more than 1e-4 apart)
    np=$2; read -r -a a <<<"$3"; read -r -a b <<<"$4"
    run "$np" "$PS" "$dir/a.log" "${TINY[@]}" "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$PS" "$dir/b.log" "${TINY[@]}" "${b[@]}" --save-final "$dir/b.bin"
    echo "$np ranks: [$3] vs [$4]"
    grep -h '^server' "$dir/a.log" "$dir/b.log"
    if $CMP "$dir/a.bin" "$dir/b.bin" --tol 1e-4; then echo "error: the two runs trained the same weights"; exit 1; fi
    echo "they differ, as they should"
    ;;
bounds)  # NP SERVERS SYNC MAX_STALENESS REACHED [FLAGS...]: the counts and the staleness bound
    # Every server applies each of the W x 6 pushed gradients exactly once
    # (its own count), in 6 updates (BSP, SSP) or W x 6 (ASP); no gradient is
    # staler than MAX_STALENESS, and with REACHED 1 some gradient is exactly
    # that stale (SSP: the fast workers run the full S clocks ahead of a
    # straggler). Against the workers' own counts of what they pushed (6
    # each): the CSV's rows, one per update numbered 1..U; in ASP one row per
    # gradient, each (worker, clock) once, so W rows per clock; in BSP and
    # SSP one row of "all" workers per clock, in clock order.
    np=$2; servers=$3; sync=$4; max=$5; reached=$6; shift 6
    w=$((np - servers)); g=$((w * 6)); u=$([ "$sync" = async ] && echo $g || echo 6)
    run "$np" "$PS" "$dir/ps.log" "${TINY[@]}" --servers "$servers" --sync "$sync" --csv "$dir/u.csv" "$@"
    grep '^server\|^workers' "$dir/ps.log"
    fail=0
    n=$(grep -c "^server [0-9]*: $u updates from $g gradients ($w workers x 6 clocks);" "$dir/ps.log" || true)
    if [ "$n" != "$servers" ]; then echo "error: $n of $servers servers report $u updates from $g gradients"; fail=1; fi
    worst=$(grep '^server.*(max' "$dir/ps.log" | sed 's/.*(max \([0-9]*\),.*/\1/' | sort -n | tail -n 1)
    if [ "$worst" -gt "$max" ]; then echo "error: staleness $worst exceeds the bound $max"; fail=1; fi
    if [ "$reached" = 1 ] && [ "$worst" != "$max" ]; then
        echo "error: the largest staleness is $worst, the bound $max was never reached"; fail=1
    fi
    pushed=$(sed -n 's/^workers: gradients pushed by rank: //p' "$dir/ps.log")
    awk -F, -v sync="$sync" -v pushed="$pushed" -v W="$w" -v U="$u" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { rows++
          if ($c["update"] != NR - 1) { printf "error: row %d is update %s\n", NR - 1, $c["update"]; bad = 1 }
          key = $c["worker_rank"] "," $c["clock"]
          if (seen[key]++) { printf "error: worker %s clock %s applied twice\n", $c["worker_rank"], $c["clock"]; bad = 1 }
          per[$c["worker_rank"]]++; clocks[$c["clock"]]++
          if (sync != "async" && ($c["worker_rank"] != "all" || $c["clock"] != NR - 1)) {
              printf "error: update %d is %s of clock %s, expected all of clock %d\n", NR - 1, $c["worker_rank"],
                     $c["clock"], NR - 1; bad = 1 } }
        END {
            n = split(pushed, p, " ")
            if (n != W) { printf "error: %d workers reported their pushes, expected %d\n", n, W; bad = 1 }
            for (i = 1; i <= n; i++) {
                split(p[i], rc, ":")
                if (rc[2] != 6) { printf "error: worker %s pushed %s gradients, expected 6\n", rc[1], rc[2]; bad = 1 }
                if (sync == "async" && per[rc[1]] != rc[2]) {
                    printf "error: worker %s pushed %s gradients, the server applied %d\n", rc[1], rc[2], per[rc[1]]; bad = 1 }
            }
            for (k = 1; k <= 6; k++) if (clocks[k] != (sync == "async" ? W : 1)) {
                printf "error: clock %d has %d updates\n", k, clocks[k]; bad = 1 }
            printf "%d update rows (want %d), workers pushed: %s\n", rows, U, pushed
            if (rows != U) { print "error: wrong number of update rows"; bad = 1 }
            exit bad
        }' "$dir/u.csv" || fail=1
    echo "$servers server(s), $w workers, --sync $sync: $u updates, $g gradients, staleness at most $worst (bound $max)"
    exit $fail
    ;;
*) echo "usage: test_paramserver.sh ddp|differ|bounds ..."; exit 2 ;;
esac
