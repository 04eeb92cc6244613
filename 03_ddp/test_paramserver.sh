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
same)  # NP "FLAGS A" "FLAGS B": bit for bit
    np=$2; read -r -a a <<<"$3"; read -r -a b <<<"$4"
    run "$np" "$PS" "$dir/a.log" "${TINY[@]}" "${a[@]}" --save-final "$dir/a.bin"
    run "$np" "$PS" "$dir/b.log" "${TINY[@]}" "${b[@]}" --save-final "$dir/b.bin"
    echo "$np ranks: [$3] vs [$4]"
    $CMP "$dir/a.bin" "$dir/b.bin" --exact
    ;;
bounds)  # NP SERVERS SYNC MAX_STALENESS [FLAGS...]: the counts and the staleness bound
    # Every server applies each of the W x 6 pushed gradients exactly once
    # (its own count), in 6 updates (BSP, SSP) or W x 6 (ASP); no gradient is
    # staler than MAX_STALENESS; the CSV has one row per update, numbered 1..U.
    np=$2; servers=$3; sync=$4; max=$5; shift 5
    w=$((np - servers)); g=$((w * 6)); u=$([ "$sync" = async ] && echo $g || echo 6)
    run "$np" "$PS" "$dir/ps.log" "${TINY[@]}" --servers "$servers" --sync "$sync" --csv "$dir/u.csv" "$@"
    grep '^server' "$dir/ps.log"
    fail=0
    n=$(grep -c "^server [0-9]*: $u updates from $g gradients ($w workers x 6 clocks);" "$dir/ps.log" || true)
    if [ "$n" != "$servers" ]; then echo "error: $n of $servers servers report $u updates from $g gradients"; fail=1; fi
    worst=$(grep '^server' "$dir/ps.log" | sed 's/.*(max \([0-9]*\),.*/\1/' | sort -n | tail -n 1)
    if [ "$worst" -gt "$max" ]; then echo "error: staleness $worst exceeds the bound $max"; fail=1; fi
    rows=$(awk -F, 'NR > 1 { if ($4 != NR - 1) bad = 1; n++ } END { print bad ? -1 : n }' "$dir/u.csv")
    if [ "$rows" != "$u" ]; then echo "error: the CSV has $rows update rows numbered 1.., expected $u"; fail=1; fi
    echo "$servers server(s), $w workers, --sync $sync: $u updates, $g gradients, staleness at most $worst (bound $max)"
    exit $fail
    ;;
*) echo "usage: test_paramserver.sh ddp|same|bounds ..."; exit 2 ;;
esac
