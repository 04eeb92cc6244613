# tp.gp: one step split into compute and exposed communication against the
# tensor-parallel degree T, over a fast link (left bar of each pair) and a
# slow one (right bar): the link model, every rank its own simulated node.
# Rows come from 08_tensor_parallel/sweep_tp.sh.
#   gnuplot -e "csv='plots/data/tp.csv'; out='plots/tp.png'" 08_tensor_parallel/tp.gp
# Columns: tp,sp,dp,node_size,inter_gbps,inter_us,step_ms,compute_ms,
#   exposed_comm_ms,tp_comm_ms,tp_mb_per_step,acts_mb
load 'plots/style.gp'

stats csv using 5 skip 1 nooutput name "G"
stats csv using 7 skip 1 nooutput name "S"
stats csv using 1 skip 1 nooutput name "T"
set title "08\\_tensor\\_parallel: one step against the tensor-parallel degree, fast and slow links"
set xlabel "tensor-parallel degree T (ranks sharing every layer); left bar fast link, right bar slow link"
set ylabel "time per step (ms)"
set logscale x 2
set xrange [0.7:T_max * 1.4]
set xtics (1, 2, 4, 8, 16)
set yrange [0:S_max * 1.25]
set key inside top left
set style fill solid 0.85 border lc rgb "#444444"

isfast(g) = g >= G_max * 0.9999
lo(t, f) = f ? t * 0.80 : t * 1.02
hi(t, f) = f ? t * 0.98 : t * 1.20
# the link model's own cost of the step's bytes: MB / (GB/s) = ms
model(mb, g) = mb / g
plot csv skip 1 using ($1):(isfast($5) ? $8 / 2 : NaN):(lo($1,1)):(hi($1,1)):(0):8 \
         with boxxyerror lc rgb "#3182bd" title "compute, fast link", \
     csv skip 1 using ($1):(isfast($5) ? $8 : NaN):(lo($1,1)):(hi($1,1)):8:7 \
         with boxxyerror lc rgb "#9ecae1" title sprintf("exposed communication, fast link (%.3g GB/s: NVLink's FLOP per byte)", G_max), \
     csv skip 1 using ($1):(!isfast($5) ? $8 / 2 : NaN):(lo($1,0)):(hi($1,0)):(0):8 \
         with boxxyerror lc rgb "#de2d26" title "compute, slow link", \
     csv skip 1 using ($1):(!isfast($5) ? $8 : NaN):(lo($1,0)):(hi($1,0)):8:7 \
         with boxxyerror lc rgb "#fc9272" title sprintf("exposed communication, slow link (%.3g GB/s: InfiniBand's)", G_min), \
     csv skip 1 using ($1 * (isfast($5) ? 0.89 : 1.11)):($1 > 1 ? $8 + model($11, $5) : NaN) \
         with points pt 2 ps 1.6 lc rgb "black" title "compute + bytes per step / link bandwidth", \
     csv skip 1 using ($1 * (isfast($5) ? 0.89 : 1.11)):7:(sprintf("%.1f MB", $11)) \
         with labels offset 0, 0.8 font ",9" tc rgb "#555555" notitle
