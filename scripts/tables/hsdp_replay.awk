# hsdp_replay.awk: chapter 05's table from its sweep's records
# (05_hsdp/figures/data/hsdp_replay.csv, rows shard,link,source,cluster,
# step_ms,link_pred_ms,cross_mb,cross_pred_mb): per shard group size K, the
# bytes per rank that crossed between nodes (counted, and the formula), the
# step replayed on one core per rank without the link model and with each
# link beside its alpha-beta prediction (the replayed step without the link
# model + the link's time), and the step modeled on 2 nodes of 2 H100s.
{ k = $1 + 0; if (!(k in seen)) { seen[k] = 1; ks[++nk] = k }; t[k, $2, $3] = $5; lp[k, $2] = $6
  if ($2 == "slow") { cross[k] = $7; pred[k] = $8 } }
END {
    for (i = 2; i <= nk; i++) for (j = i; j > 1 && ks[j] < ks[j - 1]; j--) { x = ks[j]; ks[j] = ks[j - 1]; ks[j - 1] = x }
    name[1] = "1 (DDP)"; name[2] = "2 (a group per node)"; name[4] = "4 (FSDP over both nodes)"
    print "| K | MB per rank to the other node per step: counted (formula) | replayed, no link | fast link: replayed / predicted | slow link: replayed / predicted | modeled on 2 nodes of 2 H100s |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= nk; i++) {
        k = ks[i]; b = t[k, "none", "replayed"]
        printf "| %s | %.2f (%.2f) | %.1f ms | %.1f / %.1f ms | %.1f / %.1f ms | %.3f ms |\n", (k in name) ? name[k] : k,
            cross[k], pred[k], b, t[k, "fast", "replayed"], b + lp[k, "fast"], t[k, "slow", "replayed"], b + lp[k, "slow"],
            t[k, "none", "modeled"]
    }
}
