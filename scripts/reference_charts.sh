#!/usr/bin/env bash
# make reference-charts: copy the charts of plots/ (from a make demo) over the
# reference charts the chapter READMEs show, NN_*/figures/NAME.png, so that
# the repository page shows charts from a named machine. The charts there
# are the list: a chart no README shows is not copied. Say in the READMEs
# which machine, under what load, drew them.
set -euo pipefail
cd "$(dirname "$0")/.."
copied=0
for ref in [0-9][0-9]_*/figures/*.png; do
    [ -e "$ref" ] || continue
    chart="plots/$(basename "$ref")"
    [ -s "$chart" ] || { echo "error: $chart is missing: run make demo (or make plots) first" >&2; exit 1; }
    cp "$chart" "$ref" || { echo "error: cannot write $ref" >&2; exit 1; }
    echo "$chart -> $ref"
    copied=$((copied + 1))
done
[ $copied -gt 0 ] || { echo "error: no reference chart (NN_*/figures/*.png) to refresh" >&2; exit 1; }
