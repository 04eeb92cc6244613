# ddp_buckets_replay.awk: chapter 03's bucket sweep from its records
# (03_ddp/figures/data/ddp_buckets_replay.csv, rows bucket_mb,overlap,
# source,cluster,step_ms): the step replayed on one core per rank and
# modeled on one 8-GPU H100 node, per bucket size, overlap on and off, and
# the best bucket of each source (the fastest step, overlap on).
{ b = $1 + 0; if (!(b in seen)) { seen[b] = 1; bs[++nb] = b }; t[b, $2, $3] = $5 }
END {
    for (i = 2; i <= nb; i++) for (j = i; j > 1 && bs[j] < bs[j - 1]; j--) { x = bs[j]; bs[j] = bs[j - 1]; bs[j - 1] = x }
    print "| bucket (MiB) | replayed, overlap on (ms) | replayed, off (ms) | modeled H100, on (ms) | modeled H100, off (ms) |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= nb; i++) {
        b = bs[i]
        printf "| %g | %.1f | %.1f | %.4f | %.4f |\n", b, t[b, "on", "replayed"], t[b, "off", "replayed"], t[b, "on", "modeled"], t[b, "off", "modeled"]
        if (i == 1 || t[b, "on", "replayed"] < t[br, "on", "replayed"]) br = b
        if (i == 1 || t[b, "on", "modeled"] < t[bm, "on", "modeled"]) bm = b
    }
    where(br); rw = w; where(bm); mw = w
    printf "| best | %g MiB (%s) | | %g MiB (%s) | |\n", br, rw, bm, mw
}
function where(b) { w = b == bs[1] ? "the smallest" : b == bs[nb] ? "the largest: one bucket" : "between the extremes" }
