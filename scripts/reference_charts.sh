#!/usr/bin/env bash
# make reference-charts: copy the charts of plots/ (from a make demo) over the
# reference charts the chapter READMEs show, NN_*/figures/NAME.png, so that
# the repository page shows charts from a named machine. The charts there
# are the list: a chart no README shows is not copied, and one that plots/
# lacks (plan_validation.png: make demo does not run its sweep) is kept.
# Then say in the READMEs which machine, under what load, drew them.
set -euo pipefail
cd "$(dirname "$0")/.."
copied=0
for ref in [0-9][0-9]_*/figures/*.png; do
    [ -e "$ref" ] || continue
    chart="plots/$(basename "$ref")"
    if [ ! -s "$chart" ]; then echo "kept $ref: no $chart (make demo or make plots draws it)"; continue; fi
    cp "$chart" "$ref" || { echo "error: cannot write $ref" >&2; exit 1; }
    echo "$chart -> $ref"
    copied=$((copied + 1))
done
[ $copied -gt 0 ] || { echo "error: no chart of plots/ matches a reference chart (NN_*/figures/*.png): run make demo first" >&2; exit 1; }
