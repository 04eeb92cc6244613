# ddp_fedavg.gp: federated averaging (03_ddp/sweep_fedavg.sh): the loss of
# the server's weights on the held-out mix against the round. Left: client
# fractions C at E = 1, and E = 4 at C = 0.5, no deadline. Right: E = 4, C =
# 0.5 under deadlines, each titled with the fraction of the selected clients
# it dropped.
#   gnuplot -e "csv='plots/data/ddp_fedavg.csv'; out='plots/ddp_fedavg.png'" 03_ddp/ddp_fedavg.gp
# Columns: round,clients,fraction,local_epochs,deadline,alpha,selected,dropped,
#          train_loss,eval_loss,mb_per_round,ddp_mb_per_step
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'
set terminal pngcairo size 1200,560 enhanced font "DejaVu Sans,11"
set output out

# One run's rows (round, eval loss), chosen by C, E and D.
run(c, e, d) = sprintf("< awk -F, 'NR > 1 && $3 == %g && $4 == %d && $5 == %g { print $1 \",\" $10 }' '%s'", c, e, d, csv)
dropped(d) = system(sprintf("awk -F, 'NR > 1 && $3 == 0.5 && $4 == 4 && $5 == %g { s += $7; x += $8 } \
    END { printf \"%%.0f\", s ? 100 * x / s : 0 }' '%s'", d, csv))
set datafile separator ","
set key inside top right
set multiplot layout 1, 2 title "03\\_ddp: FedAvg, 32 clients (Dirichlet alpha 0.5), 2 ranks, plain SGD: loss of the server's weights on a held-out mix"
set xlabel "round"
set ylabel "evaluation loss (nats per token)"
set yrange [0:*]
plot run(0.1, 1, 0) using 1:2 with linespoints ls 1 title "C = 0.1, E = 1", \
     run(0.5, 1, 0) using 1:2 with linespoints ls 3 title "C = 0.5, E = 1", \
     run(1, 1, 0) using 1:2 with linespoints ls 2 title "C = 1, E = 1", \
     run(0.5, 4, 0) using 1:2 with linespoints ls 9 lw 3 title "C = 0.5, E = 4"
plot run(0.5, 4, 0) using 1:2 with linespoints ls 9 lw 3 title "C = 0.5, E = 4, no deadline", \
     run(0.5, 4, 150) using 1:2 with linespoints ls 4 title sprintf("deadline 150: %s%% of clients dropped", dropped(150)), \
     run(0.5, 4, 50) using 1:2 with linespoints ls 5 title sprintf("deadline 50: %s%% of clients dropped", dropped(50))
unset multiplot
