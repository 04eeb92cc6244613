#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 01's
# exercises (README.md, "Exercises"). ANSWERS (default
# 01_matmul_hfu/answers.txt; start from answers.sample) holds one
# "name = number" per line; # starts a comment, a blank value is "not yet".
# Each answer is compared with the value the suite derives: from the
# formulas, from the H100 measurements shipped in reference/, and for the
# last one from this machine's measured CPU peak. A wrong answer is told how
# far off it is, not what the answer is. Exit status 0 when every answer is
# right.
#   bash 01_matmul_hfu/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"
ref=$here/reference/h100_hfu.csv
shapes=$here/reference/h100_llama405b_tp8_shapes.jsonl

# The expected values, each with its relative tolerance and a hint.
# field of the reference CSV: variant,device,dtype,m,n,k,time_ms,...
ref_ms() { awk -F, -v v="$1" -v n="$2" '$1 == v && $4 == n { print $7 }' "$ref"; }
bf16_8k_ms=$(ref_ms cublas_bf16 8192)
fp32_8k_ms=$(ref_ms cublas_fp32 8192)
w2=$(grep '"w2 (fwd)"' "$shapes")
w2_m=$(sed -E 's/.*"m": ([0-9]+).*/\1/' <<< "$w2")
w2_k=$(sed -E 's/.*"k": ([0-9]+).*/\1/' <<< "$w2")
w2_n=$(sed -E 's/.*"n": ([0-9]+).*/\1/' <<< "$w2")
w2_ms=$(sed -E 's/.*"ms": ([0-9.]+).*/\1/' <<< "$w2")

# This machine's CPU peak, as hfu reports it (measured once, then cached).
cpu_peak() {
    [ -x "$root/01_matmul_hfu/hfu" ] || { echo "nan"; return; }
    (cd "$root" && ./01_matmul_hfu/hfu --device cpu --sizes 16 --variants openblas_sgemm --iters 1 2>/dev/null) |
        sed -nE 's/^peak: .* = ([0-9.]+) GFLOP\/s.*/\1/p' | head -n 1
}

# only when the answer is there: measuring takes a second on a fresh machine
peak=0
if grep -Eq '^[[:space:]]*ex7_cpu_peak_gflops[[:space:]]*=[[:space:]]*[-+0-9.]' "$answers"; then
    peak=$(cpu_peak)
    [ -n "$peak" ] || peak=0
fi

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='BEGIN {
    # 1. FLOPs of a square product
    want("ex1_gflop", 2 * 4096^3 / 1e9, 0.005, "2 m n k, in GFLOP (1e9)")
    # 2. The H100 SXM bf16 dense peak, and the per-clock ratio of the units
    want("ex2_h100_bf16_tflops", 132 * 4 * 512 * 2 * 1.83e9 / 1e12, 0.002, "SMs x tensor cores x FMA per clock x 2 x clock")
    want("ex2_tensor_over_fp32_per_clock", (4 * 512 * 2) / (128 * 2), 0.001, "per SM and per clock: tensor cores against FP32 cores")
    # 3. A row of the H100 reference: cublas_bf16 at 8192
    f = 2 * 8192^3 / (bf16_8k_ms * 1e-3)
    want("ex3_tflops", f / 1e12, 0.005, "2 n^3 / time")
    want("ex3_hfu_percent", 100 * f / 989.4e12, 0.005, "TFLOP/s / the bf16 peak")
    # 4. What leaving the 16-bit cast out costs on an H100 at 8192
    want("ex4_bf16_over_fp32", fp32_8k_ms / bf16_8k_ms, 0.01, "the two speeds at 8192, from the reference CSV")
    want("ex4_peak_ratio", 989.4 / 66.9, 0.01, "the two data-sheet peaks")
    # 5. A non-square GEMM of Llama 3 405B under TP 8 (w2 forward)
    want("ex5_hfu_percent", 100 * 2 * w2_m * w2_k * w2_n / (w2_ms * 1e-3) / 989.4e12, 0.01, "2 m k n / time / peak")
    # 6. The MLP at the GPU defaults: model FLOPs of a step, and its MFU at 15 ms
    g = 12 * 8192 * 4096 * 16384
    want("ex6_gflop_per_step", g / 1e9, 0.005, "6 x B x P with P = 2 D H")
    want("ex6_mfu_percent", 100 * g / 0.015 / 989.4e12, 0.01, "model FLOPs / step time / peak")
    # 7. This machine: the CPU peak from its cores, clock and FMA units
    if (peak + 0 > 0) want("ex7_cpu_peak_gflops", peak + 0, 0.15, "cores x GHz x FLOP per cycle; within 15% of the measured peak")
}
END {
    right = grade()
    unknown("^ex7_cpu_peak_gflops$")
    if (!(peak + 0 > 0)) printf "  --     %-34s not answered, or no measured peak to compare (build hfu first)\n", "ex7_cpu_peak_gflops"
    total = n + (peak + 0 > 0 ? 0 : 1)
    printf "chapter 01: %d of %d answers right\n", right, total
    exit right == total ? 0 : 1
}'
check "$program" -v bf16_8k_ms="$bf16_8k_ms" -v fp32_8k_ms="$fp32_8k_ms" \
    -v w2_m="$w2_m" -v w2_k="$w2_k" -v w2_n="$w2_n" -v w2_ms="$w2_ms" -v peak="$peak"
