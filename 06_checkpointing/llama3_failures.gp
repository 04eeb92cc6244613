# llama3_failures.gp: Llama 3's unexpected interruptions by root cause, as
# published (Dubey et al. 2024, "The Llama 3 Herd of Models", table 5), and
# what Young's and Daly's intervals make of that failure rate: Daly's
# goodput against the checkpoint interval for a 60 s and a 5 s checkpoint
# stall, each with Young's interval (dashed) and Daly's (a point).
# Rows from 06_checkpointing/llama3_failures.sh.
#   gnuplot -e "csv='plots/data/llama3_failures.csv'; out='plots/llama3_failures.png'" 06_checkpointing/llama3_failures.gp
# Columns: kind,name,category,interruptions,published_percent,delta_s,mtbf_s,restart_s,interval_s,goodput
# untimed: published counts and a model, no wall-clock time of this machine
load 'plots/style.gp'
set terminal pngcairo size 1500,620 enhanced font "DejaVu Sans,11"
set output out

is(k, d) = strcol(1) eq k && $6 == d
stats csv using (strcol(1) eq "cause" ? $4 : NaN) skip 1 nooutput name "C"
stats csv using (strcol(1) eq "model" ? $7 : NaN) skip 1 nooutput name "M"
stats csv using (strcol(1) eq "model" ? $8 : NaN) skip 1 nooutput name "R"
stats csv using (is("young", 60) ? $9 : NaN) skip 1 nooutput name "Y60"
stats csv using (is("young", 5) ? $9 : NaN) skip 1 nooutput name "Y5"
cat(s) = s eq "GPU" ? 1 : s eq "Host" ? 2 : s eq "Network" ? 3 : s eq "Dependency" ? 4 : s eq "Unplanned Maintenance" ? 5 : 6

set multiplot layout 1,2 title sprintf("06\\_checkpointing: Llama 3 405B's %d unexpected interruptions in 54 days on 16,384 H100s " . \
    "(Dubey et al. 2024, table 5) and the checkpoint interval they call for", C_sum) font ",13"

# left: the table, one bar per root cause, coloured by category
set title "root causes as published (count; the paper's % of the 419)"
set style fill solid 0.85 border rgb "#555555"
set yrange [C_records + 0.5 : 0.5]
set ytics () font ",9" nomirror
set xrange [0:185]
set xlabel "interruptions"
unset ylabel
set grid xtics noytics
set key inside center right box opaque title "category" font ",9"
set lmargin 28
plot for [k = 1:6] csv skip 1 using \
        (strcol(1) eq "cause" && cat(strcol(3)) == k ? $4 / 2 : NaN):($0 + 1):($4 / 2):(0.38):ytic(strcol(1) eq "cause" ? strcol(2) : "") \
        with boxxyerror ls k title word("GPU Host Network Dependency Unplanned\\_maintenance Unknown", k), \
     csv skip 1 using (strcol(1) eq "cause" ? $4 + 3 : NaN):($0 + 1):(sprintf("%d (%.1f%%)", $4, $5)) \
        with labels left font ",8" notitle
unset lmargin
set grid xtics ytics
set ytics auto font ",11"
set yrange [*:*] noreverse

# right: Daly's goodput against the interval at this failure rate
set title sprintf("Daly's goodput at M = 54 days / 466 interruptions = %.0f s, restart %.0f s", M_mean, R_mean)
set logscale x
set xrange [*:*]
set xlabel "checkpoint interval tau (minutes; log scale)"
set ylabel "goodput (share of the wall clock doing useful work)"
set yrange [0.3:1]
set xtics auto
set key inside bottom center box opaque title "" font ",10"
set arrow 1 from Y60_mean / 60, 0.3 to Y60_mean / 60, 1 nohead dt 2 lc rgb "#1f77b4"
set arrow 2 from Y5_mean / 60, 0.3 to Y5_mean / 60, 1 nohead dt 2 lc rgb "#d62728"
plot csv skip 1 using (is("model", 60) ? $9 / 60 : NaN):10 with lines ls 1 title "checkpoint stalls 60 s (written in the foreground)", \
     csv skip 1 using (is("model", 5) ? $9 / 60 : NaN):10 with lines ls 2 title "checkpoint stalls 5 s (snapshot, written in the background)", \
     csv skip 1 using (is("daly", 60) ? $9 / 60 : NaN):10 with points ls 1 pt 7 ps 1.6 title "Daly's interval (dashed: Young's sqrt(2 delta M))", \
     csv skip 1 using (is("daly", 5) ? $9 / 60 : NaN):10 with points ls 2 pt 7 ps 1.6 notitle, \
     csv skip 1 using (is("daly", 60) || is("daly", 5) ? $9 / 60 : NaN):10:(sprintf("  %.1f min, %.1f%%", $9 / 60, 100 * $10)) \
        with labels left offset 0.5, -1 font ",9" notitle
unset multiplot
