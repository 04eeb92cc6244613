# llama3_table4.gp: the planner's MFU for the three Llama 3 405B runs of
# Llama 3's table 4 (Dubey et al. 2024) beside the published figures, with
# the predicted step's idle share (the pipeline bubble) printed over each pair.
#   gnuplot -e "csv='plots/data/llama3_table4.csv'; out='plots/llama3_table4.png'" 10_nd_llama/llama3_table4.gp
# Columns (10_nd_llama/plan --llama3-table4 --csv): row,gpus,tp,cp,pp,dp,seq,
#   published_mfu,predicted_mfu,published_tflops,predicted_tflops,bubble,step_s
load 'plots/style.gp'

set title "10\\_nd\\_llama: Llama 3 405B on H100s, MFU published (table 4) and predicted by the planner"
set ylabel "MFU (%)"
set yrange [0:60]
set xrange [0.4:3.6]
set boxwidth 0.32
set style fill solid 0.85 border lc rgb "#444444"
set key inside top right box opaque
set grid noxtics
set xtics scale 0 font ",10"
set bmargin 5
name(g, tp, cp, pp, dp, s) = sprintf("%s GPUs, seq %dK\ntp %d cp %d pp %d dp %d", g == 8192 ? "8,192" : "16,384", \
                                     s / 1024, tp, cp, pp, dp)
plot csv skip 1 using ($1 - 0.17):(100 * $8):xtic(name($2, $3, $4, $5, $6, $7)) with boxes ls 9 title "published (Llama 3, table 4)", \
     csv skip 1 using ($1 + 0.17):(100 * $9) with boxes ls 1 title "predicted (10\\_nd\\_llama/plan)", \
     csv skip 1 using ($1 - 0.17):(100 * $8):(sprintf("%.0f%%", 100 * $8)) with labels offset 0, 0.8 notitle, \
     csv skip 1 using ($1 + 0.17):(100 * $9):(sprintf("%.1f%%", 100 * $9)) with labels offset 0, 0.8 notitle, \
     csv skip 1 using 1:(50):(sprintf("predicted bubble: %.0f%% of the step", 100 * $12)) with labels font ",9" tc rgb "#555555" notitle
