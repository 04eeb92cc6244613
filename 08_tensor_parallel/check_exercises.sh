#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 08's
# exercises (README.md, "Exercises"). ANSWERS (default
# 08_tensor_parallel/answers.txt; start from answers.sample) holds one
# "name = number" per line; # starts a comment, a blank value is "not yet".
# Each answer is compared with the value of the README's "Bytes per layer"
# and "Activation memory" formulas (those tp.c prints as tp_bytes_formula
# and tp_acts_formula). A wrong answer is told how far off it is, not what
# the answer is. Exit status 0 when every answer is right.
#   bash 08_tensor_parallel/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='
# Activation bytes per layer and token (model_acts_t): outside the tensor-
# parallel regions 4 dim es + 8 (divided by T with --sp), inside
# es (2 H hd + 2 KV hd + 3 F) + 4 H, with H, KV and F those of one rank.
function acts(C, H, KV, hd, F, T, es, sp,   kv) {
    kv = KV % T == 0 ? KV / T : 1
    return (4 * C * es + 8) / (sp ? T : 1) + es * (2 * H / T * hd + 2 * kv * hd + 3 * F / T) + 4 * H / T
}
BEGIN {
    tok = 16 * 128                     # tokens of a micro-batch: the default --batch 16 --seq 128
    # 1. --tp 4 --dim 256 --heads 8 --kv-heads 4, fp32, 4 layers, vocab 256
    T = 4; f = (T - 1) / T; X = tok * 256 * 4
    want("ex1_forward_kb", 4 * f * X / 1e3, 0.001, "2 all-reduces of 2f X")
    want("ex1_backward_kb", 4 * f * X / 1e3, 0.001, "2 all-reduces of 2f X")
    want("ex1_backward_sp_kb", 6 * f * X / 1e3, 0.001, "4 all-gathers + 2 reduce-scatters of f X")
    want("ex1_step_kb", (2 * f * X + 4 * 8 * f * X + (T - 1) * 4 * tok + 2 * f * 4 * tok + 2 * f * X) / 1e3, 0.001,
         "embedding + 4 layers + the head forward (lse, picked logit) + the head backward")
    # 2. --tp 4 --heads 8 --kv-heads 2 (dim 192, head dim 24): wk and wv shared by r = T / KV ranks
    r = 4 / 2
    want("ex2_replicated_grads_kb", 4 * 2 * 2 * (r - 1) / r * 192 * 24 * 4 / 1e3, 0.001, "2 L x 2(r-1)/r x dim hd x 4")
    # 3. the default model (dim 192, 6 heads, 2 kv, hd 32, ffn 512) at T = 2, fp32: one layer
    want("ex3_layer_acts_mb", tok * acts(192, 6, 2, 32, 512, 2, 4, 0) / 1e6, 0.001, "tokens x (outside + inside) per token")
    want("ex3_layer_acts_sp_mb", tok * acts(192, 6, 2, 32, 512, 2, 4, 1) / 1e6, 0.001, "the outside part divided by T")
    # 4. keeping the gathered norm outputs under --sp, the default model at T = 2
    X = tok * 192 * 4
    want("ex4_backward_kb", 4 * (1 / 2) * X / 1e3, 0.001, "the two backward all-gathers gone: 4f X")
    want("ex4_extra_acts_mb", 4 * 2 * X / 1e6, 0.001, "two (n, dim) buffers per layer, 4 layers")
}
END { finish("08") }'
check "$program"
