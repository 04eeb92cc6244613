#!/usr/bin/env bash
# test_pipeline.sh: the multi-run tests of chapter 07 (listed in
# tests/pipeline.tests). Each case trains tiny models and compares, with
# build/tests/compare or awk, what the runs printed or saved; a failure says
# what differed and by how much. Usage: test_pipeline.sh CASE [ARGS...];
# exit 0 when the property holds. Runs mpirun itself (the runner's NP is 0).
set -euo pipefail
cd "$(dirname "$0")/.."
PIPE=./07_pipeline/pipeline
REF=./03_ddp/ddp
CMP=./build/tests/compare
DEV=${DEV:-cpu}
# A tiny model: 8 layers (2 or 4 stages, also with 2 chunks each), 16
# sequences per step, a few ms per step. Flags after a case's own arguments
# go to both runs of a comparison (e.g. --layers 6 for 3 stages).
TINY=(--device "$DEV" --threads 1 --dim 32 --layers 8 --heads 4 --kv-heads 2 --seq 16 --vocab 64
      --batch 16 --lr 3e-3)
dir=$(mktemp -d /tmp/pipeline_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

run() {  # NP LOG PROGRAM FLAGS...: one training run, quietly unless it fails
    local np=$1 log=$2 prog=$3; shift 3
    if ! mpirun -np "$np" "$prog" "$@" >"$log" 2>&1; then
        echo "run failed: mpirun -np $np $prog $*"; tail -n 20 "$log"; exit 1
    fi
}
source tests/reference_run.sh
ref() {  # LOG PROG FLAGS...: the 1-rank reference run (tests/reference_run.sh), quietly unless it fails
    reference_run "$@" || { echo "the 1-rank reference run failed: $2 ${*:3}"; tail -n 20 "$1"; exit 1; }
}

case "$1" in
equiv)  # NP TOL "PIPELINE FLAGS" [FLAGS...]: the pipeline on NP ranks vs chapter 03's trainer
        # on 1 rank (an independent step function), same global batch, 6 steps; FLAGS go to
        # both runs, PIPELINE FLAGS (after them) to the pipeline only
    np=$2; tol=$3; read -r -a pf <<<"$4"; shift 4
    ref "$dir/one.log" "$REF" "${TINY[@]}" --steps 6 "$@" --save-final "$dir/one.bin"
    run "$np" "$dir/many.log" "$PIPE" "${TINY[@]}" --steps 6 --replay none "$@" "${pf[@]}" --save-final "$dir/many.bin"
    echo "03_ddp on 1 rank vs 07_pipeline on $np ranks [${pf[*]}], 6 steps, $*"
    grep -h '^pipeline:\|^batch:' "$dir/many.log"
    grep '^step' "$dir/many.log" | tail -n 2
    $CMP "$dir/many.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
emu)  # NP GPUS COMM TOL "PIPELINE FLAGS" [FLAGS...]: the CUDA path on emulated GPUs
      # (tests/cuda_emu) vs chapter 03's trainer on 1 emulated GPU, 3 steps. (The
      # emulated kernels round differently from the CPU's: against the CPU both
      # trainers differ by the same ~2e-5 in the weights.)
    np=$2; gpus=$3; comm=$4; tol=$5; read -r -a pf <<<"$6"; shift 6
    EMU_GPUS=1 ref "$dir/one.log" build/emu/ddp "${TINY[@]}" --device cuda --steps 3 "$@" --save-final "$dir/one.bin"
    if ! mpirun -np "$np" env EMU_GPUS="$gpus" build/emu/pipeline "${TINY[@]}" --device cuda --comm "$comm" \
            --steps 3 --replay none "$@" "${pf[@]}" --save-final "$dir/gpu.bin" >"$dir/gpu.log" 2>&1; then
        tail -n 30 "$dir/gpu.log"; exit 1
    fi
    grep '^device\|^pipeline:' "$dir/gpu.log"
    $CMP "$dir/gpu.bin" "$dir/one.bin" --tol "$tol" ${WTOL:+--wtol "$WTOL"}
    ;;
