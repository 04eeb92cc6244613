# ddp_buckets.gp: one step split into compute and exposed communication,
# against the gradient bucket size, with overlap on (all-reduce during
# backward) and off (after it). Each bar is the median of the repeated runs
# (its own compute + exposed split); the whisker spans the fastest and the
# slowest run's step. Rows come from 03_ddp/sweep_buckets.sh.
#   gnuplot -e "csv='plots/data/ddp_buckets.csv'; out='plots/ddp_buckets.png'" 03_ddp/ddp_buckets.gp
# Columns: 1 bucket_mb, 2 overlap, 3 ranks, 4 buckets, 5 grad_mb, 6 step_ms,
#   7 compute_ms, 8 exposed_comm_ms, 9 tokens, 10 tok_s, 11 threads, 12 runs,
#   13 step_ms_min, 14 step_ms_max, 15 cores
load 'plots/style.gp'

stats csv using 3 skip 1 nooutput name "R"
stats csv using 5 skip 1 nooutput name "G"
stats csv using 14 skip 1 nooutput name "S"
stats csv using 12 skip 1 nooutput name "N"
set title sprintf("03\\_ddp: step time against bucket size (%d ranks, %.1f MB of gradients per step, median of %d runs)", \
                  R_max, G_max, N_min)
set xlabel "bucket size (MiB, log scale); the numbers at the top: buckets per step"
set ylabel "time per step (ms)"
set logscale x 2
set xrange [*:*]
set yrange [0:S_max * 1.3]
set key inside top left horizontal maxcols 2
set style fill solid 0.85 border lc rgb "#444444"
set errorbars large
set label 3 "bars: the median run, compute + exposed communication; whiskers: fastest and slowest run" \
    at graph 0.01, graph -0.13 tc rgb "#555555" font ",10"
set bmargin 5

# Each bucket size gets two bars, overlap off on the left and on on the
# right, each a rectangle from 0 to compute (blue) with the exposed
# communication stacked on top (red): boxxyerror (x, y, xlow, xhigh, ylow, yhigh).
lo(mb, on) = on ? mb * 1.03 : mb * 0.78
hi(mb, on) = on ? mb * 1.28 : mb * 0.97
mid(mb, on) = sqrt(lo(mb, on) * hi(mb, on))
is(s) = strcol(2) eq s
# A row of the other overlap mode gets y = NaN, which skips it.
plot csv skip 1 using ($1):(is("off") ? $7 / 2 : NaN):(lo($1,0)):(hi($1,0)):(0):7 \
         with boxxyerror lc rgb "#9ecae1" title "compute, overlap off", \
     csv skip 1 using ($1):(is("off") ? $7 : NaN):(lo($1,0)):(hi($1,0)):7:6 \
         with boxxyerror lc rgb "#fc9272" title "exposed communication, overlap off", \
     csv skip 1 using ($1):(is("on") ? $7 / 2 : NaN):(lo($1,1)):(hi($1,1)):(0):7 \
         with boxxyerror lc rgb "#3182bd" title "compute, overlap on", \
     csv skip 1 using ($1):(is("on") ? $7 : NaN):(lo($1,1)):(hi($1,1)):7:6 \
         with boxxyerror lc rgb "#de2d26" title "exposed communication, overlap on", \
     csv skip 1 using (mid($1, is("on"))):6:13:14 with yerrorbars lc rgb "#222222" lw 1.5 pt 0 notitle, \
     csv skip 1 using (is("off") ? $1 : NaN):(S_max * 1.12):(sprintf("%d", $4)) \
         with labels font ",10" tc rgb "#555555" notitle
