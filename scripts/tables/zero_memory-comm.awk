# zero_memory-comm.awk: chapter 04's table of the bytes each rank sends per
# step, per ZeRO stage and rank count: counted by the comm layer, beside the
# suite's formula (fsdp_bytes_predict) and the ZeRO paper's volumes
# (Rajbhandari et al. 2020, section 7: 2 Psi for DP, ZeRO-1 and ZeRO-2, 3 Psi
# for ZeRO-3, Psi the parameters in the communicated precision), from
# 04_fsdp/figures/data/zero_memory.csv. MB = 1e6 bytes.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$c["ranks"] > 1 {
    z = $c["zero"]; n = $c["ranks"]
    if (!(n in seen)) { seen[n] = 1; ns[++nn] = n }
    sent[z, n] = $c["sent_mb"]; pred[z, n] = $c["sent_pred_mb"]
    psi = $c["params"] * $c["wbytes"] / 1e6
}
END {
    name[0] = "DDP"; name[1] = "ZeRO-1"; name[2] = "ZeRO-2"; name[3] = "ZeRO-3"
    k[0] = 2; k[1] = 2; k[2] = 2; k[3] = 3
    for (i = 2; i <= nn; i++) for (j = i; j > 1 && ns[j] < ns[j - 1]; j--) { t = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = t }
    top = ns[nn]
    printf "| stage | the paper | the paper, MB |"
    for (i = 1; i <= nn; i++) printf " N = %d: counted (formula) |", ns[i]
    printf " counted / paper at N = %d |\n", top
    printf "|---|---|---|"; for (i = 1; i <= nn; i++) printf "---|"; print "---|"
    for (z = 0; z <= 3; z++) {
        printf "| %s | %d Psi | %.2f |", name[z], k[z], k[z] * psi
        for (i = 1; i <= nn; i++) printf " %.2f (%.2f) |", sent[z, ns[i]], pred[z, ns[i]]
        printf " %.1f%% |\n", 100 * sent[z, top] / (k[z] * psi)
    }
}
