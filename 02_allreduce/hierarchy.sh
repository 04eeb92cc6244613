#!/usr/bin/env bash
# hierarchy.sh [CSV]: the data of hierarchy.png, the bandwidth of each level
# of the memory and network hierarchy: a GPU cluster's from its data sheets
# beside this machine's, measured.
#   this machine  memory        the STREAM triad of 01_matmul_hfu/membw, a thread per core
#                 in a node     2 ranks' ring all-reduce of 64 MiB through shared memory
#                 between nodes 2 ranks' ring all-reduce of 16 MiB over TCP between two
#                               nodes of scripts/cluster.sh: links of 100, 10 and 1 Gbit/s
#   a GPU node    HBM3, NVLink 4 (H100 SXM data sheet), NVLink all-reduce (nccl-tests),
#                 InfiniBand NDR and RoCE, one 400 Gbit/s NIC per GPU (DGX H100; Llama 3)
# At 2 ranks the ring all-reduce's bus bandwidth is the rate each rank sends at
# (busbw = algbw x 2(N-1)/N; nccl-tests' definition), the figure a link's rate
# per direction compares with. The rows between nodes need root and network
# namespaces; where those are missing they are left out and the script says so.
# Rows (the file is replaced):
#   level,where,gbs,what + provenance (source: measured, or the citation)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/hierarchy.csv}
source scripts/provenance.sh
cores=$(nproc --all)
tmp=$(mktemp -d /tmp/hierarchy.XXXXXX)
export CLUSTER_ID=hier
trap 'bash scripts/cluster.sh down >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
rows=$tmp/rows   # $rows.1, .2, .3: memory, in a node, between nodes
: >"$rows.1"; : >"$rows.2"; : >"$rows.3"

# busbw LAUNCH... : the median bus bandwidth (GB/s) of the last row the
# all-reduce appended to $tmp/ar.csv
busbw() {
    rm -f "$tmp/ar.csv"
    "$@" ./02_allreduce/allreduce --op allreduce --algo ring --minbytes "$size" --maxbytes "$size" \
        --iters 5 --warmup 2 --repeat 5 --threads 1 --device cpu --csv "$tmp/ar.csv" >"$tmp/ar.log" 2>&1 ||
        { cat "$tmp/ar.log" >&2; echo "error: the all-reduce failed: $*" >&2; exit 1; }
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { b = $c["busbw_gbs"] } END { print b }' "$tmp/ar.csv"
}

prov_begin
read -r _ _ _ gbps _ < <(./01_matmul_hfu/membw --threads "$cores" --mib 64 --repeats 20)
echo "memory,this machine,$gbps,DRAM triad$(prov_cols 1 "$cores" measured)" >>"$rows.1"

if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_mpi_yield_when_idle=1
size=64M; prov_begin
bw=$(busbw mpirun -np 2 --bind-to none)
echo "in a node,this machine,$bw,shared memory$(prov_cols 2 1 measured)" >>"$rows.2"

if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v tc >/dev/null; then
    size=16M
    for g in 100 10 1; do
        if ! bash scripts/cluster.sh up 2 --ranks-per-node 1 --gbps $g >"$tmp/up.log" 2>&1; then
            echo "hierarchy: no nodes here ($(grep -m1 error "$tmp/up.log")); the rows between nodes are left out" >&2
            break
        fi
        prov_begin
        bw=$(busbw build/cluster-hier/login mpirun --hostfile build/cluster-hier/hosts \
            --mca plm_rsh_agent build/cluster-hier/agent -np 2)
        echo "between nodes,this machine,$bw,TCP $g Gbit/s$(prov_cols 2 1 measured)" >>"$rows.3"
        bash scripts/cluster.sh down >/dev/null
    done
else
    echo "hierarchy: the rows between nodes need root, unshare and tc; left out" >&2
fi

# The published figures: every provenance column empty but the source.
pub() { echo "$2,a GPU cluster,$3,$4,,,,,,,,$5" >>"$rows.$1"; }
pub 1 memory 3350 "HBM3" "NVIDIA H100 data sheet: 3.35 TB/s"
pub 2 "in a node" 450 "NVLink 4" "NVIDIA H100 data sheet: 900 GB/s per GPU both ways"
pub 2 "in a node" 370 "NCCL ring 8 GPUs" "nccl-tests issue 212: about 370 GB/s on 8 H100 SXM"
pub 3 "between nodes" 50 "InfiniBand NDR" "DGX H100 user guide: one ConnectX-7 400 Gb/s per GPU"
pub 3 "between nodes" 50 "RoCE 400 Gbit/s" "Llama 3 paper (Dubey et al. 2024) section 3.3.1"

mkdir -p "$(dirname "$out")"
# by level, the published rows first
{ echo "level,where,gbs,what,$PROV_HEADER"; sort -s -t, -k2,2 "$rows.1"; sort -s -t, -k2,2 "$rows.2"; sort -s -t, -k2,2 "$rows.3"; } >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
