#!/usr/bin/env bash
# test_cluster.sh: the chapters across real nodes (listed in tests/cluster.tests).
# 2 nodes of scripts/cluster.sh with 2 ranks each; every run is compared
# with the same 4 ranks on one node, bit for bit. Usage:
#   test_cluster.sh missing        prints what this machine lacks for the nodes (exit 1), or nothing
#   test_cluster.sh up             brings the 2 nodes up: own hostnames, own /dev/shm, one launch
#   test_cluster.sh down           takes them down: no namespace, process or file left
#   test_cluster.sh allreduce FLAGS...     02_allreduce's rows and their checks, both ways
#   test_cluster.sh same PROG FLAGS...     a trainer's losses and weights, both ways
#   test_cluster.sh binding        a rank on each node, each free to run on every core of the machine
#   test_cluster.sh node-kill      node2's processes killed mid-run: the job ends by itself, resumes bit for bit
#   test_cluster.sh link-cut       node2's link cut mid-run: node1's ranks end naming ranks 2-3, resume bit for bit
#   test_cluster.sh two           two more clusters up at once: each its own; one's down leaves the other whole
#   test_cluster.sh missing-slurm  prints what this machine lacks for Slurm on the nodes (exit 1), or nothing
#   test_cluster.sh slurm FLAGS... scripts/slurm/10_nd_llama.sh through Slurm on 2 nodes of its own, both ways
# A case run while no cluster is up brings one up for itself and takes it
# down after (a filtered run); in the whole file, `up` and `down` do it once.
set -euo pipefail
cd "$(dirname "$0")/.."
CMP=./build/tests/compare
# The nodes' daemons start without the test runner's environment: PMIx's
# choice of data store (tests/run.sh) must not differ between them and mpirun.
unset PMIX_MCA_gds
# this run's own cluster (tests/cluster.tests names it after the test run), so
# that two runs side by side each have theirs
export CLUSTER_ID=${CLUSTER_ID:-t$$}
C=build/cluster-$CLUSTER_ID
NS=dtc$CLUSTER_ID
dir=$(mktemp -d /tmp/cluster_test.XXXXXX)
own=0
others=()   # the ids of further clusters a case brought up
cleanup() {
    rm -rf "$dir"
    if [ $own = 1 ]; then bash scripts/cluster.sh down >/dev/null; fi
    for o in "${others[@]}"; do CLUSTER_ID=$o bash scripts/cluster.sh down >/dev/null; done
}
trap cleanup EXIT
trap "exit 1" INT TERM   # a hang guard's signal still takes this case's nodes down

up() { bash scripts/cluster.sh down >/dev/null && bash scripts/cluster.sh up 2 --ranks-per-node 2 --gbps 1; }
need_cluster() { [ -e $C/nodes ] || { own=1; up >/dev/null; }; }

# the bytes node1 has sent through its network interface
node1_tx() { ip -n $NS-node1 -s link show eth0 | awk '/TX:/ { getline; print $1 }'; }

local_run() {  # LOG PROG FLAGS...: 4 ranks on this machine, shared memory between them
    local log=$1; shift
    mpirun -np 4 "$@" >"$log" 2>&1 || { echo "run failed: mpirun -np 4 $*"; tail -n 20 "$log"; exit 1; }
}
# start_until_checkpoint STEP FLAGS...: 03_ddp/ddp on the 4 ranks of the 2 nodes in
# the background (its mpirun's pid in $pid, its log in $dir/a.log), returning once
# its checkpoint of STEP exists in $dir/ckpt (at most 60 s)
start_until_checkpoint() {
    local step=$1 meta; meta=$(printf '%s/ckpt/step_%08d/meta.ckpt' "$dir" "$1"); shift
    $C/login mpirun --hostfile $C/hosts --mca plm_rsh_agent $C/agent --mca btl self,vader,tcp \
        -np 4 ./03_ddp/ddp "$@" >"$dir/a.log" 2>&1 &
    pid=$!
    for _ in $(seq 1200); do
        [ -e "$meta" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.05
    done
    [ -e "$meta" ] || { echo "error: no checkpoint of step $step within 60 s"; tail -n 5 "$dir/a.log"; kill $pid; exit 1; }
}
cluster_run() {  # LOG PROG FLAGS...: 2 ranks on each of 2 nodes, TCP between the nodes
    local log=$1; shift
    local tx0; tx0=$(node1_tx)
    $C/login mpirun --hostfile $C/hosts --mca plm_rsh_agent $C/agent --mca btl self,vader,tcp \
        -np 4 "$@" >"$log" 2>&1 || { echo "run failed on the cluster: mpirun -np 4 $*"; tail -n 20 "$log"; exit 1; }
    local sent=$(($(node1_tx) - tx0))
    echo "node1 sent $sent bytes to node2 through its link"
    [ "$sent" -gt 10000 ] || { echo "error: the run never crossed between the nodes"; exit 1; }
}

case "$1" in
missing)
    [ "$(id -u)" = 0 ] || { echo "root"; exit 1; }
    for c in ip tc unshare nsenter; do command -v $c >/dev/null || { echo "the '$c' command"; exit 1; }; done
    ip netns add $NS-probe 2>/dev/null || { echo "network namespaces (ip netns add failed)"; exit 1; }
    ip netns del $NS-probe
    ;;
