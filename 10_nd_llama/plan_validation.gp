# plan_validation.gp: the planner's step time (--cluster cpu, every figure
# measured around the run) against the measured mean step of runs of
# chapters 03 (dp), 07 (pp, pp x dp) and 08 (tp) on this machine, every
# repeat a point; the diagonal is a perfect prediction, the band +-25%.
# Rows come from 10_nd_llama/validate_cpu.sh.
#   gnuplot -e "csv='plots/data/plan_validation.csv'; out='plots/plan_validation.png'" 10_nd_llama/plan_validation.gp
# Columns: run,ranks,tp,pp,dp,predicted_ms,measured_ms,error,load,link_gbps
load 'plots/style.gp'

stats csv using 7 skip 1 nooutput name "M"
stats csv using 6 skip 1 nooutput name "Q"
top = (M_max > Q_max ? M_max : Q_max) * 1.1
set title "10\\_nd\\_llama: the planner's step against measured runs on this machine (each repeat a point)"
set xlabel "measured mean step (ms)"
set ylabel "predicted step (ms)"
set xrange [0:top]
set yrange [0:top]
set key inside top left box opaque
set size ratio -1
is(s) = strcol(1) eq s
plot x ls 9 dt 2 title "predicted = measured", \
     1.25 * x ls 9 lw 1 dt 3 title "+-25%", 0.75 * x ls 9 lw 1 dt 3 notitle, \
     csv skip 1 using (is("03_ddp 1 rank") ? $7 : NaN):6 with points ls 1 title "03 ddp, 1 rank", \
     csv skip 1 using (is("03_ddp 2 ranks") ? $7 : NaN):6 with points ls 2 title "03 ddp, dp 2", \
     csv skip 1 using (is("03_ddp 4 ranks") ? $7 : NaN):6 with points ls 3 title "03 ddp, dp 4", \
     csv skip 1 using (is("07_pipeline 1f1b 2 stages") ? $7 : NaN):6 with points ls 4 title "07 pipeline, pp 2", \
     csv skip 1 using (is("07_pipeline 1f1b 2 stages x dp 2") ? $7 : NaN):6 with points ls 5 title "07 pipeline, pp 2 x dp 2", \
     csv skip 1 using (is("08_tensor_parallel tp 2") ? $7 : NaN):6 with points ls 6 title "08 tensor parallel, tp 2"
