# allreduce.gp: all-reduce bus bandwidth against message size, one line per
# algorithm (and per rank count and dtype when the CSV holds several).
#   gnuplot -e "csv='plots/data/allreduce.csv'; out='plots/allreduce.png'" 02_allreduce/allreduce.gp
# Columns: op,algo,ranks,bytes,count,dtype,time_us,algbw_gbs,busbw_gbs,wrong
load 'plots/style.gp'

# The series in the file, in order of first appearance: algo, ranks, dtype.
pick(col) = sprintf("awk -F, 'NR > 1 && $1 == \"allreduce\" && !seen[$2 FS $3 FS $6]++ {print $%d}' '%s'", col, csv)
algos = system(pick(2))
ranks = system(pick(3))
dtypes = system(pick(6))
n = words(algos)
if (n == 0) { print "allreduce.gp: no allreduce rows in ".csv; exit }
# One rank count and dtype: say it once in the title, name lines by algorithm.
combos = system(sprintf("awk -F, 'NR > 1 && $1 == \"allreduce\" {print $3 FS $6}' '%s' | sort -u | wc -l", csv)) + 0
label(i) = combos == 1 ? word(algos, i) : sprintf("%s, %s ranks, %s", word(algos, i), word(ranks, i), word(dtypes, i))
title_tail = combos == 1 ? sprintf(" (%s ranks, %s)", word(ranks, 1), word(dtypes, 1)) : ""

set title "All-reduce bus bandwidth by algorithm".title_tail
set xlabel "message size (bytes)"
set ylabel "bus bandwidth (GB/s) = algbw x 2(N-1)/N"
set logscale x 2
set format x "%.0b%BB"
set xtics 4
set yrange [0:*]
set label 1 "latency-bound" at graph 0.03, graph 0.93 tc rgb "#777777"
set label 2 "bandwidth-bound" right at graph 0.97, graph 0.93 tc rgb "#777777"

# smooth unique: sorted by size, repeated runs of one size averaged
plot for [i=1:n] csv using \
    ((strcol(1) eq "allreduce" && strcol(2) eq word(algos, i) && \
      strcol(3) eq word(ranks, i) && strcol(6) eq word(dtypes, i)) ? $4 : NaN):9 \
    smooth unique with linespoints ls i title label(i)
