#!/usr/bin/env bash
# cluster.sh: several real nodes on this Linux machine, so that the suite's
# programs cross a real network boundary. Each node is a network namespace
# with its own hostname (UTS namespace) and its own /dev/shm (a mount
# namespace with a tmpfs there), joined to the others by a veth pair into a
# bridge; the bridge lives in a "login" namespace, from which mpirun starts
# the nodes' daemons through a small agent (Open MPI's plm_rsh_agent, the
# place ssh takes on a real cluster). Without the own hostname and /dev/shm,
# Open MPI would take another node's ranks for local ones and try shared
# memory with them.
#
# Every link (node to bridge, both directions) is shaped to the nominal rate
# with the queueing discipline this kernel offers (tbf or htb; a delay needs
# netem, which not every kernel has: `up` says what it found).
#
# Usage: scripts/cluster.sh up N [--gbps X] [--ranks-per-node R] [--qdisc tbf|htb]
#                              [--burst BYTES] [--queue BYTES] [--slurm]
#        scripts/cluster.sh down      remove everything `up` made (safe to repeat)
#        scripts/cluster.sh status    the nodes, their links and byte counters
#        scripts/cluster.sh tcp A B [SECONDS]   TCP throughput from node A to node B
# --gbps is the link's rate in Gbit/s, as network links are quoted (default 1;
# the link model's --inter-gbps is in GB/s: 1 Gbit/s = 0.125 GB/s); a node runs
# --ranks-per-node ranks (default 2; the hostfile's slots). --qdisc, --burst
# and --queue: how the rate is kept (default tbf, a 4 ms bucket, a 32 ms queue).
# --slurm makes the nodes a Slurm cluster: slurmctld and munged on the login
# side, one slurmd on each node (R CPUs each), one partition; `login sbatch`
# then submits as on a real cluster's login node (needs Debian's slurm-wlm
# and munge).
# Several clusters can be up at once, each under its own CLUSTER_ID (letters
# and digits; unset: the one cluster): every command acts on that cluster
# alone, its namespaces are dtcID-* (not dtc-*, which the one cluster has),
# its files build/cluster-ID.
# Needs root and the `ip`, `tc`, `unshare` and `nsenter` commands.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "error: $*" >&2; exit 2; }
id=${CLUSTER_ID:-}
[[ $id =~ ^[A-Za-z0-9]{0,16}$ ]] || fail "CLUSTER_ID must be up to 16 letters and digits, got '$id'"
DIR=build/cluster${id:+-$id}   # hosts, agent, login, and the state `down` reads
PREFIX=dtc$id                  # this cluster's namespaces: $PREFIX-login, $PREFIX-nodeI
NET=10.77.0                    # node i is $NET.i; the login namespace is $NET.254

usage() { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

node_ns() { echo "$PREFIX-node$1"; }
# this cluster's namespaces (and none of another cluster's)
own_ns() { ip netns list 2>/dev/null | awk -v p="$PREFIX" '$1 ~ "^" p "-(login|probe|node[0-9]+)$" { print $1 }'; }

down() {
    # Every process still inside a node or the login namespace (ranks, orted,
    # the holders of the nodes' namespaces) is ended by its id, then the
    # namespaces go, and with them the veths, the bridge and the qdiscs.
    local ns pids="" p
    for ns in $(own_ns); do
        pids="$pids $(ip netns pids "$ns" 2>/dev/null || true)"
    done
    # a node's holder keeps its namespaces alive even when their names are
    # gone (removed by hand, or by an older down): ended by its recorded id
    if [ -e "$DIR/nodes" ]; then
        for p in $(awk '{ print $3 }' "$DIR/nodes"); do
            [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ] && pids="$pids $p"
        done
    fi
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    for p in $pids; do   # a killed process takes a moment to be gone
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    done
    for ns in $(own_ns); do
        ip netns del "$ns"
    done
    rm -rf "$DIR"
}

# shape DEV NS: the egress of DEV (in namespace NS) at $gbps, with $qdisc.
# tbf: rate, bucket $burst bytes, queue $queue bytes. htb: one class at the
# rate with the same bucket (htb's burst and cburst), its queue a bfifo of
# $queue bytes.
shape() {
    local dev=$1 ns=$2 rate="${gbps}gbit"
    if [ "$qdisc" = tbf ]; then
        ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" limit "$queue"
    else
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 1
        ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
            burst "$burst" cburst "$burst" quantum 60000
        ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 bfifo limit "$queue"
    fi
}

# What this kernel offers for shaping: a qdisc kind is there when a
# namespace's loopback takes it.
detect_qdiscs() {
    local ns="$PREFIX-probe" kind found=()
    ip netns add "$ns"
    for kind in tbf htb netem; do
        case $kind in
        tbf) args=(rate 1gbit burst 64kb limit 64kb) ;;
        htb) args=(default 1) ;;
        netem) args=(delay 1ms) ;;
        esac
        if ip netns exec "$ns" tc qdisc add dev lo root "$kind" "${args[@]}" 2>/dev/null; then
            found+=("$kind"); ip netns exec "$ns" tc qdisc del dev lo root
        fi
    done
    ip netns del "$ns"
    echo "${found[*]}"
}

