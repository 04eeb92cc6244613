# provenance.awk: what the provenance columns of a chart's CSV say (the
# columns every row of the suite ends with, common/perf.h: cores, ranks,
# threads, cpu, load_before, load_after, run_s, source).
#
#   awk -v mode=subtitle [-v untimed=1] -f scripts/provenance.awk NAME.csv
#                        the chart's subtitle, one line (untimed: a chart that draws no
#                        wall-clock time, whose oversubscribed rows are drawn too)
#   awk -v mode=drawn    -f scripts/provenance.awk NAME.csv   the CSV without the measured rows
#                        that oversubscribed the machine (ranks x threads > cores); one line on
#                        stderr says how many and why
#   awk -v mode=busy     -f scripts/provenance.awk NAME.csv   one line per measured series taken
#                        on a busy machine; nothing when none was
#
# A wall-clock time means something only with ranks x threads <= cores on a
# quiet machine. Busy: the other work on the machine during a row's run was
# above 0.5 per core. The kernel's 1-minute load average is an exponential
# average of the runnable tasks (time constant 60 s, updated every 5 s), so
# the mean runnable count over a run of t seconds that began at load L0 and
# ended at L1 is (L1 - L0 d) / (1 - d), d = exp(-t / 60), t at least one
# update (5 s); less the run's own ranks x threads, that is the others' load.
# A run shorter than 5 s whose load is the same before and after saw no
# update: both figures are the minute before it (in make demo, often the
# sweep before, with its own ranks), so the row tells little of the run;
# such rows are judged by the chart's rows that saw one, and only a chart
# without any is judged by them (by the minute before).
# A series is a chart's rows with one value of the first column.
BEGIN { FS = OFS = ","; limit = 0.5 }
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    has = ("cores" in col) && ("load_after" in col) && ("source" in col)
    if (mode == "drawn") print
    next
}
!has { if (mode == "drawn") print; next }
{
    src = $(col["source"])
    cores = $(col["cores"]) + 0; ranks = $(col["ranks"]) + 0; thr = $(col["threads"]) + 0
    over = src == "measured" && ranks * thr > cores
    if (mode == "drawn") {
        if (over) { dropped++; if (ranks * thr > worst) { worst = ranks * thr; wr = ranks; wt = thr; wc = cores } }
        else print
        next
    }
    # a source that is a citation (gpu_peaks: each GPU's data sheet) rather than a word
    if (src != "measured") { other[src ~ / / ? "published figures" : src] = 1; next }
    n++
    cpu = $(col["cpu"]); cpus[cpu] = 1; ncores[cores] = 1
    if (!(ranks in rk)) { rk[ranks] = 1; rmin = (rmin == "" || ranks < rmin) ? ranks : rmin; rmax = ranks > rmax ? ranks : rmax }
    tk[thr] = 1; tmin = (tmin == "" || thr < tmin) ? thr : tmin; tmax = thr > tmax ? thr : tmax
    l0 = $(col["load_before"]) + 0; l1 = $(col["load_after"]) + 0
    lmin = (lmin == "" || l0 < lmin) ? l0 : lmin; lmin = l1 < lmin ? l1 : lmin
    lmax = l0 > lmax ? l0 : lmax; lmax = l1 > lmax ? l1 : lmax
    if (over) nover++
    if (over) next
    t = $(col["run_s"]) + 0
    unseen = t < 5 && l0 == l1
    if (t < 5) t = 5
    d = exp(-t / 60)
    others = (l1 - l0 * d) / (1 - d) - ranks * thr
    if (unseen) { nu++; u_series[nu] = $1; u_others[nu] = others; u_cores[nu] = cores }
    else { seen++; judge($1, others, cores) }
}
function judge(s, others, cores) {
    if (others <= limit * cores) return
    if (!(s in busy)) order[++nb] = s
    busy[s]++
    if (others / cores > bworst[s]) bworst[s] = others / cores
}
function range(a, b) { return a == b ? a : a "-" b }
function keys(arr,   k, s) { s = ""; for (k in arr) s = s (s == "" ? "" : " / ") k; return s }
END {
    if (mode == "drawn") {
        if (dropped)
            printf "%s: %d measured row%s not drawn: %d rank%s x %d thread%s > %d cores (the run shared cores, "\
                   "so its time measures the sharing); left to the replay and the cluster model\n", FILENAME, dropped,
                   dropped == 1 ? "" : "s", wr, wr == 1 ? "" : "s", wt, wt == 1 ? "" : "s", wc > "/dev/stderr"
        exit 0
    }
    if (mode == "busy") {
        if (!seen) for (i = 1; i <= nu; i++) judge(u_series[i], u_others[i], u_cores[i])
        for (i = 1; i <= nb; i++)
            printf "%s: series %s: %d measured row%s on a busy machine (others' load up to %.2f per core, "\
                   "above %.1f)\n", FILENAME, order[i], busy[order[i]], busy[order[i]] == 1 ? "" : "s",
                   bworst[order[i]], limit
        exit 0
    }
    # subtitle
    if (n == 0) { s = keys(other); print s == "" ? "" : "source: " s; exit 0 }
    printf "measured on %s cores (%s), %s rank%s x %s thread%s; load %.2f-%.2f (1-min average, before and after each run)",
           keys(ncores), keys(cpus), range(rmin, rmax), rmax == 1 ? "" : "s", range(tmin, tmax), tmax == 1 ? "" : "s", lmin, lmax
    if (nover && !untimed) printf "; %d oversubscribed row%s (ranks x threads > cores) not drawn", nover, nover == 1 ? "" : "s"
    s = keys(other); if (s != "") printf "; also %s", s
    print ""
}
