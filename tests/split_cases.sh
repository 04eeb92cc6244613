# split_cases.sh: the test cases every trainer that splits the model shares
# (sourced by 08_tensor_parallel/test_tp.sh and 09_context_parallel/test_cp.sh).
# The sourcing script sets PROG (the program), EMU_PROG (its twin on the CUDA
# emulator), TINY (the model's flags) and dir (a temporary folder), and has
# run mpirun's environment. Each N-rank run is compared with the 1-rank run of
# the same global batch by 03_ddp/ddp: the model with no seam and its own
# attention core.
source tests/reference_run.sh

run() {  # NP LOG FLAGS...: one training run of PROG, quietly unless it fails
    local np=$1 log=$2; shift 2
    if ! mpirun -np "$np" "$PROG" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $PROG $*"; tail -n 20 "$log"; exit 1
    fi
}

reference() {  # BIN STEPS FLAGS...: the 1-rank run of 03_ddp/ddp, its final state in BIN
    local bin=$1 steps=$2; shift 2
    reference_run "$dir/one.log" ./03_ddp/ddp "${TINY[@]}" --steps "$steps" "$@" --save-final "$bin" ||
        { echo "the 1-rank reference run failed"; tail -n 20 "$dir/one.log"; exit 1; }
}

equiv_case() {  # NP TOL "PARALLEL FLAGS" [FLAGS...]: NP ranks vs 1 rank, 6 steps
    local np=$1 tol=$2 par
    read -r -a par <<<"$3"; shift 3
    reference "$dir/one.bin" 6 "$@"
    run "$np" "$dir/many.log" "${TINY[@]}" --steps 6 "${par[@]}" "$@" --save-final "$dir/many.bin"
    echo "1 rank vs $np ranks, 6 steps, ${par[*]} $*"
    grep '^tp:\|^cp:\|^dp:' "$dir/many.log"
    grep '^step' "$dir/many.log" | tail -n 2
    ./build/tests/compare "$dir/many.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
}

emu_case() {  # NP GPUS COMM TOL WTOL "PARALLEL FLAGS" [FLAGS...]: the CUDA path on emulated
    # GPUs (tests/cuda_emu) against the CPU's 1-rank run, 3 steps (as 03_ddp/test_ddp.sh emu)
    local np=$1 gpus=$2 comm=$3 tol=$4 wtol=$5 par
    read -r -a par <<<"$6"; shift 6
    reference "$dir/cpu.bin" 3 --device cpu "$@"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" "$EMU_PROG" "${TINY[@]}" --device cuda --comm "$comm" \
            --steps 3 "${par[@]}" "$@" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^tp:\|^cp:\|^weights.*after' "$dir/gpu.log"
    ./build/tests/compare "$dir/gpu.bin" "$dir/cpu.bin" --tol "$tol" --wtol "$wtol"
}
