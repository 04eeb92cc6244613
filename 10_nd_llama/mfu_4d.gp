# mfu_4d.gp: the 4D trainer on the meshes of 8 ranks (10_nd_llama/sweep_mfu_4d.sh):
# above, measured MFU and HFU per mesh (HFU adds the recomputed FLOPs); below,
# where each mesh's step went: compute, the exposed communication of tp, cp
# and dp (the context x data group), the pipeline bubble, and the rest
# (optimizer and other), as shares of the step.
#   gnuplot -e "csv='plots/data/mfu_4d.csv'; out='plots/mfu_4d.png'" 10_nd_llama/mfu_4d.gp
# Columns: config,tp,cp,pp,dp,zero,sp,cp_algo,schedule,micro,virtual,recompute,dtype,step_ms,
#          mfu,hfu,bubble,tp_ms,cp_ms,pp_ms,dp_ms,compute_ms,optimizer_ms,tok_s
load 'plots/style.gp'
set terminal pngcairo size 1300,900 enhanced font "DejaVu Sans,11"
set output out
set multiplot layout 2,1 title "10\\_nd\\_llama: 8 ranks on every mesh (means of the timed steps)" font ",13"
set style data histograms
set style fill solid 0.85 border rgb "#555555"
set boxwidth 0.8
set xtics rotate by -30 left font ",9" nomirror
set key outside right top box opaque font ",10"
set grid noxtics ytics
set lmargin 10
set rmargin 24   # the same plot width in both panels: the keys sit in the margin

set style histogram clustered gap 1
set ylabel "utilisation (% of the machine's peak)"
set yrange [0:*]
plot csv skip 1 using 15:xtic(1) ls 1 title "MFU (model FLOPs)", \
     '' skip 1 using 16 ls 3 title "HFU (+ recomputed)"

set style histogram rowstacked gap 1
set ylabel "share of the step (%)"
set yrange [0:100]
set key outside right top box opaque font ",10"
plot csv skip 1 using (100 * $22 / $14):xtic(1) ls 3 title "compute", \
     '' skip 1 using (100 * $18 / $14) ls 2 title "tp exposed", \
     '' skip 1 using (100 * $19 / $14) ls 5 title "cp exposed", \
     '' skip 1 using (100 * $21 / $14) ls 1 title "dp exposed", \
     '' skip 1 using (100 * $20 / $14) ls 9 title "bubble", \
     '' skip 1 using (100 * ($14 - $22 - $18 - $19 - $21 - $20) / $14) ls 4 title "optimizer + other"
unset multiplot
