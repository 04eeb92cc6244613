#!/usr/bin/env bash
# check_exercises.sh [ANSWERS]: checks the numeric answers to chapter 03's
# exercises (the five parts, README.md lists them). ANSWERS (default 03_ddp/answers.txt;
# start from answers.sample) holds one "name = number" per line; # starts a
# comment, a blank value is "not yet". Each answer is compared with the value
# the suite's formulas give for the default model (common/MODEL.md), and the
# last two with your own plots/data/ddp_scaling.csv. A wrong answer is told
# how far off it is, not what the answer is. Exit status 0 when every answer
# is right.
#   bash 03_ddp/check_exercises.sh my_answers.txt
source "$(dirname "$0")/../scripts/exercises.sh"
# Exercise 7 reads your scaling sweep: tokens/s of the median run per rank count.
scaling=${SCALING_CSV:-$root/plots/data/ddp_scaling.csv}
tok() { [ -s "$scaling" ] && awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                                              $c["ranks"] == n { print $c["tok_s"] }' "$scaling" | tail -n 1; }
t1=$(tok 1 || true); t2=$(tok 2 || true); t4=$(tok 4 || true)

# The expected values; reading and grading the answers is scripts/check_answers.awk.
program='BEGIN {
    # The default model (03_ddp/ddp --help; MODEL.md): C 192, L 4, H 6, KV 2, hd 32, F 512, V 256.
    C = 192; L = 4; H = 6; KV = 2; hd = 32; F = 512; V = 256
    S = 2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F
    P = V * C + L * S + C + C * V
    # part 1 (part1_ddp.md), 1. parameters; bytes each rank sends per step (ring all-reduce), in MB (1e6)
    want("ex1_params", P, 0, "V C + L S + C + C V, S from MODEL.md")
    want("ex1_sent_mb_fp32_4_ranks", 2 * 3 / 4 * 4 * P / 1e6, 0.002, "2(N-1)/N x gradient bytes")
    want("ex1_sent_mb_bf16_8_ranks", 2 * 7 / 8 * 2 * P / 1e6, 0.002, "2(N-1)/N x gradient bytes, 2 bytes each")
    # 2. memory per kind of a bf16 run on 2 ranks, MB (1e6)
    want("ex2_grads_mb", 4 * P / 1e6, 0.002, "fp32 gradients whatever the dtype")
    want("ex2_optim_mb", 12 * P / 1e6, 0.002, "fp32 master weights and two Adam moments")
    want("ex2_comm_mb", 2 * P / 1e6, 0.002, "the bf16 copy of the gradients for the wire")
    want("ex2_bytes_per_param", 20, 0.001, "every kind but the activations, per parameter")
    # 3. where plain DDP stops on an 80 GB GPU (weights, gradients, optimizer only)
    want("ex3_max_billion_16_bytes", 80e9 / 16 / 1e9, 0.005, "80 GB / 16 bytes per parameter")
    want("ex3_max_billion_20_bytes", 80e9 / 20 / 1e9, 0.005, "80 GB / 20 bytes per parameter")
    want("ex3_405b_gpus_of_state", 405e9 * 20 / 80e9, 0.01, "405e9 x 20 bytes / 80 GB")
    # 4. accumulation: batch 16 x 128 tokens, 2 ranks, --micro 4
    want("ex4_scale_denominator", 16 * 128, 0, "backward scale = 1 / (tokens of the global batch)")
    want("ex4_factor_own_tokens", 2 * 4, 0, "each micro-batch normalised by its own tokens, ranks summed")
    want("ex4_factor_own_tokens_averaged", 4, 0, "the same, but the all-reduce divides by N (as PyTorch DDP)")
    # 5. buckets per step of the default model (head, layers 3..0, embedding)
    want("ex5_buckets_fp32_1mib", 5, 0, "gather units until the bucket holds >= the cap")
    want("ex5_buckets_fp32_2mib", 3, 0, "gather units until the bucket holds >= the cap")
    want("ex5_buckets_bf16_1mib", 3, 0, "the cap counts bytes on the wire: 2 per gradient")
    # 6. exposed communication, fp32 on 8 ranks, alpha 20 us, 10 GB/s links (ring: 2(N-1) steps)
    a = 20e-6; bw = 10e9
    want("ex6_one_bucket_ms", (14 * a + 1.75 * 4 * P / bw) * 1e3, 0.01, "2(N-1) alpha + 2(N-1)/N X / bw")
    want("ex6_last_bucket_ms", (14 * a + 1.75 * 4 * V * C / bw) * 1e3, 0.01,
         "only the last bucket (the embedding) is left after backward")
    # part 5, exercises 1-2: DataParallel (part5_dataparallel.md): 4 replicas, fp32, batch 16 x 128 tokens
    N = 4; T = 128; b = 16 / N
    want("dp_moved_mb_4_replicas", ((N - 1) * 4 * P + 2 * (N - 1) * b * T * V * 4 + (N - 1) * 4 * P) / 1e6, 0.002,
         "(N-1) x (weights out + one replica of logits in + their gradients out + its gradients in)")
    want("dp_state_mb_4_replicas", (N * 8 * P + 12 * P + 4 * P) / 1e6, 0.002,
         "N copies of weights and gradients, one optimizer, one staging buffer")
    # step(N) = 600 / N + 1.5 (N - 1) + 3.4 ms: the N where d step / dN = 0, and that step
    want("dp_best_replicas", sqrt(600 / 1.5), 0.001, "-600 / N^2 + 1.5 = 0")
    want("dp_best_step_ms", 600 / 20 + 1.5 * 19 + 3.4, 0.001, "step(N) at that N")
    # part 4, exercises 1-2: local SGD (part4_local_sgd.md, "Local SGD and DiLoCo"): fp32 weights all-reduced every H steps
    want("local_mb_per_step_4_ranks_h16", 2 * 3 / 4 * 4 * P / 16 / 1e6, 0.002, "2(N-1)/N x 4 P / H")
    want("local_diloco_extra_mb", 8 * P / 1e6, 0.002, "the anchor w0 and the momentum u, 4 bytes each per parameter")
    # part 3, exercise 1: the parameter server (part3_paramserver.md)
    want("ex_ps_updates_async", 3 * 60, 0, "ASP: one update per pushed gradient, W x clocks")
    want("ex_ps_updates_ssp", 60, 0, "BSP and SSP: one update per clock, of its W gradients")
    want("ex_ps_server_mb_per_clock", 2 * 4 * 4 * P / 2 / 1e6, 0.002, "W pushes in + W pulls out of P / S fp32 each")
    want("ex_ps_straggler_staleness", 8, 0.25, "measured (part3_paramserver.md): the median of its gradients while all three ran; (W - 1) F = 8 updates land while it computes one")
    # part 4, exercise 5: federated averaging (part4_local_sgd.md): K 100, C 0.1, 3 of the 10 selected dropped
    want("fedavg_round_mb", 4 * P * (10 + 7) / 1e6, 0.002, "4 P (selected + finished): down to 10, up from 7")
    want("fedavg_ddp_step_mb_10_workers", 2 * 9 * 4 * P / 1e6, 0.002, "2 (m - 1) x 4 P, summed over m = 10 workers")
    # part 2, exercise 1: compressed gradients (part2_compression.md): the default model on 4 ranks (common/compress.h), MB (1e6) per rank per step
    want("excomp_int8_sent_mb_4_ranks", 3 * (P + 4 * int((P + 255) / 256)) / 1e6, 0.002,
         "all-gather: (N-1) x (n + 4 ceil(n/256))")
    # PowerSGD per weight matrix: R (m + c) for each, the norm gains whole
    sgd_words = 2 * (V + C) * 4 + L * (4 * (2 * (C + H * hd) + 2 * (C + KV * hd) + 3 * (C + F)) + 2 * C) + C
    want("excomp_powersgd4_sent_mb_4_ranks", 1.5 * 4 * sgd_words / 1e6, 0.002,
         "two all-reduces: 2(N-1)/N x 4 (sum over the m x c matrices R (m + c) + the gain values)")
    want("excomp_topk_break_even_fraction_4_ranks", 1 / 4, 0.002, "(N-1) 8 F n = 2(N-1)/N 4 n: F = 1/N")
}
END {
    # 7. your machine: scaling efficiency from your sweep, tok/s(N) / (N x tok/s(1))
    measured = t1 + 0 > 0 && t2 + 0 > 0 && t4 + 0 > 0
    if (measured) {
        want("ex7_efficiency_2_ranks_percent", 100 * t2 / (2 * t1), 0.02, "tok/s(2) / (2 x tok/s(1)), from " scaling)
        want("ex7_efficiency_4_ranks_percent", 100 * t4 / (4 * t1), 0.02, "tok/s(4) / (4 x tok/s(1)), from " scaling)
    }
    right = grade()
    total = n
    if (!measured) {
        printf "  --     %-34s not checked: no rows for 1, 2 and 4 ranks in %s (bash 03_ddp/sweep_scaling.sh)\n", \
               "ex7_efficiency_*", scaling
        total += 2
    }
    unknown("^ex7_")
    printf "chapter 03: %d of %d answers right\n", right, total
    exit right == total ? 0 : 1
}'
check "$program" -v t1="${t1:-0}" -v t2="${t2:-0}" -v t4="${t4:-0}" -v scaling="$scaling"