link-cut)  # node2's link set down once the checkpoint of step 4 exists (a checkpoint
    # every step, so that one may be cut mid-save): the ranks on node1 end by
    # their watchdog, naming ranks 2 and 3 as the far side, instead of waiting
    # forever; the last checkpoint taken as complete resumes bit for bit.
    # mpirun itself waits on node2's daemon while the link is down (it ends
    # only once the link is back), so the test ends it.
    need_cluster
    base=(--device "${DEV:-cpu}" --threads 1 --dim 64 --layers 2 --heads 4 --kv-heads 2 --seq 64 --vocab 64
          --batch 12 --lr 3e-3 --steps 40 --timeout-s 5)
    flags=("${base[@]}" --ckpt-every 1 --ckpt-dir "$dir/ckpt")
    local_run "$dir/ref.log" ./03_ddp/ddp "${base[@]}" --save-final "$dir/ref.bin"
    start_until_checkpoint 4 "${flags[@]}"
    ip -n $NS-node2 link set eth0 down
    t0=$(date +%s%N)
    ranks1() { for p in $(ip netns pids $NS-node1); do if [ "$(cat /proc/$p/comm 2>/dev/null)" = ddp ]; then echo $p; fi; done; }
    for _ in $(seq 600); do [ -z "$(ranks1)" ] && break; sleep 0.1; done   # at most 60 s
    left=$(ranks1)
    ip -n $NS-node2 link set eth0 up
    kill -9 $pid 2>/dev/null || true
    for p in $(ip netns pids $NS-node1) $(ip netns pids $NS-node2); do   # the job's rest, not the nodes' holders
        grep -qx "$p" <(awk '{ print $3 }' $C/nodes) || kill -9 "$p" 2>/dev/null || true
    done
    wait $pid 2>/dev/null || true
    [ -z "$left" ] || { echo "error: node1's ranks (processes $left) still ran 60 s after node2's link was cut"; exit 1; }
    echo "node1's ranks ended $((($(date +%s%N) - t0) / 1000000)) ms after node2's link was cut (--timeout-s 5)"
    # the first rank whose watchdog fires names the far side; node1's daemon
    # then ends the other rank, often before its own watchdog fires
    grep -m1 -E "^error \(rank [01]\): no progress.*ranks 2, 3 are of unknown state" "$dir/a.log" ||
        { echo "error: no rank on node1 named ranks 2, 3 as the far side"; tail -n 20 "$dir/a.log"; exit 1; }
    echo "$(grep -c -E '^error \(rank [01]\): no progress' "$dir/a.log") of node1's 2 ranks printed the watchdog's line"
    [ ! -e "$dir/ckpt/step_00000040" ] || { echo "error: the run finished before the link was cut"; exit 1; }
    echo "checkpoints left: $(cd "$dir/ckpt" && for c in step_*; do [ -e $c/meta.ckpt ] && echo -n "$c " || echo -n "$c(partial) "; done)"
    # resumed on one node: from the last complete checkpoint, to the uninterrupted end
    local_run "$dir/b.log" ./03_ddp/ddp "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
