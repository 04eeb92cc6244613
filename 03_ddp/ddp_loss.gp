# ddp_loss.gp: training loss of 03_ddp/ddp against step, beside the two
# entropies of the synthetic corpus the program measured at start-up.
#   gnuplot -e "csv='plots/data/ddp_loss.csv'; out='plots/ddp_loss.png'" 03_ddp/ddp_loss.gp
# Columns (every trainer's CSV, common/train.h): step,loss,ms,tok_s,mfu,hfu,lr,
#   grad_norm,exposed_comm_ms,compute_ms,bubble,mem_peak_mb,sent_mb,ranks,
#   unigram_entropy,entropy_rate
load 'plots/style.gp'

stats csv using 15 skip 1 nooutput name "H1"
stats csv using 16 skip 1 nooutput name "HR"
stats csv using 14 skip 1 nooutput name "R"
stats csv using 5 skip 1 nooutput name "M"

set title sprintf("03\\_ddp: training loss, %d data-parallel rank%s (mean MFU %.1f%%)", \
                  R_max, R_max == 1 ? "" : "s", M_mean)
set xlabel "step"
set ylabel "cross-entropy loss (nats per token)"
set yrange [0:*]
set y2label "learning rate"
set y2tics
set ytics nomirror
set format y2 "%.1e"
set key inside top right

plot csv using 1:2 skip 1 with lines ls 1 title "loss (global batch mean)", \
     H1_mean with lines ls 2 dt 2 title sprintf("unigram entropy of the corpus (%.2f)", H1_mean), \
     (HR_mean > 0 ? HR_mean : NaN) with lines ls 3 dt 3 title sprintf("entropy rate of its word chain (%.2f)", HR_mean), \
     csv using 1:7 skip 1 axes x1y2 with lines ls 9 lw 1 title "learning rate (right axis)"
