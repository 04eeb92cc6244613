# ring_steps.gp: the ring all-reduce's 2(P - 1) steps as ring.c runs them
# (02_allreduce/ring_schedule watches its messages): at each step (column)
# each rank (row) sends one chunk to its right neighbour, coloured by the
# chunk; reduce-scatter first (the receiver adds the chunk to its own),
# then all-gather (the receiver keeps the finished chunk).
#   gnuplot -e "csv='plots/data/ring_steps.csv'; out='plots/ring_steps.png'" 02_allreduce/ring_steps.gp
# Columns: step,phase,rank,send_chunk,to,recv_chunk,from
# untimed: a schedule, no time
load 'plots/style.gp'
set terminal pngcairo size 1100,520 enhanced font "DejaVu Sans,11"
set output out

stats csv using 1 skip 1 nooutput name "S"
stats csv using 3 skip 1 nooutput name "R"
N = int(R_max) + 1
STEPS = int(S_max)
set palette maxcolors 8
set palette defined (0 "#1f77b4", 1 "#d62728", 2 "#2ca02c", 3 "#9467bd", 4 "#ff7f0e", 5 "#8c564b", 6 "#e377c2", 7 "#17becf")
set cbrange [-0.5:7.5]
unset colorbox
set title sprintf("02\\_allreduce: the ring all-reduce on P = %d ranks, %d steps = 2(P-1); the vector in %d chunks\n" . \
    "each cell: the chunk the rank sends to its right neighbour at that step (and the one it receives from its left)", \
    N, STEPS, N) font ",12"
set xrange [0.5:STEPS + 0.5]
set yrange [N - 0.5:-0.9]
set xtics 1 scale 0
set ytics 1 scale 0
set grid noxtics noytics
set xlabel "step"
set ylabel "rank"
unset key
set style fill solid 0.6 border rgb "#333333"
# the two phases, shaded behind the steps
set object 1 rect from 0.5, -0.9 to N - 0.5, N - 0.5 behind fc rgb "#f3f3f3" fs solid noborder
set label 1 sprintf("reduce-scatter: receive, add to your own (P-1 = %d steps)", N - 1) at (N) / 2.0, -0.7 center font ",10"
set label 2 sprintf("all-gather: receive, keep (P-1 = %d steps)", N - 1) at N - 0.5 + (N) / 2.0, -0.7 center font ",10"
plot csv skip 1 using 1:3:(0.45):(0.38):(int($4) % 8) with boxxyerror fc palette, \
     csv skip 1 using 1:3:(sprintf("chunk %d -> rank %d\n{/=8 gets chunk %d from %d}", $4, $5, $6, $7)) with labels font ",9"
