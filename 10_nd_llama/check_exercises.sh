#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 10's
# exercises (README.md, "Exercises on the trainer" and "Exercises").
# ANSWERS (default 10_nd_llama/answers.txt; start from answers.sample) holds
# one "name = number" per line; # starts a comment, a blank value is "not
# yet". The trainer's answers are compared with the formulas the dry run
# and the trainer print (a shard's parameters, bytes per axis, the bubble,
# bytes per parameter); the planner's with what ./10_nd_llama/plan answers
# (a fraction of a second) and with cost.c's memory formulas. A wrong answer
# is told how far off it is, not what the answer is. Exit status 0 when
# every answer is right.
#   bash 10_nd_llama/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"
plan=$root/10_nd_llama/plan
[ -x "$plan" ] || { echo "error: $plan is not built: run make first" >&2; exit 2; }

# The planner's best plan (the row after the header: rank tp cp pp dp ... step TFLOP/s MFU HFU),
# its table-4 predictions ("predicted MFU 47.4% ..."), and one evaluated plan's step breakdown.
best=$("$plan" --preset llama3-70b --gpus 512 --batch 512 --top 1 |
       awk '$1 == "rank" { getline; sub(/%/, "", $(NF-1)); print $2, $3, $4, $5, $(NF-3), $(NF-1); exit }')
overlap=$("$plan" --llama3-table4 --tp-overlap 1 | sed -nE 's/^ *predicted MFU ([0-9.]+)% .*/\1/p' | tr '\n' ' ')
zero3=$("$plan" --preset llama3-405b --gpus 16384 --batch 2048 \
        --eval tp=8,pp=16,mbs=1,zero=3,schedule=interleaved,v=8,recompute=full |
        awk '$1 == "rank" { getline; sub(/%/, "", $(NF-1)); mfu = $(NF-1) } /^ *step .* dp / { sub(/.* dp /, ""); print $1, mfu }')
for v in "$best" "$overlap" "$zero3"; do
    [ -n "$v" ] || { echo "error: could not read the planner's answers" >&2; exit 2; }
done

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='
# Parameters of one GPU (cost.c, common/model.h): "layers" layers cut tp ways,
# plus the embedding (first) and the final norm and lm_head (last) as asked.
function layer_params(C, H, KV, hd, F, tp,   kv) {
    kv = KV % tp == 0 ? KV / tp : 1
    return 2 * C + 2 * C * (H / tp) * hd + 2 * C * kv * hd + 3 * C * F / tp
}
BEGIN {
    split(best, b, " "); split(overlap, o, " "); split(zero3, z, " ")
    # ---- the trainer ----
    # 1. nd-small (dim 128, 8 layers, 8 heads, 4 kv, head dim 16, ffn 384, vocab 256) on --tp 2 --pp 2
    l = layer_params(128, 8, 4, 16, 384, 2)
    want("trainer1_params_stage0", 4 * l + 256 / 2 * 128, 0, "4 layers + vocab/tp rows of the embedding")
    want("trainer1_params_stage1", 4 * l + 128 + 256 / 2 * 128, 0, "4 layers + the final norm + vocab/tp rows of lm_head")
    # 2. --tp 2 --pp 2 --dp 2, 4 micro-batches of 4 sequences of 64 tokens, fp32
    want("trainer2_pp_mb", 2 * 4 * (2 - 1) * (4 * 64 * 128 * 4) / 2 / 1e6, 0.001, "2 M (P-1) x message bytes / P ranks")
    want("trainer2_pp_sp_mb", 2 * 4 * (2 - 1) * (4 * 64 * 128 * 4) / 2 / 2 / 1e6, 0.001, "each tp rank sends its rows only")
    # 3. 1F1B on 8 stages: 4 and 16 micro-batches
    want("trainer3_bubble_percent_4_micro", 100 * 7 / (4 + 7), 0.005, "(P-1)/(M+P-1)")
    want("trainer3_bubble_percent_16_micro", 100 * 7 / (16 + 7), 0.005, "(P-1)/(M+P-1)")
    # 4. Llama 3 405B in bf16 on --tp 2 --dp 2 --zero 3
    P = 126 * layer_params(16384, 128, 8, 128, 53248, 2) + 2 * 128256 / 2 * 16384 + 16384
    want("trainer4_params", P, 0, "126 layers + embedding + final norm + lm_head, each cut 2 ways")
    want("trainer4_weights_gb", 2 * P / 2 / 1e9, 0.002, "2 bytes x P / dp")
    want("trainer4_grads_gb", 4 * P / 2 / 1e9, 0.002, "4 bytes (fp32 gradients) x P / dp")
    want("trainer4_optim_gb", 12 * P / 2 / 1e9, 0.002, "12 bytes x P / dp")
    r = 18 * P / 80e9; want("trainer4_ranks_under_80gb", r == int(r) ? r : int(r) + 1, 0, "18 P / 80 GB, rounded up")
    # ---- the planner ----
    # 1. Llama 3 70B on 512 GPUs, 512 sequences of 8,192
    want("ex1_tp", b[1], 0, "the planner'"'"'s first row"); want("ex1_cp", b[2], 0, "the planner'"'"'s first row")
    want("ex1_pp", b[3], 0, "the planner'"'"'s first row"); want("ex1_dp", b[4], 0, "the planner'"'"'s first row")
    want("ex1_step_s", b[5], 0.002, "the planner'"'"'s first row"); want("ex1_mfu_percent", b[6], 0.002, "the planner'"'"'s first row")
    # 2. table 4, row 2 (tp 8, pp 16, dp 128, ZeRO-1): the last stage'"'"'s GPU, 8 layers and the head
    P = 8 * layer_params(16384, 128, 8, 128, 53248, 8) + 128256 / 8 * 16384 + 16384
    want("ex2_params_billion", P / 1e9, 0.005, "8 layers + lm_head + final norm, cut 8 ways")
    want("ex2_weights_gb", 2 * P / 1e9, 0.005, "2 bytes per parameter")
    want("ex2_grads_gb", 4 * P / 1e9, 0.005, "4 bytes per parameter")
    want("ex2_optim_gb", 12 * P / 128 / 1e9, 0.01, "12 bytes per parameter / the 128 dp ranks")
    # 3. 16 micro-batches, 16 stages, 8 chunks
    want("ex3_bubble_percent", 100 * 15 / (8 * 16), 0.005, "(pp - 1) / (v m)")
    # 4. --llama3-table4 --tp-overlap 1
    for (i = 1; i <= 3; i++) want("ex4_row" i "_mfu_percent", o[i], 0.002, "the planner with every tp byte hidden")
    # 5. row 2 with ZeRO-3
    want("ex5_dp_s", z[1], 0.002, "the dp term of the breakdown")
    want("ex5_dp_passes_over_zero1", 3 * 16 / 2, 0, "3 passes per micro-batch x 16 micro-batches / 2 per step")
    want("ex5_mfu_percent", z[2], 0.002, "the planner'"'"'s MFU for the plan")
}
END { finish("10") }'
check "$program" -v best="$best" -v overlap="$overlap" -v zero3="$zero3"
