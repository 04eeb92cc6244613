# mfu_4d.gp: the 4D trainer on the meshes of 8 ranks (10_nd_llama/sweep_mfu_4d.sh),
# three sources side by side. Top: MFU and HFU measured (8 ranks sharing this
# machine's cores, against their share of its peak; HFU adds the recomputed
# FLOPs) beside MFU replayed from the runs' records on one core per rank
# (compute in CPU time; against one core's peak). Middle: MFU modeled on one
# 8-GPU H100 node (the same recorded actions, compute from chapter 01's GEMM
# table, NVLink links). Bottom: where each measured step went: compute, the
# exposed communication of tp, cp and dp, the bubble, and the rest.
#   gnuplot -e "csv='plots/data/mfu_4d.csv'; out='plots/mfu_4d.png'" 10_nd_llama/mfu_4d.gp
# The replayed and modeled rows: csv's *_replay.csv (config,source,cluster,step_ms,mfu,idle_share).
# Columns: config,tp,cp,pp,dp,zero,sp,cp_algo,schedule,micro,virtual,recompute,dtype,step_ms,
#          mfu,hfu,bubble,tp_ms,cp_ms,pp_ms,dp_ms,compute_ms,optimizer_ms,tok_s
load 'plots/style.gp'
set terminal pngcairo size 1300,1250 enhanced font "DejaVu Sans,11"
set output out
replay_csv = csv[1:strlen(csv) - 4]."_replay.csv"
src(s) = sprintf("< awk -F, '$2 == \"%s\"' '%s'", s, replay_csv)
# the measured rows drawn (scripts/plots.sh leaves out runs with more ranks than cores)
measured = system(sprintf("awk 'END { print NR - 1 }' '%s'", csv)) + 0
set multiplot layout 3,1 title "10\\_nd\\_llama: 8 ranks on every mesh (means of the timed steps)" font ",13"
set style data histograms
set style fill solid 0.85 border rgb "#555555"
set boxwidth 0.8
set xtics rotate by -30 left font ",9" nomirror
set key outside right top box opaque font ",10"
set grid noxtics ytics
set lmargin 10
set rmargin 24   # the same plot width in both panels: the keys sit in the margin

set style histogram clustered gap 1
set ylabel "% of the peak the ranks have"
set yrange [0:*]
if (measured > 0) {
    plot csv skip 1 using 15:xtic(1) ls 1 title "MFU measured (8 ranks share the cores)", \
         '' skip 1 using 16 ls 3 title "HFU measured (+ recomputed)", \
         src("replayed") using (100 * $5) ls 2 title "MFU replayed, 1 core per rank"
} else {
    plot src("replayed") using (100 * $5):xtic(1) ls 2 title "MFU replayed, 1 core per rank"
}

set ylabel "MFU (% of 8 H100s' bf16 peak)"
plot src("modeled") using (100 * $5):xtic(1) ls 4 title "MFU modeled, one 8-GPU H100 node"

set style histogram rowstacked gap 1
set ylabel "share of the step (%)"
set yrange [0:100]
set key outside right top box opaque font ",10"
if (measured > 0) {
    plot csv skip 1 using (100 * $22 / $14):xtic(1) ls 3 title "compute", \
         '' skip 1 using (100 * $18 / $14) ls 2 title "tp exposed", \
         '' skip 1 using (100 * $19 / $14) ls 5 title "cp exposed", \
         '' skip 1 using (100 * $21 / $14) ls 1 title "dp exposed", \
         '' skip 1 using (100 * $20 / $14) ls 9 title "bubble", \
         '' skip 1 using (100 * ($14 - $22 - $18 - $19 - $21 - $20) / $14) ls 4 title "optimizer + other"
} else {
    unset xtics; unset ylabel
    set label 9 "where a measured step went: not drawn, every run had 8 ranks on fewer cores (the replay above stands for them)" at graph 0.5, 0.5 center
    plot [0:1] NaN notitle
}
unset multiplot
