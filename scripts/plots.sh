#!/usr/bin/env bash
# Draw every chart whose data exists: for each chapter script NN_*/NAME.gp
# and each CSV plots/data/NAME.csv, write plots/NAME.png.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gnuplot >/dev/null || bash scripts/install-deps.sh
drawn=0
for gp in [0-9][0-9]_*/*.gp; do
    [ -e "$gp" ] || continue
    name=$(basename "$gp" .gp)
    csv="plots/data/$name.csv"
    [ -s "$csv" ] || continue
    gnuplot -e "csv='$csv'; out='plots/$name.png'" "$gp"
    echo "chart: plots/$name.png  (from $csv)"
    drawn=$((drawn + 1))
done
[ $drawn -gt 0 ] || echo "no data yet: run a program with --csv plots/data/NAME.csv, or make demo"