two)  # clusters a and ab brought up at the same time, as two test runs side by side
    # (ab's names begin with a's): both come up; a's down removes a's namespaces,
    # processes and files and leaves every piece of ab working
    a=${CLUSTER_ID}a; b=${CLUSTER_ID}ab; others=("$a" "$b")
    CLUSTER_ID=$a bash scripts/cluster.sh up 2 >"$dir/a.up" 2>&1 & pa=$!
    CLUSTER_ID=$b bash scripts/cluster.sh up 2 >"$dir/b.up" 2>&1 & pb=$!
    st=0; wait $pa || st=1; wait $pb || st=1
    [ $st = 0 ] || { echo "error: the two clusters did not both come up"; cat "$dir/a.up" "$dir/b.up"; exit 1; }
    holders=$(awk '{ print $3 }' build/cluster-$b/nodes)
    CLUSTER_ID=$a bash scripts/cluster.sh down
    [ -z "$(ip netns list | grep "^dtc$a-")" ] && [ ! -e build/cluster-$a ] ||
        { echo "error: cluster $a's pieces are left after its down"; exit 1; }
    [ "$(ip netns list | grep -c "^dtc$b-")" = 3 ] ||
        { echo "error: cluster $a's down took cluster $b's namespaces: $(ip netns list | tr '\n' ' ')"; exit 1; }
    for p in $holders; do kill -0 "$p" 2>/dev/null || { echo "error: cluster $b's holder $p is gone"; exit 1; }; done
    [ "$(build/cluster-$b/agent node2 hostname)" = node2 ] || { echo "error: cluster $b's agent no longer reaches node2"; exit 1; }
    # a node's link dies with its peer on the bridge
    ip -n dtc$b-node2 -br link show eth0 | grep -qw UP || { echo "error: cluster $b's node2 lost its link"; exit 1; }
    echo "clusters $a and $b were up at once; $a's down left $b whole"
    ;;
missing-slurm)
    for c in munged slurmctld slurmd sbatch sinfo; do command -v $c >/dev/null || { echo "Slurm and munge (no '$c'; Debian: slurm-wlm munge)"; exit 1; }; done
    ;;
up)
    # the clusters of earlier test runs that ended without their `down` (the
    # runner killed): each is named after its run's process, gone now
    for o in $(ip netns list | sed -n 's/^dtc\(t[0-9][0-9]*[a-z]*\)-.*/\1/p' | sort -u); do
        kill -0 "${o//[!0-9]/}" 2>/dev/null || CLUSTER_ID=$o bash scripts/cluster.sh down >/dev/null
    done
    up
    # each rank says its host, whether it sees node1's /dev/shm file, and the hostfile's order
    ip netns exec $NS-node1 true   # the namespaces exist
    $C/agent node1 "touch /dev/shm/cluster_test_mark"
    $C/login mpirun --hostfile $C/hosts --mca plm_rsh_agent $C/agent --mca btl self,vader,tcp -np 4 \
        sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname) $(ls /dev/shm/cluster_test_mark 2>/dev/null | wc -l)"' \
        | sort -n | tee "$dir/ranks"
    printf '0 node1 1\n1 node1 1\n2 node2 0\n3 node2 0\n' | diff - "$dir/ranks" ||
        { echo "error: expected ranks 0-1 on node1 (seeing its /dev/shm file), 2-3 on node2 (not seeing it)"; exit 1; }
    [ ! -e /dev/shm/cluster_test_mark ] || { echo "error: node1's /dev/shm is this machine's"; exit 1; }
    ;;
down)
    holders=$(awk '{ print $3 }' $C/nodes 2>/dev/null || true)
    bash scripts/cluster.sh down
    bash scripts/cluster.sh down   # twice is safe
    for p in $holders; do
        ! kill -0 "$p" 2>/dev/null || { echo "error: process $p, which held a node, still runs"; exit 1; }
    done
    left=$(ip netns list | grep -c "^$NS-" || true)
    [ "$left" = 0 ] || { echo "error: $left namespaces left: $(ip netns list)"; exit 1; }
    [ ! -e $C ] || { echo "error: $C left behind"; exit 1; }
    echo "no namespace, no holder process and no $C left"
    ;;
allreduce)  # FLAGS...: every row of both runs exact (the program checks every element), the same rows
    shift; need_cluster
    local_run "$dir/a.log" ./02_allreduce/allreduce "$@" --csv "$dir/a.csv"
    cluster_run "$dir/b.log" ./02_allreduce/allreduce "$@" --csv "$dir/b.csv"
    # op, algo, ranks, size, count, dtype and wrong elements: all but the times
    for x in a b; do cut -d, -f1-6,13 "$dir/$x.csv" >"$dir/$x.rows"; done
    diff "$dir/a.rows" "$dir/b.rows" || { echo "error: the rows differ (op,algo,ranks,size,count,dtype,wrong)"; exit 1; }
    awk -F, 'NR > 1 && $13 != 0 { bad++ } END { print NR - 1 " rows on both, every element exact"; exit bad > 0 }' "$dir/b.csv"
    ;;
binding)  # one rank per node, each free to run on every core: the nodes share this
    # machine's cores, and Open MPI binds a job of 2 ranks to cores, each node's
    # rank to its core 0, the same core for both
    need_cluster
    want=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
    got=$($C/login mpirun --hostfile $C/hosts --mca plm_rsh_agent $C/agent -np 2 --map-by node \
        sh -c 'echo "$(hostname) $(awk "/^Cpus_allowed_list/ { print \$2 }" /proc/self/status)"')
    echo "$got"
    bad=$(echo "$got" | awk -v w="$want" '$2 != w')
    [ -z "$bad" ] || { echo "error: ranks confined to fewer cores than the machine's $want:"; echo "$bad"; exit 1; }
    ;;
