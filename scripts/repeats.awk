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
# column follows BY_max in every row. The provenance columns every row of the
# suite ends with (from cores on, common/perf.h) stay last.
BEGIN { FS = OFS = "," }
# a row's columns before the provenance, and the provenance with its leading comma
function head(r,   f, i, s) { split(r, f, ","); s = f[1]; for (i = 2; i < pc; i++) s = s "," f[i]; return s }
function tail(r,   f, i, n, s) { n = split(r, f, ","); s = ""; for (i = pc; i <= n; i++) s = s "," f[i]; return s }
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    pc = ("cores" in col) ? col["cores"] : NF + 1   # the first provenance column
    header = head($0)
    tail_of_header = tail($0)
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
    print header, "runs", by "_min", by "_max" (extra != "" ? OFS e[1] : "") tail_of_header
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
        print head(row[key, mid]), n, val[key, idx[1]], val[key, idx[n]] (extra != "" ? OFS e[2] : "") tail(row[key, mid])
    }
}
