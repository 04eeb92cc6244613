# hierarchy.awk: chapter 02's table of the hierarchy's bandwidths
# (02_allreduce/figures/data/hierarchy.csv, rows level,where,gbs,what + the
# provenance columns): per row its level, what was measured or quoted, the
# GB/s, where the figure comes from, and for each level after the first the
# drop from the level above on the same side (the fastest row of each).
function count(k, what) { return k " " what (k == 1 ? "" : "s") }
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    n++; lev[n] = $1; side[n] = $2; what[n] = $4; gbs[n] = $3 + 0
    src[n] = $c["source"] == "measured" ? sprintf("measured: %s x %s on %d cores, load %s-%s", \
        count($c["ranks"], "rank"), count($c["threads"], "thread"), $c["cores"], $c["load_before"], $c["load_after"]) : $c["source"]
    if (gbs[n] > best[$2, $1]) best[$2, $1] = gbs[n]
}
END {
    order[1] = "memory"; order[2] = "in a node"; order[3] = "between nodes"
    print "| level | where | what | GB/s | below the level above | source |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        drop = ""
        for (k = 2; k <= 3; k++)
            if (lev[i] == order[k] && best[side[i], order[k - 1]] > 0)
                drop = sprintf("%.0fx", best[side[i], order[k - 1]] / gbs[i])
        printf "| %s | %s | %s | %s | %s | %s |\n", lev[i], side[i], what[i], \
            (gbs[i] >= 100 ? sprintf("%.0f", gbs[i]) : sprintf("%.3g", gbs[i])), drop, src[i]
    }
}
