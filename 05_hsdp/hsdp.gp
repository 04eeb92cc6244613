# hsdp.gp: why hybrid sharding keeps its shard groups inside a node. 4 ranks
# on 2 simulated nodes of 2 (05_hsdp/sweep_links.sh); left, the step time
# against the shard group size K without the link model, with a fast and
# with a slow link between the nodes, from the runs' records (csv's
# *_replay.csv, replay/replay): replayed on one core per rank with each
# run's own links (solid), beside the alpha-beta prediction (dashed: the
# replayed step without the link model + the time the crossing ring steps
# add), and the same runs modeled on 2 nodes of 2 H100s (thin, right axis;
# 05_hsdp/h100_2x2.cluster). The measured points are drawn only where the
# runs had a core per rank (scripts/plots.sh leaves out the others). Right,
# the bytes each rank sends across nodes, counted by the runs and by formula.
#   gnuplot -e "csv='plots/data/hsdp.csv'; out='plots/hsdp.png'" 05_hsdp/hsdp.gp
# Columns of csv: shard,link,inter_gbps,inter_us,step_ms,base_ms,link_pred_ms,pred_ms,cross_mb,
#   cross_pred_mb,sent_mb; of the replay CSV: shard,link,source,cluster,step_ms,link_pred_ms,
#   cross_mb,cross_pred_mb
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out

replay_csv = csv[1:strlen(csv) - 4]."_replay.csv"
src(s, l) = sprintf("< awk -F, '$3 == \"%s\" && $2 == \"%s\"' '%s'", s, l, replay_csv)
# the prediction: each K's replayed step without the link model + the link's alpha-beta time
pred(l) = sprintf("< awk -F, '$3 == \"replayed\" && $2 == \"none\" { b[$1] = $5 } $3 == \"replayed\" && $2 == \"%s\" { print $1, b[$1] + $6 }' '%s' | tr ' ' ,", l, replay_csv)
measured = int(system(sprintf("awk 'END { print NR - 1 }' '%s'", csv)))
stats src("replayed", "slow") using 5 nooutput name "T"
stats pred("slow") using 2 nooutput name "Q"
stats src("modeled", "none") using 5 nooutput name "M"
set multiplot layout 1,2 title "05\\_hsdp: 4 ranks on 2 nodes of 2 - shard groups of K ranks, replicated across the rest"
set logscale x 2
set xrange [0.8:5]
set xtics ("1: DDP" 1, "2: a group per node" 2, "4: FSDP" 4)
set xlabel "shard group size K"
set key inside top left box opaque font ",9"
set ylabel "time per step (ms), replayed on one core per rank"
top = T_max > Q_max ? T_max : Q_max
if (measured > 0) { stats csv skip 1 using 5 nooutput name "S"; top = S_max > top ? S_max : top }
set yrange [0:top * 1.6]
set y2label "time per step (ms), modeled on 2 nodes of 2 H100s"
set y2tics
set y2range [0:M_max * 1.6]
set ytics nomirror
lines = 'src("replayed", "none") using 1:5 with linespoints ls 9 title "no link model: replayed", \
     src("replayed", "fast") using 1:5 with linespoints ls 1 title "fast link: replayed", \
     pred("fast") using 1:2 with linespoints ls 1 dt 2 pt 6 title "     predicted (alpha-beta)", \
     src("replayed", "slow") using 1:5 with linespoints ls 2 title "slow link: replayed", \
     pred("slow") using 1:2 with linespoints ls 2 dt 2 pt 4 title "     predicted (alpha-beta)", \
     src("modeled", "none") using 1:5 axes x1y2 with linespoints ls 4 lw 1 pt 8 title "modeled: 2 nodes of 2 H100s (right axis)"'
if (measured > 0) {
    plot @lines, \
         csv skip 1 using (strcol(2) eq "none" ? $1 : NaN):5 with points ls 9 pt 7 ps 1.6 title "measured (a core per rank)", \
         csv skip 1 using (strcol(2) eq "fast" ? $1 : NaN):5 with points ls 1 pt 7 ps 1.6 notitle, \
         csv skip 1 using (strcol(2) eq "slow" ? $1 : NaN):5 with points ls 2 pt 7 ps 1.6 notitle
} else {
    plot @lines
}

unset y2tics
unset y2label
stats src("replayed", "slow") using 7 nooutput name "X"
set ylabel "MB per rank per step sent to another node"
set yrange [0:X_max * 1.3]
plot src("replayed", "slow") using 1:8 with linespoints ls 3 dt 2 pt 6 ps 2.2 title "formula", \
     src("replayed", "slow") using 1:7 with points ls 3 ps 1.2 title "counted by the runs", \
     src("replayed", "slow") using 1:7:(sprintf("%.2f MB", $7)) with labels left offset 1.2, 0.9 notitle
unset multiplot
