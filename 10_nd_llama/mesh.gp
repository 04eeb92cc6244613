# mesh.gp: the 4D mesh as the trainer builds it (10_nd_llama/mesh, which
# calls mesh_init): every rank a cell, placed by its coordinates (column:
# cp x tp, tp fastest; row: dp x pp), labelled with its world rank and
# coloured by its group on one axis per panel: the ranks that share a
# colour in a panel are one communicator of that axis.
#   gnuplot -e "csv='plots/data/mesh.csv'; out='plots/mesh.png'" 10_nd_llama/mesh.gp
# Columns: rank,tp,cp,pp,dp,tp_group,cp_group,pp_group,dp_group,tp_members,cp_members,pp_members,dp_members
# untimed: a layout, no time
load 'plots/style.gp'
set terminal pngcairo size 1800,600 enhanced font "DejaVu Sans,11"
set output out

stats csv using 2 skip 1 nooutput name "T"
stats csv using 3 skip 1 nooutput name "C"
stats csv using 4 skip 1 nooutput name "P"
stats csv using 5 skip 1 nooutput name "D"
TP = int(T_max) + 1; CP = int(C_max) + 1; PP = int(P_max) + 1; DP = int(D_max) + 1
col(r) = $3 * TP + $2
row(r) = $5 * PP + $4
# a cycle of distinct colours for the group numbers
set palette maxcolors 8
set palette defined (0 "#1f77b4", 1 "#d62728", 2 "#2ca02c", 3 "#9467bd", 4 "#ff7f0e", 5 "#8c564b", 6 "#e377c2", 7 "#17becf")
set cbrange [-0.5:7.5]
unset colorbox
set style fill solid 0.55 border rgb "#333333"
set xrange [-0.5:TP * CP - 0.5]
set yrange [DP * PP - 0.5:-0.5]
set xtics 1 scale 0
set ytics 1 scale 0
set grid noxtics noytics
set size ratio -1
unset key
set multiplot layout 1,4 title sprintf("10\\_nd\\_llama: the mesh tp %d x cp %d x pp %d x dp %d = %d ranks, " . \
    "rank = ((dp_i pp + pp_i) cp + cp_i) tp + tp_i; one colour per group of the panel's axis", \
    TP, CP, PP, DP, TP * CP * PP * DP) font ",12"
do for [a = 1:4] {
    set title sprintf("%s groups (%d ranks each)", word("tp cp pp dp", a), word(sprintf("%d %d %d %d", TP, CP, PP, DP), a) + 0)
    set xlabel "column: cp_i x tp + tp_i"
    set ylabel (a == 1 ? "row: dp_i x pp + pp_i" : "")
    plot csv skip 1 using (col(0)):(row(0)):(0.45):(0.45):(int(column(5 + a)) % 8) with boxxyerror fc palette, \
         csv skip 1 using (col(0)):(row(0)):(sprintf("{/:Bold %d}\n{/=8 tp%d cp%d}\n{/=8 pp%d dp%d}", $1, $2, $3, $4, $5)) with labels font ",10"
}
unset multiplot
