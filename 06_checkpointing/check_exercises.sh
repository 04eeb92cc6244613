#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 06's
# exercises (README.md, "Exercises"). ANSWERS (default
# 06_checkpointing/answers.txt; start from answers.sample) holds one
# "name = number" per line; # starts a comment, a blank value is "not yet".
# The expected values come from the program: one step of the exercises'
# model (a few seconds) gives the sizes of recompute.h's cost model (x, a
# layer's activations, the head and scratch), which its formulas extend to
# every policy; `ckpt --goodput-model` gives Young's interval and Daly's
# goodput. A wrong answer is told how far off it is, not what the answer is.
# Exit status 0 when every answer is right.
#   bash 06_checkpointing/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"
ckpt=$root/06_checkpointing/ckpt
[ -x "$ckpt" ] || { echo "error: $ckpt is not built: run make first" >&2; exit 2; }

# The exercises' model under every:2, one step:
#   recompute: every:2 | ... (model M MB = I layer inputs x X kB + K layers x Y kB + ...) | high-water ... (model W MB)
#   recompute: every:2: ... backward recomputes R layer forwards ... (+P% FLOPs)
run=$("$ckpt" --dim 64 --layers 16 --heads 4 --kv-heads 2 --seq 128 --batch 4 --steps 1 --threads 1 \
      --recompute every:2 2>&1) || { echo "error: ckpt failed:" >&2; printf '%s\n' "$run" >&2; exit 2; }
sizes=$(sed -nE 's/.*model [0-9.]+ MB = ([0-9]+) layer inputs x ([0-9.]+) kB \+ ([0-9]+) layers x ([0-9.]+) kB.*high-water with backward scratch [0-9.]+ MB \(model ([0-9.]+) MB\).*/\1 \2 \3 \4 \5/p' <<< "$run")
flops=$(sed -nE 's/.*backward recomputes ([0-9]+) layer forwards .*\(\+([0-9.]+)% FLOPs\).*/\1 \2/p' <<< "$run")
# Young's interval and Daly's goodput: "# young T s (goodput G), daly T s (goodput G)"
model() { "$ckpt" --goodput-model "$1" | sed -nE 's/^# young ([0-9.e+-]+) s \(goodput ([0-9.]+)\), daly [0-9.e+-]+ s \(goodput ([0-9.]+)\).*/\1 \2 \3/p'; }
sync=$(model 0.05,2,1.1); background=$(model 0.015,2,1.1); llama=$(model 10,10012,600)
for v in "$sizes" "$flops" "$sync" "$background" "$llama"; do
    [ -n "$v" ] || { echo "error: could not read the cost model or the goodput model from ckpt's output" >&2; exit 2; }
done

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='BEGIN {
    split(sizes, s, " "); split(flops, f, " "); split(sync, y, " "); split(background, g, " "); split(llama, l, " ")
    L = 16
    # recompute.h, with x one layer input and A what a layer keeps (x included), in MB:
    #   every:C  ceil(L/C) x + C A + head;   block:K  (L + 1) x + (L - K) (A - x) + head
    x = s[2] / 1e3; A = x + s[4] / 1e3
    head = s[5] - s[1] * x - s[3] * (A - x)          # the head, the tokens and backward scratch
    # 1. every:2
    want("ex1_every_2_mb", int((L + 1) / 2) * x + 2 * A + head, 0.002, "ceil(L/C) x + C A + head and scratch")
    # 2. a budget of 20 MB: the largest every:C and the smallest block:K that fit, and what each recomputes
    for (C = 1; C <= L; C++) if (int((L + C - 1) / C) * x + C * A + head <= 20) every = C
    for (K = L - 1; K >= 1; K--) if ((L + 1) * x + (L - K) * (A - x) + head <= 20) block = K
    want("ex2_largest_every_c", every, 0, "ceil(L/C) x + C A + head <= 20 MB")
    want("ex2_smallest_block_k", block, 0, "(L + 1) x + (L - K) (A - x) + head <= 20 MB")
    want("ex2_every_extra_flops_percent", f[2], 0.01, "every layer forwarded once more, whatever C")
    want("ex2_block_extra_flops_percent", f[2] * block / L, 0.01, "K of the L layers forwarded once more")
    # 3. the quadratic variant: every layer of a segment re-forwarded from the checkpoint
    want("ex3_quadratic_forwards", (L / 4) * 4 * 5 / 2, 0, "L/C segments of 1 + 2 + ... + C forwards")
    want("ex3_forwards_now", f[1], 0, "one forward per layer")
    # 4. Young: delta 50 ms, M 2 s; background delta 15 ms; Daly goodput with R = 1.1 s
    want("ex4_young_s", y[1], 0.005, "sqrt(2 delta M)")
    want("ex4_young_background_s", g[1], 0.005, "sqrt(2 delta M)")
    want("ex4_daly_goodput", y[3], 0.005, "tau / (M e^(R/M) (e^((tau + delta)/M) - 1)) at Daly tau")
    want("ex4_daly_goodput_background", g[3], 0.005, "the same with delta 15 ms")
    # 5. Llama 3: M = 10,012 s, R = 600 s, delta = 10 s
    want("ex5_goodput_10s", l[2], 0.002, "Daly goodput at Young interval")
    want("ex5_restart_factor", exp(-600 / 10012), 0.002, "e^(-R/M): what remains as delta -> 0")
}
END { finish("06") }'
check "$program" -v sizes="$sizes" -v flops="$flops" -v sync="$sync" -v background="$background" \
    -v llama="$llama"
