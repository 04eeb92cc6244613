#!/usr/bin/env bash
# make reference-charts: measure the charts the chapter READMEs show again
# on this machine and ship them: make demo's CSVs (plots/data/NAME.csv)
# become the committed data beside each figure (NN_*/figures/data/NAME.csv),
# and every figure is redrawn from it (scripts/plots.sh --figures), so that
# `make figures` draws the same charts later. The figures there are the
# list: a CSV no figure uses is not copied, and a figure that plots/data
# lacks (make demo did not run its sweep) keeps its data.
#
# A measured timing series taken on a busy machine is refused: when the other work
# on the machine during any measured row's run was above 0.5 per core
# (scripts/provenance.awk, mode busy), nothing is copied and each such series
# is named. Run it on a quiet machine, with nothing else running.
#   bash scripts/reference_charts.sh              make demo first, then the check and the copy
#   bash scripts/reference_charts.sh --from DIR   the CSVs of DIR instead (no demo)
set -euo pipefail
cd "$(dirname "$0")/.."
from=plots/data
if [ "${1:-}" = --from ]; then
    from=${2:?--from DIR}
else
    bash scripts/demo.sh
fi
pairs=()
for fig in [0-9][0-9]_*/figures/*.png; do
    [ -e "$fig" ] || continue
    name=$(basename "$fig" .png)
    csv=$from/$name.csv
    if [ ! -s "$csv" ]; then echo "kept $fig and its data: no $csv"; continue; fi
    pairs+=("$csv:${fig%/*}/data/$name.csv")
done
[ ${#pairs[@]} -gt 0 ] || { echo "error: no CSV of $from matches a figure (NN_*/figures/NAME.png): run make demo first" >&2; exit 1; }
busy=0
for p in "${pairs[@]}"; do
    # a chart of no wall-clock time (losses, bytes, memory: "# untimed") is
    # the same on a busy machine
    d=${p#*:}; d=${d%/figures/data/*}; n=$(basename "${p%%:*}" .csv)
    grep -q '^# untimed' "$d/$n.gp" 2>/dev/null && continue
    lines=$(awk -v mode=busy -f scripts/provenance.awk "${p%%:*}")
    [ -z "$lines" ] || { echo "$lines" >&2; busy=1; }
done
if [ $busy = 1 ]; then
    echo "error: measured on a busy machine (the series above); nothing shipped: run make reference-charts again when the machine is quiet" >&2
    exit 1
fi
names=()
for p in "${pairs[@]}"; do
    mkdir -p "$(dirname "${p#*:}")"
    # the chart's replayed and modeled lines (NAME_replay.csv) travel with it
    cp "${p%%:*}" "${p#*:}"
    echo "${p%%:*} -> ${p#*:}"
    r=${p%%:*}; r=${r%.csv}_replay.csv
    if [ -s "$r" ]; then d=${p#*:}; cp "$r" "${d%.csv}_replay.csv"; echo "$r -> ${d%.csv}_replay.csv"; fi
    names+=("$(basename "${p#*:}" .csv)")
done
bash scripts/plots.sh --figures "${names[@]}"
echo "now regenerate the READMEs' tables from the new data: make tables"
