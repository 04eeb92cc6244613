#!/usr/bin/env bash
# The shipped figures redraw from the CSVs committed beside them
# (NN_*/figures/data/NAME.csv, make figures): every one draws without an
# error, into a scratch folder. A figure is drawn from its data, not from
# somewhere else: the first figure redrawn from the first half of its rows
# is a different picture (not pixel-compared with the committed one:
# gnuplot versions draw differently).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/figures.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bash scripts/plots.sh --figures --out "$tmp" 2> "$tmp/err" | tee "$tmp/out"
if grep -iv 'not drawn' "$tmp/err" | grep -i 'warning\|error\|no rows\|no .* rows'; then
    echo "FAIL: gnuplot complained (above)"; exit 1
fi
n=0
for csv in [0-9][0-9]_*/figures/data/*.csv; do
    name=$(basename "$csv" .csv)
    case $name in *_replay) continue ;; esac   # drawn by NAME.gp beside NAME.csv
    # every measured row shared cores and no replayed line exists: said, not drawn
    grep -q "^not drawn: $tmp/$name.png " "$tmp/out" && continue
    [ -s "$tmp/$name.png" ] || { echo "FAIL: $csv drew no $name.png"; exit 1; }
    grep -q "chart: $tmp/$name.png  (from $csv)" "$tmp/out" || { echo "FAIL: $name.png not drawn from $csv"; exit 1; }
    n=$((n + 1))
done
first=$(ls [0-9][0-9]_*/figures/data/*.csv | head -1)
name=$(basename "$first" .csv)
rows=$(($(wc -l < "$first") - 1))
head -n $((1 + (rows + 1) / 2)) "$first" > "$tmp/half.csv"
gnuplot -e "csv='$tmp/half.csv'; out='$tmp/half.png'" "${first%%/*}/$name.gp" 2>/dev/null
cmp -s "$tmp/half.png" "$tmp/$name.png" && { echo "FAIL: $name.png is the same from half its rows: not drawn from its data"; exit 1; }
echo "ok: $n figures redrawn from their committed CSVs; $name.png changes with its data"
