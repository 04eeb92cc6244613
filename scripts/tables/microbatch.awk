# microbatch.awk: chapter 07's table of the step against the micro-batch size
# b at a fixed global batch, measured here and replayed on the H100 data,
# from 07_pipeline/figures/data/microbatch.csv (07_pipeline/sweep_microbatch.sh):
# per b, the step (ms), here also the time computing, the bubble measured and
# by the formula, the stage's GEMMs' share of the peak; the optimum of each
# source in bold.
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
    s = $c["source"]; b = $c["micro_batch"]
    if (!(b in seen)) { seen[b] = 1; bs[++nb] = b }
    step[s, b] = $c["step_ms"]; m[b] = $c["micro"]
    if (!(s in best) || $c["step_ms"] < best[s]) { best[s] = $c["step_ms"]; at[s] = b }
    if (s == "measured") { busy[b] = $c["busy_ms"]; bub[b] = $c["bubble"]; f[b] = $c["formula"]; e[b] = $c["gemm_eff"] }
}
function cell(s, b, d) { x = sprintf("%." d "f", step[s, b]); return at[s] == b ? "**" x "**" : x }
END {
    print "| b | M | here: step (ms) | computing (ms) | bubble (formula) | GEMMs, % of the peak | H100, these shapes: step (ms) | H100, dim 4096: step (ms) |"
    print "|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nb; i++) {
        b = bs[i]
        printf "| %d | %d | %s | %.0f | %.1f%% (%.1f%%) | %.1f%% | %s | %s |\n", b, m[b], cell("measured", b, 0), busy[b],
               100 * bub[b], 100 * f[b], 100 * e[b], cell("h100", b, 3), cell("h100_dim4096", b, 1)
    }
}
