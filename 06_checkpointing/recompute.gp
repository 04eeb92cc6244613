# recompute.gp: activation memory against recomputation, from the rows of
# 06_checkpointing/sweep_recompute.sh (one run per policy).
#   gnuplot -e "csv='plots/data/recompute.csv'; out='plots/recompute.png'" 06_checkpointing/recompute.gp
# Left: the high-water mark of activation memory against the segment length
# C of every:C, measured, on the cost model's curve ceil(L/C) x + C A, beside
# the lecture's O(L/C + C) with checkpoints as big as a layer's activations;
# sqrt(L) and the model's own optimum sqrt(L x / A) marked. Right: memory
# against the extra compute each policy pays, block:K as a line. Below:
# each policy's step (the median of the sweep's repeats, a bar from the
# fastest to the slowest run) split into forward, backward without the
# recomputation and the recomputation itself, beside the model: the step of
# "none" plus the recomputed layers (and attention cores) at the forward's
# own time per layer (recompute_model_ms).
# Columns: policy,every,block,selective,layers,ranks,acts_mb,acts_model_mb,
#   acts_peak_mb,acts_peak_model_mb,input_mb,layer_mb,head_mb,scratch_mb,
#   layers_recomputed,attn_recomputed,extra_flops_pct,step_ms,fwd_ms,bwd_ms,
#   recompute_ms,recompute_model_ms,mfu,hfu,runs,step_ms_min,step_ms_max
load 'plots/style.gp'
set terminal pngcairo size 1400,1100 enhanced font "DejaVu Sans,11"
set output out

stats csv using 5 skip 1 nooutput name "L"
stats csv using 11 skip 1 nooutput name "X"
stats csv using ($4 == 0 ? $12 : NaN) skip 1 nooutput name "A"   # selective keeps less per layer
stats csv using 13 skip 1 nooutput name "HD"
stats csv using 14 skip 1 nooutput name "SC"
stats csv using ($2 > 0 ? $17 : NaN) skip 1 nooutput name "E"
stats csv using 9 skip 1 nooutput name "M"
stats csv using (strcol(1) eq "none" ? $18 : NaN) skip 1 nooutput name "N"
stats csv using 27 skip 1 nooutput name "SMAX"
L = L_max; x = X_mean; a = A_mean; fixed = HD_mean + SC_mean
suite(c) = ceil(L / c) * x + c * a + fixed
lecture(c) = (L / c + c) * a + fixed
blockmem(k) = (k < L ? (L + 1) * x + (L - k) * (a - x) : L * x + a) + fixed
copt = sqrt(L * x / a)
is(col, v) = column(col) == v

set multiplot title sprintf("06\\_checkpointing: activation memory against recomputation, %d layers (one layer keeps A = %.2f MB, its input x = %.3f MB)", L, a, x)

# ---- top left: every:C ----
set size 0.5, 0.55; set origin 0, 0.42
set title "every:C: memory against the segment length"
set xlabel "C: layers per recomputed segment (every:C; log scale)"
set ylabel "activation memory high-water per rank (MB)"
set logscale x 2
set xrange [0.8:L * 1.25]
set yrange [0:M_max * 1.15]
set key inside bottom right box opaque
set arrow 1 from sqrt(L), graph 0 to sqrt(L), graph 1 nohead dt 2 lc rgb "#ff7f0e"
set label 1 sprintf("sqrt(L) = %.0f", sqrt(L)) at sqrt(L) * 1.04, graph 0.96 tc rgb "#ff7f0e"
set arrow 2 from copt, graph 0 to copt, graph 1 nohead dt 3 lc rgb "#2ca02c"
set label 2 sprintf("sqrt(L x / A) = %.2f", copt) at copt * 1.04, graph 0.96 tc rgb "#2ca02c"
plot sample [c=1:L:1] '+' using (c):(suite(c)) with linespoints ls 1 pt 6 lw 1.5 \
         title "model: ceil(L/C) x + C A (+ head, scratch)", \
     [c=1:L:1] '+' using (c):(lecture(c)) with lines ls 5 dt 2 \
         title "the lecture's L/C + C, checkpoints as big as A", \
     csv skip 1 using ($2 > 0 ? $2 : NaN):9 with points ls 2 ps 1.6 title "measured (counted allocations)"

# ---- top right: every policy against its extra compute ----
unset arrow 1; unset arrow 2; unset label 1; unset label 2
unset logscale x
set size 0.5, 0.55; set origin 0.5, 0.42
set title "every policy: memory against the extra compute it pays"
set xlabel "extra compute: recomputed FLOPs (% of the model FLOPs)"
set xrange [-2:E_max * 1.3]
set key inside bottom left box opaque
plot sample [k=0:L:1] '+' using (k / L * E_max):(blockmem(k)) with lines ls 3 lw 1.5 \
         title "model of block:K, K = 0..L", \
     [c=1:L:1] '+' using (E_max):(suite(c)) with lines ls 1 lw 1.5 title "model of every:C, C = 1..L", \
     csv skip 1 using 17:10 with points ls 1 pt 6 ps 2.2 title "model of each policy", \
     csv skip 1 using 17:9 with points ls 2 ps 1.6 title "measured", \
     csv skip 1 using 17:9:1 with labels offset 1.2, 0 left font ",9" tc rgb "#444444" notitle

# ---- bottom: the step time of each policy ----
set size 1, 0.42; set origin 0, 0
stats csv using 25 skip 1 nooutput
set title sprintf("step time: median of %d runs per policy (bar: fastest to slowest), split as the median run measured it", STATS_max)
set xlabel ""
set ylabel "ms per step"
unset logscale x
set xrange [-0.6:STATS_records - 0.4]
set yrange [0:SMAX_max * 1.05]
set key outside bottom center horizontal maxcols 2 box opaque
set style fill solid 0.8 border lc rgb "#555555"
set boxwidth 0.6
plot csv skip 1 using 0:18:xtic(1) with boxes lc rgb "#bbbbbb" title "other (loss, optimizer, ...)", \
     csv skip 1 using 0:($19 + $20) with boxes lc rgb "#d62728" title "recomputation (inside backward)", \
     csv skip 1 using 0:($19 + $20 - $21) with boxes lc rgb "#1f77b4" title "backward without recomputation", \
     csv skip 1 using 0:19 with boxes lc rgb "#2ca02c" title "forward", \
     csv skip 1 using 0:18:26:27 with yerrorbars lc rgb "#000000" pt 0 lw 1.5 title "fastest to slowest run", \
     csv skip 1 using 0:(N_max + $22) with points pt 9 ps 2.2 lc rgb "#ff7f0e" \
         title "model: none's step + the recomputed layers at the forward's time per layer"
unset multiplot
