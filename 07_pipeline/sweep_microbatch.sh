#!/usr/bin/env bash
# sweep_microbatch.sh: the micro-batch size trade-off at a fixed global batch
# of 16 sequences on 2 stages (2 ranks, 1F1B): micro-batch b = 1..16, so
# M = 16 / b micro-batches. The bubble falls as (P-1)/(M+P-1) when b shrinks,
# while each micro-batch's matrix products get smaller. Per b, rows in
# plots/data/microbatch.csv (or $1), drawn by 07_pipeline/microbatch.gp:
#
#   measured   the pipeline's step time, busy time (its computes, mean over
#              stages) and bubble here, and the GEMM efficiency of the last
#              stage's products at b's shapes, from chapter 01's HFU against
#              size measured here (1 thread, sgemm);
#   h100       the same products replayed on chapter 01's H100 reference
#              data (bf16): step = (M + P - 1) x 3 x the forward GEMMs' time,
#              every stage as long as the last (1F1B's bubble exactly);
#   h100_dim4096  the same replay at a GPU-sized layer (Llama 3 8B's: dim 4096,
#              ffn 14336, 32 heads, 8 kv heads; 16 layers per stage) on
#              sequences of 256 tokens, where the H100's efficiency grows only
#              from about a third to three quarters of the peak.
#
# The efficiencies come from the planner's interpolation (10_nd_llama/plan
# --gemm-table --gemm-at: linear in log FLOPs, clamped at the table's ends).
# Flags after the CSV name go to every pipeline run; LOG_DIR keeps each
# run's log (mbB.log); SIZES and STEPS change the sweep.
#   bash 07_pipeline/sweep_microbatch.sh plots/data/microbatch.csv --device cpu
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/microbatch.csv}
shift || true
sizes=${SIZES:-"1 2 4 8 16"}
logs=${LOG_DIR:-build/microbatch_logs}
batch=16 P=2
# the model: 4 layers (2 per stage), its shapes spelled out for the replay
dim=512 heads=8 kv=4 hd=64 ffn=1408 vocab=256 seq=64 layers=4
mkdir -p "$(dirname "$out")" "$logs" build
rm -f "$out"
# then the provenance of the measured run (common/perf.h; its own source column
# says measured or which GPU's table the row was modeled on)
source scripts/provenance.sh
echo "source,stages,batch,micro_batch,micro,step_ms,busy_ms,bubble,formula,gemm_eff,${PROV_HEADER%,source}" > "$out"

# chapter 01 here: HFU against size, one thread as each stage has
here=build/microbatch_hfu_cpu.csv
rm -f "$here"
./01_matmul_hfu/hfu --device cpu --threads 1 --variants openblas_sgemm --sizes 32,64,128,256,512,1024 \
    --csv "$here" >/dev/null
h100=01_matmul_hfu/reference/h100_hfu.csv

# The last stage's forward GEMMs for R rows, "count M N K" a line: per layer
# q, k and v, o, w1 and w3, w2; then the head.
stage_gemms() {   # R dim heads kv hd ffn vocab layers_per_stage
    local R=$1 C=$2 H=$3 KV=$4 HD=$5 F=$6 V=$7 n=$8
    echo "$n $R $((H * HD)) $C"; echo "$((2 * n)) $R $((KV * HD)) $C"; echo "$n $R $C $((H * HD))"
    echo "$((2 * n)) $R $F $C"; echo "$n $R $C $F"; echo "1 $R $V $C"
}
# Forward + backward seconds of those GEMMs on a table, and their efficiency
# weighted by FLOPs: "seconds efficiency".
stage_time() {   # table dtype peak_tflops, the GEMMs on stdin
    local table=$1 dtype=$2 peak=$3 count m n k flops=0 secs=0 ms
    while read -r count m n k; do
        ms=$(./10_nd_llama/plan --gemm-table "$table" --dtype "$dtype" --peak "$peak" --gemm-at "$m,$n,$k" |
             sed -n 's/.* = \(.*\) ms$/\1/p')
        [ -n "$ms" ] || { echo "error: no time for GEMM $m x $n x $k" >&2; exit 1; }
        flops=$(awk -v f="$flops" -v c="$count" -v m="$m" -v n="$n" -v k="$k" 'BEGIN { printf "%.6e", f + 6 * c * m * n * k }')
        secs=$(awk -v s="$secs" -v c="$count" -v t="$ms" 'BEGIN { printf "%.6e", s + 3 * c * t / 1e3 }')
    done
    awk -v f="$flops" -v s="$secs" -v p="$peak" 'BEGIN { printf "%.6e %.5f\n", s, f / (s * p * 1e12) }'
}
cpu_peak=$(awk -F, 'NR == 2 { print $9 }' "$here")