numbers)  # NP [FLAGS...]: every number the summary prints against its formula or an independent sum
    np=$2; shift 2
    run "$np" "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 4 "$@"
    sed -n '/^bubble:/,/^sent:/p' "$dir/a.log"
    awk -v np="$np" '
        function fail(msg) { print "error: " msg; bad = 1 }
        /^pipeline:/ { for (i = 1; i <= NF; i++) { w = $i; gsub(/,/, "", w)
                       if (w == "stage" || w == "stages") P = $(i - 1)
                       if (w == "micro-batches") M = $(i - 1); if (w == "chunk" || w == "chunks") V = $(i - 1) }
                       kind = $2 }
        /messages:/  { bytes = $2 }
        /^bubble:/   { split($0, a, "= "); shown = a[2] + 0 }
        /measured, steps/ { measured = $NF + 0 }
        /^ +stage [0-9]+: busy/ { st = $2 + 0; busy = $4; idle = $7; other = $10; step = $13; pct = $16
                       gsub(/[(%)]/, "", pct); got = 100 * idle / step
                       if (got - pct > 0.1 || pct - got > 0.1)
                           fail("stage " st ": idle " idle " / step " step " = " got "%, printed " pct "%")
                       if (busy + idle + other - step > 0.0021 || step - busy - idle - other > 0.0021)
                           fail("stage " st ": busy " busy " + idle " idle " + other " other " != step " step " ms")
                       if (other < -0.0011) fail("stage " st ": other " other " ms is negative")
                       sum += got; n++ }   # from the ms figures: the printed 0.1% would add rounding
        /^ +stage [0-9]+: [0-9]+ \(promised/ { s = $2 + 0; held = $3 + 0; prom = $5 + 0
                       if (kind == "naive") want = 1; else if (kind == "gpipe") want = M
                       else if (kind == "1f1b") want = (P - s < M ? P - s : M)
                       else if (kind == "zbh1") want = (P < M ? P : M)
                       else { want = 2 * (P - s - 1) + (V - 1) * P + 1; if (want > V * M) want = V * M }
                       if (prom != want) fail("stage " s ": promised " prom ", the formula gives " want)
                       if (held != want) fail("stage " s ": " held " micro-batches held at the peak, the schedule holds " want)
                       if ($6 == "x" && ($7 * held - $10 > 0.0011 || $10 - $7 * held > 0.0011))
                           fail("stage " s ": " held " x " $7 " MB is not the " $10 " MB printed") }
        # zbh1: what B keeps for W per micro-batch object, model_dout_bytes for the tiny
        # model (C 32, F 128, H 4, KV 2, hd 8, vocab 64, seq 16, 16 sequences, fp32):
        # 4 Rf (layers (2 C + 2 F + (H + 2 KV) hd) + [head] vocab + [embedding] C)
        /^ +stage [0-9]+: [0-9]+ x [0-9.]+ MB = [0-9.]+ MB; W/ {
                       s = $2 + 0; Rf = 16 / M * 16; per = 8 / P * 384 + (s == P - 1 ? 64 : 0) + (s == 0 ? 32 : 0)
                       want = 4 * Rf * per / 1e6; nd++
                       if ($5 - want > 0.00006 || want - $5 > 0.00006) fail("stage " s ": B keeps " $5 " MB for W, the formula " want)
                       if ($3 * $5 - $8 > 0.0011 || $8 - $3 * $5 > 0.0011) fail("stage " s ": " $3 " x " $5 " MB is not " $8)
                       if ($NF != (s + 1 < M ? s + 1 : M)) fail("stage " s ": " $NF " Ws waiting, ZB-H1 lets " s + 1 " wait") }
        /^sent:/     { sent = $2 + 0; formula_b = $NF + 0 }
        END {
            if (kind == "naive") f = (P - 1) / P
            else if (kind == "interleaved") f = (P - 1) / (V * M + P - 1)
            else if (kind == "zbh1") f = (P - 1) / (3 * M + P - 1)
            else f = (P - 1) / (M + P - 1)
            if (shown - 100 * f > 0.051 || 100 * f - shown > 0.051) fail("formula printed " shown "%, computed " 100 * f "%")
            if (n != P) fail(n " stage lines for " P " stages")
            if (kind == "zbh1" && nd != P) fail(nd " lines of what B keeps for W, for " P " stages")
            else if (measured - sum / n > 0.08 || sum / n - measured > 0.08)
                fail("measured bubble " measured "% is not the mean of the stages, " sum / n "%")
            want_b = 2 * M * (P * V - 1) * bytes
            if (sent != want_b || formula_b != want_b)
                fail("sent " sent " bytes per step, printed formula " formula_b ", 2 M (P V - 1) x " bytes " = " want_b)
            printf "checked %s, P %d, M %d, V %d: formula %.1f%%, mean of stages %.2f%%, memory, bytes\n", kind, P, M, V, 100 * f, sum / n
            exit bad
        }' "$dir/a.log"
    ;;
slices)  # NP M K [FLAGS...]: TeraPipe's numbers against formulas computed here from the flags and
         # the slices the header names: the bubble (P-1)/(M K+P-1), slices held (M K: GPipe
         # order), the keys and values kept per stage M (L/P) B KV hd 4 (2 T + 2 t_last) bytes
         # (fp32; t_last: the last slice's first token, T - T/K for equal slices), the bytes
         # sent 2 M (P-1) B T dim 4; K slices covering the sequence, every slice timed
    np=$2; M=$3; K=$4; shift 4
    run "$np" "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 3 --replay none --schedule terapipe --micro "$M" --slices "$K" "$@"
    sed -n '/^bubble:/,/^sent:/p' "$dir/a.log"
    grep 'token slices, run in order' "$dir/a.log"
    awk -v P="$np" -v M="$M" -v K="$K" -v L=8 -v B=$((16 / M)) -v KV=2 -v hd=8 -v C=32 -v equal="$([[ " $* " == *" --balance "* ]] || echo 1)" '
        function fail(msg) { print "error: " msg; bad = 1 }
        /token slices, run in order/ { T = 0; for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+,$/) {
                v = $i; gsub(/[\[,]/, "", v); w = $(i + 1); gsub(/[);]/, "", w)
                if (v + 0 != T) fail("slice " nb " starts at " v ", the one before ends at " T)
                last = v + 0; T = w + 0; nb++ }
            if (nb != K) fail(nb " slices in the header for K = " K)
            if (equal && last != T - T / K) fail("equal slices: the last starts at " last ", not T - T/K = " T - T / K) }
        function off(a, b) { return a - b > 1e-9 * (b > 0 ? b : 1) || b - a > 1e-9 * (b > 0 ? b : 1) }
        /^bubble:/ { split($0, a, "= "); shown = a[2] + 0 }
        /^ +stage [0-9]+: [0-9]+ \(promised/ { if ($3 + 0 != M * K || $5 + 0 != M * K) fail("stage " $2 " holds " $3 " slices, promised " $5 ", want " M * K) }
        /^keys and values kept/ { kf = $NF == "bytes" ? $(NF - 1) + 0 : 0 }
        /^ +stage [0-9]+: [0-9]+ bytes measured/ { got = $3 + 0; nkv++
            want = M * (L / P) * B * KV * hd * 4 * (2 * T + 2 * last)
            if (off(got, want)) fail("stage " $2 " keeps " got " bytes of keys and values, formula " want)
            if (off(kf, want)) fail("the printed formula " kf " is not " want) }
        /^ +slice [0-9]+, tokens/ { ns++; if ($5 + 0 <= 0 || $7 + 0 <= 0) fail("slice " $2 " untimed: " $0) }
        /^sent:/ { sent = $2 + 0 }
        END { f = (P - 1) / (M * K + P - 1); want_b = 2 * M * (P - 1) * B * T * C * 4
              if (shown - 100 * f > 0.051 || 100 * f - shown > 0.051) fail("bubble formula printed " shown "%, (P-1)/(M K+P-1) = " 100 * f "%")
              if (nkv != P) fail(nkv " key-and-value lines for " P " stages")
              if (ns != K) fail(ns " slice lines for " K " slices")
              if (sent != want_b) fail("sent " sent " bytes per step, 2 M (P-1) B T dim 4 = " want_b)
              printf "checked terapipe P %d M %d K %d, T %d, last slice from %d: bubble formula %.1f%%, keys and values, slices held, bytes sent\n", P, M, K, T, last, 100 * f
              exit bad }' "$dir/a.log"
    ;;
csv)  # every number of the step lines and the CSV rows, recomputed (tests/check_trainer_csv.py),
     # and the CSV's bubble column is the step line's
    run 2 "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 5 --micro 4 --replay none --peak 1000 --csv "$dir/a.csv"
    python3 tests/check_trainer_csv.py "$dir/a.log" "$dir/a.csv" --peak 1000
    paste -d' ' <(grep '^step ' "$dir/a.log" | sed 's/.*bubble \([0-9.]*\)%.*/\1/') \
                <(tail -n +2 "$dir/a.csv" | cut -d, -f11) |
        awk '{ if ($1 - 100 * $2 > 0.051 || 100 * $2 - $1 > 0.051) { print "error: step line bubble " $1 "%, CSV " $2; bad = 1 } n++ }
             END { if (n != 5) { print "error: " n " steps"; bad = 1 } else print "bubble: the 5 step lines and CSV rows agree"; exit bad }'
    ;;
