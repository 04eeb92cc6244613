# ddp_local.gp: local SGD against DDP (03_ddp/sweep_local.sh): the training
# loss against the step (left) and against the MB each rank has sent so far
# (right, log scale), for DDP, local SGD at each H, and DiLoCo. The loss is
# a running mean over 16 steps (one DiLoCo round at H 16), as the per-step
# loss of one small batch is noisy; steps before a run's first byte (local
# SGD before its first average) have no place on the log axis.
#   gnuplot -e "csv='plots/data/ddp_local.csv'; out='plots/ddp_local.png'" 03_ddp/ddp_local.gp
# Columns: variant,local_steps,step,loss,sent_mb,total_mb
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out

# One run's rows, with its loss replaced by the running mean of 16 steps.
run(v, h) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == %d { i = n %% 16; s += $4 - (n >= 16 ? r[i] : 0); \
    r[i] = $4; n++; print $3 \",\" s / (n < 16 ? n : 16) \",\" $6 }' '%s'", v, h, csv)
name(v, h) = v eq "ddp" ? "DDP (gradients every step)" : \
             v eq "local" ? sprintf("local SGD, H = %d", h) : sprintf("DiLoCo, H = %d (outer lr 0.7, Nesterov 0.9)", h)
set key inside top right
set multiplot layout 1, 2 title "03\\_ddp: local SGD against DDP, 2 ranks, AdamW, the same batches (loss: running mean of 16 steps)"
set xlabel "step"
set ylabel "cross-entropy loss (nats per token)"
set yrange [0:*]
plot run("ddp", 1) using 1:2 with lines ls 9 lw 3 title name("ddp", 1), \
     run("local", 1) using 1:2 with lines ls 1 title name("local", 1), \
     run("local", 4) using 1:2 with lines ls 3 title name("local", 4), \
     run("local", 16) using 1:2 with lines ls 2 title name("local", 16), \
     run("diloco", 16) using 1:2 with lines ls 4 dt 2 title name("diloco", 16)
set xlabel "MB sent per rank so far (log scale)"
unset key   # the same lines as on the left
set logscale x 10
set xrange [0.5:*]
set format x "10^{%L}"
plot run("ddp", 1) using ($3 > 0 ? $3 : NaN):2 with lines ls 9 lw 3 title name("ddp", 1), \
     run("local", 1) using ($3 > 0 ? $3 : NaN):2 with lines ls 1 title name("local", 1), \
     run("local", 4) using ($3 > 0 ? $3 : NaN):2 with lines ls 3 title name("local", 4), \
     run("local", 16) using ($3 > 0 ? $3 : NaN):2 with lines ls 2 title name("local", 16), \
     run("diloco", 16) using ($3 > 0 ? $3 : NaN):2 with lines ls 4 dt 2 title name("diloco", 16)
unset multiplot
