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
# A DEVICE=cuda run fixes each clock's compute of the parameter server: a
# thread's CPU time does not time a GPU (03_ddp/ddp has no such flag).
CLOCK=()
[ "$DEV" = cpu ] || CLOCK=(--compute-s 0.01)
# The virtual clock made easy to work out by hand: every message 1 ms (its
# bytes at 1e6 GB/s cost under 1e-9 s), every compute 0.1 s.
HAND=(--compute-s 0.1 --inter-us 1000 --inter-gbps 1e6)
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
    run "$np" "$PS" "$dir/ps.log" "${TINY[@]}" "${CLOCK[@]}" "${both[@]}" "$@" --save-final "$dir/ps.bin"
    echo "ddp on $nd rank(s) vs paramserver on $np ranks [${both[*]}] $*"
    grep '^ps:\|^server' "$dir/ps.log"
    $CMP "$dir/ps.bin" "$dir/ddp.bin" --tol 1e-5
    ;;
differ)  # NP "FLAGS A" "FLAGS B": the two runs train different weights (more than 1e-4 apart)
    np=$2; read -r -a a <<<"$3"; read -r -a b <<<"$4"
    run "$np" "$PS" "$dir/a.log" "${TINY[@]}" "${CLOCK[@]}" "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$PS" "$dir/b.log" "${TINY[@]}" "${CLOCK[@]}" "${b[@]}" --save-final "$dir/b.bin"
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
    run "$np" "$PS" "$dir/ps.log" "${TINY[@]}" "${CLOCK[@]}" --servers "$servers" --sync "$sync" --csv "$dir/u.csv" "$@"
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
hand)  # 2 workers, rank 2 three times slower, 3 clocks: each mode's updates (number, whose gradient,
    # virtual seconds, staleness) as worked out by hand in part3_paramserver.md ("The virtual clock")
    fail=0
    for want in "bsp 1:all:0.303:0 2:all:0.606:0 3:all:0.909:0" \
                "ssp:1 1:all:0.303:0 2:all:0.606:1 3:all:0.909:1" \
                "async 1:1:0.103:0 2:1:0.206:0 3:2:0.303:2 4:1:0.309:1 5:2:0.606:1 6:2:0.909:0"; do
        sync=${want%% *}
        run 3 "$PS" "$dir/h.log" "${TINY[@]}" "${CLOCK[@]}" "${HAND[@]}" --steps 3 --straggler 2:3 --sync "$sync" --csv "$dir/h.csv"
        got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                       { printf " %s:%s:%.3f:%s", $c["update"], $c["worker_rank"], $c["seconds"], $c["staleness"] }' "$dir/h.csv")
        rm -f "$dir/h.csv"
        echo "--sync $sync, update:worker:seconds:staleness: got $got"
        if [ "$sync$got" != "$want" ]; then echo "error: by hand  ${want#* }"; fail=1; fi
    done
    exit $fail
    ;;
stale)  # 3 workers, rank 3 four times slower, async: the straggler's staleness, gradient by gradient,
    # as worked out by hand (part3_paramserver.md): 6 (its first pull sees none of the fast updates), then
    # (W - 1) F = 8 while the fast workers run, 2 as they end, 0 alone
    run 4 "$PS" "$dir/s.log" "${TINY[@]}" "${CLOCK[@]}" "${HAND[@]}" --steps 12 --straggler 3:4 --sync async --csv "$dir/s.csv"
    got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                   $c["worker_rank"] == 3 { printf "%s%s", n++ ? " " : "", $c["staleness"] }' "$dir/s.csv")
    want="6 8 8 2 0 0 0 0 0 0 0 0"
    echo "the straggler's staleness: got $got, by hand $want"
    [ "$got" = "$want" ] || { echo "error: the straggler's staleness differs from the hand count"; exit 1; }
    ;;
same)  # NP "FLAGS A" "FLAGS B": the two runs' CSVs are equal, update for update, but for the sync column
    np=$2; read -r -a a <<<"$3"; read -r -a b <<<"$4"
    run "$np" "$PS" "$dir/a.log" "${TINY[@]}" "${CLOCK[@]}" "${a[@]}" --csv "$dir/a.csv"
    run "$np" "$PS" "$dir/b.log" "${TINY[@]}" "${CLOCK[@]}" "${b[@]}" --csv "$dir/b.csv"
    echo "$np ranks: [$3] vs [$4]: $(($(wc -l < "$dir/a.csv") - 1)) updates"
    # update, clock, seconds, loss, staleness, lr, norm, worker_rank
    if ! diff <(cut -d, -f4-11 "$dir/a.csv") <(cut -d, -f4-11 "$dir/b.csv"); then
        echo "error: the runs differ (above: update,clock,seconds,loss,staleness,lr,norm,worker_rank)"; exit 1
    fi
    echo "equal, update for update"
    ;;
lesson)  # the chart's lesson, on its deterministic form (sweep_paramserver.sh with a fixed compute):
    # behind the straggler, ASP reaches the loss of BSP's middle update sooner than BSP; BSP's updates are those
    # without the straggler (the same losses, later); SSP's updates come when BSP's do (the
    # straggler completes every clock), so against a straggler that is always slow it gains nothing
    bash 03_ddp/sweep_paramserver.sh "$dir/p.csv" "${TINY[@]}" "${CLOCK[@]}" "${HAND[@]}" --steps 20 > "$dir/sweep.log" ||
        { cat "$dir/sweep.log"; exit 1; }
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { k = $c["sync"] "," $c["straggler"]; n[k]++; t[k, n[k]] = $c["seconds"]; l[k, n[k]] = $c["loss"] }
        function reach(k, L,   i) { for (i = 1; i <= n[k]; i++) if (l[k, i] <= L) return t[k, i]; return -1 }
        END {
            b = "bsp,none"; s = "bsp,3:4"; a = "async,3:4"; p = "ssp:2,3:4"
            if (n[s] != 20 || n[b] != 20 || n[a] != 60 || n[p] != 20) { printf "error: updates %d %d %d %d\n", n[b], n[s], n[a], n[p]; exit 1 }
            for (i = 1; i <= 20; i++) {
                if (l[s, i] != l[b, i]) { printf "error: BSP update %d: loss %s behind the straggler, %s without\n", i, l[s, i], l[b, i]; bad = 1 }
                if (t[p, i] != t[s, i]) { printf "error: update %d at %s s in SSP, %s s in BSP\n", i, t[p, i], t[s, i]; bad = 1 }
            }
            L = l[s, 10]; tb = reach(s, L); ta = reach(a, L)
            printf "behind the straggler: BSP reaches the loss of its update 10, %s, at %s s (without it: %s s), ASP at %s s; SSP:2 ends at %s s\n", L, tb, reach(b, L), ta, t[p, 20]
            if (ta < 0 || ta >= tb) { print "error: ASP did not reach that loss before BSP"; bad = 1 }
            exit bad
        }' "$dir/p.csv"
    ;;
*) echo "usage: test_paramserver.sh ddp|differ|bounds|hand|stale|same|lesson ..."; exit 2 ;;
esac
