# paramserver.gp: 03_ddp/paramserver's loss with a straggler, BSP, ASP and
# SSP side by side: against the virtual clock's seconds (left: who reaches a
# loss first) and against updates (right: what each update is worth). The
# runs without the straggler are drawn thin for reference. The seconds are
# the virtual clock's (part3_paramserver.md): each worker's compute in its
# thread CPU time (source replayed) or fixed by --compute-s (source
# modeled), every message alpha + bytes / B; the subtitle says which.
#   gnuplot -e "csv='plots/data/paramserver.csv'; out='plots/paramserver.png'" 03_ddp/paramserver.gp
# Columns (03_ddp/paramserver --csv): sync,workers,straggler,update,clock,
#   seconds,loss,staleness,lr,norm,worker_rank + provenance
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out
rows(sync, slow) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && ($3 == \"none\") == %d' '%s'", sync, slow, csv)
# which clock, and where its compute seconds were taken
src = system(sprintf("awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } " . \
    "{ s = $c[\"source\"]; r = $c[\"ranks\"]; t = $c[\"threads\"]; k = $c[\"cores\"]; l = $c[\"load_before\"] + 0; " . \
    "lo = (lo == \"\" || l < lo) ? l : lo; hi = l > hi ? l : hi } END { " . \
    "if (s == \"replayed\") printf \"replayed on a virtual clock: each worker'\\''s compute in its thread CPU time " . \
    "(taken with %%s ranks x %%s thread on %%s cores, load %%.1f-%%.1f), messages alpha + bytes / B (default 20 us, 10 GB/s)\", r, t, k, lo, hi; " . \
    "else printf \"modeled on a virtual clock: a fixed compute per clock, each message alpha + bytes / B\" }' '%s'", csv))
set label 999 ""
set multiplot layout 1, 2 title "03\\_ddp/paramserver: 1 server, 3 workers, the last one's compute 4x as long (thin: no straggler)\n{/*0.8 " . src . "}"
set ylabel "loss of the update's gradients (nats per token)"
set key inside top right
set yrange [*:*]
set xlabel "virtual seconds"
plot rows("bsp", 0) using 6:7 with lines ls 1 lw 2.5 title "BSP", \
     rows("async", 0) using 6:7 with lines ls 2 lw 2.5 title "ASP (async)", \
     rows("ssp:2", 0) using 6:7 with lines ls 3 lw 2.5 dt 2 title "SSP, S = 2", \
     rows("bsp", 1) using 6:7 with lines ls 1 lw 0.8 notitle, \
     rows("async", 1) using 6:7 with lines ls 2 lw 0.8 notitle, \
     rows("ssp:2", 1) using 6:7 with lines ls 3 lw 0.8 notitle
set xlabel "updates (ASP: one per gradient; BSP, SSP: one per clock of 3 gradients)"
plot rows("bsp", 0) using 4:7 with lines ls 1 lw 2.5 title "BSP", \
     rows("async", 0) using 4:7 with lines ls 2 lw 2.5 title "ASP (async)", \
     rows("ssp:2", 0) using 4:7 with lines ls 3 lw 2.5 dt 2 title "SSP, S = 2"
unset multiplot
