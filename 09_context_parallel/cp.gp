# cp.gp: attention time and memory per rank against the sequence length, for
# C = 1, 2, 4 context-parallel ranks, ring attention and Ulysses. Rows come
# from 09_context_parallel/sweep_cp.sh.
#   gnuplot -e "csv='plots/data/cp.csv'; out='plots/cp.png'" 09_context_parallel/cp.gp
# Columns: algo,cp,dp,balance,seq,batch,step_ms,attn_ms_max,attn_ms_min,
#   attn_cpu_ms_max,attn_cpu_ms_min,attn_comm_ms,cp_mb_per_step,mem_peak_mb,
#   acts_mb,rss_mb
# untimed: on a CPU it draws the attention's thread CPU time (and memory),
# which ranks sharing the cores do not inflate, so every C is drawn
# (scripts/plots.sh).
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out

stats csv using 10 skip 1 nooutput name "CPU"
# On a CPU the rank's CPU time is its work, whatever else shares the cores;
# on a GPU (no CPU column) the device time.
tcol = CPU_max > 0 ? 10 : 8
rows(a, c) = sprintf("< awk -F, '$1 == \"%s\" && $2 == %d' '%s'", a, c, csv)

set multiplot layout 1, 2 title "09\\_context\\_parallel: one sequence split over C ranks (dim 64, 4 heads, 2 layers)"
set logscale xy 2
set format y "%g"
set xlabel "sequence length T (tokens)"
set key inside top left
set title sprintf("attention per rank and step (forward + backward), the slowest rank%s", \
                  CPU_max > 0 ? ": its CPU time" : "")
set ylabel "ms"
plot rows("ring", 1) using 5:tcol with linespoints ls 9 title "C = 1", \
     rows("ring", 2) using 5:tcol with linespoints ls 1 title "C = 2, ring", \
     rows("ulysses", 2) using 5:tcol with linespoints ls 1 dt 2 pt 6 title "C = 2, Ulysses", \
     rows("ring", 4) using 5:tcol with linespoints ls 2 title "C = 4, ring", \
     rows("ulysses", 4) using 5:tcol with linespoints ls 2 dt 2 pt 4 title "C = 4, Ulysses"
set title "device memory per rank (high-water of everything the rank allocated)"
set ylabel "MiB"
plot rows("ring", 1) using 5:14 with linespoints ls 9 title "C = 1", \
     rows("ring", 2) using 5:14 with linespoints ls 1 title "C = 2, ring", \
     rows("ulysses", 2) using 5:14 with linespoints ls 1 dt 2 pt 6 title "C = 2, Ulysses", \
     rows("ring", 4) using 5:14 with linespoints ls 2 title "C = 4, ring", \
     rows("ulysses", 4) using 5:14 with linespoints ls 2 dt 2 pt 4 title "C = 4, Ulysses"
unset multiplot
