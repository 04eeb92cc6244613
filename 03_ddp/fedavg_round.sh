#!/usr/bin/env bash
# fedavg_round.sh [CSV] [FLAGS...]: the phases of federated averaging's
# rounds, per client, for fedavg_round.png: a short fedavg run (3 rounds, 4
# of 16 clients per round, E 2, a deadline of 60 simulated seconds) writes
# its own record of every selected client (--clients-csv: samples n_k,
# speed s_k, simulated seconds E n_k / s_k, dropped), and each round is laid
# out on the simulated clock the run uses:
#   broadcast  the server sends the weights, 4 P bytes, to each selected client
#   local      E epochs of local SGD: E n_k / s_k seconds (the run's record);
#              a straggler over the deadline D is cut off at D and dropped
#   upload     the client sends its weights back, 4 P bytes (finishers only)
#   average    the server's weighted average sum n_k w_k / sum n_k, when the
#              last upload has arrived (or the deadline has passed, if a
#              client was dropped); the next round starts there
# The transfers are priced at LINK_MBPS (default 0.1) MB per simulated
# second, a slow mobile link (0.8 Mbit/s); P comes from the run's bytes per
# round. Flags after
# CSV go to the fedavg run. Rows (replaced):
#   round,client,rank,samples,speed,seconds,dropped,local_epochs,deadline,weight_bytes,link_mbps,phase,start,end
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/fedavg_round.csv}
shift || true
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d /tmp/fedavg_round.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
E=2 D=60
mpirun -np 2 ./03_ddp/fedavg --dim 64 --heads 4 --kv-heads 2 --layers 2 --seq 32 --batch 8 --threads 1 --steps 3 \
    --clients 16 --client-samples 24 --alpha 0.5 --fraction 0.25 --local-epochs $E --deadline $D \
    --clients-csv "$tmp/clients.csv" --fed-csv "$tmp/fed.csv" "$@" > /dev/null
# 4 P bytes: a round's MB are 4 P (2 selected - dropped) / 1e6
bytes=$(awk -F, 'NR == 2 { printf "%.0f", $11 * 1e6 / (2 * $7 - $8) }' "$tmp/fed.csv")
awk -F, -v E=$E -v D=$D -v bytes="$bytes" -v mbps="${LINK_MBPS:-0.1}" '
    NR == 1 { print "round,client,rank,samples,speed,seconds,dropped,local_epochs,deadline,weight_bytes,link_mbps,phase,start,end"; next }
    function finish(   late) {   # the average of round r, when its last upload (or the deadline) is over
        printf "%d,,,,,,,%d,%g,%d,%g,average,%.6f,%.6f\n", r, E, D, bytes, mbps, last, last
        t = last
    }
    $1 != r { if (r != "") finish(); r = $1; last = t }
    {
        x = bytes / (mbps * 1e6)
        printf "%d,%d,%d,%d,%s,%s,%d,%d,%g,%d,%g,broadcast,%.6f,%.6f\n", $1, $2, $3, $4, $5, $6, $7, E, D, bytes, mbps, t, t + x
        local = $7 ? D : $6
        printf "%d,%d,%d,%d,%s,%s,%d,%d,%g,%d,%g,local,%.6f,%.6f\n", $1, $2, $3, $4, $5, $6, $7, E, D, bytes, mbps, t + x, t + x + local
        if (!$7) {
            printf "%d,%d,%d,%d,%s,%s,%d,%d,%g,%d,%g,upload,%.6f,%.6f\n", $1, $2, $3, $4, $5, $6, $7, E, D, bytes, mbps, t + x + local, t + 2 * x + local
            end = t + 2 * x + local
        } else end = t + x + D
        if (end > last) last = end
    }
    END { finish() }' "$tmp/clients.csv" > "$out"
echo "wrote $out ($(grep -c ',average,' "$out") rounds; weights of $bytes bytes at ${LINK_MBPS:-0.1} MB/s each way)"
