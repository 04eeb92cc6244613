# style.gp: the look every chart of the suite shares. Loaded by each
# chapter's script after `csv` (input) and `out` (PNG) are set.
set terminal pngcairo size 1000,620 enhanced font "DejaVu Sans,11"
set output out
set datafile separator ","
set key outside right top box opaque
set grid xtics ytics mxtics lc rgb "#dddddd"
set border lc rgb "#555555"
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.9
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 0.9
set style line 3 lc rgb "#2ca02c" lw 2 pt 9 ps 1.0
set style line 4 lc rgb "#9467bd" lw 2 pt 11 ps 1.0
set style line 5 lc rgb "#ff7f0e" lw 2 pt 13 ps 1.0
set style line 6 lc rgb "#8c564b" lw 2 pt 3 ps 1.0
set style line 7 lc rgb "#e377c2" lw 2 pt 1 ps 1.0
set style line 8 lc rgb "#17becf" lw 2 pt 2 ps 1.0
set style line 9 lc rgb "#7f7f7f" lw 2 pt 4 ps 1.0
set style increment user
# The subtitle: where the chart's numbers come from (cores, ranks, threads,
# CPU, load; scripts/provenance.awk writes it from the CSV's provenance
# columns), in the top right corner. scripts/plots.sh passes it as `prov`;
# drawn straight with gnuplot -e "csv=...; out=...", the script asks
# provenance.awk itself.
if (!exists("prov")) prov = system(sprintf("awk -v mode=subtitle -f scripts/provenance.awk '%s'", csv))
if (prov ne "") \
    set label 999 prov at screen 0.995, screen 0.991 right font ",7" noenhanced tc rgb "#555555" front