for b in $sizes; do
    M=$((batch / b))
    [ $((M * b)) -eq $batch ] || { echo "error: micro-batch $b does not divide the batch of $batch" >&2; exit 1; }
    tmp=$logs/mb$b.csv
    rm -f "$tmp"
    mpirun -np $P ./07_pipeline/pipeline --threads 1 --schedule 1f1b --micro $M --batch $batch --dim $dim \
        --heads $heads --kv-heads $kv --ffn $ffn --vocab $vocab --layers $layers --seq $seq --steps "${STEPS:-5}" \
        --replay none --bubble-csv "$tmp" "$@" > "$logs/mb$b.log"
    read -r bubble formula step_ms < <(awk -F, '$5 == "measured" { print $6, $7, $8 }' "$tmp")
    prov=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                    $5 == "measured" { for (i = c["cores"]; i <= NF; i++) printf ",%s", $i }' "$tmp")
    busy=$(sed -nE 's/^ +stage [0-9]+: busy ([0-9.]+) .*/\1/p' "$logs/mb$b.log" |
           awk '{ s += $1; n++ } END { printf "%.3f", s / n }')
    read -r _ eff < <(stage_gemms $((b * seq)) $dim $heads $kv $hd $ffn $vocab $((layers / P)) |
                      stage_time "$here" fp32 "$cpu_peak")
    echo "measured,$P,$batch,$b,$M,$step_ms,$busy,$bubble,$formula,$eff$prov" >> "$out"
    f=$(awk -v P=$P -v M=$M 'BEGIN { printf "%.5f", (P - 1) / (M + P - 1) }')
    read -r s eff < <(stage_gemms $((b * seq)) $dim $heads $kv $hd $ffn $vocab $((layers / P)) |
                      stage_time "$h100" bf16 989.4)
    awk -v s="$s" -v M=$M -v P=$P -v f="$f" -v e="$eff" -v b=$b -v B=$batch \
        'BEGIN { printf "h100,%d,%d,%d,%d,%.4f,%.4f,%s,%s,%s\n", P, B, b, M, 1e3 * (M + P - 1) * s, 1e3 * M * s, f, f, e }' | sed "s/\$/$prov/" >> "$out"
    read -r s eff < <(stage_gemms $((b * 256)) 4096 32 8 128 14336 128256 16 | stage_time "$h100" bf16 989.4)
    awk -v s="$s" -v M=$M -v P=$P -v f="$f" -v e="$eff" -v b=$b -v B=$batch \
        'BEGIN { printf "h100_dim4096,%d,%d,%d,%d,%.4f,%.4f,%s,%s,%s\n", P, B, b, M, 1e3 * (M + P - 1) * s, 1e3 * M * s, f, f, e }' |
        sed "s/\$/$prov/" >> "$out"
    printf 'micro-batch %-2s M %-2s | here: step %7.1f ms, busy %7.1f, bubble %5.1f%% (formula %5.1f%%), GEMMs at %5.1f%% of the peak\n' \
        $b $M "$step_ms" "$busy" "$(awk -v x="$bubble" 'BEGIN { print 100 * x }')" "$(awk -v x="$formula" 'BEGIN { print 100 * x }')" \
        "$(awk -F, -v b=$b '$1 == "measured" && $4 == b { print 100 * $10 }' "$out")"
done
# the optimum of each source: the micro-batch with the shortest step
awk -F, 'NR > 1 && (!($1 in best) || $6 < best[$1]) { best[$1] = $6; at[$1] = $4 }
         END { for (s in best) printf "optimum %-12s micro-batch %s (step %.4g ms)\n", s, at[s], best[s] }' "$out" | sort
echo "wrote $out"
