# dataparallel.awk: chapter 03's table of DataParallel (one process, a thread
# per replica) against DDP (a process per rank) at the same global batch,
# the median run of each, from 03_ddp/figures/data/dataparallel.csv
# (03_ddp/sweep_dataparallel.sh). A point with more replicas (ranks) than
# cores measured the sharing of the cores: its row is in italics and says so
# (the chart leaves it out).
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
          print "| N | DDP step (ms) | DataParallel step (ms) | DDP exposed comm (ms) | DataParallel device 0 serial (ms) | DP / DDP |"
          print "|---|---|---|---|---|---|"; next }
{
    over = $c["ranks"] * $c["threads"] > $c["cores"]
    f = over ? "*%s*" : "%s"
    printf "| %d%s | " f " | " f " | " f " | " f " | " f " |\n", $c["n"],
           over ? sprintf(" (oversubscribed: %d threads on %d cores)", $c["ranks"] * $c["threads"], $c["cores"]) : "",
           sprintf("%.1f", $c["ddp_step_ms"]), sprintf("%.1f", $c["dp_step_ms"]), sprintf("%.1f", $c["ddp_exposed_comm_ms"]),
           sprintf("%.1f", $c["dp_serial_ms"]), sprintf("%.2fx", $c["dp_step_ms"] / $c["ddp_step_ms"])
}
