#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 05's
# exercises (README.md, "Exercises"). ANSWERS (default 05_hsdp/answers.txt;
# start from answers.sample) holds one "name = number" per line; # starts a
# comment, a blank value is "not yet". Each answer is compared with the
# value of the chapter's rules: the bytes of each collective (fsdp.h), the
# share of a ring's messages that cross a node boundary (ranks laid out as
# the mesh lays them out: groups of K consecutive ranks, replicas K apart),
# and the 16 P / K of memory. A wrong answer is told how far off it is, not
# what the answer is. Exit status 0 when every answer is right.
#   bash 05_hsdp/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='
# The share of a ring over `members` ranks, `stride` apart from rank 0, whose
# messages go to a rank on another node of G ranks.
function crossing(members, stride, G,   i, a, b, c) {
    c = 0
    for (i = 0; i < members; i++) {
        a = i * stride; b = ((i + 1) % members) * stride
        if (int(a / G) != int(b / G)) c++
    }
    return c / members
}
# Bytes per rank that cross between nodes, in units of P w, for N ranks in
# nodes of G, groups of K (one micro-batch; FSDP counts 3 transfers of P).
function crossed(N, G, K,   R) {
    R = N / K
    if (K == 1) return crossing(N, 1, G) * 2 * (N - 1) / N
    if (K == N) return crossing(N, 1, G) * 3 * (N - 1) / N
    return crossing(K, 1, G) * 3 * (K - 1) / K + crossing(R, K, G) * 2 * (R - 1) / R / K
}
# Ring steps per unit in which some message crosses between nodes.
function steps(N, G, K,   R) {
    R = N / K
    if (K == 1) return crossing(N, 1, G) > 0 ? 2 * (N - 1) : 0
    return (crossing(K, 1, G) > 0 ? 3 * (K - 1) : 0) + (crossing(R, K, G) > 0 ? 2 * (R - 1) : 0)
}
BEGIN {
    # 1. 8 ranks on 2 nodes of 4
    best = 1
    for (K = 1; K <= 8; K *= 2) {
        want("ex1_crossed_pw_k" K, crossed(8, 4, K), 0.005, "share of ring neighbours on the other node x the collective bytes / (P w)")
        if (crossed(8, 4, K) < crossed(8, 4, best)) best = K
    }
    want("ex1_best_k", best, 0, "the K with the fewest bytes across")
    # 2. ring steps per unit that cross, 4 ranks on 2 nodes of 2
    for (K = 1; K <= 4; K *= 2) want("ex2_crossing_steps_k" K, steps(4, 2, K), 0, "the ring steps of each collective whose ring leaves the node")
    # 3. 70e9 parameters, 64 GPUs in nodes of 8, 16 bytes per parameter, 80 GB
    want("ex3_fsdp_gb", 16 * 70e9 / 64 / 1e9, 0.005, "16 P / K with K = 64")
    want("ex3_hsdp_gb", 16 * 70e9 / 8 / 1e9, 0.005, "16 P / K with K = 8")
    for (K = 64; K >= 1; K /= 2) if (16 * 70e9 / K <= 80e9) least = K
    want("ex3_least_k_for_80gb", least, 0, "the least K that divides 64 with 16 P / K <= 80 GB")
}
END { finish("05") }'
check "$program"
