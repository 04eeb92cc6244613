# reference_run.sh: sourced by the chapters' test scripts.
#   reference_run LOG PROG FLAGS... --save-final BIN
# runs the 1-rank reference `mpirun -np 1 PROG FLAGS...` with its output in
# LOG. Many tests compare their N-rank run with the same 1-rank run: under
# tests/run.sh (which sets TEST_CACHE to a folder of its own, emptied when it
# ends) a reference already run by an earlier test, with the same program
# binary and the same flags, is not run again: its log and final state are
# copied. Only a run whose results are its log and its --save-final file is
# a reference (never one that writes checkpoints or other files). The
# emulator's settings (EMU_GPUS, EMU_SEED, ...: tests/cuda_emu) are part of
# the key, so a reference on an emulated GPU is shared only by runs that
# would emulate the same GPUs with the same schedule.
reference_run() {
    local log=$1 prog=$2; shift 2
    local a prev="" out="" key="" args=()
    for a in "$@"; do
        if [ "$prev" = --save-final ]; then out=$a; args+=(@); else args+=("$a"); fi
        prev=$a
    done
    if [ -n "${TEST_CACHE:-}" ] && [ -n "$out" ]; then
        key=$({ cksum <"$prog"; printf '%s\n' "$prog" "${args[@]}"; env | grep '^EMU_' | sort; } | cksum | tr ' ' _)
        if [ -s "$TEST_CACHE/$key.bin" ]; then
            cp "$TEST_CACHE/$key.log" "$log" && cp "$TEST_CACHE/$key.bin" "$out" && return 0
        fi
    fi
    mpirun -np 1 "$prog" "$@" >"$log" 2>&1 || return 1
    if [ -n "$key" ] && mkdir -p "$TEST_CACHE"; then   # published whole or not at all
        cp "$log" "$TEST_CACHE/$key.log.$$" && cp "$out" "$TEST_CACHE/$key.bin.$$" &&
            mv "$TEST_CACHE/$key.log.$$" "$TEST_CACHE/$key.log" && mv "$TEST_CACHE/$key.bin.$$" "$TEST_CACHE/$key.bin"
    fi
    return 0
}
