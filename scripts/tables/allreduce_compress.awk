# allreduce_compress.awk: chapter 02's table of the bytes one rank sends in a
# compressed all-reduce against the number of ranks N, and each compressor's
# ratio to the uncompressed ring, from 02_allreduce/figures/data/allreduce_compress.csv
# (02_allreduce/sweep_compress.sh; the largest size of the sweep).
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{ n++; row[n] = $0; if ($c["bytes"] + 0 > B) B = $c["bytes"] + 0 }
END {
    for (i = 1; i <= n; i++) {
        split(row[i], f, ",")
        if (f[c["bytes"]] + 0 != B) continue
        s = f[c["compress"]]; r = f[c["ranks"]] + 0
        if (!(s in seen)) { seen[s] = 1; ss[++ns] = s }
        if (!(r in rseen)) { rseen[r] = 1; rs[++nr] = r }
        sent[s, r] = f[c["sent_bytes"]]
    }
    for (i = 2; i <= nr; i++) for (j = i; j > 1 && rs[j] < rs[j - 1]; j--) { t = rs[j]; rs[j] = rs[j - 1]; rs[j - 1] = t }
    printf "| %d KiB of fp32, bytes sent per rank (ratio to the ring) |", B / 1024
    for (i = 1; i <= nr; i++) printf " N = %d |", rs[i]
    print ""
    printf "|---|"; for (i = 1; i <= nr; i++) printf "---|"; print ""
    for (k = 1; k <= ns; k++) {
        s = ss[k]; printf "| %s |", s
        for (i = 1; i <= nr; i++) {
            r = rs[i]
            printf " %d (%.1f) |", sent[s, r], sent["none", r] / sent[s, r]
        }
        print ""
    }
}
