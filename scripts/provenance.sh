# provenance.sh: the provenance columns every CSV row of the suite ends with
# (common/perf.h: cores, ranks, threads, cpu, load_before, load_after, run_s,
# source), for the rows a script writes itself. Sourced by the sweeps:
#   prov_begin                     the load and the clock now, before a run
#   prov_cols RANKS THREADS SOURCE the columns for a row now, with a leading comma
# A row a script derives from a program's row carries that row's columns over
# instead (from the column cores to the end).
PROV_HEADER="cores,ranks,threads,cpu,load_before,load_after,run_s,source"
prov_begin() {
    prov_load=$(cut -d' ' -f1 /proc/loadavg)
    prov_t0=$(date +%s.%N)
}
prov_cols() {
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1 | tr ',' ' ' | sed 's/ *$//')
    awk -v c="$(nproc --all)" -v r="$1" -v t="$2" -v cpu="${cpu:-unknown CPU}" -v l0="$prov_load" \
        -v l1="$(cut -d' ' -f1 /proc/loadavg)" -v t0="$prov_t0" -v t1="$(date +%s.%N)" -v s="$3" \
        'BEGIN { printf ",%d,%d,%d,%s,%.2f,%.2f,%.1f,%s", c, r, t, cpu, l0, l1, t1 - t0, s }'
}
