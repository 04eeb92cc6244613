#!/usr/bin/env python3
"""check_plan.py: the planner's numbers, recomputed.

    check_plan.py table4 CSV            predicted MFU of Llama 3's table 4 within 5 points
    check_plan.py eval OUTPUT ARGS...   one --eval plan on the h100 cluster: memory per
                                        kind from the parameter formulas, the pipeline's
                                        and the data-parallel transfers, the step as the
                                        sum of its parts, the bubble's share at equal
                                        stage times, MFU from the model FLOPs and the step
    check_plan.py cp TEXT               --llama3-table4's output: row 3's context-parallel
                                        time is Llama 3's all-gather of K and V, exposed
    check_plan.py plans CSV N           the --csv rows of a search: N plans, in MFU order,
                                        each total the sum of its kinds and within 90% of
                                        80 GB, MFU = TFLOP/s / 989.4

    check_plan.py gemm TABLE OUTPUT     --gemm-at lines: each GEMM's efficiency and time
                                        from TABLE's bf16 rows, interpolated linearly in
                                        log(2mnk), clamped to the table's ends
    check_plan.py gemms TABLE OUTPUT V C H KV HD F T L tp cp pp
                                        an --eval with --gemm-table: its GEMMs term is
                                        3 x micro-batches x (the stage's layers' and the
                                        head's forward GEMMs, each at its own efficiency)

For `eval`, ARGS repeat the model and plan: V C L H KV HD F T BATCH GPUS tp cp pp zero
(an independent count of the parameters on the fullest GPU: the last stage,
ceil(L/pp) layers and the head, each tensor split as tensor parallelism splits it;
gradients and optimizer state sharded over the dp x cp ranks that hold the same
weights).
Prints what differed; exit 1 if anything did.
"""
import csv
import math
import re
import sys


def fail(msgs):
    for m in msgs[:10]:
        print("  " + m)
    sys.exit("error: %d numbers disagree" % len(msgs))


def table4(path):
    bad = []
    for r in csv.DictReader(open(path)):
        pub, pred = float(r["published_mfu"]), float(r["predicted_mfu"])
        print("row %s: predicted %.1f%%, published %.0f%%" % (r["row"], 100 * pred, 100 * pub))
        if abs(pred - pub) > 0.05:
            bad.append("row %s: predicted MFU %.3f is %.1f points from the published %.2f"
                       % (r["row"], pred, 100 * abs(pred - pub), pub))
    if bad:
        fail(bad)
    print("every row within 5 points")


