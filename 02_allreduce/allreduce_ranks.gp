# allreduce_ranks.gp: all-reduce time against the number of ranks at one
# message size, one colour per algorithm: the median of the repeats as
# points, the fastest and slowest repeat as a bar, the alpha-beta model's
# prediction (from each run's ping-pong) as a dashed line. The parameter
# server's root carries 2(N-1) X, so its time grows with N; the ring's
# 2(N-1)/N X hardly does. Data: 02_allreduce/sweep_ranks.sh.
#   gnuplot -e "csv='plots/data/allreduce_ranks.csv'; out='plots/allreduce_ranks.png'" 02_allreduce/allreduce_ranks.gp
# Columns: op,algo,ranks,bytes,count,dtype,time_us,time_min_us,time_max_us,
#          algbw_gbs,busbw_gbs,model_us,wrong
load 'plots/style.gp'

# The series: algorithm, size and dtype, in order of first appearance.
pick(col) = sprintf("awk -F, 'NR > 1 && $1 == \"allreduce\" && !seen[$2 FS $4 FS $6]++ {print $%d}' '%s'", col, csv)
algos = system(pick(2))
sizes = system(pick(4))
dtypes = system(pick(6))
n = words(algos)
if (n == 0) { print "allreduce_ranks.gp: no allreduce rows in ".csv; exit }
combos = system(sprintf("awk -F, 'NR > 1 && $1 == \"allreduce\" {print $4 FS $6}' '%s' | sort -u | wc -l", csv)) + 0
human(b) = b >= 1048576 ? sprintf("%g MiB", b / 1048576.0) : b >= 1024 ? sprintf("%g KiB", b / 1024.0) : sprintf("%g B", b)
label(i) = combos == 1 ? word(algos, i) : sprintf("%s, %s, %s", word(algos, i), human(word(sizes, i) + 0), word(dtypes, i))

set title (combos == 1 ? sprintf("All-reduce of %s (%s) against the number of ranks", \
           human(word(sizes, 1) + 0), word(dtypes, 1)) : "All-reduce against the number of ranks")
set xlabel "ranks N"
set ylabel "time per call (us), log scale"
set logscale y 10
set format y "%g"
set xtics 1
set offsets 0.3, 0.3, 0, 0
set xrange [1:*]   # one rank count left (the others shared cores) still has a range
set label 3 "points: median of the repeats; bars: fastest and slowest repeat; dashed: the alpha-beta model" \
    at graph 0.01, graph -0.13 tc rgb "#555555" font ",10"
set bmargin 5

rows(i) = sprintf("< awk -F, '$1 == \"allreduce\" && $2 == \"%s\" && $4 == \"%s\" && $6 == \"%s\"' '%s' | sort -t, -k3,3n", \
                  word(algos, i), word(sizes, i), word(dtypes, i), csv)
plot for [i=1:n] rows(i) using 3:7:8:9 with yerrorlines ls i title label(i), \
     for [i=1:n] rows(i) using 3:((strcol(12) ne "nan" && $12 > 0) ? $12 : NaN) \
         with lines ls i dt 2 lw 1.5 notitle
