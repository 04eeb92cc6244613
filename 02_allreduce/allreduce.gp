# allreduce.gp: all-reduce bus bandwidth against message size, one colour
# per algorithm (and per rank count and dtype when the CSV holds several):
# the median of the repeats as points, the fastest and slowest repeat as a
# bar, and the alpha-beta model's prediction for that algorithm as a dashed
# line of the same colour. Beside them (when csv's *_replay.csv exists, from
# replay/replay on the run's record): solid lines, the same calls replayed on
# one core per rank (source replayed: compute in CPU time, messages on the
# run's ping-pong link), and in a second panel the calls priced on one 8-GPU
# H100 node (source modeled) beside nccl-tests' published H100 figure.
#   gnuplot -e "csv='plots/data/allreduce.csv'; out='plots/allreduce.png'" 02_allreduce/allreduce.gp
# Columns: op,algo,ranks,bytes,count,dtype,time_us,time_min_us,time_max_us,
#          algbw_gbs,busbw_gbs,model_us,wrong
load 'plots/style.gp'

# The series in the file, in order of first appearance: algo, ranks, dtype.
pick(col) = sprintf("awk -F, 'NR > 1 && $1 == \"allreduce\" && !seen[$2 FS $3 FS $6]++ {print $%d}' '%s'", col, csv)
algos = system(pick(2))
ranks = system(pick(3))
dtypes = system(pick(6))
n = words(algos)
replay_csv = csv[1:strlen(csv) - 4]."_replay.csv"
have_replay = system(sprintf("test -s '%s' && echo 1 || echo 0", replay_csv)) + 0
if (n == 0 && have_replay) {
    # every measured run had more ranks than cores (scripts/plots.sh left
    # them out): the series come from the replayed rows alone
    rpick(f) = sprintf("awk -F, 'NR > 1 && $1 == \"replayed\" { split($4, k, \":\"); if (k[1] == \"allreduce\" && !seen[k[2]]++) print %s }' '%s'", f, replay_csv)
    algos = system(rpick("k[2]"))
    ranks = system(rpick("$5"))
    dtypes = system(rpick("\"fp32\""))
    n = words(algos)
}
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
set label 3 "points: median of the repeats; bars: fastest and slowest repeat; dashed: the alpha-beta model" \
    at graph 0.01, graph -0.13 tc rgb "#555555" font ",10"
set bmargin 5
# replay/replay's rows of one source and algorithm: bytes, then busbw in GB/s
replayed(s, i) = sprintf("< awk -F, -v OFS=, -v s=%s -v a=%s -v N=%s 'BEGIN { if (a == \"mpi\" || a == \"nccl\") a = \"lib\" } $1 == s { split($4, k, \":\"); if (k[1] == \"allreduce\" && k[2] == a) print k[3], k[3] / $7 * 2 * (N - 1) / N / 1e9 }' '%s' | sort -t, -k1,1n", \
                         s, word(algos, i), word(ranks, i), replay_csv)
if (have_replay) {
    set terminal pngcairo size 1400,560 enhanced font "DejaVu Sans,11"
    set output out
    set multiplot layout 1,2
    set label 3 "points: measured median; bars: fastest and slowest repeat; dashed: alpha-beta; solid: replayed, 1 core per rank"
}

# Each series reads only its own rows, sorted by size.
rows(i) = sprintf("< awk -F, '$1 == \"allreduce\" && $2 == \"%s\" && $3 == \"%s\" && $6 == \"%s\"' '%s' | sort -t, -k4,4n", \
                  word(algos, i), word(ranks, i), word(dtypes, i), csv)
# busbw scales as 1 / time: the bar's ends and the model's line follow from it
if (combos > 0) {
    plot for [i=1:n] rows(i) using 4:11:($11 * $7 / $9):($11 * $7 / $8) \
             with yerrorlines ls i title label(i), \
         for [i=1:n] rows(i) using 4:((strcol(12) ne "nan" && $12 > 0) ? $11 * $7 / $12 : NaN) \
             with lines ls i dt 2 lw 1.5 notitle, \
         for [i=1:(have_replay ? n : 0)] replayed("replayed", i) using 1:2 with lines ls i lw 2.5 notitle
} else {   # no measured series left: the replayed ones alone
    set label 3 "every measured run had more ranks than cores: replayed on 1 core per rank only"
    plot for [i=1:n] replayed("replayed", i) using 1:2 with lines ls i lw 2.5 title label(i)." replayed"
}
if (have_replay) {
    set title "Modeled on one 8-GPU H100 node (".word(ranks, 1)." GPUs)"
    unset label 1; unset label 2; unset label 3
    set label 4 "nccl-tests, 8 x H100 SXM, large messages: 460-480 GB/s busbw (docs.alayanew.com)" at graph 0.02, graph 0.95 tc rgb "#555555" font ",9"
    set ylabel "bus bandwidth (GB/s), modeled"
    set yrange [0:520]
    plot for [i=1:n] replayed("modeled", i) using 1:2 with linespoints ls i title label(i)." modeled", \
         470 with lines lc rgb "#999999" dt 3 title "nccl-tests published (470)"
    unset multiplot
}
