# zero_memory-totals.awk: chapter 04's table of everything a rank held at
# its high-water mark (MB: the training state, the communication buffers and
# the activations), per ZeRO stage and rank count, and the buffers and
# activations apart, from 04_fsdp/figures/data/zero_memory.csv.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    z = $c["zero"]; n = $c["ranks"]
    if (!(n in seen)) { seen[n] = 1; ns[++nn] = n }
    cell[z, n] = sprintf("%.2f (%.2f + %.2f)", $c["mem_mb"], $c["comm_mb"], $c["acts_mb"])
}
END {
    name[0] = "DDP"; name[1] = "ZeRO-1"; name[2] = "ZeRO-2"; name[3] = "ZeRO-3"
    for (i = 2; i <= nn; i++) for (j = i; j > 1 && ns[j] < ns[j - 1]; j--) { t = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = t }
    printf "| total (buffers + activations) |"; for (i = 1; i <= nn; i++) printf " N = %d |", ns[i]; print ""
    printf "|---|"; for (i = 1; i <= nn; i++) printf "---|"; print ""
    for (z = 0; z <= 3; z++) {
        printf "| %s |", name[z]
        for (i = 1; i <= nn; i++) printf " %s |", ((z, ns[i]) in cell) ? cell[z, ns[i]] : "-"
        print ""
    }
}
