# pipeline_gantt.gp: one step of the pipeline, per stage, as the lecture
# draws it: a box per forward (blue) and backward (green) of each
# micro-batch, the gaps between them the bubble. Top: measured on 2 ranks;
# below: the same schedule replayed on 4 stages from the run's layer times.
# Rows come from a run with --gantt-csv (07_pipeline/demo.sh).
#   gnuplot -e "csv='plots/data/pipeline_gantt.csv'; out='plots/pipeline_gantt.png'" 07_pipeline/pipeline_gantt.gp
# Columns: source,schedule,stages,micro,virtual,stage,op,mb,chunk,start_ms,end_ms
load 'plots/style.gp'
set terminal pngcairo size 1300,640 enhanced font "DejaVu Sans,11"
set output out

stats csv using 3 skip 1 nooutput name "S"
stats csv using 4 skip 1 nooutput name "MB"
set multiplot layout 2,1 title sprintf("07\\_pipeline: one step, %d micro-batches (F: forward, B: backward; gaps: the bubble)", MB_max) font ",13"
set style fill solid 0.85 border lc rgb "#333333"
set xlabel "ms from the start of the step"
set key outside right top box opaque
is(src, op) = strcol(1) eq src && strcol(7) eq op
do for [i = 1:2] {
    src = i == 1 ? "measured" : "replayed"
    P = i == 1 ? S_min : S_max
    set title sprintf("%s, %d stages", i == 1 ? "measured on 2 ranks" : "replayed from the layer times", P)
    set yrange [P - 0.5:-0.5]
    set ytics 1
    set ylabel "stage"
    plot csv skip 1 using (is(src, "F") && $3 == P ? ($10 + $11) / 2 : NaN):6:10:11:($6 - 0.38):($6 + 0.38) \
             with boxxyerror lc rgb "#6baed6" title "forward", \
         csv skip 1 using (is(src, "B") && $3 == P ? ($10 + $11) / 2 : NaN):6:10:11:($6 - 0.38):($6 + 0.38) \
             with boxxyerror lc rgb "#74c476" title "backward", \
         csv skip 1 using (strcol(1) eq src && $3 == P ? ($10 + $11) / 2 : NaN):6: \
             (sprintf("%s%d%s", strcol(7), $8, $5 > 1 ? ($9 == 0 ? "a" : "b") : "")) \
             with labels font ",8" notitle
}
unset multiplot
