# tp.awk: chapter 08's table of one step against the tensor-parallel degree
# T over the fast and the slow link (ms per step, the mean of the measured
# steps: compute + exposed communication), from
# 08_tensor_parallel/figures/data/tp.csv (08_tensor_parallel/sweep_tp.sh).
# A run with more ranks x threads than cores measured the sharing of the
# cores, not tensor parallelism: its time is shown in italics and its row
# says so (the chart leaves it out).
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    T = $c["tp"]; g = $c["inter_gbps"] + 0
    if (!(T in seen)) { seen[T] = 1; ts[++nt] = T; fast[T] = g; slow[T] = g }
    if (g > fast[T]) fast[T] = g
    if (g < slow[T]) slow[T] = g
    mb[T] = $c["tp_mb_per_step"]
    over = $c["ranks"] * $c["threads"] > $c["cores"]
    cell[T, g] = sprintf(over ? "*%.0f = %.0f + %.0f*" : "%.0f = %.0f + %.0f", $c["step_ms"], $c["compute_ms"], $c["exposed_comm_ms"])
    if (over) note[T] = sprintf(" (oversubscribed: %d ranks x %d thread on %d cores)", $c["ranks"], $c["threads"], $c["cores"])
}
END {
    print "| T | MB sent per rank and step | fast link: step = compute + exposed | slow link: step = compute + exposed |"
    print "|---|---|---|---|"
    for (i = 1; i <= nt; i++) {
        T = ts[i]
        printf "| %d%s | %.3g | %s | %s |\n", T, note[T], mb[T], cell[T, fast[T]], cell[T, slow[T]]
    }
}
