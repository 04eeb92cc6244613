# repeats.awk: one row per configuration from repeated runs, so that a chart
# shows the spread of a measurement instead of one draw of it.
#
#   awk -F, -v keys=bucket_mb,overlap,ranks -v by=step_ms -f scripts/repeats.awk runs.csv
#
# The input is a CSV with a header (03_ddp/ddp's --bench-csv rows, one per
# run). Rows with the same values in the `keys` columns are repeats of one
# configuration. For each, the output is the MEDIAN RUN (the run whose `by`
# value is the middle one; for an even count the lower middle), all of its
# columns unchanged, followed by runs, BY_min and BY_max over the repeats.
# The median run keeps its own split of the time (compute + exposed comm =
# step), which separate medians of each column would not. Configurations
# come out in the order of their first run; with extra="NAME=VALUE" one more
# column is appended to every row (the sweep scripts add the core count).
BEGIN { FS = OFS = "," }
NR == 1 {
    header = $0
    for (i = 1; i <= NF; i++) col[$i] = i
    nk = split(keys, k, ",")
    for (j = 1; j <= nk; j++) if (!(k[j] in col)) { print "repeats.awk: no column " k[j] > "/dev/stderr"; exit 2 }
    if (!(by in col)) { print "repeats.awk: no column " by > "/dev/stderr"; exit 2 }
    next
}
{
    key = ""
    for (j = 1; j <= nk; j++) key = key SUBSEP $(col[k[j]])
    if (!(key in count)) order[++ngroups] = key
    n = ++count[key]
    row[key, n] = $0
    val[key, n] = $(col[by]) + 0
}
END {
    if (NR == 0) exit 0
    split(extra, e, "=")
    print header, "runs", by "_min", by "_max" (extra != "" ? OFS e[1] : "")
    for (g = 1; g <= ngroups; g++) {
        key = order[g]
        n = count[key]
        # insertion sort of the run indices by value (a handful of repeats)
        for (i = 1; i <= n; i++) idx[i] = i
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && val[key, idx[j]] < val[key, idx[j - 1]]; j--) {
                t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t
            }
        mid = idx[int((n + 1) / 2)]
        print row[key, mid], n, val[key, idx[1]], val[key, idx[n]] (extra != "" ? OFS e[2] : "")
    }
}
