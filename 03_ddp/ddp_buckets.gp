# ddp_buckets.gp: one step split into compute and exposed communication,
# against the gradient bucket size, with overlap on (all-reduce during
# backward) and off (after it). Each bar is the median of the repeated runs
# (its own compute + exposed split); the whisker spans the fastest and the
# slowest run's step. Beside them, from the runs' records (csv's
# *_replay.csv, replay/replay): the step replayed on one core per rank
# (lines with points, overlap on and off) and modeled on one 8-GPU H100
# node (thin, right axis), and the best bucket of each of these two
# sources in the lower panel's title. Rows come from 03_ddp/sweep_buckets.sh.
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
replay_csv = csv[1:strlen(csv) - 4]."_replay.csv"
# replay/replay's rows: bucket_mb,overlap,source,cluster,step_ms
src(s, o) = sprintf("< awk -F, '$3 == \"%s\" && $2 == \"%s\"' '%s' | sort -t, -k1,1g", s, o, replay_csv)
set terminal pngcairo size 1000,1000 enhanced font "DejaVu Sans,11"
set output out
set multiplot layout 2,1
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

# Below: the same runs replayed on one core per rank (left axis) and modeled
# on one 8-GPU H100 node (right axis), from their records.
set yrange [*:*]
# The best bucket (fastest step, overlap on) is read from these two lines
# only: the bars above come from a shared machine.
stats src("replayed", "on") using 1:5 nooutput name "BR"
stats src("modeled", "on") using 1:5 nooutput name "BM"
set title sprintf("the same runs replayed on one core per rank (left) and modeled on one 8-GPU H100 node (right)\nbest bucket, overlap on: replayed %g MiB, modeled %g MiB (bucket sizes %g to %g MiB)", \
                  BR_pos_min_y, BM_pos_min_y, BR_min_x, BR_max_x)
unset label 3
set bmargin 3
set yrange [0:*]
set ylabel "time per step (ms), replayed"
set y2label "time per step (ms), modeled"
set y2tics
set y2range [0:*]
set key inside bottom right horizontal maxcols 2
plot src("replayed", "on") using 1:5 with linespoints lc rgb "#de2d26" lw 2 pt 9 title "replayed, overlap on", \
     src("replayed", "off") using 1:5 with linespoints lc rgb "#fc9272" lw 2 pt 8 title "replayed, overlap off", \
     src("modeled", "on") using 1:5 axes x1y2 with linespoints lc rgb "#6a51a3" lw 1.5 pt 6 title "modeled H100, overlap on", \
     src("modeled", "off") using 1:5 axes x1y2 with linespoints lc rgb "#bcbddc" lw 1.5 pt 4 title "modeled H100, overlap off"
unset multiplot
