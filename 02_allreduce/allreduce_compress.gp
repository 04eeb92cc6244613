# allreduce_compress.gp: bytes one rank sends for the compressed all-reduce
# of one fp32 gradient against the number of ranks, per compressor
# (02_allreduce/sweep_compress.sh): the all-gathered pieces (int8, sign,
# top-k) grow as N - 1, the all-reduced ones (uncompressed ring, PowerSGD's
# factors) tend to a constant 2x.
#   gnuplot -e "csv='plots/data/allreduce_compress.csv'; out='plots/allreduce_compress.png'" 02_allreduce/allreduce_compress.gp
# Columns: compress,ranks,bytes,count,sent_bytes,formula_bytes,time_us,
#   algbw_gbs,busbw_gbs,err_one,err_mean_no_ef,err_mean_ef
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'
specs = "none int8 sign topk:0.01 powersgd:4"
rows(s) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\"' '%s'", s, csv)
stats csv using 3 skip 1 nooutput name "B"
set title sprintf("02\\_allreduce: bytes sent per rank, compressed all-reduce of %.0f KiB of fp32", B_max / 1024)
set xlabel "ranks N"
set ylabel "bytes sent per rank (log scale)"
set logscale y 10
set xtics 1
set key outside right top box opaque
plot for [i = 1:words(specs)] rows(word(specs, i)) using 2:5 with linespoints ls i title word(specs, i)