up() {
    [ $# -ge 1 ] || fail "up needs the number of nodes (scripts/cluster.sh up N)"
    n=$1; shift
    gbps=1; ranks=2; qdisc=tbf; burst=""; queue=""; slurm=0
    while [ $# -gt 0 ]; do
        case $1 in
        --gbps) gbps=${2:-}; shift 2 || fail "--gbps needs a value" ;;
        --ranks-per-node) ranks=${2:-}; shift 2 || fail "--ranks-per-node needs a value" ;;
        --qdisc) qdisc=${2:-}; shift 2 || fail "--qdisc needs a value" ;;
        --burst) burst=${2:-}; shift 2 || fail "--burst needs a value" ;;
        --queue) queue=${2:-}; shift 2 || fail "--queue needs a value" ;;
        --slurm) slurm=1; shift ;;
        *) fail "unknown flag '$1' (see --help)" ;;
        esac
    done
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || fail "N must be 1 to 64 nodes, got '$n'"
    [[ $ranks =~ ^[0-9]+$ ]] && [ "$ranks" -ge 1 ] || fail "--ranks-per-node must be a positive integer, got '$ranks'"
    awk -v g="$gbps" 'BEGIN { exit !(g ~ /^[0-9]*\.?[0-9]+$/ && g > 0 && g <= 100) }' ||
        fail "--gbps must be a number in (0, 100], got '$gbps'"
    [ "$qdisc" = tbf ] || [ "$qdisc" = htb ] || fail "--qdisc must be tbf or htb, got '$qdisc'"
    # The bucket: what the link sends at line speed before the rate holds it
    # back. Through tbf, TCP reaches the nominal rate only when the bucket
    # holds a few of its segments (64 KiB with segmentation offload): 4 ms
    # at the rate, at least 256 KiB. The queue: 32 ms at the rate, at least
    # 1 MiB; a queue of one bucket dropped MPI's bursts (thousands of
    # drops in a run). Measured in CLUSTER.md.
    [ -n "$burst" ] || burst=$(awk -v g="$gbps" 'BEGIN { b = g * 1e9 / 8 * 0.004; printf "%d", b < 262144 ? 262144 : b }')
    [ -n "$queue" ] || queue=$(awk -v g="$gbps" 'BEGIN { b = g * 1e9 / 8 * 0.032; printf "%d", b < 1048576 ? 1048576 : b }')
    [[ $burst =~ ^[0-9]+$ ]] && [ "$burst" -ge 2000 ] || fail "--burst must be at least 2000 bytes, got '$burst'"
    [[ $queue =~ ^[0-9]+$ ]] && [ "$queue" -ge 2000 ] || fail "--queue must be at least 2000 bytes, got '$queue'"
    [ "$(id -u)" = 0 ] || fail "up needs root (network namespaces)"
    local c
    for c in ip tc unshare nsenter; do command -v $c >/dev/null || fail "up needs the '$c' command"; done
    if [ $slurm = 1 ]; then
        for c in munged slurmctld slurmd sbatch sinfo; do
            command -v $c >/dev/null || fail "--slurm needs Slurm and munge (no '$c' command; on Debian: apt-get install slurm-wlm munge)"
        done
    fi
    [ -z "$(own_ns)" ] && [ ! -e "$DIR" ] ||
        fail "a cluster is up already${id:+ under CLUSTER_ID=$id} (scripts/cluster.sh down first)"

    trap 'echo "cluster: setup failed; removing what was made" >&2; down' EXIT
    local kinds; kinds=$(detect_qdiscs)
    echo "cluster: this kernel shapes with: ${kinds:-nothing}${kinds:+ }$(case " $kinds " in *" netem "*) ;; *) echo "(no netem: links get a rate, no added delay)" ;; esac)"
    case " $kinds " in *" $qdisc "*) ;; *) fail "this kernel has no $qdisc qdisc";; esac
    mkdir -p "$DIR"
    local login="$PREFIX-login" i ns
    ip netns add "$login"
    ip -n "$login" link set lo up
    ip -n "$login" link add br0 type bridge
    ip -n "$login" addr add "$NET.254/24" dev br0
    ip -n "$login" link set br0 up
    : >"$DIR/hosts"; : >"$DIR/nodes"
    for i in $(seq 1 "$n"); do
        ns=$(node_ns "$i")
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # eth0 in the node, port$i on the bridge in the login namespace.
        ip -n "$ns" link add eth0 type veth peer name "port$i" netns "$login"
        ip -n "$ns" addr add "$NET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$login" link set "port$i" master br0 up
        shape eth0 "$ns"; shape "port$i" "$login"
        # The holder: a process that keeps the node's hostname and /dev/shm
        # (a UTS and a mount namespace) alive; the agent enters them.
        setsid ip netns exec "$ns" unshare --uts --mount --propagation private sh -c \
            "hostname node$i && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && echo \$\$ > '$PWD/$DIR/holder$i' && exec sleep infinity" \
            </dev/null >/dev/null 2>&1 &
        disown
        for _ in $(seq 100); do [ -s "$DIR/holder$i" ] && break; sleep 0.05; done
        [ -s "$DIR/holder$i" ] || fail "node$i's namespaces did not start"
        echo "node$i $NET.$i $(cat "$DIR/holder$i")" >>"$DIR/nodes"; rm "$DIR/holder$i"
        echo "node$i slots=$ranks" >>"$DIR/hosts"
    done
    echo "$qdisc $gbps $burst $queue" >"$DIR/link"
    write_agent; write_login
    [ $slurm = 0 ] || start_slurm "$n"
    trap - EXIT
    echo "cluster: $n nodes x $ranks ranks, links $gbps Gbit/s each way ($qdisc, bucket $burst B, queue $queue B), $NET.0/24"
    echo "cluster: run   $DIR/login mpirun --hostfile $DIR/hosts --mca plm_rsh_agent $DIR/agent -np $((n * ranks)) ..."
    [ $slurm = 0 ] || echo "cluster: Slurm $DIR/login sbatch --nodes $n --ntasks-per-node $ranks scripts/slurm/03_ddp.sh"
    echo "cluster: stop  ${id:+CLUSTER_ID=$id }scripts/cluster.sh down"
}

