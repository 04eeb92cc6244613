# microbatch.gp: the micro-batch size trade-off at a fixed global batch: the
# step time and the time spent computing against the micro-batch size (left
# axis) with the two causes on the right axis, the bubble (falls with smaller micro-batches) and the GEMMs'
# efficiency at each micro-batch's shapes (falls with them too). One panel
# per source: measured here, replayed on the H100 data at the same shapes,
# and at a GPU-sized layer. Rows come from 07_pipeline/sweep_microbatch.sh.
#   gnuplot -e "csv='plots/data/microbatch.csv'; out='plots/microbatch.png'" 07_pipeline/microbatch.gp
# Columns: source,stages,batch,micro_batch,micro,step_ms,busy_ms,bubble,formula,gemm_eff
load 'plots/style.gp'
set terminal pngcairo size 1500,560 enhanced font "DejaVu Sans,11"
set output out

array src[3] = ["measured", "h100", "h100_dim4096"]
array name[3] = ["measured here (CPU, fp32)", "replayed: H100 data, the same shapes", \
                 "replayed: H100 data, dim 4096, 256 tokens"]
array tmax[3]
array tmin[3]
do for [i = 1:3] {   # before the axes' ranges, which stats would apply
    stats csv using (strcol(1) eq src[i] ? $6 : NaN) skip 1 nooutput name "T"
    tmax[i] = T_max
    tmin[i] = T_min
}

set multiplot layout 1,3 title "07\\_pipeline: step time against the micro-batch size, global batch 16, " . \
    "2 stages, 1F1B (marked: the shortest step)" font ",13"
set logscale x 2
set xrange [0.75:21]
set xtics (1, 2, 4, 8, 16)
set xlabel "micro-batch size b (M = 16 / b micro-batches)"
set y2range [0:100]
set y2tics 20 tc rgb "#555555"
set ytics nomirror
set key inside top center box opaque font ",9" spacing 0.9
set y2label "% (bubble; GEMMs of the peak)"
do for [i = 1:3] {
    s = src[i]
    set title name[i]
    set ylabel "step (ms" . (i == 1 ? ", measured)" : ", replayed: GEMMs only)")
    set yrange [0:tmax[i] * 1.35]
    if (i > 1) { unset key }
    rows = sprintf("< grep '^%s,' '%s'", s, csv)   # one source's rows, so its lines join
    plot rows using 4:6 with linespoints ls 1 title "step time", \
         rows using ($6 == tmin[i] ? $4 : NaN):6 with points ls 2 pt 6 ps 3 lw 2 title "optimum", \
         rows using 4:7 with linespoints ls 4 dt 5 title "busy (computing)", \
         rows using 4:(100 * $8) axes x1y2 with linespoints ls 5 dt 2 title "bubble", \
         rows using 4:(100 * $9) axes x1y2 with lines ls 9 dt 3 title "(P-1)/(M+P-1)", \
         rows using 4:(100 * $10) axes x1y2 with linespoints ls 3 dt 4 title "GEMMs (% of the peak)"
}
unset multiplot
