# roofline.gp: the roofline (Williams, Waterman and Patterson 2009) of this
# CPU and of an H100, with the suite's kernels on it: attainable FLOP/s =
# min(peak, memory bandwidth x arithmetic intensity), the lines; each
# kernel of the matmul sweep at its intensity (2 m n k FLOPs over the bytes
# of A, B and C moved once) and the FLOP/s it reached, the points; this
# CPU's STREAM triad is the point on its slope. Rows from
# 01_matmul_hfu/roofline.sh.
#   gnuplot -e "csv='plots/data/roofline.csv'; out='plots/roofline.png'" 01_matmul_hfu/roofline.gp
# Columns: machine,variant,dtype,m,n,k,flops_per_byte,tflops,peak_tflops,mem_tbps,roof_tflops + provenance
load 'plots/style.gp'
set terminal pngcairo size 1300,760 enhanced font "DejaVu Sans,11"
set output out

is(m, v) = strcol(1) eq m && strcol(2) eq v
stats csv using (strcol(1) eq "CPU" ? $9 : NaN) skip 1 nooutput name "CP"
stats csv using (strcol(1) eq "CPU" ? $10 : NaN) skip 1 nooutput name "CB"
stats csv using (strcol(1) eq "H100" && strcol(3) eq "bf16" ? $9 : NaN) skip 1 nooutput name "HB"
stats csv using (strcol(1) eq "H100" && strcol(3) eq "fp32" ? $9 : NaN) skip 1 nooutput name "HF"
stats csv using (strcol(1) eq "H100" ? $10 : NaN) skip 1 nooutput name "HM"
roof(p, b, x) = 1e3 * (p < b * x ? p : b * x)     # GFLOP/s
set title sprintf("01\\_matmul\\_hfu: the roofline, attainable = min(peak, bandwidth x intensity), with the suite's kernels\n" . \
    "this CPU: peak %.1f GFLOP/s (measured FMA loop), %.2f GB/s (STREAM triad)\n" . \
    "H100: bf16 %.0f and fp32 %.1f TFLOP/s, HBM3 %.2f TB/s (data sheets); kernels measured on one H100 80GB HBM3", \
    1e3 * CP_mean, 1e3 * CB_mean, HB_mean, HF_mean, HM_mean) font ",11"
set logscale xy
set xrange [0.1:10000]
set yrange [0.1:2e6]
set format y "10^{%L}"
set xlabel "arithmetic intensity (FLOPs per byte of main memory; log scale)"
set ylabel "GFLOP/s (log scale)"
set key outside right top box opaque font ",9"
set samples 400
plot roof(CP_mean, CB_mean, x) ls 9 lw 3 title "this CPU's roof (fp32)", \
     roof(HB_mean, HM_mean, x) lc rgb "#555555" lw 3 dt 2 title "H100 roof, bf16", \
     roof(HF_mean, HM_mean, x) lc rgb "#555555" lw 2 dt 3 title "H100 roof, fp32", \
     csv skip 1 using (is("CPU", "cpu_naive") ? $7 : NaN):(1e3 * $8) with points ls 1 title "CPU cpu\\_naive", \
     csv skip 1 using (is("CPU", "cpu_v1_ikj") ? $7 : NaN):(1e3 * $8) with points ls 2 title "CPU cpu\\_v1\\_ikj", \
     csv skip 1 using (is("CPU", "cpu_v2_tiled") ? $7 : NaN):(1e3 * $8) with points ls 3 title "CPU cpu\\_v2\\_tiled", \
     csv skip 1 using (is("CPU", "cpu_v3_packed") ? $7 : NaN):(1e3 * $8) with points ls 4 title "CPU cpu\\_v3\\_packed", \
     csv skip 1 using (is("CPU", "openblas_sgemm") ? $7 : NaN):(1e3 * $8) with points ls 5 title "CPU openblas\\_sgemm", \
     csv skip 1 using (is("CPU", "triad") ? $7 : NaN):(1e3 * $8) with points ls 9 pt 13 ps 1.6 title "CPU STREAM triad", \
     csv skip 1 using (is("H100", "cuda_naive") ? $7 : NaN):(1e3 * $8) with points ls 1 pt 6 title "H100 cuda\\_naive", \
     csv skip 1 using (is("H100", "cuda_tiled") ? $7 : NaN):(1e3 * $8) with points ls 3 pt 8 title "H100 cuda\\_tiled", \
     csv skip 1 using (is("H100", "cublas_fp32") ? $7 : NaN):(1e3 * $8) with points ls 6 pt 4 title "H100 cublas\\_fp32", \
     csv skip 1 using (is("H100", "cublas_tf32") ? $7 : NaN):(1e3 * $8) with points ls 7 pt 10 title "H100 cublas\\_tf32", \
     csv skip 1 using (is("H100", "cublas_bf16") ? $7 : NaN):(1e3 * $8) with points ls 2 pt 12 ps 1.3 title "H100 cublas\\_bf16"
