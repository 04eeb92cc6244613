# zero_memory.awk: chapter 04's table of the training state per rank (MB:
# weights + gradients + optimizer state, the high-water marks measured), per
# ZeRO stage and rank count, from 04_fsdp/figures/data/zero_memory.csv
# (04_fsdp/sweep_memory.sh), and each stage's formula.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    z = $c["zero"]; n = $c["ranks"]
    if (!(n in seen)) { seen[n] = 1; ns[++nn] = n }
    cell[z, n] = sprintf("%.2f", $c["params_mb"] + $c["grads_mb"] + $c["optim_mb"])
}
END {
    name[0] = "DDP"; name[1] = "ZeRO-1"; name[2] = "ZeRO-2"; name[3] = "ZeRO-3"
    f[0] = "18 P"; f[1] = "6 P + 16 P/N (one rank: 18 P)"; f[2] = "2 P + 16 P/N + 3 unit gradients (N > 1)"
    f[3] = "16 P/N + 2 gathered units + 3 unit gradients (N > 1)"
    # sort the rank counts
    for (i = 2; i <= nn; i++) for (j = i; j > 1 && ns[j] < ns[j - 1]; j--) { t = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = t }
    printf "| stage |"; for (i = 1; i <= nn; i++) printf " N = %d |", ns[i]; print " formula, bf16 weights + fp32 gradients |"
    printf "|---|"; for (i = 1; i <= nn; i++) printf "---|"; print "---|"
    for (z = 0; z <= 3; z++) {
        printf "| %s |", name[z]
        for (i = 1; i <= nn; i++) printf " %s |", ((z, ns[i]) in cell) ? cell[z, ns[i]] : "-"
        print " " f[z] " |"
    }
}
