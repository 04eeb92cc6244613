# hfu.gp: hardware FLOPs utilisation of square matmuls against their size,
# one line per variant (per device, when the CSV holds CPU and GPU rows).
#   gnuplot -e "csv='plots/data/hfu.csv'; out='plots/hfu.png'" 01_matmul_hfu/hfu.gp
# Columns: variant,device,dtype,m,n,k,time_ms,tflops,peak_tflops,hfu (hfu in %)
load 'plots/style.gp'

# The variants in the file, in order of first appearance, with their dtype.
pick(col) = sprintf("awk -F, 'NR > 1 && $10 != \"nan\" && !seen[$1 FS $2]++ {print $%d}' '%s'", col, csv)
variants = system(pick(1))
devices = system(pick(2))
dtypes = system(pick(3))
n = words(variants)
if (n == 0) { print "hfu.gp: no rows with a known peak in ".csv; exit }
ndev = system(sprintf("awk -F, 'NR > 1 {print $2}' '%s' | sort -u | wc -l", csv)) + 0
label(i) = sprintf("%s (%s%s)", word(variants, i), word(dtypes, i), ndev > 1 ? ", ".word(devices, i) : "")

set title noenhanced
set title sprintf("Hardware FLOPs utilisation of square matmuls, m = n = k%s", \
                  ndev == 1 ? " (".word(devices, 1).")" : "")
set xlabel "matrix size m = n = k"
set ylabel "HFU (%) = 2 m n k / time / peak at the variant's precision"
set logscale x 2
set xtics ("16" 16, "32" 32, "64" 64, "128" 128, "256" 256, "512" 512, "1K" 1024, "2K" 2048, \
           "4K" 4096, "8K" 8192, "16K" 16384, "32K" 32768, "64K" 65536)
set yrange [0:*]
set offsets graph 0.03, graph 0.03, 0, 0   # keep the end points (and their tick labels) inside
set mytics 2

# Each line reads only its own rows; smooth unique sorts them by size and
# averages repeated runs of one size.
rows(i) = sprintf("< awk -F, '$1 == \"%s\" && $2 == \"%s\" && $10 != \"nan\"' '%s'", \
                  word(variants, i), word(devices, i), csv)
plot for [i=1:n] rows(i) using 4:10 smooth unique with linespoints ls i title label(i) noenhanced
