# goodput-model.awk: chapter 06's table of what Daly's model was given and
# where it puts the optimum interval, per mode, from
# 06_checkpointing/figures/data/goodput.csv (06_checkpointing/sweep_goodput.sh):
# the checkpoint's stall delta and the restart cost R measured by the sweep,
# the nominal mean time between failures M, Young's and Daly's intervals.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
          print "| mode | step | checkpoint stall delta | restart R | failures every M | Young's interval | Daly's interval |"
          print "|---|---|---|---|---|---|---|"; next }
$1 == "young" || $1 == "daly" {
    m = $c["mode"]
    if (!(m in seen)) { seen[m] = 1; order[++n] = m }
    iv[m, $1] = sprintf("%.2f s (%.1f steps)", $c["interval_s"], $c["interval_steps"])
    d[m] = $c["ckpt_s"]; r[m] = $c["restart_s"]; M[m] = $c["mtbf_s"]; s[m] = $c["step_s"]
}
END {
    for (i = 1; i <= n; i++) {
        m = order[i]
        printf "| %s | %.1f ms | %.1f ms | %.2f s | %g s | %s | %s |\n", m == "sync" ? "synchronous" : "background",
               1e3 * s[m], 1e3 * d[m], r[m], M[m], iv[m, "young"], iv[m, "daly"]
    }
}
