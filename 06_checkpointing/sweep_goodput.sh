#!/usr/bin/env bash
# sweep_goodput.sh: goodput under injected failures against the checkpoint
# interval, beside Daly's model and the Young/Daly optimum; rows in
# plots/data/goodput.csv (or $1), drawn by 06_checkpointing/goodput.gp.
#
# Goodput is the share of the wall clock spent on useful steps: steps x the
# run's own step time / the run's wall time (this machine's load drifts from
# run to run, and each run's own step time keeps that out of the ratio).
#   1. a failure-free run that saves no checkpoint but the last: the start-up
#      and end of one attempt (R0) and a step time for the model curves;
#   2. a failure-free run with checkpoints, for each mode (synchronous,
#      background): what one checkpoint stalls the loop (delta);
#   3. for each interval and mode, the job under failures of mean time MTBF,
#      run to completion by supervise.sh; attempt k of every run fails at the
#      same time after its start (--fail-seed), so only the interval and the
#      mode differ between the runs;
#   4. the restart cost R: an attempt's wall time beyond its steps and
#      checkpoints, the mean over every attempt of step 3;
#   5. Daly's model with the measured delta and R: the whole job's goodput
#      W / (R0 + W / g(tau)), W the work, g Daly's share of useful time
#      (failure.h); once with the nominal MTBF (the curves), once per run
#      with the mean time between failures that run saw (a few exponential
#      draws scatter a lot around their mean).
# The failures follow the machine's speed, so that every point meets some
# on a fast machine and a slow one alike: unless MTBF is given, the mean
# time between failures is twice what an attempt needs to reach its first
# checkpoint at the longest interval, 2 (R0 + max interval x step), both
# timed in step 1 (a shorter one ends attempts before any checkpoint, and
# the supervisor gives up); unless STEPS is given, the job has at least the
# steps of 4 such means (a shorter one may finish before its first failure;
# one that still does, the machine having sped up since step 1, runs again
# with twice the steps, its row and model point with its own work).
# Flags after the CSV name go to every run. Knobs (environment): NP (2),
# STEPS (at least 100), MTBF (seconds), INTERVALS (steps, "1 4 16"), MODES
# ("sync async"), SEED (the failures', 2: one whose first eight draws come
# within 10% of the mean apart, so that one sweep resembles the average;
# seed 7's first eight come 2.4 times as often as asked).
#   STEPS=400 MTBF=3 INTERVALS="1 3 10 30" bash 06_checkpointing/sweep_goodput.sh plots/data/goodput.csv
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-plots/data/goodput.csv}
shift || true
np=${NP:-2}; steps=${STEPS:-100}; mtbf=${MTBF:-}; seed=${SEED:-2}
intervals=${INTERVALS:-"1 4 16"}; modes=${MODES:-"sync async"}
P=./06_checkpointing/ckpt
source scripts/provenance.sh   # the provenance columns of the rows written here
model=(--dim 128 --layers 4 --heads 4 --kv-heads 2 --seq 32 --batch 8 --threads 1 "$@")
tmp=$(mktemp -d /tmp/goodput.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

sup() {  # LOGDIR FLAGS...: one supervised job of $job_steps steps; prints its result line
    local logs=$1; shift
    rm -rf "$tmp/ckpt" "$logs" "$logs.sup"
    bash 06_checkpointing/supervise.sh --np "$np" --stall-attempts 8 --logs "$logs" -- "$P" "${model[@]}" \
        --steps "$job_steps" --ckpt-dir "$tmp/ckpt" "$@" | tee "$logs.sup" | grep '^supervise: result'
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
mode_flags() { [ "$1" = async ] && echo --ckpt-async || true; }

# 1. the reference
step_of() {  # LOGFILE [DEFAULT]: the mean step time (s) an attempt printed at its end
    local ms; ms=$(sed -n 's/^mean of steps [0-9-]*: \([0-9.]*\) ms\/step.*/\1/p' "$1")
    [ -n "$ms" ] && calc "$ms / 1000" || echo "${2:-}"
}
steps_of() {  # DIR: the mean step time (s) over every attempt's step lines but each one's first
    for f in "$1"/attempt_*.log; do
        sed -n 's/^step *[0-9]*\/[0-9]* | .* | *\([0-9.]*\) ms | .*/\1/p' "$f" | tail -n +2
    done | awk -v d="$step_s" '{ s += $1; n++ } END { printf "%.6g", n ? s / n / 1000 : d }'
}
job_steps=$steps
r=$(sup "$tmp/ref")
w0=$(field wall_s "$r")
step_s=$(step_of "$tmp/ref/attempt_0.log")
r0=$(calc "$w0 - $steps * $step_s")
printf 'failure-free, no checkpoints: %.2f s for %d steps of %.1f ms; start-up and end %.2f s; goodput %.3f\n' \
    "$w0" "$steps" "$(calc "$step_s * 1000")" "$r0" "$(calc "$steps * $step_s / $w0")"
kmax=$(printf '%s\n' $intervals | sort -n | tail -n 1)
[ -n "$mtbf" ] || mtbf=$(calc "2 * ($r0 + $kmax * $step_s)")
if [ -z "${STEPS:-}" ]; then
    steps=$(awk -v s="$steps" -v m="$mtbf" -v t="$step_s" 'BEGIN { n = int(4 * m / t) + 1; print (n > s ? n : s) }')
fi
printf 'failures every %.2f s on average (seed %d), %d steps a job\n' "$mtbf" "$seed" "$steps"
job_steps=$steps

# 2. what a checkpoint costs the loop
declare -A delta
for mode in $modes; do
    sup "$tmp/cost_$mode" --ckpt-every 10 $(mode_flags "$mode") >/dev/null
    if [ "$mode" = async ]; then pat='in the background: training stalled'; else pat='synchronous: stalled'; fi
    ms=$(sed -n "s/^saver: .* $pat \([0-9.]*\) ms per checkpoint.*/\1/p" "$tmp/cost_$mode/attempt_0.log")
    delta[$mode]=$(calc "$ms / 1000")
    grep '^saver: ' "$tmp/cost_$mode/attempt_0.log" | sed "s/^saver: */$mode: /"
done

# 3. the job under failures, intervals and modes interleaved (the machine's load drifts)
for k in $intervals; do
    for mode in $modes; do
        d=$tmp/run_${mode}_$k
        # A point that met no failure says nothing about the interval against
        # failures: the machine ran faster than in step 1 (its load fell) and
        # the job ended before its first failure, so it runs again, twice as long.
        job_steps=$steps
        while :; do
            prov_begin
            r=$(sup "$d" --ckpt-every "$k" $(mode_flags "$mode") --fail-every-s "$mtbf" --fail-seed "$seed")
            wall=$(field wall_s "$r"); fails=$(field failures "$r"); comp=$(field computed "$r")
            [ "${fails:-0}" -eq 0 ] || break
            [ "$job_steps" -lt $((8 * steps)) ] ||
                { echo "error: $mode every $k steps met no failure in $wall s with $job_steps steps (MTBF $mtbf s): lower MTBF" >&2; exit 1; }
            echo "$mode every $k steps met no failure in $wall s (MTBF $mtbf s): again with $((2 * job_steps)) steps"
            job_steps=$((2 * job_steps))
        done
        prov_cols "$np" 1 measured >> "$tmp/prov.txt"; echo >> "$tmp/prov.txt"
        st=$(steps_of "$d")
        # the mean time between failures this run saw: failure times plus the last attempt's exposure
        seen=$(cat "$d"/attempt_*.log | sed -n 's/.* killed \([0-9.]*\) s after its start (injected)/\1/p' |
               awk -v last="$(sed -n 's/.* in \([0-9.]*\) s, completed/\1/p' "$d.sup")" \
                   '{ s += $1; n++ } END { printf "%.4g", n ? (s + last) / n : 1e9 }')
        echo "$k $mode $wall $fails $comp $seen $st $job_steps" >> "$tmp/runs.txt"
        printf '%-5s every %3d steps (%.2f s): %6.2f s, steps of %.0f ms, %d failures (%.2f s apart on average), %3d steps computed, goodput %.3f\n' \
            "$mode" "$k" "$(calc "$k * $st")" "$wall" "$(calc "$st * 1000")" "$fails" "$seen" "$comp" "$(calc "$job_steps * $st / $wall")"
        # 4. each attempt's cost beyond its steps and checkpoints
        sed -n 's/^supervise: attempt [0-9]* on [0-9]* ranks: steps \([0-9]*\)-\([0-9]*\) in \([0-9.]*\) s.*/\1 \2 \3/p' "$d.sup" |
            while read -r a b s; do
                calc "$s - ($b - $a + 1) * $st - (int($b / $k) - int(($a - 1) / $k)) * ${delta[$mode]}"; echo
            done >> "$tmp/restart.txt"
    done
done
restart=$(awk '{ s += $1; n++ } END { printf "%.4g", s / n }' "$tmp/restart.txt")
printf 'restart cost R = %.2f s per attempt (mean over %d attempts)\n' "$restart" "$(wc -l < "$tmp/restart.txt")"

# 5. Daly's model
echo "kind,mode,interval_steps,interval_s,wall_s,failures,steps_computed,goodput,model_goodput,mtbf_s,ckpt_s,restart_s,step_s,$PROV_HEADER" > "$out"
job() {  # WORK G: the whole job's goodput from Daly's share g: W / (R0 + W / g)
    awk -v r0="$r0" -v w="$1" -v g="$2" 'BEGIN { printf "%.5f", w / (r0 + w / g) }'
}
daly_g() {  # MODE TAU M: Daly's share of useful time (failure.h)
    "$P" --goodput-model "${delta[$1]},$3,$restart,$2" | cut -d, -f2
}
while read -r k mode wall fails comp seen st n && IFS= read -r prov <&3; do
    tau=$(calc "$k * $st"); work=$(calc "$n * $st")
    awk -v m="$mode" -v k="$k" -v t="$tau" -v w="$wall" -v f="$fails" -v c="$comp" -v g="$(calc "$work / $wall")" \
        -v mg="$(job "$work" "$(daly_g "$mode" "$tau" "$seen")")" -v M="$seen" -v d="${delta[$mode]}" -v R="$restart" -v s="$st" \
        -v prov="$prov" \
        'BEGIN { printf "measured,%s,%d,%.5g,%.4f,%d,%d,%.5f,%s,%s,%.5g,%.5g,%.5g%s\n", m, k, t, w, f, c, g, mg, M, d, R, s, prov }' >> "$out"
done < "$tmp/runs.txt" 3< "$tmp/prov.txt"
work=$(calc "$steps * $step_s")
prov_begin
modeled=$(prov_cols "$np" 1 modeled)
for mode in $modes; do
    "$P" --goodput-model "${delta[$mode]},$mtbf,$restart" > "$tmp/model_$mode.txt"
    while IFS=, read -r tau g; do
        echo "model,$mode,$(calc "$tau / $step_s"),$tau,,,,$(job "$work" "$g"),$(job "$work" "$g"),$mtbf,${delta[$mode]},$restart,$step_s$modeled"
    done < <(grep '^[0-9]' "$tmp/model_$mode.txt") >> "$out"
    read -r young daly < <(sed -n 's/^# young \([0-9.e+-]*\) s .* daly \([0-9.e+-]*\) s .*/\1 \2/p' "$tmp/model_$mode.txt")
    echo "young,$mode,$(calc "$young / $step_s"),$young,,,,,,$mtbf,${delta[$mode]},$restart,$step_s$modeled" >> "$out"
    echo "daly,$mode,$(calc "$daly / $step_s"),$daly,,,,,,$mtbf,${delta[$mode]},$restart,$step_s$modeled" >> "$out"
    printf '%s: delta %.1f ms; the optimum interval: Young %.2f s (%.1f steps), Daly %.2f s\n' "$mode" \
        "$(calc "${delta[$mode]} * 1000")" "$young" "$(calc "$young / $step_s")" "$daly"
done
echo "wrote $out"
