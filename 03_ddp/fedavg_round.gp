# fedavg_round.gp: federated averaging's rounds, phase by phase, per client:
# broadcast of the weights, the local SGD steps (E n_k / s_k simulated
# seconds, the run's own record; a straggler cut off at the deadline and
# dropped), the upload, and the server's weighted average (a dashed line)
# where the next round starts. Rows from 03_ddp/fedavg_round.sh.
#   gnuplot -e "csv='plots/data/fedavg_round.csv'; out='plots/fedavg_round.png'" 03_ddp/fedavg_round.gp
# Columns: round,client,rank,samples,speed,seconds,dropped,local_epochs,deadline,weight_bytes,link_mbps,phase,start,end
# untimed: a simulated clock from the run's record, no wall-clock time
load 'plots/style.gp'
set terminal pngcairo size 1300,620 enhanced font "DejaVu Sans,11"
set output out

ph(p) = strcol(12) eq p
stats csv using (ph("local") ? $8 : NaN) skip 1 nooutput name "E"
stats csv using (ph("local") ? $9 : NaN) skip 1 nooutput name "D"
stats csv using (ph("local") ? $2 : NaN) skip 1 nooutput name "K"
stats csv using (ph("average") ? $1 : NaN) skip 1 nooutput name "R"
stats csv using (ph("average") ? $13 : NaN) skip 1 nooutput name "A"
stats csv using (ph("average") ? $11 : NaN) skip 1 nooutput name "LINK"
stats csv using (ph("average") ? $10 : NaN) skip 1 nooutput name "W"
set title sprintf("03\\_ddp: federated averaging, %d rounds of %d clients each (E = %d local epochs, deadline %g simulated s)\n" . \
    "local steps: E n_k / s_k from the run's record; the weights (%.2f MB) down and up at %g MB per simulated second", \
    R_records, K_records / R_records, E_mean, D_mean, W_mean / 1e6, LINK_mean) font ",12"
set xlabel "simulated seconds (one sample per second at speed 1)"
set ylabel "client"
set yrange [K_max + 1:K_min - 1]
set ytics 1 font ",9"
set xrange [0:A_max * 1.02]
set grid xtics noytics
set style fill solid 0.8 noborder
set key outside top center horizontal box opaque font ",9"
plot csv skip 1 using (ph("broadcast") ? ($13 + $14) / 2 : NaN):2:(($14 - $13) / 2):(0.35) with boxxyerror lc rgb "#1f77b4" title "broadcast (server to client)", \
     csv skip 1 using (ph("local") && $7 == 0 ? ($13 + $14) / 2 : NaN):2:(($14 - $13) / 2):(0.35) with boxxyerror lc rgb "#2ca02c" title "local SGD steps", \
     csv skip 1 using (ph("local") && $7 == 1 ? ($13 + $14) / 2 : NaN):2:(($14 - $13) / 2):(0.35) with boxxyerror lc rgb "#d62728" fs pattern 2 title "local steps of a straggler, cut off at the deadline: dropped", \
     csv skip 1 using (ph("upload") ? ($13 + $14) / 2 : NaN):2:(($14 - $13) / 2):(0.35) with boxxyerror lc rgb "#ff7f0e" title "upload (client to server)", \
     csv skip 1 using (ph("average") ? $13 : NaN):(K_min - 1):(0):(K_max - K_min + 2) with vectors nohead dt 2 lw 2 lc rgb "#333333" title "the server's weighted average; the next round starts", \
     csv skip 1 using (ph("local") ? $14 : NaN):2:(sprintf(" n=%d", $4)) with labels left font ",8" notitle
