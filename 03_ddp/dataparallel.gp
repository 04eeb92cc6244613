# dataparallel.gp: step time against N for DDP (N processes) and DataParallel
# (one process, N replica threads) at the same global batch, one thread per
# rank or replica: the median of the repeated runs with a bar from the
# fastest to the slowest, and under each the part that is not parallel
# compute (DDP: the all-reduce left exposed; DataParallel: device 0's serial
# replicate, gather, scatter and reduce). On the right axis, the bytes of a
# step through the busiest link: all of DataParallel's pass device 0, (N - 1)
# times weights, logits, logit gradients and gradients; a DDP rank sends
# 2 (N - 1) / N gradients whatever N. Rows come from 03_ddp/sweep_dataparallel.sh.
#   gnuplot -e "csv='plots/data/dataparallel.csv'; out='plots/dataparallel.png'" 03_ddp/dataparallel.gp
# Columns: 1 n, 2 tokens, 3 threads, 4 ddp_step_ms, 5 ddp_min, 6 ddp_max,
#   7 ddp_exposed_comm_ms, 8 dp_step_ms, 9 dp_min, 10 dp_max, 11 dp_forward_ms,
#   12 dp_backward_ms, 13 dp_serial_ms, 14 dp_optimizer_ms, 15 ddp_rank_mb,
#   16 dp_device0_mb
load 'plots/style.gp'

stats csv using 1 skip 1 nooutput name "R"
stats csv using 2 skip 1 nooutput name "TOK"
stats csv using ($6 > $10 ? $6 : $10) skip 1 nooutput name "TOP"
stats csv using 16 skip 1 nooutput name "MB"
set title sprintf("03\\_ddp: DataParallel (1 process, N threads) vs DDP (N processes), %d tokens per step, 1 thread each", TOK_max)
set xlabel "replicas (DataParallel) or ranks (DDP) N"
set ylabel "ms per step"
set xrange [0.5:R_max + 0.5]
set xtics 1
set yrange [0:TOP_max * 1.7]
set y2label "MB per step through the busiest link (dotted)"
set y2range [0:MB_max * 1.7]
set y2tics
set ytics nomirror
set key inside top left
set errorbars large
plot csv skip 1 using ($1 - 0.05):4:5:6 with yerrorlines ls 1 title "DDP: step (median; bar: fastest to slowest run)", \
     csv skip 1 using ($1 + 0.05):8:9:10 with yerrorlines ls 2 title "DataParallel: step", \
     csv skip 1 using 1:7 with linespoints ls 1 dt 2 title "DDP: all-reduce left exposed", \
     csv skip 1 using 1:13 with linespoints ls 2 dt 2 title "DataParallel: device 0's serial replicate + gather + scatter + reduce", \
     csv skip 1 using 1:15 axes x1y2 with linespoints ls 1 dt 3 title "DDP: MB each rank sends (right axis)", \
     csv skip 1 using 1:16 axes x1y2 with linespoints ls 2 dt 3 title "DataParallel: MB device 0 moves (right axis)"
