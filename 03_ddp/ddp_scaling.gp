# ddp_scaling.gp: tokens per second against the number of data-parallel
# ranks (weak scaling: the same sequences per rank, one thread per rank),
# the median of the repeated runs with the fastest and slowest as a bar,
# beside the ideal line N x (1 rank) and what the machine's cores allow,
# min(N, cores) x (1 rank): past the cores the ranks share them. Each point
# is labelled with its scaling efficiency, tok/s(N) / (N x tok/s(1)).
# Beside them, from the runs' records (csv's *_replay.csv, replay/replay):
# the tokens per second replayed on one core per rank (solid, left axis:
# what N ranks would do with a core each) and modeled on one 8-GPU H100 node
# (thin, right axis), each labelled with its efficiency.
# Rows come from 03_ddp/sweep_scaling.sh.
#   gnuplot -e "csv='plots/data/ddp_scaling.csv'; out='plots/ddp_scaling.png'" 03_ddp/ddp_scaling.gp
# Columns: 1 bucket_mb, 2 overlap, 3 ranks, 4 buckets, 5 grad_mb, 6 step_ms,
#   7 compute_ms, 8 exposed_comm_ms, 9 tokens, 10 tok_s, 11 threads, 12 runs,
#   13 step_ms_min, 14 step_ms_max, 15 cores
load 'plots/style.gp'

stats csv using 3 skip 1 nooutput name "R"
stats csv using ($3 == 1 ? $10 : NaN) skip 1 nooutput name "ONE"
stats csv using ($9 / ($13 / 1e3)) skip 1 nooutput name "TOP"
stats csv using 15 skip 1 nooutput name "C"
stats csv using 12 skip 1 nooutput name "N"
stats csv using ($9 / $3) skip 1 nooutput name "PER"
replay_csv = csv[1:strlen(csv) - 4]."_replay.csv"
src(s) = sprintf("< awk -F, '$2 == \"%s\"' '%s'", s, replay_csv)
stats src("replayed") using ($1 == 1 ? PER_max / ($4 / 1e3) : NaN) nooutput name "RONE"
stats src("modeled") using ($1 == 1 ? PER_max / ($4 / 1e3) : NaN) nooutput name "MONE"
stats src("replayed") using (PER_max * $1 / ($4 / 1e3)) nooutput name "RTOP"
one = ONE_max
cores = C_max
set title sprintf("03\\_ddp: weak scaling, %d tokens per rank and step, 1 thread per rank (median of %d runs)", \
                  PER_max, N_min)
set xlabel sprintf("data-parallel ranks N (this machine: %d cores; beyond them the ranks share cores)", cores)
set ylabel "tokens per second (all ranks)"
set xrange [0.5:R_max + 0.5]
set xtics 1
top = R_max * one > TOP_max ? R_max * one : TOP_max
set yrange [0:(RTOP_max > top ? RTOP_max : top) * 1.1]
set y2range [0:MONE_max * R_max * 1.1]
set key below
set errorbars large
set object 1 rect from cores + 0.5, graph 0 to graph 1, graph 1 fc rgb "#f2f2f2" fs solid 1.0 noborder behind
set label 2 "oversubscribed:\nranks share cores" at cores + 0.6, graph 0.55 tc rgb "#777777"

set y2label "tokens per second, modeled on H100s"
set y2tics
ideal(n) = n * one
cap(n) = (n < cores ? n : cores) * one
set samples 200
plot ideal(x) with lines ls 9 dt 2 lw 1.5 title "ideal: N x (1 rank)", \
     cap(x) with lines ls 3 dt 3 lw 1.5 title sprintf("what %d cores allow: min(N, %d) x (1 rank)", cores, cores), \
     csv skip 1 using 3:10:($9 / ($14 / 1e3)):($9 / ($13 / 1e3)) with yerrorlines ls 1 \
         title "measured: median run; bar: slowest to fastest run", \
     csv skip 1 using 3:10:(sprintf("%.0f%%", 100 * $10 / ($3 * one))) with labels offset 3.2, -0.9 \
         font ",10" tc rgb "#1f77b4" notitle, \
     src("replayed") using 1:(PER_max * $1 / ($4 / 1e3)) with linespoints ls 2 lw 2 pt 9 \
         title "replayed: 1 core per rank (recorded CPU times)", \
     src("replayed") using 1:(PER_max * $1 / ($4 / 1e3)):(sprintf("%.0f%%", 100 * PER_max / ($4 / 1e3) / RONE_max)) \
         with labels offset -3.2, 0.9 font ",10" tc rgb "#d62728" notitle, \
     src("modeled") using 1:(PER_max * $1 / ($4 / 1e3)) axes x1y2 with linespoints ls 4 lw 1 pt 6 \
         title "modeled: one 8-GPU H100 node (right axis)", \
     src("modeled") using 1:(PER_max * $1 / ($4 / 1e3)):(sprintf("%.0f%%", 100 * PER_max / ($4 / 1e3) / MONE_max)) \
         axes x1y2 with labels offset 0, -1.2 font ",10" tc rgb "#9467bd" notitle