def evaluate(out, args):
    V, C, L, H, KV, HD, F, T, B, G, tp, cp, pp, zero = (int(a) for a in args)
    text = open(out).read()
    bad = []

    def near(what, got, want, rel, absolute=0.0):
        if abs(got - want) > rel * abs(want) + absolute:
            bad.append("%s is %.6g, recomputed %.6g" % (what, got, want))

    m = re.search(r"memory ([0-9.]+) GB = weights ([0-9.]+) \+ gradients ([0-9.]+) \+ optimizer ([0-9.]+) "
                  r"\+ activations ([0-9.]+) \(([0-9.]+)B parameters", text)
    total, w, g, o, a, pgpu = (float(x) for x in m.groups())
    # parameters on the last stage's GPU: ceil(L/pp) layers and lm_head + final norm
    Hl, Fl, Vl = H / tp, F / tp, V / tp
    KVl = KV / tp if KV % tp == 0 else 1
    layer = C * Hl * HD + 2 * C * KVl * HD + Hl * HD * C + 3 * C * Fl + 2 * C
    head = (Vl * C * 2 + C) if pp == 1 else (Vl * C + C)
    P = math.ceil(L / pp) * layer + head
    dp = G // (tp * cp * pp)
    shard = dp * cp   # the ranks holding the same weights
    near("parameters (B)", pgpu, P / 1e9, 0.006)
    if zero == 3:   # gather buffers: the layer and the prefetched one, and in a pipeline the one kept for backward
        near("weights (GB)", w, (2 * P / shard + (3 if pp > 1 else 2) * 2 * layer) / 1e9, 0.01, 0.051)
    else:
        near("weights (GB)", w, 2 * P / 1e9, 0.01, 0.051)
    near("gradients (GB)", g, (4 * P / shard + 2 * 4 * layer if zero >= 2 else 4 * P) / 1e9, 0.01, 0.051)
    near("optimizer (GB)", o, 12 * P / (shard if zero >= 1 else 1) / 1e9, 0.01, 0.051)
    near("total (GB)", total, w + g + o + a, 0, 0.21)

    s = re.search(r"step ([0-9.]+) s = GEMMs ([0-9.]+) \+ attention ([0-9.]+) \+ memory-bound ([0-9.]+) \+ "
                  r"recomputation ([0-9.]+) \+ exposed tp ([0-9.]+) \+ cp ([0-9.]+) \+ pp ([0-9.]+) \+ "
                  r"bubble ([0-9.]+) \+ dp ([0-9.]+) \+ optimizer ([0-9.]+)", text)
    parts = [float(x) for x in s.groups()]
    near("step (s)", parts[0], sum(parts[1:]), 0.002)
    # the pipeline's transfers: each stage's output forward and its gradient
    # backward, per micro-batch and per model chunk (Narayanan et al. 2021),
    # over NVLink when the tp x cp x pp ranks share a node, else the NIC
    plan = re.search(r"^\s+1\s+\d+\s+\d+\s+\d+\s+\d+\s+(\S+)(?: x(\d+))?\s+(\d+)\s", text, re.M)
    chunks = int(plan.group(2)) if plan.group(1) == "interleaved" else 1
    mbs = int(plan.group(3))
    micro = int(re.search(r"\((\d+) micro-batches\)", text).group(1))
    # the data-parallel traffic over the dp x cp ranks, half of it hidden:
    # whole gradients synced once (DDP, ZeRO-1: 2 passes of (n-1)/n of the
    # bf16 weights), ZeRO-2 a reduce-scatter per micro-batch and a gather per
    # step, ZeRO-3 two gathers and a reduce-scatter per micro-batch
    if shard > 1:
        passes = 2 if zero <= 1 else (micro + 1 if zero == 2 else 3 * micro)
        bw, lat = (360e9, 5e-6) if G <= 8 else (40e9, 10e-6)
        want = (passes * (shard - 1) * lat + passes * (shard - 1) / shard * 2 * P / bw) * 0.5
        near("exposed dp (s)", parts[9], want, 0.01, 0.0011)
    if pp > 1:
        bw, lat = (360e9, 5e-6) if tp * cp * pp <= 8 else (40e9, 10e-6)
        X = mbs * T / cp * C * 2 / tp   # bf16, sequence-parallel: a tp-th of the rows
        near("exposed pp (s)", parts[7], micro * chunks * 2 * (lat + X / bw), 0.01, 0.0011)
    # the bubble with every stage equally fast: (P-1)/V micro-batch times beside
    # the M V chunk passes, (P-1)/(V M + P-1) of the pipeline's time (07_pipeline's formula)
    busy = sum(parts[1:8])
    near("bubble share of the pipeline's time", parts[8] / (busy + parts[8]),
         (pp - 1) / (chunks * micro + pp - 1), 0.01, 1e-4)
    share = re.search(r"^\s+1\s+.*\s([0-9.]+)%\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%\s+[0-9.]+%$", text, re.M)
    near("bubble (% of the step)", float(share.group(1)), 100 * parts[8] / parts[0], 0.01, 0.051)
    row = re.search(r"^\s+1\s+.*\s([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+)%$", text, re.M)
    tflops, mfu = float(row.group(1)), float(row.group(2))
    # model FLOPs per token: 6 N_matmul + 12 L H hd T (MODEL.md), per GPU per step
    n_matmul = L * (C * H * HD + 2 * C * KV * HD + H * HD * C + 3 * C * F) + C * V
    flops = (6 * n_matmul + 12 * L * H * HD * T) * B * T / G
    near("TFLOP/s per GPU", tflops, flops / parts[0] / 1e12, 0.005)
    near("MFU (%)", mfu, 100 * flops / parts[0] / 989.4e12, 0.005)
    if bad:
        fail(bad)
    print("memory per kind, the step and MFU agree with their formulas "
          "(%.2fB parameters, %.1f GB, %.3f s, MFU %.1f%%)" % (P / 1e9, total, parts[0], mfu))


def cp_exposed(path):
    # row 3: tp 8, cp 16, pp 16, seq 131072, one sequence per micro-batch; 8
    # layers on the fullest stage; K and V of this rank's 8192 tokens, one kv
    # head per tp rank, bf16: all-gathered forward, again backward with the
    # gradients reduce-scattered, 3 (cp - 1) blocks per layer over the NIC
    # (40 GB/s, 10 us), none hidden (Llama 3, section 3.3.2)
    text = open(path).read()
    row3 = text[text.index("row 3:"):]
    m = re.search(r"\+ cp ([0-9.]+) .*\((\d+) micro-batches\)", row3)
    got, micro = float(m.group(1)), int(m.group(2))
    kv = 131072 / 16 * 2 * 1 * 128 * 2
    want = micro * 8 * 3 * (16 - 1) * (10e-6 + kv / 40e9)
    if abs(got - want) > 0.01 * want + 0.0011:
        fail(["row 3: exposed cp %.3f s, the all-gathers take %.3f s" % (got, want)])
    print("row 3: exposed cp %.3f s = the K/V all-gathers and reduce-scatters (%.3f s)" % (got, want))


