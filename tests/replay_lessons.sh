#!/usr/bin/env bash
# replay_lessons.sh LESSON: each chart's lesson asserted on the deterministic
# sources (replay/replay: recorded actions replayed on one core per rank, or
# priced on a modeled H100 node), never on wall-clock time. The runs are
# oversubscribed on purpose: the record's compute is thread CPU time.
#   allreduce  02: the ring's bus bandwidth above the parameter server's at 4
#              and 8 ranks at 1 and 4 MiB, and the ring's messages replayed
#              without their reductions (--comm-only) within 10% of its
#              alpha-beta cost, one latency a step though its blocks go in
#              many chunks, on a fixed link (5 us, 8 GB/s: this kind of
#              machine's shared memory, quiet). Not the record's own ping-pong
#              link: measured with 8 ranks on 2 busy cores, its latency is a
#              time slice (about 1 ms), and a star's 2 latencies then beat the
#              ring's 14, which says nothing about the algorithms
#   ddp        03: DDP's scaling efficiency (1 rank's step / 4 ranks' step at
#              the same per-rank batch) with overlap above that without, and
#              1 MiB buckets faster than one bucket for all (32 MiB: nothing
#              overlaps), each by 5% of the step or more (recorded CPU time
#              varies by a few percent between runs on a loaded machine). The small end is not asserted: a bucket never splits
#              a layer's unit, so the smallest buckets make one all-reduce per
#              unit, whose latencies are a few ms of a 300 ms step, below the
#              run-to-run spread of recorded CPU time on a loaded machine
#   pipeline   07: ZB-H1's and TeraPipe's replayed bubbles below 1F1B's at the
#              same micro-batches, from recorded actions
#   hsdp       05: on 2 simulated nodes of 2 behind a slow link (0.05 GB/s,
#              100 us), one shard group per node (K = 2) replays faster than
#              FSDP over both nodes (K = 4) and in 2/3 of DDP's (K = 1) step
#              or less (it sends 2/3 of DDP's bytes across, and the crossing
#              bytes decide a step behind a slow link); the same modeled on
#              2 nodes of 2 H100s (05_hsdp/h100_2x2.cluster)
#   mesh       10: on the modeled 8-GPU node, pp 8 is not the best mesh of 8
#              (chapter 10's nd-small model, six of its sweep's meshes)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d /tmp/replay_lessons.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
MPI="mpirun -np"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A field of the replayed (or modeled) row of a segment: row SOURCE SEGMENT COLUMN CSV
row() { awk -F, -v s="$1" -v g="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == s && $4 == g { print $col[c]; exit }' "$4"; }

lesson_allreduce() {
    local a=5 gbps=8 link
    link="--alpha-us $a --gbps $gbps"
    for np in 4 8; do
        for algo in ring ps; do
            # the ring in 64 KiB chunks: 16 to a block of 4 MiB on 4 ranks, so
            # a ring that paid a latency a chunk, not a step, would be 50% off
            $MPI $np ./02_allreduce/allreduce --op allreduce --algo $algo --minbytes 1M --maxbytes 4M \
                $([ $algo = ring ] && echo --chunk 64K) \
                --stepfactor 4 --iters 2 --warmup 1 --repeat 1 --timeout 120 --record "$tmp/$algo$np.rec" >/dev/null
            ./replay/replay --record "$tmp/$algo$np.rec" $link --label "$algo" --csv "$tmp/ar$np.csv"
        done
        ./replay/replay --record "$tmp/ring$np.rec" $link --comm-only --label links --csv "$tmp/links$np.csv"
        for X in 1048576 4194304; do
            r=$(row replayed "allreduce:ring:$X" step_s "$tmp/ar$np.csv")
            p=$(row replayed "allreduce:ps:$X" step_s "$tmp/ar$np.csv")
            c=$(row replayed "allreduce:ring:$X" step_s "$tmp/links$np.csv")
            # the ring's alpha-beta cost: a step's chunks go out together, so
            # one latency a step (02_allreduce/algos.c)
            awk -v N=$np -v X=$X -v r="$r" -v p="$p" -v c="$c" -v a="$a" -v G="$gbps" 'BEGIN {
                f = 2 * (N - 1) / N; blk = X / N
                model = 2 * (N - 1) * (a * 1e-6 + blk / (G * 1e9))
                printf "%d ranks, %8d B: busbw ring %.3f GB/s, ps %.3f GB/s; ring messages alone %.3f ms, alpha-beta %.3f ms (%+.1f%%)\n",
                    N, X, f * X / r / 1e9, f * X / p / 1e9, 1e3 * c, 1e3 * model, 100 * (c / model - 1)
                if (!(r < p)) { print "the ring is not faster than the parameter server"; exit 1 }
                if (c / model > 1.1 || c / model < 0.9) { print "the ring is off its model"; exit 1 }
            }' || fail "allreduce at $np ranks, $X bytes"
        done
    done
}

# ddp_step NP FLAGS...: the replayed step of 03_ddp/ddp on NP ranks, 2 sequences per rank, on
# chapter 03's bucket-sweep model (24 MB of gradients), the default link of replay/replay
ddp_step() {
    local np=$1; shift
    $MPI "$np" ./03_ddp/ddp --device cpu --threads 1 --dim 256 --heads 8 --kv-heads 4 --layers 8 --seq 64 \
        --batch $((2 * np)) --steps 3 --record "$tmp/d.rec" "$@" >/dev/null
    ./replay/replay --record "$tmp/d.rec" --csv "$tmp/d.csv"
    awk -F, 'END { print $7 }' "$tmp/d.csv"
}

