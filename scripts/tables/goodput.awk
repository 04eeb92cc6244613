# goodput.awk: chapter 06's table of the goodput under injected failures per
# checkpoint interval and mode, measured and by Daly's model at the failure
# rate the run met, from 06_checkpointing/figures/data/goodput.csv
# (06_checkpointing/sweep_goodput.sh).
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
          print "| mode | every | interval | failures | steps computed | goodput measured | Daly's model |"
          print "|---|---|---|---|---|---|---|"; next }
$1 == "measured" {
    printf "| %s | %d steps | %.2f s | %d (%.2f s apart) | %d | %.3f | %.3f |\n",
           $c["mode"] == "sync" ? "synchronous" : "background", $c["interval_steps"], $c["interval_s"],
           $c["failures"], $c["mtbf_s"], $c["steps_computed"], $c["goodput"], $c["model_goodput"]
}