same)  # PROG FLAGS...: 4 ranks on one node against 2 x 2 across the nodes, bit for bit
    prog=$2; shift 2; need_cluster
    local_run "$dir/a.log" "$prog" "$@" --save-final "$dir/a.bin"
    cluster_run "$dir/b.log" "$prog" "$@" --save-final "$dir/b.bin"
    grep '^step' "$dir/b.log" | tail -n 1
    $CMP "$dir/b.bin" "$dir/a.bin" --exact
    ;;
node-kill)  # every process of node2 (its Open MPI daemon and ranks 2-3) killed once the
    # checkpoint of step 8 exists: the job ends by itself (no rank left waiting); resumed
    # on the 2 nodes, the run ends bit for bit as one that was never interrupted
    need_cluster
    # (60 steps of a model large enough that step 8's checkpoint is there to
    # see for several polls on a fast machine: 40 tiny steps ended in 0.13 s)
    base=(--device "${DEV:-cpu}" --threads 1 --dim 64 --layers 2 --heads 4 --kv-heads 2 --seq 64 --vocab 64
          --batch 12 --lr 3e-3 --steps 60 --timeout-s 20)
    flags=("${base[@]}" --ckpt-every 4 --ckpt-dir "$dir/ckpt")
    cluster_run "$dir/ref.log" ./03_ddp/ddp "${base[@]}" --save-final "$dir/ref.bin"
    start_until_checkpoint 8 "${flags[@]}"
    holder=$(awk '$1 == "node2" { print $3 }' $C/nodes)
    victims=$(ip netns pids $NS-node2 | grep -vx "$holder" || true)
    [ -n "$victims" ] || { echo "error: no process of the job on node2"; exit 1; }
    kill -9 $victims
    t0=$(date +%s%N)
    wait $pid && { echo "error: the job ended with status 0 after node2 was killed"; exit 1; }
    echo "the job ended $((($(date +%s%N) - t0) / 1000000)) ms after node2's processes were killed"
    # what mpirun says: in most runs the lost daemon's node, in some only that a daemon failed
    grep -E -m2 'node2|10\.77\.0\.2[^0-9]|daemon' "$dir/a.log" || true
    [ ! -e "$dir/ckpt/step_00000060" ] || { echo "error: the run finished before node2 was killed"; exit 1; }
    echo "checkpoints left: $(ls "$dir/ckpt" | tr '\n' ' ')"
    cluster_run "$dir/b.log" ./03_ddp/ddp "${flags[@]}" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    $CMP "$dir/b.bin" "$dir/ref.bin" --exact
    ;;
slurm)  # FLAGS...: the chapter 10 job script submitted with sbatch on 2 nodes x 2 tasks
    # of a Slurm cluster of its own (beside the file's nodes): the job ends with
    # status 0 and trains bit for bit as the same mesh of 4 ranks on one node
    shift
    export CLUSTER_ID=${CLUSTER_ID}s; C=build/cluster-$CLUSTER_ID; NS=dtc$CLUSTER_ID
    own=1; bash scripts/cluster.sh down >/dev/null
    bash scripts/cluster.sh up 2 --ranks-per-node 2 --slurm | grep -i slurm
    local_run "$dir/a.log" ./10_nd_llama/train "$@" --tp 2 --dp 2 --save-final "$dir/a.bin"
    tx0=$(node1_tx)
    # the runner's transports would keep the ranks off TCP between the nodes
    st=0; env -u OMPI_MCA_btl $C/login sbatch --wait --nodes 2 --ntasks-per-node 2 --output "$dir/job.out" \
        scripts/slurm/10_nd_llama.sh "$@" --save-final "$dir/b.bin" >"$dir/sbatch.out" 2>&1 || st=$?
    cat "$dir/sbatch.out"
    [ $st = 0 ] || { echo "error: the job ended with status $st"; tail -n 20 "$dir/job.out"; exit 1; }
    sent=$(($(node1_tx) - tx0))
    echo "node1 sent $sent bytes to node2 through its link"
    [ "$sent" -gt 10000 ] || { echo "error: the job never crossed between the nodes"; exit 1; }
    grep '^step' "$dir/job.out" | tail -n 1 | grep . || { echo "error: no step line in the job's output"; tail -n 20 "$dir/job.out"; exit 1; }
    $CMP "$dir/b.bin" "$dir/a.bin" --exact
    ;;
*)
    echo "error: unknown case '$1'" >&2; exit 2 ;;
esac
