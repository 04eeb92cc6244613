# sweep_common.sh: what the sweeps share (sourced by every sweep_*.sh of
# this chapter, from the repository root): Open MPI set up as the suite
# runs it (as root, more ranks than cores), the two output files, and the
# summary of the repeats.
#   sweep_begin CSV   out=CSV, runs=CSV's *_runs.csv (one row per run); both emptied
#   sweep_end KEYS    per configuration (the KEYS columns), the median run with
#                     the fastest and slowest step, then the provenance columns
#                     (this machine's cores first), into out
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
sweep_begin() {
    out=$1
    runs=${out%.csv}_runs.csv
    mkdir -p "$(dirname "$out")"
    rm -f "$out" "$runs"
}
sweep_end() {
    awk -v keys="$1" -v by=step_ms -f scripts/repeats.awk "$runs" > "$out"
}
