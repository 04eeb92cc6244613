#!/usr/bin/env bash
# Draw charts with the chapters' scripts NN_*/NAME.gp.
#   bash scripts/plots.sh            every chart whose data exists: plots/data/NAME.csv -> plots/NAME.png
#   bash scripts/plots.sh --figures  every shipped figure from the CSV committed beside it:
#                                    NN_*/figures/data/NAME.csv -> NN_*/figures/NAME.png
#                                    (NAME_replay.csv beside it, the replayed and modeled
#                                    lines, is read by NAME.gp itself)
#   bash scripts/plots.sh --figures [--out DIR] [NAME...]   only those figures, into DIR
# Each chart's subtitle says where its numbers come from (cores, ranks,
# threads, CPU, load: the provenance columns of its CSV, scripts/provenance.awk).
# A chart that draws a wall-clock time (every .gp but those marked
# "# untimed": losses, bytes, memory, thread CPU time) leaves out the measured
# rows whose run had more ranks x threads than cores, and says so in one
# line: such a time measures the sharing of cores, not the technique; those
# points are left to the replay.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gnuplot >/dev/null || bash scripts/install-deps.sh
tmp=$(mktemp -d /tmp/plots.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

draw() {  # GP CSV OUT
    local gp=$1 csv=$2 out=$3 name drawn prov untimed=0
    name=$(basename "$gp" .gp)
    drawn=$csv
    if grep -q '^# untimed' "$gp"; then
        untimed=1
    else
        drawn=$tmp/$name.csv
        awk -v mode=drawn -f scripts/provenance.awk "$csv" > "$drawn"
        # its replayed and modeled lines, which the .gp finds beside it
        if [ -e "${csv%.csv}_replay.csv" ]; then cp "${csv%.csv}_replay.csv" "$tmp/${name}_replay.csv"; fi
    fi
    if [ "$(wc -l < "$drawn")" -lt 2 ] && [ ! -e "${csv%.csv}_replay.csv" ]; then   # header only, no replayed lines
        echo "not drawn: $out (every measured row of $csv had more ranks x threads than cores)"; return
    fi
    prov=$(awk -v mode=subtitle -v untimed=$untimed -f scripts/provenance.awk "$csv")
    gnuplot -e "csv='$drawn'; out='$out'; prov='${prov//\'/}'" "$gp"
    echo "chart: $out  (from $csv)"
}

drawn=0
if [ "${1:-}" = --figures ]; then
    shift
    dir=
    if [ "${1:-}" = --out ]; then dir=${2:?--out DIR}; shift 2; fi
    for csv in [0-9][0-9]_*/figures/data/*.csv; do
        [ -e "$csv" ] || continue
        name=$(basename "$csv" .csv)
        case $name in *_replay) continue ;; esac   # read by its chart's .gp beside NAME.csv
        [ $# -eq 0 ] || [[ " $* " == *" $name "* ]] || continue
        chapter=${csv%%/*}
        [ -e "$chapter/$name.gp" ] || { echo "error: $csv has no $chapter/$name.gp to draw it" >&2; exit 1; }
        draw "$chapter/$name.gp" "$csv" "${dir:-$chapter/figures}/$name.png"
        drawn=$((drawn + 1))
    done
    [ $drawn -gt 0 ] || { echo "error: no figure data (NN_*/figures/data/NAME.csv)${*:+ for $*}" >&2; exit 1; }
    exit 0
fi
for gp in [0-9][0-9]_*/*.gp; do
    [ -e "$gp" ] || continue
    name=$(basename "$gp" .gp)
    csv="plots/data/$name.csv"
    [ -s "$csv" ] || continue
    draw "$gp" "$csv" "plots/$name.png"
    drawn=$((drawn + 1))
done
[ $drawn -gt 0 ] || echo "no data yet: run a program with --csv plots/data/NAME.csv, or make demo"
