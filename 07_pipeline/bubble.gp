# bubble.gp: the pipeline bubble (idle share of the step) against the
# micro-batches per step, one panel per stage count (TeraPipe with K = 4
# token slices beside the others): the formulas as lines,
# measured points on 2 stages (2 ranks) beside the replay engine's bubble
# from the same runs' recorded action times (each stage's forward and
# backward, on one core per rank), and replayed points on 4 and 8 (the same
# schedules on a clock, with the layer times measured in the same runs).
# Rows come from 07_pipeline/sweep_bubble.sh.
#   gnuplot -e "csv='plots/data/bubble.csv'; out='plots/bubble.png'" 07_pipeline/bubble.gp
# Columns: schedule,stages,micro,virtual,source,bubble,formula,step_ms
load 'plots/style.gp'
set terminal pngcairo size 1500,560 enhanced font "DejaVu Sans,11"
set output out

set multiplot layout 1,3 title "07\\_pipeline: the bubble against micro-batches per step M\n" . \
    "lines: formulas; filled: measured; x: replayed from the run's recorded action times; open: replayed from its layer times" font ",12"
set logscale x 2
set xrange [0.75:11]
set xtics (1, 2, 4, 8)
set yrange [0:100]
set xlabel "micro-batches per step M"
set key inside top right box opaque font ",9" spacing 0.9
sel(s, p, src) = strcol(1) eq s && $2 == p && strcol(5) eq src
# gpipe and 1f1b share a formula: their points sit a little apart
do for [i = 1:3] {
    P = 2**i
    src = P == 2 ? "measured" : "replay_layers"
    set title sprintf("P = %d stages, %s", P, P == 2 ? "measured on 2 ranks, and replayed" : "replayed from the layer times")
    set ylabel (i == 1 ? "bubble (% of the step)" : "")
    if (i > 1) { unset key }
    plot 100.0 * (P - 1) / P ls 9 dt 2 title "naive (P-1)/P", \
         100.0 * (P - 1) / (x + P - 1) ls 1 dt 2 title "GPipe, 1F1B (P-1)/(M+P-1)", \
         100.0 * (P - 1) / (2 * x + P - 1) ls 3 dt 2 title "interleaved, V=2: (P-1)/(VM+P-1)", \
         100.0 * (P - 1) / (4 * x + P - 1) ls 4 dt 2 title "TeraPipe, K=4: (P-1)/(MK+P-1)", \
         csv skip 1 using (sel("naive", P, src) ? $3 : NaN):(100 * $6) with points ls 9 pt (P == 2 ? 7 : 6) title "naive", \
         csv skip 1 using (sel("gpipe", P, src) ? $3 * 0.94 : NaN):(100 * $6) with points ls 1 pt (P == 2 ? 5 : 4) title "GPipe", \
         csv skip 1 using (sel("1f1b", P, src) ? $3 * 1.06 : NaN):(100 * $6) with points ls 2 pt (P == 2 ? 7 : 6) title "1F1B", \
         csv skip 1 using (sel("interleaved", P, src) ? $3 : NaN):(100 * $6) with points ls 3 pt (P == 2 ? 9 : 8) ps 1.2 title "interleaved", \
         csv skip 1 using (sel("terapipe", P, src) ? $3 : NaN):(100 * $6) with points ls 4 pt (P == 2 ? 11 : 10) ps 1.2 title "TeraPipe", \
         csv skip 1 using (P == 2 && strcol(5) eq "replay_actions" ? $3 * (strcol(1) eq "gpipe" ? 0.94 : strcol(1) eq "1f1b" ? 1.06 : 1) : NaN):(100 * $6) \
             with points lc rgb "#333333" pt 2 ps 1.3 title "replayed from the action times"
}
unset multiplot
