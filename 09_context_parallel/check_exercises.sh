#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 09's
# exercises (README.md, "Exercises"). ANSWERS (default
# 09_context_parallel/answers.txt; start from answers.sample) holds one
# "name = number" per line; # starts a comment, a blank value is "not yet".
# Each answer is compared with the value of cp.h's formulas
# (cp_pairs_formula, cp_bytes_formula), which the program prints beside
# what its cores counted. A wrong answer is told how far off it is, not
# what the answer is. Exit status 0 when every answer is right.
#   bash 09_context_parallel/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='
# cp_pairs_formula: B sequences, H query heads, T tokens on C ranks
function pairs_in_order(B, H, T, C, r,   Tc) { Tc = T / C; return B * H * (r * Tc * Tc + Tc * (Tc + 1) / 2) }
function pairs_balanced(B, H, T, C,   Tc) { Tc = T / (2 * C); return B * H * ((2 * C - 1) * Tc * Tc + Tc * (Tc + 1)) }
# cp_bytes_formula, forward: Rf = B T / C rows, es bytes, hd head dim
function ring_fwd(B, T, C, KV, hd, es) { return (C - 1) * 2 * (B * T / C) * KV * hd * es }
function ring_bwd(B, T, C, KV, hd, es) { return ring_fwd(B, T, C, KV, hd, es) + C * 2 * (B * T / C) * KV * hd * es }
function ulysses_fwd(B, T, C, H, KV, hd, es,   kvp) {
    kvp = C > KV ? C : KV
    return (C - 1) / C * (B * T / C) * (hd * es * (2 * H + 2 * kvp) + 4 * H)
}
BEGIN {
    # 1. --dim 64 --heads 4 --kv-heads 2 --batch 1 --seq 2048 on 4 ranks
    for (r = 0; r < 4; r++) want("ex1_pairs_in_order_rank" r, pairs_in_order(1, 4, 2048, 4, r), 0, "B H (r Tc^2 + Tc (Tc+1)/2)")
    want("ex1_pairs_balanced", pairs_balanced(1, 4, 2048, 4), 0, "B H ((2C-1) Tc^2 + Tc (Tc+1)), Tc = T/2C")
    # 2. the default model (6 heads, 2 kv heads, head dim 32, fp32, --batch 16 --seq 128) on 4 ranks
    want("ex2_block_bytes", 2 * (16 * 128 / 4) * 2 * 32 * 4, 0, "2 Rf KV hd es: K and V of this rank")
    want("ex2_forward_kb", ring_fwd(16, 128, 4, 2, 32, 4) / 1e3, 0.001, "(C-1) blocks")
    want("ex2_backward_kb", ring_bwd(16, 128, 4, 2, 32, 4) / 1e3, 0.001, "(C-1) blocks + C blocks of their gradients")
    # 3. --seq 120 --batch 6 --no-balance on 6 ranks; Llama 3 405B at C = 16
    want("ex3_ulysses_forward_kb", ulysses_fwd(6, 120, 6, 6, 2, 32, 4) / 1e3, 0.001, "(C-1)/C Rf (hd es (2H + 2KV'"'"') + 4H)")
    want("ex3_ring_forward_kb", ring_fwd(6, 120, 6, 2, 32, 4) / 1e3, 0.001, "(C-1) 2 Rf KV hd es")
    for (c = 2; c <= 6; c++) if (6 % c == 0 && (6 + (c > 2 ? c : 2)) / (c * 2) <= 1) break
    want("ex3_equal_at_c", c, 0, "(H + KV'"'"') / (C KV) = 1, with KV'"'"' = C above KV")
    want("ex3_llama3_ulysses_over_ring", (128 + 16) / (16 * 8), 0.002, "(H + KV'"'"') / (C KV), KV'"'"' = C = 16")
    # 4. in order at C = 2: the slowest rank against the balanced layout
    want("ex4_slowest_over_balanced", pairs_in_order(1, 1, 1024, 2, 1) / pairs_balanced(1, 1, 1024, 2), 0.01,
         "rank C-1 in order (C - 1/2 blocks) against C/2 blocks")
}
END { finish("09") }'
check "$program"
