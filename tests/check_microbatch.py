#!/usr/bin/env python3
"""check_microbatch.py: 07_pipeline/sweep_microbatch.sh's CSV against the
pipeline's own logs and an independent replay of the H100 rows.

    check_microbatch.py CSV LOG_DIR [H100_TABLE]

Every micro-batch size b of the sweep: b x M = the global batch on every
row; the measured row's bubble, formula, step and busy times are the ones
its run printed (LOG_DIR/mbB.log: the bubble line, the measured line, the
means of the stage lines' steps and busy times); the formula is
(P-1)/(M+P-1). The H100 rows (h100, h100_dim4096) are recomputed here from
the sweep's two models: the last stage's forward GEMMs at b's rows, each at
the efficiency of chapter 01's H100 bf16 table (H100_TABLE, default
01_matmul_hfu/reference/h100_hfu.csv) interpolated linearly in log FLOPs and
clamped at its ends, times 3 for forward and backward; then 1F1B simulated
here on P stages of that time (forward 1/3, backward 2/3), messages free:
its step, busy time and bubble (idle / step), and the GEMMs' efficiency
(FLOPs over time at the peak). Prints what differed; exit 1 if anything did.
"""
import csv
import math
import re
import sys

PEAK = 989.4e12   # the H100 SXM's dense bf16 FLOP/s
# the sweep's models: (rows per sequence, dim, heads, kv heads, head dim, ffn, vocab, layers per stage)
MODELS = {"h100": (64, 512, 8, 4, 64, 1408, 256, 2), "h100_dim4096": (256, 4096, 32, 8, 128, 14336, 128256, 16)}


