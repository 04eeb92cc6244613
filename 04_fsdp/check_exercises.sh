#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 04's
# exercises (README.md, "Exercises"). ANSWERS (default 04_fsdp/answers.txt;
# start from answers.sample) holds one "name = number" per line; # starts a
# comment, a blank value is "not yet". Each answer is compared with the value
# of the formulas fsdp.c predicts with (fsdp_mem_predict, fsdp_bytes_predict:
# units cut into N pieces of ceil(count / N), buffers of the units in
# flight) for the model of sweep_memory.sh or the default model, and with the
# ZeRO paper's bytes per parameter. A wrong answer is told how far off it
# is, not what the answer is. Exit status 0 when every answer is right.
#   bash 04_fsdp/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='
# The units of MODEL.md: the embedding, L layers, the head (final norm + lm_head).
function model(C, L, H, KV, F, V,   hd, i) {
    hd = C / H; nu = L + 2
    cnt[1] = V * C
    for (i = 2; i <= L + 1; i++) cnt[i] = 2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F
    cnt[L + 2] = C + C * V
}
# fsdp.c: each unit in N pieces of ceil(count / N); S the pieces of one rank,
# per_max the largest piece, P the parameters, pad the zeros added.
function cut(N,   u, per) {
    S = 0; per_max = 0; P = 0; pad = 0
    for (u = 1; u <= nu; u++) {
        per = int((cnt[u] + N - 1) / N)
        S += per; P += cnt[u]; pad += per * N - cnt[u]
        if (per > per_max) per_max = per
        last = per
    }
}
function min(a, b) { return a < b ? a : b }
BEGIN {
    # sweep_memory.sh: dim 256, 8 layers, 8 heads (8 kv), ffn 704, vocab 2048; bf16 (w = 2)
    model(256, 8, 8, 8, 704, 2048)
    cut(4)
    # 1. ZeRO-2 on 4 ranks: w P + 16 P/N of state; + 3 unit gradient buffers; the receive slots
    want("ex1_params", P, 0, "V C + L S + C + C V, MODEL.md")
    want("ex1_zero2_state_mb", (2 * P + 16 * S) / 1e6, 0.002, "w P + 16 P/N (fp32 gradient shard, master, m, v)")
    unit = 4 * per_max
    want("ex1_zero2_rows_mb", (2 * P + 16 * S + min(nu, 3) * unit * 4) / 1e6, 0.002,
         "the state + 3 unit gradient buffers of N x per_max fp32 (FSDP_RS_INFLIGHT + 1)")
    want("ex1_zero2_comm_mb", 2 * per_max * (4 + (4 + 1) * 2) / 1e6, 0.002,
         "2 receive slots of per_max fp32 + their bf16 wire copies of (N + 1) x per_max")
    cut(8)
    unit = 8 * per_max
    want("ex1_zero3_8_ranks_mb", (16 * S + 2 * unit * 2 + 3 * unit * 4) / 1e6, 0.002,
         "16 P/N + (1 + prefetch) gathered units in bf16 + 3 unit gradient buffers")
    # 2. ZeRO-1 with an all-reduce of the gradients and the all-gather of the weights
    want("ex2_bytes_over_ddp", (2 * 3 / 4 + 3 / 4) / (2 * 3 / 4), 0.001, "(all-reduce + all-gather) / all-reduce")
    # 3. ZeRO-3 on 4 ranks, bf16, 1 micro-batch: resharding off and on
    cut(4)
    unit = 4 * per_max
    want("ex3_params_mb_reshard_off", nu * unit * 2 / 1e6, 0.002, "every unit gathered at once, w bytes each")
    want("ex3_allgather_mb_reshard_off", 3 * S * 2 / 1e6, 0.002, "(N-1) S w: the forward gathers only")
    want("ex3_allgather_mb_reshard_on", 3 * (2 * S - last) * 2 / 1e6, 0.002,
         "(N-1) (S + S - the head piece) w: backward gathers all but the unit kept from forward")
    # 4. padding of the default model (dim 192, 4 layers, 6 heads, 2 kv, ffn 512, vocab 256) on 7 ranks
    model(192, 4, 6, 2, 512, 256)
    cut(7)
    want("ex4_padding_7_ranks", pad, 0, "sum over units of N ceil(count / N) - count")
    want("ex4_shard_7_ranks", S, 0, "sum over units of ceil(count / N)")
    # 5. the largest model per 80 GB GPU on 64 ranks (the paper: 2 + 2 + 12 bytes), and this suite in bf16
    N = 64
    want("ex5_zero1_billion_64_ranks", 80 / (4 + 12 / N), 0.005, "80 GB / (4 + 12/N) bytes")
    want("ex5_zero2_billion_64_ranks", 80 / (2 + 14 / N), 0.005, "80 GB / (2 + 14/N) bytes")
    want("ex5_zero3_billion_64_ranks", 80 * N / 16, 0.005, "80 GB / (16/N) bytes")
    want("ex5_suite_zero1_bytes_64_ranks", 2 + 4 + 16 / N, 0.005,
         "bf16 weights + whole fp32 gradients + 16/N (gradient shard, master, m, v)")
}
END { finish("04") }'
check "$program"
