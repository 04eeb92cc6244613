# hsdp.gp: why hybrid sharding keeps its shard groups inside a node. 4 ranks
# on 2 simulated nodes of 2 (05_hsdp/sweep_links.sh); left, the step time
# against the shard group size K without the link model, with a fast and
# with a slow link between the nodes, each measured point beside its
# alpha-beta prediction (the step without the link model + the time the
# crossing ring steps add); right, the bytes each rank sends across nodes.
#   gnuplot -e "csv='plots/data/hsdp.csv'; out='plots/hsdp.png'" 05_hsdp/hsdp.gp
# Columns: shard,link,inter_gbps,inter_us,step_ms,base_ms,link_pred_ms,pred_ms,cross_mb,
#   cross_pred_mb,sent_mb
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out

is(s) = strcol(2) eq s
stats csv using (is("fast") ? $3 : NaN):(is("fast") ? $4 : NaN) skip 1 nooutput name "F"
stats csv using (is("slow") ? $3 : NaN):(is("slow") ? $4 : NaN) skip 1 nooutput name "S"
set multiplot layout 1,2 title "05\\_hsdp: 4 ranks on 2 nodes of 2 - shard groups of K ranks, replicated across the rest"
set logscale x 2
set xrange [0.8:5]
set xtics ("1: DDP" 1, "2: a group per node" 2, "4: FSDP" 4)
set xlabel "shard group size K"
set key inside top left box opaque font ",10"

stats csv using 5 skip 1 nooutput name "T"
stats csv using 8 skip 1 nooutput name "Q"
set ylabel "time per step (ms)"
set yrange [0:(T_max > Q_max ? T_max : Q_max) * 1.45]
# rows come in threes per K (none, fast, slow): every 3::i picks one link
plot csv skip 1 every 3::0 using 1:5 with linespoints ls 9 title "no link model (measured)", \
     csv skip 1 every 3::1 using 1:5 with points ls 1 ps 1.5 \
         title sprintf("fast link, %g GB/s + %g us: measured", F_max_x, F_max_y), \
     csv skip 1 every 3::1 using 1:8 with linespoints ls 1 dt 2 pt 6 ps 1.5 title "     predicted (alpha-beta)", \
     csv skip 1 every 3::2 using 1:5 with points ls 2 ps 1.5 \
         title sprintf("slow link, %g GB/s + %g us: measured", S_max_x, S_max_y), \
     csv skip 1 every 3::2 using 1:8 with linespoints ls 2 dt 2 pt 4 ps 1.5 title "     predicted (alpha-beta)"

stats csv using 9 skip 1 nooutput name "X"
set ylabel "MB per rank per step sent to another node"
set yrange [0:X_max * 1.3]
plot csv skip 1 every 3::2 using 1:10 with linespoints ls 3 dt 2 pt 6 ps 2.2 title "formula", \
     csv skip 1 every 3::2 using 1:9 with points ls 3 ps 1.2 title "measured (bytes counted)", \
     csv skip 1 every 3::2 using 1:9:(sprintf("%.2f MB", $9)) with labels left offset 1.2, 0.9 notitle
unset multiplot
