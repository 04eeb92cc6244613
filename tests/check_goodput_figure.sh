#!/usr/bin/env bash
# The goodput figure of chapter 06 teaches what its text says, from the data
# committed beside it (06_checkpointing/figures/data/goodput.csv): every
# measured point ran under injected failures (a point that met none says
# nothing about the checkpoint interval), and the model's goodput against
# the interval peaks at Daly's interval (within the model curve's grid step).
set -euo pipefail
cd "$(dirname "$0")/.."
csv=${1:-06_checkpointing/figures/data/goodput.csv}
awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == "measured" {
        n++
        printf "measured %-5s every %3d steps: %d failures, goodput %.3f\n", $c["mode"], $c["interval_steps"], $c["failures"], $c["goodput"]
        if ($c["failures"] + 0 < 1) { printf "FAIL: %s every %d steps met no failure\n", $c["mode"], $c["interval_steps"]; bad = 1 }
    }
    $1 == "model" { m = $c["mode"]; if ($c["goodput"] > best[m]) { best[m] = $c["goodput"]; at[m] = $c["interval_s"] }
                    if (prev[m] > 0) step[m] = $c["interval_s"] / prev[m]; prev[m] = $c["interval_s"] }
    $1 == "daly" { daly[$c["mode"]] = $c["interval_s"] }
    END {
        if (n == 0) { print "FAIL: no measured point"; bad = 1 }
        for (m in daly) {
            r = at[m] / daly[m]
            printf "%s: the model peaks at %.4g s (goodput %.4f), Daly: %.4g s; grid step x%.3f\n", m, at[m], best[m], daly[m], step[m]
            if (!(m in best) || r > step[m] || r < 1 / step[m]) { printf "FAIL: %s: the model peaks %.3g x Daly\x27s interval\n", m, r; bad = 1 }
        }
        if (length(daly) == 0) { print "FAIL: no Daly row"; bad = 1 }
        exit bad
    }' "$csv"
