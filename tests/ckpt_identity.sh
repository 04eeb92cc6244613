#!/usr/bin/env bash
# ckpt_identity.sh: what a checkpoint refuses. A checkpoint records every
# setting that changes the numbers of the run; resuming with one of them
# changed is another run, and --resume refuses it with one line naming the
# setting. What changes only the order of sums (the ranks, --micro) is
# accepted: the run continues and ends where the run that never stopped
# ends (within 1e-5).
#
# The table below is the specification: one row per setting, the flags of
# the resumed run that differ from the run that wrote the checkpoint, and
# the verdict (refused: the name the checkpoint gives the setting; or
# accepted). Usage: ckpt_identity.sh [ROW] (no row: every row; --list:
# the rows and their verdicts). Exit 0 when every row holds. Runs mpirun
# itself with the shared trainer of chapter 03.
set -euo pipefail
cd "$(dirname "$0")/.."
P=./03_ddp/ddp
CMP=./build/tests/compare
DEV=${DEV:-cpu}

# row          resumed run's flags             verdict
TABLE="
vocab          --vocab 320                     refused:vocab
dim            --dim 48                        refused:dim
layers         --layers 3                      refused:layers
heads          --heads 2 --kv-heads 2          refused:heads
kv_heads       --kv-heads 4                    refused:kv_heads
head_dim       --head-dim 16                   refused:head_dim
ffn            --ffn 64                        refused:ffn
seq            --seq 32                        refused:seq
dtype          --dtype bf16                    refused:dtype
batch          --batch 24                      refused:batch
seed           --seed 6                        refused:seed
data           --data=DIR/b.txt                refused:data
steps          --steps 9                       refused:steps
warmup         --warmup 2                      refused:warmup
lr             --lr 1e-3                       refused:lr
clip           --clip 0.5                      refused:clip
ranks_1        --np 1                          accepted
ranks_3        --np 3                          accepted
micro          --micro 2                       accepted
"
if [ "${1:-}" = --list ]; then
    awk 'NF { print $1, $NF == "accepted" ? "is_accepted" : "is_refused" }' <<<"$TABLE"
    exit 0
fi
want=${1:-}
if [ -n "$want" ] && ! awk -v r="$want" '$1 == r { f = 1 } END { exit !f }' <<<"$TABLE"; then
    echo "error: no row '$want' (--list names them)" >&2; exit 2
fi

dir=$(mktemp -d /tmp/ckpt_identity.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# two byte-level corpora that differ in one byte
python3 -c "
import sys
t = ''.join('the %d quick brown foxes jump over %d lazy dogs. ' % (i, i * 7) for i in range(400))
open(sys.argv[1], 'w').write(t); open(sys.argv[2], 'w').write(t[:1000] + 'X' + t[1001:])" "$dir/a.txt" "$dir/b.txt"
BASE=(--device "$DEV" --threads 1 --dim 32 --layers 2 --heads 4 --kv-heads 2 --seq 16 --vocab 256
      --batch 12 --steps 6 --warmup 1 --lr 3e-3 --clip 1 --seed 5 --data "$dir/a.txt")

# The run that writes the checkpoints (steps 3 and 6); step 6 goes, so a
# resume continues at step 4.
if ! mpirun -np 2 $P "${BASE[@]}" --ckpt-dir "$dir/ckpt" --ckpt-every 3 --save-final "$dir/ref.bin" \
        >"$dir/base.log" 2>&1; then
    echo "error: the run that writes the checkpoint failed"; tail -n 20 "$dir/base.log"; exit 1
fi
rm -rf "$dir/ckpt/step_00000006"

bad=0
while read -r row rest; do
    [ -n "$row" ] || continue
    [ -z "$want" ] || [ "$row" = "$want" ] || continue
    verdict=${rest##* }
    read -r -a change <<<"${rest% *}"
    change=("${change[@]//DIR/$dir}")
    np=2
    if [ "${change[0]}" = --np ]; then np=${change[1]}; change=(); fi
    rm -rf "$dir/try"; cp -r "$dir/ckpt" "$dir/try"
    rc=0
    mpirun -np "$np" $P "${BASE[@]}" "${change[@]}" --ckpt-dir "$dir/try" --resume --save-final "$dir/try.bin" \
        </dev/null >"$dir/try.log" 2>&1 || rc=$?
    err=$(grep -m1 '^error' "$dir/try.log" || true)
    shown="${rest% *}"
    if [ "${verdict%%:*}" = refused ]; then
        name=${verdict#refused:}
        if [ $rc = 0 ]; then
            printf '%-9s %-26s WRONG: accepted; a checkpoint must refuse another %s\n' "$row" "$shown" "$name"; bad=1
        elif ! grep -q "written for $name .*, but this run has $name " <<<"$err"; then
            printf '%-9s %-26s WRONG: refused without naming %s: %s\n' "$row" "$shown" "$name" "${err:-exit status $rc}"; bad=1
        else
            printf "%-9s %-26s refused: %s\n" "$row" "$shown" "${err##*meta.ckpt }"
        fi
    else
        if [ $rc != 0 ]; then
            printf '%-9s %-26s WRONG: refused; it changes only the order of sums: %s\n' "$row" "$shown" "${err:-exit status $rc}"; bad=1
        elif ! grep -q 'step_00000003: step 3, continuing at step 4' "$dir/try.log"; then
            printf '%-9s %-26s WRONG: did not continue at step 4\n' "$row" "$shown"; bad=1
        elif ! $CMP "$dir/try.bin" "$dir/ref.bin" --tol 1e-5 >"$dir/cmp.txt" 2>&1; then
            printf '%-9s %-26s WRONG: continued, but not as the run that never stopped:\n' "$row" "$shown"
            sed 's/^/    /' "$dir/cmp.txt"; bad=1
        else
            printf '%-9s %-26s accepted: continued at step 4, the final weights within 1e-5 of the run that never stopped\n' \
                "$row" "$shown"
        fi
    fi
done <<<"$TABLE"
exit $bad
