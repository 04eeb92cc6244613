# ddp_loss.gp: training loss of 03_ddp/ddp against step, beside the two
# entropies of the synthetic corpus the program measured at start-up. When
# the CSV also holds a run of the same global batch on another number of
# ranks (03_ddp/demo.sh appends a 1-rank run to the 2-rank one), the curves
# are drawn over each other, and a lower panel shows how far apart they are:
# |loss(N ranks) - loss(1 rank)| per step, on a log scale.
#   gnuplot -e "csv='plots/data/ddp_loss.csv'; out='plots/ddp_loss.png'" 03_ddp/ddp_loss.gp
# Columns (every trainer's CSV, common/train.h): step,loss,ms,tok_s,mfu,hfu,lr,
#   grad_norm,exposed_comm_ms,compute_ms,bubble,mem_peak_mb,sent_mb,ranks,
#   unigram_entropy,entropy_rate
load 'plots/style.gp'

stats csv using 15 skip 1 nooutput name "H1"
stats csv using 16 skip 1 nooutput name "HR"
stats csv using 14 skip 1 nooutput name "R"
stats csv using ($14 == R_max ? $5 : NaN) skip 1 nooutput name "M"
stats csv using 1 skip 1 nooutput name "S"
nmax = int(R_max)
nmin = int(R_min)
both = nmin < nmax
rows(n) = sprintf("< awk -F, 'NR > 1 && $14 == %d' '%s'", n, csv)
ranks(n) = sprintf("%d rank%s", n, n == 1 ? "" : "s")
# |loss(nmax) - loss(nmin)| at every step both runs have; the CSV keeps 6
# decimals, so 0 means "below 1e-6": drawn at 5e-7 as an open marker.
diffs = sprintf("< awk -F, 'NR > 1 && $14 == %d { a[$1] = $2 } NR > 1 && $14 == %d { b[$1] = $2 } END { for (s in a) if (s in b) { d = a[s] - b[s]; print s \",\" (d < 0 ? -d : d) } }' '%s' | sort -t, -k1,1n", \
                nmax, nmin, csv)
floor = 5e-7

if (both) {
    set terminal pngcairo size 1000,820 enhanced font "DejaVu Sans,11"
    set output out
    set multiplot
    set lmargin 12
    set rmargin 12
    set size 1, 0.66
    set origin 0, 0.34
}
set title sprintf("03\\_ddp: training loss, %s%s (mean MFU %.1f%%)", ranks(nmax), \
                  both ? sprintf(" and %s on the same global batch", ranks(nmin)) : "", M_mean)
set xlabel both ? "" : "step"
set ylabel "cross-entropy loss (nats per token)"
set xrange [0:S_max]
set yrange [0:*]
set y2label "learning rate"
set y2tics
set ytics nomirror
set format y2 "%.1e"
set key inside top right

plot rows(nmax) using 1:2 with lines ls 1 lw 4 title sprintf("loss, %s (global batch mean)", ranks(nmax)), \
     (both ? rows(nmin) : rows(nmax)) using 1:(both ? $2 : NaN) with lines ls 5 lw 1.5 \
         title both ? sprintf("loss, %s", ranks(nmin)) : "", \
     H1_mean with lines ls 2 dt 2 title sprintf("unigram entropy of the corpus (%.2f)", H1_mean), \
     (HR_mean > 0 ? HR_mean : NaN) with lines ls 3 dt 3 title sprintf("entropy rate of its word chain (%.2f)", HR_mean), \
     rows(nmax) using 1:7 axes x1y2 with lines ls 9 lw 1 title "learning rate (right axis)"

if (both) {
    set size 1, 0.34
    set origin 0, 0
    unset title
    unset y2label
    unset y2tics
    set xlabel "step"
    set ylabel sprintf("|loss difference|\n(nats, log scale)")
    set logscale y 10
    set yrange [floor / 2:1]
    set format y "10^{%L}"
    set ytics 100
    set key inside top left
    plot diffs using 1:($2 > 0 ? $2 : NaN) with points ls 2 pt 7 ps 0.5 \
             title sprintf("|loss(%s) - loss(%s)|", ranks(nmax), ranks(nmin)), \
         diffs using 1:($2 > 0 ? NaN : floor) with points ls 9 pt 6 ps 0.5 \
             title "equal to the CSV's 6 decimals"
    unset multiplot
}