lesson_ddp() {
    one=$(ddp_step 1)
    over=$(ddp_step 4 --bucket-mb 1)
    flat=$(ddp_step 4 --bucket-mb 1 --no-overlap)
    awk -v o="$one" -v a="$over" -v b="$flat" 'BEGIN {
        printf "DDP on 4 ranks, scaling efficiency: %.1f%% with overlap, %.1f%% without (1 rank %.1f ms)\n", 100 * o / a, 100 * o / b, 1e3 * o
        if (!(a < 0.95 * b)) exit 1 }' || fail "overlap does not cut the step by 5% or more"
    one_bucket=$(ddp_step 4 --bucket-mb 32)
    awk -v a="$over" -v b="$one_bucket" 'BEGIN {
        printf "replayed step with 1 MiB buckets %.1f ms, with one bucket for all (32 MiB) %.1f ms\n", 1e3 * a, 1e3 * b
        if (!(a < 0.95 * b)) exit 1 }' || fail "1 MiB buckets are not 5% faster than one bucket for all"
}

# bubble SCHEDULE FLAGS...: the replayed bubble of 07_pipeline/pipeline on 4 stages from its record
bubble() {
    local s=$1; shift
    $MPI 4 ./07_pipeline/pipeline --device cpu --threads 1 --dim 128 --layers 8 --heads 4 --kv-heads 2 --seq 64 \
        --vocab 256 --batch 16 --steps 4 --replay none --schedule "$s" --record "$tmp/p.rec" "$@" >/dev/null
    ./replay/replay --record "$tmp/p.rec" --gbps 10 --alpha-us 5 --csv "$tmp/p_$s.csv"
    awk -F, 'END { print $9 }' "$tmp/p_$s.csv"
}

lesson_pipeline() {
    f=$(bubble 1f1b --micro 8)
    z=$(bubble zbh1 --micro 8)
    t=$(bubble terapipe --micro 8 --slices 4)
    awk -v f="$f" -v z="$z" -v t="$t" 'BEGIN {
        printf "replayed bubble on 4 stages, 8 micro-batches: 1F1B %.1f%%, ZB-H1 %.1f%%, TeraPipe (4 slices) %.1f%%\n", 100 * f, 100 * z, 100 * t
        if (!(z < f && t < f)) exit 1 }' || fail "ZB-H1 or TeraPipe does not idle less than 1F1B"
}

lesson_hsdp() {
    for K in 1 2 4; do
        $MPI 4 ./05_hsdp/hsdp --device cpu --threads 1 --dim 128 --heads 4 --kv-heads 4 --layers 8 --vocab 256 \
            --seq 32 --batch 4 --steps 4 --shard $K --record "$tmp/h.rec" >/dev/null
        ./replay/replay --record "$tmp/h.rec" --gbps 12.5 --alpha-us 5 --node-size 2 --inter-gbps 0.05 --inter-us 100 \
            --label "K$K" --csv "$tmp/h.csv"
        ./replay/replay --record "$tmp/h.rec" --cluster 05_hsdp/h100_2x2.cluster --label "K$K" --csv "$tmp/hm.csv"
    done
    for src in replayed:h modeled:hm; do
        awk -F, -v s=${src%:*} '$1 == s && $4 == "step" { t[$3] = $7 }
            END { printf "%s, 2 nodes of 2%s: K = 1 %.3f ms, K = 2 %.3f ms, K = 4 %.3f ms\n", s, s == "modeled" ? " H100s" : " behind the slow link", 1e3 * t["K1"], 1e3 * t["K2"], 1e3 * t["K4"]
                  exit !(t["K2"] <= 2 / 3 * t["K1"] && t["K2"] < t["K4"]) }' "$tmp/${src#*:}.csv" ||
            fail "${src%:*}: one shard group per node is not below FSDP over both nodes and 2/3 of DDP"
    done
}

lesson_mesh() {
    for mesh in "--dp 8" "--tp 8" "--pp 8" "--tp 2 --dp 4" "--pp 2 --dp 4" "--tp 2 --cp 2 --pp 2"; do
        read -r -a m <<<"$mesh"
        $MPI 8 ./10_nd_llama/train --preset nd-small --threads 1 --steps 2 "${m[@]}" --record "$tmp/m.rec" >/dev/null
        ./replay/replay --record "$tmp/m.rec" --cluster h100x1 --label "${mesh// /}" --csv "$tmp/m.csv"
    done
    awk -F, '$1 == "modeled" && $4 == "step" { printf "modeled on one 8-GPU H100 node: %-20s step %.3f ms, MFU %.2f%%\n", $3, 1e3 * $7, 100 * $12
             if ($12 > best) { best = $12; who = $3 } }
             END { print "best: " who; exit who == "--pp8" }' "$tmp/m.csv" || fail "pp 8 is the best mesh"
}

case "${1:-}" in
allreduce | ddp | pipeline | hsdp | mesh) "lesson_$1" ;;
*) echo "usage: $0 allreduce|ddp|pipeline|hsdp|mesh" >&2; exit 2 ;;
esac
