#!/usr/bin/env python3
"""check_plan.py: the planner's numbers, recomputed.

    check_plan.py table4 CSV            predicted MFU of Llama 3's table 4 within 5 points
    check_plan.py eval OUTPUT ARGS...   one --eval plan: memory per kind from the
                                        parameter formulas, the step as the sum of its
                                        parts, MFU from the model FLOPs and the step

For `eval`, ARGS repeat the model and plan: V C L H KV HD F T BATCH GPUS tp cp pp zero
(an independent count of the parameters on the fullest GPU: the last stage,
ceil(L/pp) layers and the head, each tensor split as tensor parallelism splits it).
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
    near("parameters (B)", pgpu, P / 1e9, 0.006)
    if zero == 3:
        near("weights (GB)", w, (2 * P / dp + 2 * 2 * layer) / 1e9, 0.01, 0.051)
    else:
        near("weights (GB)", w, 2 * P / 1e9, 0.01, 0.051)
    near("gradients (GB)", g, (4 * P / dp + 2 * 4 * layer if zero >= 2 else 4 * P) / 1e9, 0.01, 0.051)
    near("optimizer (GB)", o, 12 * P / (dp if zero >= 1 else 1) / 1e9, 0.01, 0.051)
    near("total (GB)", total, w + g + o + a, 0, 0.21)

    s = re.search(r"step ([0-9.]+) s = GEMMs ([0-9.]+) \+ attention ([0-9.]+) \+ memory-bound ([0-9.]+) \+ "
                  r"recomputation ([0-9.]+) \+ exposed tp ([0-9.]+) \+ cp ([0-9.]+) \+ pp ([0-9.]+) \+ "
                  r"bubble ([0-9.]+) \+ dp ([0-9.]+) \+ optimizer ([0-9.]+)", text)
    parts = [float(x) for x in s.groups()]
    near("step (s)", parts[0], sum(parts[1:]), 0.002)
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


if len(sys.argv) >= 3 and sys.argv[1] == "table4":
    table4(sys.argv[2])
elif len(sys.argv) == 17 and sys.argv[1] == "eval":
    evaluate(sys.argv[2], sys.argv[3:])
else:
    sys.exit(__doc__)
