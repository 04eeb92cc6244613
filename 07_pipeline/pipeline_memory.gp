# pipeline_memory.gp: activations held per stage at the peak, measured, for
# each schedule on the same 4-stage pipeline and micro-batches; the marks are
# the schedule's promise (GPipe: all M micro-batches, 1F1B: P - stage,
# interleaved: Megatron's warm-up + 1 chunk micro-batches) times the bytes of
# one micro-batch. Rows come from runs with --memory-csv (07_pipeline/demo.sh).
#   gnuplot -e "csv='plots/data/pipeline_memory.csv'; out='plots/pipeline_memory.png'" 07_pipeline/pipeline_memory.gp
# Columns: schedule,stages,micro,virtual,stage,held,bound,held_mb
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'

stats csv using 2 skip 1 nooutput name "P"
stats csv using 3 skip 1 nooutput name "M"
stats csv using 8 skip 1 nooutput name "H"
set title sprintf("07\\_pipeline: activations held at the peak per stage (%d stages, %d micro-batches)", P_max, M_max)
set xlabel "stage (above each bar: micro-batches held; interleaved: chunk micro-batches, half a stage's layers each)"
set ylabel "activations held (MB, measured)"
set xrange [-0.6:P_max - 0.4]
set yrange [0:H_max * 1.25]
set xtics 1
set boxwidth 0.22
set style fill solid 0.85 border lc rgb "#444444"
set key inside top right box opaque
off(s) = s eq "gpipe" ? -0.25 : s eq "1f1b" ? 0 : 0.25
is(s) = strcol(1) eq s
per(h, mb) = h > 0 ? mb / h : 0
plot csv skip 1 using (is("gpipe") ? $5 + off("gpipe") : NaN):8 with boxes ls 1 title "GPipe", \
     csv skip 1 using (is("1f1b") ? $5 + off("1f1b") : NaN):8 with boxes ls 2 title "1F1B", \
     csv skip 1 using (is("interleaved") ? $5 + off("interleaved") : NaN):8 with boxes ls 3 title "interleaved (V=2)", \
     csv skip 1 using ($5 + off(strcol(1))):($7 * per($6, $8)) with points pt 3 ps 1.6 lc rgb "black" title "the schedule's promise", \
     csv skip 1 using ($5 + off(strcol(1))):8:(sprintf("%d", $6)) with labels offset 0, 0.8 font ",9" notitle
