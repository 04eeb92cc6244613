# ddp_fedavg.awk: chapter 03's table of federated averaging per client
# fraction C, local epochs E and deadline, from 03_ddp/figures/data/ddp_fedavg.csv
# (03_ddp/sweep_fedavg.sh): the held-out loss after the last round, the share
# of the selected clients the deadline dropped, the MB a round sends (the
# mean over the rounds) and DDP's MB per step over the same workers.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    k = $c["fraction"] " " $c["local_epochs"] " " $c["deadline"]
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    last[k] = $c["eval_loss"]; rounds[k] = $c["round"]; sel[k] += $c["selected"]; drop[k] += $c["dropped"]
    mbs[k] += $c["mb_per_round"]; r[k]++; ddp[k] = $c["ddp_mb_per_step"]
}
END {
    print "| C | E | deadline | held-out loss after the last round | clients dropped | MB per round | DDP MB per step |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        k = order[i]; split(k, p, " ")
        printf "| %s | %s | %s | %.4f (round %d) | %.1f%% | %.3f | %.3f |\n", p[1], p[2], p[3] == 0 ? "none" : p[3],
               last[k], rounds[k], 100 * drop[k] / sel[k], mbs[k] / r[k], ddp[k]
    }
}
