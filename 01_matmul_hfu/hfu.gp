# hfu.gp: square matmuls against their size, one line per variant (per
# device, when the CSV holds CPU and GPU rows), in two panels side by side:
# HFU (the fraction of the peak at the variant's precision) and the absolute
# TFLOP/s, where the gap between the FP32 units and the tensor cores shows.
# Beside the CSV's own lines, dashed, the H100 reference sweep shipped in
# 01_matmul_hfu/reference/h100_hfu.csv (measured with this program on an
# H100 80GB HBM3), so a machine without a GPU still shows the lecture's plot.
#   gnuplot -e "csv='plots/data/hfu.csv'; out='plots/hfu.png'" 01_matmul_hfu/hfu.gp
#   (ref='' leaves the reference out; ref='FILE' draws another one)
# Columns: variant,device,dtype,m,n,k,time_ms,tflops,peak_tflops,hfu (hfu in %)
load 'plots/style.gp'
set terminal pngcairo size 1500,640 enhanced font "DejaVu Sans,11"
set output out

if (!exists("ref")) ref = '01_matmul_hfu/reference/h100_hfu.csv'
if (ref ne '' && system(sprintf("[ -s '%s' ] && echo 1 || echo 0", ref)) + 0 == 0) ref = ''
if (ref ne '' && system(sprintf("[ '%s' -ef '%s' ] && echo 1 || echo 0", ref, csv)) + 0 == 1) ref = ''

# The series of a file, in order of first appearance: variant and device,
# with the variant's dtype. HFU needs a known peak; TFLOP/s does not.
pick(file, col) = sprintf("awk -F, 'NR > 1 && !seen[$1 FS $2]++ {print $%d}' '%s'", col, file)
variants = system(pick(csv, 1))
devices = system(pick(csv, 2))
dtypes = system(pick(csv, 3))
n = words(variants)
if (n == 0) { print "hfu.gp: no rows in ".csv; exit }
ndev = system(sprintf("awk -F, 'NR > 1 {print $2}' '%s' | sort -u | wc -l", csv)) + 0
label(i) = sprintf("%s (%s%s)", word(variants, i), word(dtypes, i), ndev > 1 ? ", ".word(devices, i) : "")
rows(file, v, dev) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == \"%s\"' '%s'", v, dev, file)

rvariants = ref eq '' ? '' : system(pick(ref, 1))
rdevices = ref eq '' ? '' : system(pick(ref, 2))
rdtypes = ref eq '' ? '' : system(pick(ref, 3))
nr = words(rvariants)
rlabel(i) = sprintf("H100 reference: %s (%s)", word(rvariants, i), word(rdtypes, i))
# the reference in colours of its own, dashed, open points
rcolours = "#0b6e4f #b8450b #4b3f99 #c2185b #5a8f00 #8d6e00 #6d4c41 #455a64"
rcol(i) = word(rcolours, (i - 1) % words(rcolours) + 1)

set logscale x 2
set xtics ("16" 16, "32" 32, "64" 64, "128" 128, "256" 256, "512" 512, "1K" 1024, "2K" 2048, \
           "4K" 4096, "8K" 8192, "16K" 16384, "32K" 32768, "64K" 65536)
set offsets graph 0.03, graph 0.03, 0, 0   # keep the end points (and their tick labels) inside
set xlabel "matrix size m = n = k"
set title noenhanced

set multiplot title sprintf("Square matmuls%s: utilisation and speed", \
    ndev == 1 ? " on the ".word(devices, 1) : "") noenhanced

# ---- left: HFU ----------------------------------------------------------------
set origin 0, 0
set size 0.42, 0.94
set title "HFU = 2 m n k / time / peak at the variant's precision"
set ylabel "HFU (%)"
set yrange [0:*]
set mytics 2
unset key
# smooth unique sorts each line by size and averages repeated runs of a size;
# rows of an unknown peak have hfu "nan" and drop out
plot for [i=1:n] rows(csv, word(variants, i), word(devices, i)) using 4:10 smooth unique \
         with linespoints ls i notitle, \
     for [i=1:nr] rows(ref, word(rvariants, i), word(rdevices, i)) using 4:10 smooth unique \
         with linespoints lc rgb rcol(i) lw 2 dt 2 pt 6 ps 0.9 notitle

# ---- right: TFLOP/s, and the key of both -----------------------------------------
set origin 0.42, 0
set size 0.58, 0.94
set title "achieved TFLOP/s (log scale): the FP32 units against the tensor cores"
set ylabel "TFLOP/s = 2 m n k / time"
set logscale y 10
set format y "%g"
set yrange [*:*]
set key outside right top box opaque noenhanced
plot for [i=1:n] rows(csv, word(variants, i), word(devices, i)) using 4:8 smooth unique \
         with linespoints ls i title label(i), \
     for [i=1:nr] rows(ref, word(rvariants, i), word(rdevices, i)) using 4:8 smooth unique \
         with linespoints lc rgb rcol(i) lw 2 dt 2 pt 6 ps 0.9 title rlabel(i)
unset multiplot
