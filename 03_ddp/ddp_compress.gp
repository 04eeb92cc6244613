# ddp_compress.gp: training loss against step for each gradient compressor,
# with error feedback (solid) and without (dashed), beside the uncompressed
# exchange (black), all on the same steps and batch (03_ddp/sweep_compress.sh).
# The key gives each run's bytes per rank per step (the formula's count).
#   gnuplot -e "csv='plots/data/ddp_compress.csv'; out='plots/ddp_compress.png'" 03_ddp/ddp_compress.gp
# Columns: compress,ef,formula_bytes, then the trainer's: step,loss,...
# untimed: it draws no wall-clock time (losses, bytes, memory), so runs with
# more ranks x threads than cores are drawn too (scripts/plots.sh).
load 'plots/style.gp'
specs = "none int8 sign topk:0.01 powersgd:4"
rows(s, e) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $2 == \"%s\"' '%s'", s, e, csv)
bytes(s) = system(sprintf("awk -F, 'NR > 1 && $1 == \"%s\" { print $3; exit }' '%s'", s, csv))
set title "03\\_ddp: loss with compressed gradients, 2 ranks (solid: error feedback on, dashed: off)"
set xlabel "step"
set ylabel "cross-entropy loss (nats per token)"
set key outside right top box opaque
plot rows("none", "-") using 4:5 with lines lc rgb "black" lw 3 title sprintf("none (%s B/step)", bytes("none")), \
     for [i = 2:words(specs)] rows(word(specs, i), "on") using 4:5 with lines ls i lw 2 \
         title sprintf("%s + EF (%s B/step)", word(specs, i), bytes(word(specs, i))), \
     for [i = 2:words(specs)] rows(word(specs, i), "off") using 4:5 with lines ls i lw 2 dt 2 \
         title sprintf("%s, no EF", word(specs, i))
