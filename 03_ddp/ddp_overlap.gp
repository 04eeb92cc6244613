# ddp_overlap.gp: one training step of every rank on one time axis, from the
# run's Perfetto trace (--trace, cut by scripts/trace_step.py): the compute
# track (forward, backward, the host time launching and progressing the
# collectives, the optimizer) on each rank's first row, its communication
# lanes (each collective from launch to completion; collectives in flight
# together on separate lanes) below it, the rank's step shaded behind.
# 04_fsdp/fsdp_overlap.gp draws ZeRO-3's trace with this script.
#   gnuplot -e "csv='plots/data/ddp_overlap.csv'; out='plots/ddp_overlap.png'" 03_ddp/ddp_overlap.gp
# Columns: rank,kind,lane,name,start_ms,end_ms,ts_us,dur_us + provenance
load 'plots/style.gp'
set terminal pngcairo size 1500,620 enhanced font "DejaVu Sans,11"
set output out
if (!exists("what")) what = "03\\_ddp: DDP, one step of 2 ranks from its trace: the buckets' all-reduces launched during backward"

stats csv using 1 skip 1 nooutput name "R"
stats csv using 3 skip 1 nooutput name "L"
stats csv using ($6) skip 1 nooutput name "T"
H = int(L_max) + 1.6                 # rows per rank: compute, the lanes, a gap
y(r, lane) = r * H + lane
pre(s, p) = strlen(s) >= strlen(p) && s[1:strlen(p)] eq p
colour(s) = pre(s, "fwd") ? 0x1f77b4 : pre(s, "bwd") ? 0xd62728 : pre(s, "grad sync") ? 0x7f7f7f : \
            pre(s, "optimizer") ? 0x2ca02c : pre(s, "all-gather") ? 0x9467bd : 0xff7f0e
set title what . "\nper rank: the compute row (blue forward, red backward, grey launching and progressing the collectives, green optimizer),\n" . \
    "then the communication lanes (orange all-reduce or reduce-scatter, purple all-gather; each from launch to completion)" font ",11"
set ytics () scale 0
do for [r = 0:int(R_max)] {
    set ytics add (sprintf("rank %d compute", r) y(r, 0))
    do for [l = 1:int(L_max)] { set ytics add (sprintf("rank %d comm %d", r, l) y(r, l)) }
}
set xlabel "ms from the earliest rank's step start (wall clock)"
set xrange [0:T_max * 1.01]
set yrange [(R_max + 1) * H - 0.4:-0.6]
set grid xtics noytics
set style fill solid 0.85 noborder
unset key
plot csv skip 1 using ((strcol(2) eq "step") ? ($5 + $6) / 2 : NaN):(y($1, 0) + (H - 1.6) / 2):(($6 - $5) / 2):((H - 0.6) / 2) \
        with boxxyerror lc rgb "#eeeeee", \
     csv skip 1 using ((strcol(2) eq "compute") ? ($5 + $6) / 2 : NaN):(y($1, 0)):(($6 - $5) / 2):(0.36):(colour(strcol(4))) \
        with boxxyerror lc rgb variable, \
     csv skip 1 using ((strcol(2) eq "comm") ? ($5 + $6) / 2 : NaN):(y($1, $3)):(($6 - $5) / 2):(0.32):(colour(strcol(4))) \
        with boxxyerror lc rgb variable fs solid 0.55 border rgb "#555555"
