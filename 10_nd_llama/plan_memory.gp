# plan_memory.gp: memory per GPU by kind (weights, gradients, optimizer
# state, activations) of the best plans the planner found, stacked, with each
# plan's MFU above its bar and the memory a plan may use as a line.
#   gnuplot -e "csv='plots/data/plan_memory.csv'; out='plots/plan_memory.png'" 10_nd_llama/plan_memory.gp
# Columns (10_nd_llama/plan --csv): rank,tp,cp,pp,dp,schedule,vpp,mbs,zero,recompute,
#   weights_gb,grads_gb,optim_gb,acts_gb,total_gb,bubble,step_s,tflops,mfu,hfu
load 'plots/style.gp'
set terminal pngcairo size 1200,640 enhanced font "DejaVu Sans,11"
set output out

set title "10\\_nd\\_llama: memory per GPU of the planner's best plans (Llama 3 405B, 16,384 H100s, 16M tokens)"
set ylabel "GB per GPU (the fullest pipeline stage)"
set yrange [0:110]
set style data histograms
set style histogram rowstacked
set boxwidth 0.7
set style fill solid 0.85 border lc rgb "#444444"
set key inside top right box opaque font ",10"
set grid noxtics
set bmargin 9
set xlabel "the plans in MFU order: mesh, interleaving v, ZeRO stage, recomputation" offset 0, -2.5
set xtics scale 0 font ",9"
label(tp, cp, pp, dp, v, z, r, m) = sprintf("tp%d cp%d\npp%d dp%d\nv%d Z%d\n%s", tp, cp, pp, dp, v, z, r)
plot csv skip 1 using 11:xtic(label($2, $3, $4, $5, $7, $9, strcol(10), $1)) ls 1 title "weights (bf16)", \
     '' skip 1 using 12 ls 2 title "gradients (fp32)", \
     '' skip 1 using 13 ls 3 title "optimizer (fp32 master, Adam m, v: thin, sharded by ZeRO)", \
     '' skip 1 using 14 ls 5 title "activations", \
     '' skip 1 using ($0):($15 + 2):(sprintf("%.1f%%", 100 * $19)) with labels font ",9" notitle, \
     72 with lines ls 9 dt 2 title "90% of 80 GB: what a plan may use"