idle)  # NP [FLAGS...]: the CSV's bubble (idle / step) tied to the idle time the summary measured:
      # bubble x ms of each timed step is that step's idle time (mean over ranks), so their mean
      # over the timed steps is the mean of the stage lines' idle ms; a share, never above 100%
    np=$2; shift 2
    run "$np" "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 5 --replay none --csv "$dir/a.csv" "$@"
    grep -E '^bubble:|measured, steps|^ +stage [0-9]+: busy' "$dir/a.log"
    awk -F, -v summary="$dir/a.log" '
        function fail(msg) { print "error: " msg; bad = 1 }
        BEGIN { while ((getline line < summary) > 0)
                    if (line ~ /^ +stage [0-9]+: busy/) { split(line, f, " "); idle += f[7]; n++ }
                if (n == 0) { print "error: no stage lines in the summary"; exit 1 } }
        NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "ms") ms = i; if ($i == "bubble") bu = i }; next }
        { if ($bu < 0 || $bu > 1) fail("step " $1 ": bubble " 100 * $bu "% is not a share of the step")
          if (NR > 2) { sum += $bu * $ms; share += $bu; slack += 5e-5 * $ms; steps++ } }   # step 1 warms up, untimed
        END { if (steps != 4) { print "error: " steps " timed steps in the CSV, want 4"; exit 1 }
              got = sum / steps; want = idle / n; tol = slack / steps + 0.003
              printf "mean over steps 2-5 of bubble x ms: %.4f ms; mean of the %d stage lines'"'"' idle: %.4f ms\n", got, n, want
              printf "mean bubble %.1f%% of the whole step (the summary'"'"'s %d stages: of their own span, without the update)\n", 100 * share / steps, n
              if (got - want > tol || want - got > tol)
                  fail("bubble x step time is " got " ms of idle per step, the stages measured " want " ms")
              exit bad }' "$dir/a.csv"
    ;;
