# ddp_local.awk: chapter 03's table of local SGD and DiLoCo against DDP, from
# 03_ddp/figures/data/ddp_local.csv (03_ddp/sweep_local.sh): the MB each rank
# sent per step, the loss at the end (the mean of the last 16 steps), the
# step and the MB per rank at which the loss first fell to 1.0.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    k = $c["variant"] " " $c["local_steps"]
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    last[k, $c["step"] % 16] = $c["loss"]; steps[k] = $c["step"]; mb[k] = $c["total_mb"]
    if (!(k in reach) && $c["loss"] <= 1.0) { reach[k] = $c["total_mb"]; at[k] = $c["step"] }
}
END {
    print "| variant | H | MB per rank and step | loss, last 16 steps | loss 1.0 first at step | MB per rank until then |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        k = order[i]; split(k, p, " "); s = 0
        for (j = 0; j < 16; j++) s += last[k, j]
        printf "| %s | %d | %.4f | %.4f | %s | %s |\n", p[1], p[2], mb[k] / steps[k], s / 16,
               (k in reach) ? at[k] : "not reached", (k in reach) ? sprintf("%.2f", reach[k]) : "-"
    }
}
