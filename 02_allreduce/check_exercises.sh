#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 02's
# exercises (README.md, "Exercises"). ANSWERS (default
# 02_allreduce/answers.txt; start from answers.sample) holds one
# "name = number" per line; # starts a comment, a blank value is "not yet".
# Each answer is compared with the value the suite's formulas give (the last
# one from the alpha and beta you measured yourself). A wrong answer is told
# how far off it is, not what the answer is. Exit status 0 when every
# answer is right.
#   bash 02_allreduce/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='BEGIN {
    # 1. busbw factor of all-reduce on 8 ranks; GiB a rank sends in a ring all-reduce of 1 GiB
    want("ex1_busbw_factor_8_ranks", 2 * 7 / 8, 0.001, "2(N-1)/N")
    want("ex1_ring_gib_sent_per_rank", 2 * 7 / 8 * 1, 0.001, "2(N-1)/N x X")
    # 2. steps on 1024 ranks: the ring all-reduce, and the binomial tree (reduce + broadcast)
    want("ex2_ring_steps_1024", 2 * 1023, 0, "2(N-1)")
    want("ex2_tree_rounds_1024", 2 * 10, 0, "log2 N up, log2 N down")
    # 3. an all-gather of 64 MiB (the gathered result) on 4 ranks in 10 ms
    want("ex3_algbw_gbs", 64 * 1048576 / 0.010 / 1e9, 0.005, "size / time, GB = 1e9 B")
    want("ex3_busbw_gbs", 64 * 1048576 / 0.010 / 1e9 * 3 / 4, 0.005, "algbw x the all-gather factor")
    # 4. where the ring starts to beat recursive doubling on 4 ranks, alpha 10 us, 1/beta 2 GB/s
    a = 10e-6; b = 1 / 2e9
    want("ex4_crossover_bytes", (6 - 2) * a / ((2 - 1.5) * b), 0.01, "log2 N (alpha + X beta) = 2(N-1) alpha + 2(N-1)/N X beta")
    # 5. 100 MB of gradients on 8 ranks, 10 GB/s links, latency left out: parameter server and ring (ms)
    want("ex5_ps_ms", 2 * 7 * 1e8 / 1e10 * 1e3, 0.005, "the root moves 2(N-1) X")
    want("ex5_ring_ms", 2 * 7 / 8 * 1e8 / 1e10 * 1e3, 0.005, "each rank moves 2(N-1)/N X")
    # 13. 25M fp32 gradients on 8 ranks: MB a rank sends, uncompressed ring and int8 all-gather
    # (a 4-byte scale per 256 values); the most ranks at which the int8 all-gather still sends less
    want("ex13_ring_mb", 2 * 7 / 8 * 4 * 25e6 / 1e6, 0.005, "2(N-1)/N x 4n")
    want("ex13_int8_allgather_mb", 7 * (25e6 + 4 * 97657) / 1e6, 0.005, "(N-1) x (n + 4 ceil(n/256))")
    want("ex13_int8_break_even_ranks", 7, 0, "(N-1)(1 + 4/256) n < 2(N-1)/N 4n: N < 8 / (1 + 1/64)")
}
END {
    # 6. your machine: the ring all-reduce of 16 MiB on 4 ranks predicted from your alpha and beta
    if (num("ex6_alpha_us") && num("ex6_inv_beta_gbs") && given["ex6_inv_beta_gbs"] > 0)
        want("ex6_ring_16MiB_4_ranks_us", 6 * given["ex6_alpha_us"] + 1.5 * 16777216 / (given["ex6_inv_beta_gbs"] * 1e9) * 1e6,
             0.01, "2(N-1) alpha + 2(N-1)/N X beta, with your alpha and beta")
    right = grade()
    total = n
    if (!("ex6_ring_16MiB_4_ranks_us" in expect)) {
        printf "  --     %-34s not answered (needs ex6_alpha_us and ex6_inv_beta_gbs from your run)\n", "ex6_ring_16MiB_4_ranks_us"
        total++
    }
    unknown("^ex6_")
    printf "chapter 02: %d of %d answers right\n", right, total
    exit right == total ? 0 : 1
}'
check "$program"