replay)  # the replay with the measured action times reproduces each stage's busy time and the step
    run 2 "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 4 --micro 4 --schedule gpipe --replay none \
        --bubble-csv "$dir/b.csv" --gantt-csv "$dir/g.csv"
    cat "$dir/b.csv"
    awk -F, 'NR > 1 && $1 == "measured" { b[$6] += $11 - $10; n[$6]++ }
             END { if (n[0] != 8 || n[1] != 8) { print "error: expected 8 computes per stage in the timeline, got " n[0] " and " n[1]; exit 1 }
                   printf "timeline: stage 0 computes %.3f ms, stage 1 %.3f ms\n", b[0], b[1] }' "$dir/g.csv"
    # Every compute on stage 1 starts after the stage-0 compute that feeds it ended.
    awk -F, 'NR > 1 && $1 == "measured" { key = $7 $8; if ($6 == 0) { e[key] = $11; s0[key] = $10 } else { s1[key] = $10; e1[key] = $11 } }
             END { for (m = 0; m < 4; m++) {
                       if (s1["F" m] < e["F" m] - 1e-3) { print "error: F" m " on stage 1 starts at " s1["F" m] " ms, before stage 0 ends it at " e["F" m]; exit 1 }
                       if (s0["B" m] < e1["B" m] - 1e-3) { print "error: B" m " on stage 0 starts at " s0["B" m] " ms, before stage 1 ends it at " e1["B" m]; exit 1 } }
                   print "timeline: every stage-1 forward after its stage-0 forward, every stage-0 backward after its stage-1 backward" }' "$dir/g.csv"
    ;;
