#!/usr/bin/env bash
# The planner against runs on this machine: for each run of chapters 03
# (dp), 07 (pp x dp) and 08 (tp), measure what the planner needs on the same
# ranks at the same moment (build/tests/bench_ops, one copy per rank: the GEMMs' and
# attention's share of the measured peak, the memory-bound kernels' rate),
# ask `plan --cluster cpu --eval` for the step, run the program, and set its
# mean step beside the prediction.
#
#   bash 10_nd_llama/validate_cpu.sh [CSV] [REPEATS]
#
# CSV (default plots/data/plan_validation.csv) gets one row per run and
# repeat: run,ranks,tp,pp,dp,predicted_ms,measured_ms,error,load (the
# machine's one-minute load average when the run ended),link_gbps. The link
# is measured around each run too: chapter 02's MPI all-reduce on the run's
# ranks at its typical message (a 1 MiB gradient bucket, one micro-batch's
# activations), given to the planner as --intra-gbps with no latency.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=${1:-plots/data/plan_validation.csv}
repeats=${2:-1}
LINK_GBPS=${LINK_GBPS:-0.15}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$(dirname "$csv")"
[ -s "$csv" ] || echo "run,ranks,tp,pp,dp,predicted_ms,measured_ms,error,load,link_gbps" > "$csv"

# The model of every run: chapter 03's default shape; steps 2.. are averaged.
MODEL="--dim 192 --layers 4 --heads 6 --kv-heads 2 --ffn 512 --vocab 256 --seq 128"
PLAN_MODEL="--dim 192 --layers 4 --heads 6 --kv-heads 2 --head-dim 32 --ffn 512 --vocab 256 --seq 128"
STEPS=8

# calibrate NP LAYERS: bench_ops at this shape, one copy per core the run's
# NP ranks occupy, all at once (ranks beyond the cores share them: the
# planner divides the peak for those) -> the slowest copy's figures (a
# synchronous step waits for its slowest rank): "gemm_eff attn_eff mem_gbs"
calibrate() {
    local dir i n=$1
    [ "$n" -le "$(getconf _NPROCESSORS_ONLN)" ] || n=$(getconf _NPROCESSORS_ONLN)
    dir=$(mktemp -d)
    for i in $(seq "$n"); do
        ./build/tests/bench_ops --device cpu --threads 1 --dtype fp32 --batch 16 $MODEL --layers "$2" \
            --iters 10 --warmup 2 > "$dir/$i.txt" 2>&1 &
    done
    wait
    # GEMMs: their %peak; attention: forward and backward combined by their
    # time; memory-bound: the planner's bytes for them (tokens x layers x 24
    # x 4 x (C + F), cost.c) over the time of every other op of a step but
    # the optimizer
    for i in $(seq "$n"); do
        awk -v L="$2" '
            /^matmul/ { gemm = $(NF-1) }
            /^attn_forward/ { af = $(NF-1); tf = $NF }
            /^attn_backward/ { ab = $(NF-1); tb = $NF }
            /^(embedding|rmsnorm|rope|swiglu|xent)/ { other += $NF }
            END {
                sub("%", "", gemm); sub("%", "", af); sub("%", "", ab)
                attn = (af > 0 && ab > 0) ? (tf + tb) / (tf / af + tb / ab) : 0
                bytes = 16 * 128 * L * 24 * 4 * (192 + 512)
                printf "%.4f %.4f %.3f\n", gemm / 100, attn / 100, bytes / (other / 1000) / 1e9 }' "$dir/$i.txt"
    done | awk 'NR == 1 || $1 < g { g = $1 } NR == 1 || $2 < a { a = $2 } NR == 1 || $3 < m { m = $3 }
                END { printf "%.3f %.3f %.2f\n", g, a, m }'
    rm -rf "$dir"
}

# link NP BYTES: the bus bandwidth (GB/s) of MPI's all-reduce of BYTES on NP
# ranks now (chapter 02's program): on a loaded machine it includes the
# waits for a descheduled peer that every collective of the run meets too
link() {
    if [ "$1" -lt 2 ]; then echo "$LINK_GBPS"; return; fi
    mpirun -np "$1" ./02_allreduce/allreduce --device cpu --threads 1 --op allreduce --algo lib --minbytes "$2" \
        --maxbytes "$2" --iters 10 --warmup 2 --repeat 3 --no-check 2>&1 | awk '$1 ~ /^[0-9]+$/ { print $8 }'
}

