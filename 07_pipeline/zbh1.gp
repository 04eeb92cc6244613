# zbh1.gp: ZB-H1 against 1F1B, the bubble (idle share of the step) against
# the micro-batches per step M: the formulas as lines, (P-1)/(M+P-1) for 1F1B
# and (P-1)/(3M+P-1) for ZB-H1 (T_F = T_B = T_W); on 2 stages the measured
# points (filled) and ZB-H1's runs replayed with their own action times as
# ZB-H1 and as 1F1B (open); on 4 stages both replayed from the layer times.
# On both, solid lines: the runs' recorded actions replayed on one core per
# rank (source replayed: compute in CPU time, so sharing cores does not
# inflate it) and priced on one 8-GPU H100 node (source modeled, thin).
# Rows come from 07_pipeline/sweep_zbh1.sh.
#   gnuplot -e "csv='plots/data/zbh1.csv'; out='plots/zbh1.png'" 07_pipeline/zbh1.gp
# Columns: schedule,stages,micro,virtual,source,bubble,formula,step_ms
load 'plots/style.gp'
set terminal pngcairo size 1100,500 enhanced font "DejaVu Sans,11"
set output out

set multiplot layout 1,2 title "07\\_pipeline: ZB-H1 against 1F1B, the bubble against micro-batches per step M" font ",13"
set logscale x 2
set xrange [1.5:11]
set xtics (2, 4, 8)
set yrange [0:60]
set xlabel "micro-batches per step M"
set key inside top right box opaque font ",9" spacing 0.9
sel(s, p, src) = strcol(1) eq s && $2 == p && strcol(5) eq src
do for [i = 1:2] {
    P = 2**i
    set title (P == 2 ? "P = 2 stages, measured on 2 ranks (points)" : "P = 4 stages (points: replayed from the layer times)")
    set ylabel (i == 1 ? "bubble (% of the step)" : "")
    if (i > 1) { unset key }
    src = P == 2 ? "measured" : "replay_layers"
    rows(s, src) = sprintf("< awk -F, '$1 == \"%s\" && $2 == %d && $5 == \"%s\"' '%s' | sort -t, -k3,3n", s, P, src, csv)
    plot 100.0 * (P - 1) / (x + P - 1) ls 2 dt 2 title "1F1B (P-1)/(M+P-1)", \
         rows("1f1b", "replayed") using 3:(100 * $6) with linespoints ls 2 lw 2 pt 9 title "1F1B replayed, 1 core per rank", \
         rows("zbh1", "replayed") using 3:(100 * $6) with linespoints ls 4 lw 2 pt 11 title "ZB-H1 replayed, 1 core per rank", \
         rows("1f1b", "modeled") using 3:(100 * $6) with lines ls 2 lw 1 title "1F1B modeled, H100 node", \
         rows("zbh1", "modeled") using 3:(100 * $6) with lines ls 4 lw 1 title "ZB-H1 modeled, H100 node", \
         100.0 * (P - 1) / (3 * x + P - 1) ls 4 dt 2 title "ZB-H1 (P-1)/(3M+P-1)", \
         csv skip 1 using (sel("1f1b", P, src) ? $3 * 0.95 : NaN):(100 * $6) with points ls 2 pt 7 title "1F1B", \
         csv skip 1 using (sel("zbh1", P, src) ? $3 * 0.95 : NaN):(100 * $6) with points ls 4 pt 5 title "ZB-H1", \
         csv skip 1 using (P == 2 && sel("1f1b", P, "replay_split_actions") ? $3 * 1.05 : NaN):(100 * $6) with points ls 2 pt 6 title "1F1B, ZB-H1's action times", \
         csv skip 1 using (P == 2 && sel("zbh1", P, "replay_actions") ? $3 * 1.05 : NaN):(100 * $6) with points ls 4 pt 4 title "ZB-H1, its action times"
}
unset multiplot