trace)  # --trace: one Perfetto process per rank with a schedule track of forward and backward spans
    run 2 "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 4 --micro 4 --replay none --trace "$dir/t.json"
    grep '^trace' "$dir/a.log"
    for want in '"name": "rank 0"' '"name": "rank 1"' '"name": "schedule"' '"name": "F0"' '"name": "B3"' \
                '"name": "wait '; do
        grep -q "$want" "$dir/t.json" || { echo "error: trace lacks $want"; exit 1; }
    done
    echo "$(grep -c '"ph": "X"' "$dir/t.json") spans"
    ;;
show)  # --show-schedule: the lecture's 4 stages x 4 micro-batches, utilisation 4/7
    out=$("$PIPE" --show-schedule --schedule gpipe --stages 4 --micro 4)
    echo "$out"
    grep -q 'utilisation 4/7 = 57.1%' <<<"$out" || { echo "error: not the lecture's 4/7"; exit 1; }
    grep -q '^  stage 3  \.  \.  \.  F0 F1 F2 F3 B0 B1 B2 B3 \.  \.  \.' <<<"$out" || { echo "error: stage 3's row differs"; exit 1; }
    ;;
show_zbh1)  # --show-schedule --schedule zbh1: 4 stages x 8 micro-batches, one slot per F, B and W:
           # the last stage runs 1F1B's F and B and leaves its W's for the end; the bubble is
           # (P - 1) slots a stage, the formula (P - 1)/(3 M + P - 1) = 3/27
    out=$("$PIPE" --show-schedule --schedule zbh1 --stages 4 --micro 8)
    echo "$out"
    grep -q 'bubble 1/9 = 11.1% (formula (P-1)/(3M+P-1) = 11.1%)' <<<"$out" || { echo "error: bubble not the formula's 1/9"; exit 1; }
    grep -q '^  stage 3  \.  \.  \.  F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7 ' <<<"$out" ||
        { echo "error: stage 3's row differs"; exit 1; }
    ;;
zbh1_times)  # P M: ZB-H1's printed lists, simulated with unequal F, B and W times
             # (07_pipeline/check_replay.py): every stage idles (P-1) max(T_B, T_F + max(0, T_B - T_W))
    "$PIPE" --show-schedule --schedule zbh1 --stages "$2" --micro "$3" > "$dir/show.txt"
    python3 07_pipeline/check_replay.py zbh1 "$dir/show.txt"
    ;;
terapipe_replay)  # NP M K [FLAGS...]: a TeraPipe run's replays against a timeline simulated from
                  # its own slice times, its busy time, and (--balance) its cuts against the
                  # FLOPs computed from the model line (07_pipeline/check_replay.py)
    np=$2; M=$3; K=$4; shift 4
    "$PIPE" "${TINY[@]}" --show-schedule --schedule terapipe --stages "$np" --micro "$M" --slices "$K" "$@" > "$dir/show.txt"
    run "$np" "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 3 --schedule terapipe --micro "$M" --slices "$K" \
        --replay "$np" --bubble-csv "$dir/b.csv" --gantt-csv "$dir/g.csv" "$@"
    grep -h 'token slices, run in order\|replayed' "$dir/a.log"
    python3 07_pipeline/check_replay.py terapipe "$dir/show.txt" "$dir/a.log" "$dir/b.csv" "$dir/g.csv"
    ;;
resume)  # a checkpoint of the 2-stage pipeline resumes in chapter 03's trainer on 1 rank
    run 2 "$dir/a.log" "$PIPE" "${TINY[@]}" --steps 8 --replay none --ckpt-every 4 --ckpt-dir "$dir/ckpt" --save-final "$dir/ref.bin"
    rm -rf "$dir/ckpt/step_00000008"
    run 1 "$dir/b.log" "$REF" "${TINY[@]}" --steps 8 --ckpt-dir "$dir/ckpt" --resume --save-final "$dir/b.bin"
    grep '^resume' "$dir/b.log"
    $CMP "$dir/b.bin" "$dir/ref.bin" --tol 1e-5
    ;;
*)
    echo "unknown case $1"; exit 2 ;;
esac
