#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 07's
# exercises (README.md, "Exercises"). ANSWERS (default 07_pipeline/answers.txt;
# start from answers.sample) holds one "name = number" per line; # starts a
# comment, a blank value is "not yet". The bubbles and the activations held
# are what `pipeline --show-schedule` counts on the schedules themselves
# (schedule.c), the rest the chapter's formulas. A wrong answer is told how
# far off it is, not what the answer is. Exit status 0 when every answer is
# right.
#   bash 07_pipeline/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"
pipeline=$root/07_pipeline/pipeline
[ -x "$pipeline" ] || { echo "error: $pipeline is not built: run make first" >&2; exit 2; }

# What the schedule grid counts: "busy ... bubble 3/11 = 27.3%" and "stage 0: 11".
show() { "$pipeline" --show-schedule --schedule "$1" --stages "$2" --micro "$3" "${@:4}"; }
bubble() { show "$@" | sed -nE 's|.*bubble ([0-9]+)/([0-9]+) = .*|\1 \2|p' | awk '{ print $1 / $2 }'; }
held0() { show "$@" | sed -nE 's/^activations held .*stage 0: ([0-9]+) .*/\1/p'; }
b_1f1b=$(bubble 1f1b 4 8)
b_gpipe_lecture=$(bubble gpipe 4 4)
b_inter=$(bubble interleaved 4 8)
h_inter=$(held0 interleaved 4 8)
h_1f1b=$(held0 1f1b 4 8)
# 5. one 4096 x 4096 GEMM of b x 256 rows per stage on the H100 data (the
# planner's interpolation): "b ms" for b = 1..16
plan=$root/10_nd_llama/plan
[ -x "$plan" ] || { echo "error: $plan is not built: run make first" >&2; exit 2; }
gemm_ms=$(for b in 1 2 4 8 16; do "$plan" --gemm-table "$root/01_matmul_hfu/reference/h100_hfu.csv" \
              --gemm-at $((b * 256)),4096,4096 | sed -nE "s/.* = ([0-9.e+-]+) ms$/$b \1/p"; done | tr '\n' ' ')
b_zbh1=$(bubble zbh1 4 8)
b_tera=$(bubble terapipe 8 2 --slices 4)
for v in "$b_1f1b" "$b_gpipe_lecture" "$b_inter" "$h_inter" "$h_1f1b" "$b_zbh1" "$gemm_ms" "$b_tera"; do
    [ -n "$v" ] || { echo "error: could not read the bubble or the activations from pipeline --show-schedule" >&2; exit 2; }
done

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='BEGIN {
    # 1. 1F1B, 4 stages, 8 micro-batches; the lecture: 4 stages x 4 micro-batches
    want("ex1_bubble_percent", 100 * b_1f1b, 0.005, "(P-1)/(M+P-1): idle stage-slots over all of them")
    want("ex1_lecture_utilisation_percent", 100 * (1 - b_gpipe_lecture), 0.005, "M/(M+P-1)")
    # 2. interleaved with 2 chunks per stage, 4 stages, 8 micro-batches
    want("ex2_bubble_percent", 100 * b_inter, 0.005, "(P-1)/(V M+P-1), in chunk slots")
    want("ex2_messages", 2 * 8 * (4 * 2 - 1), 0, "2 M (P V - 1): forward and backward across every chunk boundary")
    want("ex2_messages_1f1b", 2 * 8 * (4 - 1), 0, "2 M (P - 1)")
    want("ex2_stage0_held", h_inter, 0, "chunk micro-batches held at most by stage 0: read the schedule")
    want("ex2_stage0_held_1f1b", h_1f1b, 0, "micro-batches held at most by stage 0: min(M, P)")
    # 3. a message of 1 x 256 x 512 fp32 over 25 GB/s links with 10 us latency, 8 stages
    t = 10e-6 + 256 * 512 * 4 / 25e9
    want("ex3_message_us", t * 1e6, 0.005, "alpha + bytes / bandwidth")
    want("ex3_extra_us_8_stages", 2 * 7 * t * 1e6, 0.01, "the fill and the drain each cross P - 1 links")
    # 4. zero bubble: ZB-H1 against 1F1B with t_F = t_B = t_W
    want("ex4_zb_h1_over_1f1b", (1 + 1 - 1) / (1 + 1 + 1), 0.005, "(t_F + t_B - t_W) / (t_F + t_B + t_W)")
    want("ex4_zbh1_bubble_percent", 100 * b_zbh1, 0.005, "(P-1)/(3M+P-1): idle slots of F, B and W over all of them")
    # 5. the micro-batch size at a batch of 16 on 2 stages: step ~ (16 / b + 1) t(b)
    ng = split(gemm_ms, g, " ")   # not n: want() counts the answers in n
    for (i = 1; i < ng; i += 2) {
        step = (16 / g[i] + 1) * g[i + 1]
        if (!best || step < best) { best = step; best_b = g[i] }
        if (g[i] == 1) step1 = step
    }
    want("ex5_best_micro_batch", best_b, 0, "the shortest (M + P - 1) t(b), M = 16 / b")
    want("ex5_b1_slower_percent", 100 * (step1 / best - 1), 0.01, "b = 1: the smallest bubble, the slowest GEMMs")
    # 6. TeraPipe, 8 stages, 2 micro-batches of 4 token slices each, equal slices
    want("ex6_terapipe_bubble_percent", 100 * b_tera, 0.005, "(P-1)/(M K+P-1), in slice slots")
}
END { finish("07") }'
check "$program" -v b_1f1b="$b_1f1b" -v b_gpipe_lecture="$b_gpipe_lecture" -v b_inter="$b_inter" \
    -v h_inter="$h_inter" -v h_1f1b="$h_1f1b" -v b_zbh1="$b_zbh1" -v gemm_ms="$gemm_ms" \
    -v b_tera="$b_tera"
