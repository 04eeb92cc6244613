# paramserver.gp: 03_ddp/paramserver's loss with a straggler, BSP, ASP and
# SSP side by side: against wall-clock time (left: who reaches a loss first)
# and against updates (right: what each update is worth). The runs without
# the straggler are drawn thin for reference.
#   gnuplot -e "csv='plots/data/paramserver.csv'; out='plots/paramserver.png'" 03_ddp/paramserver.gp
# Columns (03_ddp/paramserver --csv): sync,workers,straggler,update,clock,
#   seconds,loss,staleness,lr,norm
load 'plots/style.gp'
set terminal pngcairo size 1200,520 enhanced font "DejaVu Sans,11"
set output out
rows(sync, slow) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && ($3 == \"none\") == %d' '%s'", sync, slow, csv)
set multiplot layout 1, 2 title "03\\_ddp/paramserver: 1 server, 3 workers, the last one 4x slower (thin: no straggler)"
set ylabel "loss of the update's gradients (nats per token)"
set key inside top right
set yrange [*:*]
set xlabel "wall-clock seconds"
plot rows("bsp", 0) using 6:7 with lines ls 1 lw 2.5 title "BSP", \
     rows("async", 0) using 6:7 with lines ls 2 lw 2.5 title "ASP (async)", \
     rows("ssp:2", 0) using 6:7 with lines ls 3 lw 2.5 title "SSP, S = 2", \
     rows("bsp", 1) using 6:7 with lines ls 1 lw 0.8 notitle, \
     rows("async", 1) using 6:7 with lines ls 2 lw 0.8 notitle, \
     rows("ssp:2", 1) using 6:7 with lines ls 3 lw 0.8 notitle
set xlabel "updates (ASP: one per gradient; BSP, SSP: one per clock of 3 gradients)"
plot rows("bsp", 0) using 4:7 with lines ls 1 lw 2.5 title "BSP", \
     rows("async", 0) using 4:7 with lines ls 2 lw 2.5 title "ASP (async)", \
     rows("ssp:2", 0) using 4:7 with lines ls 3 lw 2.5 title "SSP, S = 2"
unset multiplot
