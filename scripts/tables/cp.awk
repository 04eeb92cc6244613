# cp.awk: chapter 09's table at the longest sequence of the sweep, per C and
# algorithm: the attention's thread CPU time on the slowest rank (what the
# chart draws), the step's wall clock and the memory high-water per rank,
# from 09_context_parallel/figures/data/cp.csv (09_context_parallel/sweep_cp.sh).
# A wall clock from more ranks x threads than cores is in italics: it
# measures the sharing of the cores.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{ n++; row[n] = $0; if ($c["seq"] + 0 > T) T = $c["seq"] + 0 }
END {
    printf "| C, at %d tokens | attention CPU time, slowest rank (ms) | step, wall clock (ms) | memory per rank (MB) |\n", T
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        split(row[i], f, ",")
        if (f[c["seq"]] + 0 != T) continue
        over = f[c["ranks"]] * f[c["threads"]] > f[c["cores"]]
        printf "| %d, %s | %.0f | " (over ? "*%.0f* (%d ranks on %d cores)" : "%.0f%.0s%.0s") " | %.1f |\n", f[c["cp"]],
               f[c["cp"]] == 1 ? "one rank" : f[c["algo"]], f[c["attn_cpu_ms_max"]], f[c["step_ms"]],
               f[c["ranks"]], f[c["cores"]], f[c["mem_peak_mb"]]
    }
}