def plans(path, n):
    rows = list(csv.DictReader(open(path)))
    bad = []
    if len(rows) != n:
        bad.append("%d rows, asked for %d" % (len(rows), n))
    for i, r in enumerate(rows):
        f = {k: float(v) for k, v in r.items() if k not in ("schedule", "recompute", "cpu", "source")}
        kinds = f["weights_gb"] + f["grads_gb"] + f["optim_gb"] + f["acts_gb"]
        if abs(kinds - f["total_gb"]) > 0.004:
            bad.append("plan %d: total %.3f GB, its kinds sum to %.3f" % (i + 1, f["total_gb"], kinds))
        if f["total_gb"] > 0.9 * 80 + 1e-9:
            bad.append("plan %d: %.1f GB is over 90%% of 80 GB" % (i + 1, f["total_gb"]))
        if abs(f["mfu"] - f["tflops"] / 989.4) > 0.0006:
            bad.append("plan %d: MFU %.4f, TFLOP/s %.1f / 989.4 = %.4f" % (i + 1, f["mfu"], f["tflops"],
                                                                        f["tflops"] / 989.4))
        if f["rank"] != i + 1:
            bad.append("row %d says rank %d" % (i + 1, f["rank"]))
        if i and f["mfu"] > float(rows[i - 1]["mfu"]):
            bad.append("plan %d has a higher MFU (%s) than plan %d (%s)" % (i + 1, r["mfu"], i, rows[i - 1]["mfu"]))
    if bad:
        fail(bad)
    print("%d plans in MFU order, each total the sum of its kinds, MFU from TFLOP/s" % len(rows))


def gemm_table(path):
    best = {}
    for r in csv.DictReader(open(path)):
        if r["dtype"] == "bf16":
            f = 2.0 * int(r["m"]) * int(r["n"]) * int(r["k"])
            best[f] = max(best.get(f, 0.0), float(r["hfu"]) / 100)
    return sorted(best.items())


def eff_at(table, m, n, k):
    x = math.log(2.0 * m * n * k)
    pts = [(math.log(f), e) for f, e in table]
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    for (x0, e0), (x1, e1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            return e0 + (e1 - e0) * (x - x0) / (x1 - x0)


def gemm(table_path, out):
    table, bad, n = gemm_table(table_path), [], 0
    for m in re.finditer(r"gemm (\d+) x (\d+) x (\d+): \S+ FLOPs at ([0-9.]+)% of ([0-9.]+) TFLOP/s = (\S+) ms",
                         open(out).read()):
        M, N, K = (int(x) for x in m.groups()[:3])
        got_eff, peak, got_ms = float(m.group(4)) / 100, float(m.group(5)) * 1e12, float(m.group(6))
        want = eff_at(table, M, N, K)
        n += 1
        if abs(got_eff - want) > 1e-6:
            bad.append("%d x %d x %d: efficiency %.6f, recomputed %.6f" % (M, N, K, got_eff, want))
        if abs(got_ms - 1e3 * 2.0 * M * N * K / (peak * want)) > 1e-5 * got_ms:
            bad.append("%d x %d x %d: %.6g ms, recomputed %.6g" % (M, N, K, got_ms, 2e3 * M * N * K / (peak * want)))
    if n == 0:
        bad.append("no gemm lines in %s" % out)
    if bad:
        fail(bad)
    print("%d GEMMs: efficiency and time as the table interpolated in log FLOPs says" % n)


def gemms(table_path, out, args):
    V, C, H, KV, HD, F, T, L, tp, cp, pp = (int(a) for a in args)
    table, text = gemm_table(table_path), open(out).read()
    got = float(re.search(r"GEMMs ([0-9.]+)", text).group(1))
    mbs = int(re.search(r"^\s+1\s+\d+\s+\d+\s+\d+\s+\d+\s+\S+(?: x\d+)?\s+(\d+)\s", text, re.M).group(1))
    micro = int(re.search(r"\((\d+) micro-batches\)", text).group(1))
    rows, q, kv = mbs * T / cp, H // tp * HD, (KV // tp if KV % tp == 0 else 1) * HD
    sec = lambda n, k: 2.0 * rows * n * k / (989.4e12 * eff_at(table, rows, n, k))
    layer = sec(q, C) + 2 * sec(kv, C) + sec(C, q) + 2 * sec(F // tp, C) + sec(C, F // tp)
    want = micro * 3 * (math.ceil(L / pp) * layer + sec(V // tp, C))
    if abs(got - want) > 0.002 * want + 0.0011:
        fail(["GEMMs %.3f s, recomputed %.3f s" % (got, want)])
    print("GEMMs %.3f s = 3 x %d micro-batches x every forward GEMM at its shape's efficiency (%.3f s)"
          % (got, micro, want))


if len(sys.argv) >= 3 and sys.argv[1] == "table4":
    table4(sys.argv[2])
elif len(sys.argv) == 4 and sys.argv[1] == "gemm":
    gemm(sys.argv[2], sys.argv[3])
elif len(sys.argv) == 15 and sys.argv[1] == "gemms":
    gemms(sys.argv[2], sys.argv[3], sys.argv[4:])
elif len(sys.argv) == 3 and sys.argv[1] == "cp":
    cp_exposed(sys.argv[2])
elif len(sys.argv) == 4 and sys.argv[1] == "plans":
    plans(sys.argv[2], int(sys.argv[3]))
elif len(sys.argv) == 17 and sys.argv[1] == "eval":
    evaluate(sys.argv[2], sys.argv[3:])
else:
    sys.exit(__doc__)
