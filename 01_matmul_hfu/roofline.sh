#!/usr/bin/env bash
# roofline.sh [CSV] [HFU_CSV]: the data of roofline.png (Williams, Waterman
# and Patterson 2009): every kernel of the matmul sweep at its arithmetic
# intensity with the FLOP/s it reached, beside the roofs it is held to,
#   attainable = min(peak, memory bandwidth x intensity)
#   intensity  = 2 m n k / (bytes of A and B at the input's width + 4 m n of C),
#                each matrix moved once to or from memory
# on this CPU (the sweep HFU_CSV, default plots/data/hfu.csv, from hfu --device
# cpu; its peak is the program's measured FMA peak; the bandwidth the STREAM
# triad of 01_matmul_hfu/membw with as many threads, itself a kernel at 1/6
# FLOP per byte) and on an H100 (reference/h100_hfu.csv, measured with hfu
# --device cuda on an H100 80GB HBM3; its peaks per type are the data sheet's
# and its bandwidth the H100 SXM data sheet's 3.35 TB/s). Rows (replaced):
#   machine,variant,dtype,m,n,k,flops_per_byte,tflops,peak_tflops,mem_tbps,roof_tflops + provenance
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/roofline.csv}
hfu=${2:-plots/data/hfu.csv}
source scripts/provenance.sh
threads=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["threads"]; exit }' "$hfu")
prov_begin
read -r _ _ _ gbps gflops < <(./01_matmul_hfu/membw --threads "$threads" --mib 64 --repeats 20)
triad_prov=$(prov_cols 1 "$threads" measured)
mkdir -p "$(dirname "$out")"
h100="H100 80GB HBM3 (reference/h100_hfu.csv); HBM3 3.35 TB/s (H100 SXM data sheet)"
{
    echo "machine,variant,dtype,m,n,k,flops_per_byte,tflops,peak_tflops,mem_tbps,roof_tflops,$PROV_HEADER"
    awk -F, -v OFS=, -v bw="$gbps" -v gf="$gflops" -v tp="$triad_prov" -v h100="$h100" '
        function row(machine, v, dt, m, n, k, tf, peak, tbps, prov,   es, I) {
            es = dt == "bf16" ? 2 : 4
            I = v == "triad" ? 2 / 12 : 2 * m * n * k / (es * (m * k + k * n) + 4 * m * n)
            printf "%s,%s,%s,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g%s\n", machine, v, dt, m, n, k, I, tf, peak, tbps,
                   (peak < tbps * I ? peak : tbps * I), prov
        }
        FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        FILENAME ~ /h100/ { row("H100", $c["variant"], $c["dtype"], $c["m"], $c["n"], $c["k"], $c["tflops"], $c["peak_tflops"],
                                3.35, ",,,,,,,," h100); next }
        {   # this CPU: the cores column onwards is the row provenance
            p = ""; for (i = c["cores"]; i <= NF; i++) p = p "," $i
            peak = $c["peak_tflops"]
            row("CPU", $c["variant"], $c["dtype"], $c["m"], $c["n"], $c["k"], $c["tflops"], peak, bw / 1e3, p)
        }
        END { row("CPU", "triad", "fp32", 0, 0, 0, gf / 1e3, peak, bw / 1e3, tp) }
    ' "$hfu" 01_matmul_hfu/reference/h100_hfu.csv
} > "$out"
echo "wrote $out (this CPU: triad $gbps GB/s with $threads threads)"
