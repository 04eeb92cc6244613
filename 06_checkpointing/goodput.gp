# goodput.gp: goodput under injected failures against the checkpoint
# interval, measured (06_checkpointing/sweep_goodput.sh under supervise.sh)
# beside Daly's model with the measured checkpoint cost, restart cost and
# step time, and the Young and Daly optimal intervals; synchronous and
# background (asynchronous) checkpoints.
#   gnuplot -e "csv='plots/data/goodput.csv'; out='plots/goodput.png'" 06_checkpointing/goodput.gp
# Columns: kind,mode,interval_steps,interval_s,wall_s,failures,steps_computed,
#   goodput,model_goodput,mtbf_s,ckpt_s,restart_s,step_s (goodput: the share
#   of the wall clock spent on useful steps, steps x step_s / wall_s)
# kind: measured (one supervised job; model_goodput: Daly's at the mean time
# between failures that job saw, mtbf_s), model (Daly's curve at the nominal
# mean time between failures), young and daly (the optimal intervals).
load 'plots/style.gp'

is(k, m) = strcol(1) eq k && strcol(2) eq m
stats csv using (strcol(1) eq "model" ? $10 : NaN) skip 1 nooutput name "M"
stats csv using (strcol(1) eq "model" ? $12 : NaN) skip 1 nooutput name "R"
stats csv using (strcol(1) eq "model" ? $13 : NaN) skip 1 nooutput name "S"
stats csv using (is("model", "sync") ? $11 : NaN) skip 1 nooutput name "DS"
stats csv using (is("model", "async") ? $11 : NaN) skip 1 nooutput name "DA"
stats csv using (is("young", "sync") ? $4 : NaN) skip 1 nooutput name "YS"
stats csv using (is("daly", "sync") ? $4 : NaN) skip 1 nooutput name "DYS"
stats csv using (is("young", "async") ? $4 : NaN) skip 1 nooutput name "YA"
stats csv using (is("daly", "async") ? $4 : NaN) skip 1 nooutput name "DYA"
stats csv using (strcol(1) eq "measured" ? $4 : NaN) skip 1 nooutput name "X"

bg = exists("DA_mean") ? sprintf(", %.0f ms in the background", 1000 * DA_mean) : ""
set title sprintf("06\\_checkpointing: goodput under injected failures, one every %.3g s on average\nrestart %.2f s, step %.0f ms; a checkpoint stalls training %.0f ms when written synchronously%s", \
                  M_mean, R_mean, 1000 * S_mean, exists("DS_mean") ? 1000 * DS_mean : NaN, bg)
set xlabel "checkpoint interval (seconds of training; log scale)"
set ylabel "goodput: useful steps' time / wall time"
set logscale x
set xrange [X_min / 4 : X_max * 4]
set yrange [0:1.05]
set key below box maxrows 3 font ",10" height 1   # below the axes: inside, the points can land anywhere
set bmargin 9
if (exists("YS_mean")) {
    set arrow 1 from YS_mean, graph 0.3 to YS_mean, graph 1 nohead dt 2 lc rgb "#1f77b4"
    set label 1 sprintf("synchronous: Young %.2f s, Daly %.2f s", YS_mean, DYS_mean) at YS_mean / 1.05, graph 0.97 right font ",9" tc rgb "#1f77b4"
}
if (exists("YA_mean")) {
    set arrow 2 from YA_mean, graph 0.3 to YA_mean, graph 1 nohead dt 2 lc rgb "#d62728"
    set label 2 sprintf("background: Young %.2f s, Daly %.2f s", YA_mean, DYA_mean) at YA_mean / 1.05, graph 0.92 right font ",9" tc rgb "#d62728"
}
plot csv skip 1 using (is("model", "sync") ? $4 : NaN):8 with lines ls 1 title "Daly's model, synchronous", \
     csv skip 1 using (is("measured", "sync") ? $4 : NaN):8 with points ls 1 ps 1.6 title "measured, synchronous", \
     csv skip 1 using (is("measured", "sync") ? $4 : NaN):9 with points ls 1 pt 6 ps 2.2 \
         title "model at the failure rate the run saw", \
     csv skip 1 using (is("model", "async") ? $4 : NaN):8 with lines ls 2 dt 2 title "Daly's model, background", \
     csv skip 1 using (is("measured", "async") ? $4 : NaN):8 with points ls 2 ps 1.6 title "measured, background", \
     csv skip 1 using (is("measured", "async") ? $4 : NaN):9 with points ls 2 pt 4 ps 2.2 \
         title "model at the failure rate the run saw", \
     csv skip 1 using (is("measured", "sync") ? $4 : NaN):8:(sprintf("every %d, %d failures", $3, $6)) \
         with labels offset 0, -1.4 font ",8" tc rgb "#1f77b4" notitle, \
     csv skip 1 using (is("measured", "async") ? $4 : NaN):8:(sprintf("every %d, %d failures", $3, $6)) \
         with labels offset 0, 1.4 font ",8" tc rgb "#d62728" notitle