def efficiency(table, flops):
    """the table's best efficiency at each FLOP count, linear in log FLOPs between them, clamped"""
    best = {}
    for r in csv.DictReader(open(table)):
        if r["dtype"] == "bf16":
            f = 2.0 * float(r["m"]) * float(r["n"]) * float(r["k"])
            best[f] = max(best.get(f, 0.0), float(r["hfu"]) / 100)
    xs = sorted(best)
    if flops <= xs[0]:
        return best[xs[0]]
    for x0, x1 in zip(xs, xs[1:]):
        if flops <= x1:
            a = (math.log(flops) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return best[x0] + a * (best[x1] - best[x0])
    return best[xs[-1]]


def stage_seconds(table, model, b):
    """forward + backward seconds of the last stage's GEMMs for b sequences, and their efficiency"""
    T, C, H, KV, hd, F, V, n = model
    R = b * T
    gemms = n * [(R, H * hd, C), (R, KV * hd, C), (R, KV * hd, C), (R, C, H * hd), (R, F, C), (R, F, C), (R, C, F)]
    gemms.append((R, V, C))
    flops = [2.0 * m * k * nn for m, nn, k in gemms]
    secs = sum(3 * f / (PEAK * efficiency(table, f)) for f in flops)
    return secs, 3 * sum(flops) / (secs * PEAK)


def one_f_one_b(P, M, f, b):
    """1F1B on P stages of forward f and backward b: (step, busy per stage), messages free"""
    order = []
    for s in range(P):
        warm = min(P - 1 - s, M)
        o = [("F", m) for m in range(warm)]
        for m in range(warm, M):
            o += [("F", m), ("B", m - warm)]
        o += [("B", m) for m in range(M - warm, M)]
        order.append(o)
    end, clock, pc = {}, [0.0] * P, [0] * P
    while any(pc[s] < len(order[s]) for s in range(P)):
        moved = False
        for s in range(P):
            while pc[s] < len(order[s]):
                op, m = order[s][pc[s]]
                dep = ("F", s - 1, m) if op == "F" and s > 0 else ("B", s + 1, m) if op == "B" and s < P - 1 else None
                if dep and dep not in end:
                    break
                clock[s] = end[(op, s, m)] = max(clock[s], end[dep] if dep else 0.0) + (f if op == "F" else b)
                pc[s] += 1
                moved = True
        if not moved:
            sys.exit("error: the 1F1B lists built here deadlock")
    return max(clock), M * (f + b)


def main(path, logs, table):
    rows = list(csv.DictReader(open(path)))
    bad, seen = [], {}
    for r in rows:
        src, P, B, b, M = r["source"], int(r["stages"]), int(r["batch"]), int(r["micro_batch"]), int(r["micro"])
        bubble, formula, step, busy = (float(r[k]) for k in ("bubble", "formula", "step_ms", "busy_ms"))
        seen.setdefault(src, []).append(b)
        if b * M != B:
            bad.append("%s b %d: %d micro-batches x %d = %d, not the batch of %d" % (src, b, M, b, b * M, B))
        if abs(formula - (P - 1) / (M + P - 1)) > 1e-5:
            bad.append("%s b %d: formula %.5f, (P-1)/(M+P-1) = %.5f" % (src, b, formula, (P - 1) / (M + P - 1)))
        if src != "measured":
            if src not in MODELS:
                bad.append("unknown source %s" % src)
                continue
            secs, eff = stage_seconds(table, MODELS[src], b)
            want_step, want_busy = one_f_one_b(P, M, secs / 3, 2 * secs / 3)
            want_bubble = 1 - want_busy / want_step
            for what, got, want, tol in (("step", step, 1e3 * want_step, 2e-4), ("busy", busy, 1e3 * want_busy, 2e-4),
                                         ("bubble", bubble, want_bubble, 2e-5), ("gemm_eff", float(r["gemm_eff"]), eff, 2e-4)):
                if abs(got - want) > tol * max(1.0, abs(want)):
                    bad.append("%s b %d: %s %.6g, the replay here gives %.6g" % (src, b, what, got, want))
            continue
        log = open("%s/mb%d.log" % (logs, b)).read()
        head = re.search(r"bubble:\s+1f1b, (\d+) stages x (\d+) micro-batch(?:es)?: formula \S+ = ([0-9.]+)%", log)
        if not head or (int(head.group(1)), int(head.group(2))) != (P, M):
            bad.append("b %d: the log's bubble line is for %s, the CSV says %d stages x %d micro-batches"
                       % (b, head.groups()[:2] if head else "nothing", P, M))
            continue
        if abs(float(head.group(3)) - 100 * formula) > 0.051:
            bad.append("b %d: the log's formula %s%%, the CSV's %.2f%%" % (b, head.group(3), 100 * formula))
        meas = float(re.search(r"measured, steps [0-9-]+ .*: ([0-9.]+)%", log).group(1))
        if abs(meas - 100 * bubble) > 0.051:
            bad.append("b %d: the log's measured bubble %.1f%%, the CSV's %.2f%%" % (b, meas, 100 * bubble))
        stages = re.findall(r"stage \d+: busy ([0-9.]+) .* = step ([0-9.]+) ms", log)
        for i, (what, got) in enumerate((("busy", busy), ("step", step))):
            mean = sum(float(st[i]) for st in stages) / max(1, len(stages))
            if len(stages) != P or abs(mean - got) > 0.002:
                bad.append("b %d: the stages' mean %s %.3f ms (%d stages), the CSV's %.3f" % (b, what, mean,
                                                                                               len(stages), got))
    sizes = seen.get("measured", [])
    for src, bs in seen.items():
        if bs != sizes:
            bad.append("%s has micro-batch sizes %s, measured %s" % (src, bs, sizes))
    if not sizes:
        bad.append("no measured rows in %s" % path)
    if bad:
        for m in bad[:10]:
            print("  " + m)
        sys.exit("error: %d numbers disagree" % len(bad))
    print("%d micro-batch sizes, %d sources: b x M = the batch, the bubble and step as the runs printed, "
          "the formula (P-1)/(M+P-1), the H100 rows replayed here" % (len(sizes), len(seen)))


if len(sys.argv) not in (3, 4):
    sys.exit(__doc__)
main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else "01_matmul_hfu/reference/h100_hfu.csv")
