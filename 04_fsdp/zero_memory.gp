# zero_memory.gp: the training state per rank against the ranks sharing it,
# for DDP and the three ZeRO stages: measured high-water marks (points,
# from 04_fsdp/sweep_memory.sh) on the formulas of this run's precision
# (solid lines) beside the ZeRO paper's mixed-precision ones (dashed).
#   gnuplot -e "csv='plots/data/zero_memory.csv'; out='plots/zero_memory.png'" 04_fsdp/zero_memory.gp
# Columns (--bench-csv, 04_fsdp/bench.c): zero,ranks,dtype,prefetch,reshard,overlap,micro,
#   params,wbytes,step_ms,compute_ms,exposed_ms,mem_mb,mem_pred_mb,params_mb,grads_mb,
#   optim_mb,comm_mb,acts_mb,formula_mb,paper_mb,sent_mb,sent_pred_mb
# The points are the params + grads + optim kinds (communication buffers and
# activations apart); ZeRO-2/3's sit above their lines by the buffers of the
# units in flight (gradients; ZeRO-3 also gathered weights).
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'

stats csv using 8 skip 1 nooutput name "P"
stats csv using 9 skip 1 nooutput name "W"
P = P_max / 1e6     # millions of parameters: formulas in MB
w = W_max
set title sprintf("04\\_fsdp: weights + gradients + optimizer state per rank (P = %.2fM, %s weights)", \
                  P, w == 2 ? "bf16" : "fp32")
set xlabel "ranks sharing the state, N (log scale)"
set label 1 "points: measured high-water marks; ZeRO-2/3 sit above\ntheir lines by the buffers of the units in flight" \
    at graph 0.03, graph 0.08 left font ",10" tc rgb "#555555"
set ylabel "MB per rank (log scale)"
set logscale xy 2
set xrange [0.9:70]
set yrange [0.5:*]
set xtics (1, 2, 4, 8, 16, 32, 64)
set samples 400
set key outside right top box opaque

# this suite: fp32 gradients (w weights); one rank keeps no second whole gradient
ddp(n) = (w + 16) * P
z1(n) = n < 2 ? NaN : (w + 4) * P + 16 * P / n   # one rank: as DDP
z2(n) = w * P + 16 * P / n
z3(n) = 16 * P / n
# the ZeRO paper, mixed precision: 2 + 2 + 12 bytes per parameter
p0(n) = 16 * P
p1(n) = 4 * P + 12 * P / n
p2(n) = 2 * P + 14 * P / n
p3(n) = 16 * P / n
stage(z) = strcol(1) eq sprintf("%d", z)

plot ddp(x) ls 1 title sprintf("DDP: (%d + 4 + 12) P", w), \
     p0(x) ls 1 lw 1 dt 2 title "ZeRO paper: 16 P", \
     csv skip 1 using (stage(0) ? $2 : NaN):($15 + $16 + $17) with points ls 1 ps 1.6 title "DDP measured", \
     z1(x) ls 2 title sprintf("ZeRO-1: (%d + 4) P + 16 P/N", w), \
     p1(x) ls 2 lw 1 dt 2 title "paper: 4 P + 12 P/N", \
     csv skip 1 using (stage(1) ? $2 : NaN):($15 + $16 + $17) with points ls 2 ps 1.6 title "ZeRO-1 measured", \
     z2(x) ls 3 title sprintf("ZeRO-2: %d P + 16 P/N", w), \
     p2(x) ls 3 lw 1 dt 2 title "paper: 2 P + 14 P/N", \
     csv skip 1 using (stage(2) ? $2 : NaN):($15 + $16 + $17) with points ls 3 ps 1.6 title "ZeRO-2 measured", \
     z3(x) ls 4 title "ZeRO-3: 16 P/N (paper: the same)", \
     csv skip 1 using (stage(3) ? $2 : NaN):($15 + $16 + $17) with points ls 4 ps 1.6 title "ZeRO-3 measured"
