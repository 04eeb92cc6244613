# hierarchy.gp: the bandwidth of each level of the hierarchy, memory, inside a
# node and between nodes, for a GPU cluster (its data sheets) beside this
# machine (measured by hierarchy.sh):
#   bash 02_allreduce/hierarchy.sh plots/data/hierarchy.csv
#   gnuplot -e "csv='plots/data/hierarchy.csv'; out='plots/hierarchy.png'" 02_allreduce/hierarchy.gp
# Columns: level,where,gbs,what + provenance (source: measured, or a citation)
load 'plots/style.gp'

# One bar per row, in the CSV's order: index, level, GB/s, what, 1 for this machine
rows = sprintf("< awk -F, -v OFS=, 'NR > 1 { print ++i, $1, $3, $4, ($2 == \"this machine\") }' '%s'", csv)
n = system(sprintf("awk 'END { print NR - 1 }' '%s'", csv)) + 0
if (n == 0) { print "hierarchy.gp: no rows in ".csv; exit }

set title "Bandwidth falls at every boundary: memory, inside a node, between nodes"
set ylabel "GB/s per GPU or per rank, one direction (log scale)"
set logscale y 10
set format y "%g"
set yrange [0.01:20000]
set xrange [0.4:n + 0.6]
set grid noxtics ytics
set key inside right top box opaque
set style fill solid 0.85 border lc rgb "#444444"
unset xtics
set xtics scale 0 font ",8"
set bmargin 6

w = 0.7
plot rows using 1:($5 == 0 ? $3 : NaN):($1 - w / 2):($1 + w / 2):(0.01):3:xtic(sprintf("%s\n%s", strcol(2), strcol(4))) \
         with boxxyerror fc rgb "#1f77b4" title "a GPU cluster (H100 SXM nodes; published)", \
     rows using 1:($5 == 1 ? $3 : NaN):($1 - w / 2):($1 + w / 2):(0.01):3 \
         with boxxyerror fc rgb "#d62728" title "this machine (measured)", \
     rows using 1:3:($3 >= 100 ? sprintf("%.0f", $3) : sprintf("%.3g", $3)) with labels offset 0, 0.7 font ",9" notitle