# The agent Open MPI calls instead of ssh: `agent HOST COMMAND...` runs the
# command in HOST's namespaces (network, hostname, /dev/shm) through a shell,
# as ssh would on the far side.
# The nodes share this machine's cores with each other and with whatever
# else runs here, so a waiting rank yields its core (sched_yield, nearly free
# when nothing else wants the core): Open MPI spins otherwise, and a spinning
# rank holds up the one it waits for. On 2 loaded cores an all-reduce of 4
# bytes across the nodes took 40-180 ms instead of about 0.1 ms, and one of
# 16 MiB ran at a seventh of the link's rate.
write_agent() {
    cat >"$DIR/agent" <<EOF
#!/bin/sh
# Open MPI's launch agent for the nodes of scripts/cluster.sh: agent HOST CMD...
host=\$1; shift
export OMPI_MCA_mpi_yield_when_idle=1
pid=\$(awk -v h="\$host" '\$1 == h || \$2 == h { print \$3 }' "$PWD/$DIR/nodes")
[ -n "\$pid" ] || { echo "error: \$host is not a node of this cluster ($PWD/$DIR/nodes)" >&2; exit 2; }
exec nsenter -t "\$pid" -n -u -m -- /bin/sh -c "cd '\$PWD' 2>/dev/null; \$*"
EOF
    chmod +x "$DIR/agent"
}

