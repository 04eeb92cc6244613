# ddp_buckets.gp: one step split into compute and exposed communication,
# against the gradient bucket size, with overlap on (all-reduce during
# backward) and off (after it). Rows come from 03_ddp/sweep_buckets.sh.
#   gnuplot -e "csv='plots/data/ddp_buckets.csv'; out='plots/ddp_buckets.png'" 03_ddp/ddp_buckets.gp
# Columns: bucket_mb,overlap,ranks,buckets,grad_mb,step_ms,compute_ms,exposed_comm_ms
load 'plots/style.gp'

stats csv using 3 skip 1 nooutput name "R"
stats csv using 5 skip 1 nooutput name "G"
stats csv using 6 skip 1 nooutput name "S"
set title sprintf("03\\_ddp: step time against bucket size (%d ranks, %.1f MB of gradients per step)", \
                  R_max, G_max)
set xlabel "bucket size (MiB, log scale; the default is 25); above each pair: buckets per step"
set ylabel "time per step (ms)"
set logscale x 2
set xrange [*:*]
set yrange [0:S_max * 1.45]
set key inside top right horizontal maxcols 2
set style fill solid 0.85 border lc rgb "#444444"

# Each bucket size gets two bars, overlap off on the left and on on the
# right, each a rectangle from 0 to compute (blue) with the exposed
# communication stacked on top (red): boxxyerror (x, y, xlow, xhigh, ylow, yhigh).
lo(mb, on) = on ? mb * 1.03 : mb * 0.78
hi(mb, on) = on ? mb * 1.28 : mb * 0.97
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
     csv skip 1 using (is("off") ? $1 * 0.875 : NaN):($6):(sprintf("%d", $4)) \
         with labels offset 0, 0.7 font ",9" tc rgb "#555555" notitle