# mean step of a trainer's output, ms
measured() { sed -n 's/^mean of steps [0-9-]*: *\([0-9.]*\) ms.*/\1/p' | tail -1; }

# one NAME NP TP PP DP LAYERS MESSAGE_BYTES PLAN_EVAL CMD...
one() {
    local name=$1 np=$2 tp=$3 pp=$4 dp=$5 layers=$6 msg=$7 ev=$8; shift 8
    # the machine is shared: measure the figures before and after the run, take their means
    local before after l1 l2
    before=$(calibrate "$np" "$layers")
    l1=$(link "$np" "$msg")
    local meas
    meas=$("$@" 2>&1 | measured)
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    after=$(calibrate "$np" "$layers")
    l2=$(link "$np" "$msg")
    local gbps
    gbps=$(awk -v a="$l1" -v b="$l2" 'BEGIN { printf "%.4f", (a + b) / 2 }')
    read -r ge ae mb < <(echo "$before $after" | awk '{ printf "%.3f %.3f %.2f\n", ($1 + $4) / 2, ($2 + $5) / 2, ($3 + $6) / 2 }')
    local pred
    pred=$(./10_nd_llama/plan --cluster cpu --dtype fp32 $PLAN_MODEL --layers "$layers" --batch 16 --gpus "$np" \
           --gemm-eff "$ge" --attn-eff "$ae" --mem-gbs "$mb" --intra-gbps "$gbps" --inter-gbps "$gbps" --intra-us 0 --inter-us 0 \
           --eval "$ev" | sed -n 's/^  step \([0-9.]*\) s = .*/\1/p')
    awk -v n="$name" -v np="$np" -v tp="$tp" -v pp="$pp" -v dp="$dp" -v p="$pred" -v m="$meas" -v ge="$ge" \
        -v ae="$ae" -v mb="$mb" -v ld="$load" -v gb="$gbps" -v f="$csv" 'BEGIN {
        e = (1000 * p - m) / m
        printf "%-34s ranks %d  tp %d pp %d dp %d | GEMMs %2.0f%%, attention %2.0f%% of the peak, memory-bound %.1f GB/s, link %.2f GB/s | predicted %7.1f ms, measured %7.1f ms (%+.0f%%) | load %s\n",
               n, np, tp, pp, dp, 100 * ge, 100 * ae, mb, gb, 1000 * p, m, 100 * e, ld
        printf "%s,%d,%d,%d,%d,%.1f,%.1f,%.4f,%s,%s\n", n, np, tp, pp, dp, 1000 * p, m, e, ld, gb >> f }'
}

for r in $(seq "$repeats"); do
    one "03_ddp 1 rank" 1 1 1 1 4 1048576 "mbs=16,zero=0" \
        ./03_ddp/ddp --device cpu --threads 1 $MODEL --batch 16 --steps $STEPS
    one "03_ddp 2 ranks" 2 1 1 2 4 1048576 "mbs=8,zero=0" \
        mpirun -np 2 ./03_ddp/ddp --device cpu --threads 1 $MODEL --batch 16 --steps $STEPS
    one "03_ddp 4 ranks" 4 1 1 4 4 1048576 "mbs=4,zero=0" \
        mpirun -np 4 ./03_ddp/ddp --device cpu --threads 1 $MODEL --batch 16 --steps $STEPS
    one "07_pipeline 1f1b 2 stages" 2 1 2 1 8 196608 "pp=2,mbs=2,zero=0,schedule=1f1b" \
        mpirun -np 2 ./07_pipeline/pipeline --device cpu --threads 1 $MODEL --layers 8 --batch 16 --micro 8 \
        --schedule 1f1b --steps $STEPS --replay none
    one "07_pipeline 1f1b 2 stages x dp 2" 4 1 2 2 8 196608 "pp=2,mbs=2,zero=0,schedule=1f1b" \
        mpirun -np 4 ./07_pipeline/pipeline --device cpu --threads 1 $MODEL --layers 8 --batch 16 --micro 4 \
        --schedule 1f1b --dp 2 --steps $STEPS --replay none
    one "08_tensor_parallel tp 2" 2 2 1 1 4 1572864 "tp=2,mbs=16,zero=0,sp=0" \
        mpirun -np 2 ./08_tensor_parallel/tp --device cpu --threads 1 $MODEL --batch 16 --tp 2 --steps $STEPS
done