# start_slurm N: munged (with a key of this cluster's own) and slurmctld in
# the login namespace, a slurmd inside each node's namespaces; every file
# under $DIR/slurm, every process inside the namespaces, so that `down`
# removes them with the rest. Returns once every node is idle in Slurm.
# Each slurmd has its node's hostname and address, so the Slurm build needs
# no support for several slurmd on one host.
start_slurm() {
    local n=$1 s="$PWD/$DIR/slurm" i
    mkdir -p "$s/munge" "$s/state"
    chmod 700 "$s/munge"
    head -c 1024 /dev/urandom >"$s/munge/key"; chmod 400 "$s/munge/key"
    {
        echo "# Slurm for the nodes of scripts/cluster.sh (written by its --slurm)"
        echo "ClusterName=${PREFIX}"
        echo "SlurmctldHost=$(hostname)($NET.254)"
        echo "SlurmUser=root"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$s/munge/socket"
        echo "StateSaveLocation=$s/state"
        echo "SlurmdSpoolDir=$s/%n"
        echo "SlurmctldPidFile=$s/slurmctld.pid"
        echo "SlurmdPidFile=$s/%n.pid"
        echo "SlurmctldLogFile=$s/slurmctld.log"
        echo "SlurmdLogFile=$s/%n.log"
        # no cgroups, no accounting: processes tracked by their parents
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "MpiDefault=none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_CPU"
        # the nodes share this machine's cores: a node has the CPUs it is
        # given here, not the ones slurmd counts
        echo "SlurmdParameters=config_overrides"
        echo "ReturnToService=2"
        for i in $(seq 1 "$n"); do
            echo "NodeName=node$i NodeAddr=$NET.$i CPUs=$ranks State=UNKNOWN"
        done
        echo "PartitionName=nodes Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } >"$s/slurm.conf"
    # slurmd starts a cgroup plugin even when nothing uses it; the one the
    # kernel mounts at /sys/fs/cgroup (v1 beside v2's unified tree is not
    # detected by itself)
    if [ -e /sys/fs/cgroup/cgroup.controllers ]; then echo "CgroupPlugin=cgroup/v2"; else echo "CgroupPlugin=cgroup/v1"; fi >"$s/cgroup.conf"
    export SLURM_CONF="$s/slurm.conf"
    ip netns exec "$PREFIX-login" munged --force --socket="$s/munge/socket" --key-file="$s/munge/key" \
        --pid-file="$s/munge/pid" --log-file="$s/munge/log" --seed-file="$s/munge/seed" ||
        fail "munged did not start: $(tail -n 2 "$s/munge/log" 2>/dev/null)"
    ip netns exec "$PREFIX-login" slurmctld </dev/null || fail "slurmctld did not start: $(tail -n 2 "$s/slurmctld.log" 2>/dev/null)"
    for i in $(seq 1 "$n"); do
        nsenter -t "$(awk -v h="node$i" '$1 == h { print $3 }' "$DIR/nodes")" -n -u -m -- slurmd </dev/null ||
            fail "node$i's slurmd did not start: $(tail -n 2 "$s/node$i.log" 2>/dev/null)"
    done
    for _ in $(seq 600); do   # at most 60 s for every slurmd to register
        [ "$(ip netns exec "$PREFIX-login" sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" = "$n" ] && return 0
        sleep 0.1
    done
    ip netns exec "$PREFIX-login" sinfo -N >&2 || true
    fail "the nodes did not come up idle in Slurm within 60 s: $(tail -q -n 2 "$s"/*.log)"
}

# login CMD...: runs CMD in the login namespace (on the nodes' network, under
# this machine's own hostname), where mpirun starts the job as on a login node.
write_login() {
    cat >"$DIR/login" <<EOF
#!/bin/sh
# Runs a command on the login side of the nodes of scripts/cluster.sh.
# The nodes share this machine's cores: Open MPI would bind each node's first
# rank to core 0, the same core on every node, so placement is left to the
# kernel, as on nodes that each have cores of their own.
export OMPI_MCA_hwloc_base_binding_policy=none
$([ $slurm = 0 ] || printf '%s\n' "# Slurm's commands find this cluster's Slurm; its jobs' ranks yield their core, as the agent's do" \
    "export SLURM_CONF='$PWD/$DIR/slurm/slurm.conf' OMPI_MCA_mpi_yield_when_idle=1")
exec ip netns exec $PREFIX-login "\$@"
EOF
    chmod +x "$DIR/login"
}

status() {
    [ -e "$DIR/nodes" ] || { echo "cluster: down"; return 0; }
    local name ip pid
    while read -r name ip pid; do
        echo "$name $ip (holder $pid): $(ip -n "$PREFIX-$name" -s link show eth0 </dev/null | awk '/RX:/ { getline; rx = $1 } /TX:/ { getline; tx = $1 } END { printf "rx %d B, tx %d B", rx, tx }')"
        ip netns exec "$PREFIX-$name" tc qdisc show dev eth0 </dev/null | sed 's/^/    /'
    done <"$DIR/nodes"
}

# tcp A B [SECONDS]: one TCP stream from node A to node B for SECONDS
# (default 3); prints the goodput the receiver counted against the nominal rate.
tcp() {
    [ -e "$DIR/nodes" ] || fail "no cluster is up (scripts/cluster.sh up N first)"
    local a=${1:-} b=${2:-} secs=${3:-3} pa pb ipb
    pa=$(awk -v h="$a" '$1 == h { print $3 }' "$DIR/nodes"); pb=$(awk -v h="$b" '$1 == h { print $3 }' "$DIR/nodes")
    ipb=$(awk -v h="$b" '$1 == h { print $2 }' "$DIR/nodes")
    [ -n "$pa" ] && [ -n "$pb" ] && [ "$a" != "$b" ] || fail "tcp needs two different nodes, e.g. tcp node1 node2"
    [[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -ge 1 ] || fail "SECONDS must be a positive integer, got '$secs'"
    nsenter -t "$pb" -n -- python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5201)); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0; t0 = time.time()
while True:
    d = c.recv(1 << 20)
    if not d: break
    n += len(d)
t = time.time() - t0
print("%d bytes in %.2f s: %.3f Gbit/s" % (n, t, n * 8 / t / 1e9))' "$ipb" >"$DIR/tcp.out" &
    local rx=$!
    for _ in $(seq 100); do grep -q ready "$DIR/tcp.out" 2>/dev/null && break; sleep 0.05; done
    nsenter -t "$pa" -n -- python3 -c '
import socket, sys, time
c = socket.create_connection((sys.argv[1], 5201)); buf = b"x" * (1 << 20); end = time.time() + float(sys.argv[2])
while time.time() < end: c.sendall(buf)
c.close()' "$ipb" "$secs"
    wait $rx
    echo "$a -> $b: $(tail -n 1 "$DIR/tcp.out") (nominal $(awk '{ print $2 }' "$DIR/link") Gbit/s)"
    rm -f "$DIR/tcp.out"
}

case ${1:-} in
up) shift; up "$@" ;;
down) down; echo "cluster: down" ;;
status) status ;;
tcp) shift; tcp "$@" ;;
-h|--help|help) usage ;;
*) fail "unknown command '${1:-}' (up, down, status, tcp; see --help)" ;;
esac
