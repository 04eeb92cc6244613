# gpu_peaks.gp: the dense peak of each generation's data-centre GPU, on its
# FP32 cores and at 16 bits (bf16; fp16 where the GPU has no bf16, labelled),
# from the peak table in common/perf.c, which `hfu --peaks --csv` writes:
#   ./01_matmul_hfu/hfu --peaks --csv plots/data/gpu_peaks.csv
#   gnuplot -e "csv='plots/data/gpu_peaks.csv'; out='plots/gpu_peaks.png'" 01_matmul_hfu/gpu_peaks.gp
# Columns: gpu,year,flagship,fp32_tflops,tf32_tflops,fp16_tflops,bf16_tflops,fp8_tflops,tensor_cores,source
load 'plots/style.gp'

# One line per flagship GPU, in table order (oldest first):
#   index, gpu, year, fp32, 16-bit figure, its type, tensor cores
rows = sprintf("< awk -F, -v OFS=, 'NR > 1 && $3 == 1 {i++; h = $7 > 0 ? $7 : $6; " . \
               "t = $7 > 0 ? \"bf16\" : ($6 > 0 ? \"fp16\" : \"none\"); " . \
               "print i, $1, $2, $4, h, t, $9}' '%s'", csv)
n = system(sprintf("awk -F, 'NR > 1 && $3 == 1' '%s' | wc -l", csv)) + 0
if (n == 0) { print "gpu_peaks.gp: no flagship rows in ".csv; exit }

set title "Dense peak by GPU generation: FP32 units against 16-bit tensor cores (data sheets)"
set ylabel "peak TFLOP/s (log scale)"
set logscale y 10
set format y "%g"
set yrange [1:20000]
set xrange [0.4:n + 0.6]
set grid noxtics ytics
set key inside left top box opaque
set style fill solid 0.85 border lc rgb "#444444"
unset xtics
set xtics scale 0
set bmargin 4

w = 0.36
# each box runs from the bottom of the log axis (1 TFLOP/s) up to its value
# the 16-bit bar's label: the type, and how many times the FP32 peak it is
hlabel(h, f, t, tc) = t eq "none" ? "no 16-bit\nunits" : \
    sprintf("%s %g%s\n%.0fx fp32", t, h, tc > 0 ? "" : ", FP32 cores", h / f)
plot rows using ($1 - w / 2):4:($1 - w):($1):(1):4:xtic(sprintf("%s\n%d", strcol(2), $3)) \
         with boxxyerror fc rgb "#1f77b4" title "fp32 on the FP32 cores", \
     rows using ($1 + w / 2):($5 > 0 ? $5 : NaN):($1):($1 + w):(1):5 \
         with boxxyerror fc rgb "#d62728" title "16 bits: bf16 (fp16 where no bf16), on the tensor cores", \
     rows using ($1 - w / 2):4:(sprintf("%g", $4)) with labels offset 0, 0.7 font ",9" notitle, \
     rows using ($1 + w / 2):($5 > 0 ? $5 : 1.5):(hlabel($5, $4, strcol(6), $7)) \
         with labels offset 0, 1.8 font ",9" notitle
