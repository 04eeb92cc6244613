#!/usr/bin/env python3
"""check_microbatch.py: 07_pipeline/sweep_microbatch.sh's CSV against the
pipeline's own logs.

    check_microbatch.py CSV LOG_DIR

Every micro-batch size b of the sweep: b x M = the global batch on every
row; the measured row's bubble, formula, step and busy times are the ones
its run printed (LOG_DIR/mbB.log: the bubble line, the measured line, the
means of the stage lines' steps and busy times); the formula is
(P-1)/(M+P-1); the replayed rows carry that formula as their bubble and
their busy time is the step's share 1 - bubble. Prints what differed; exit 1 if anything
did.
"""
import csv
import re
import sys


def main(path, logs):
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
            if bubble != formula:
                bad.append("%s b %d: replayed bubble %.5f is not the formula %.5f" % (src, b, bubble, formula))
            if abs(busy - (1 - formula) * step) > 2e-4 + 1e-4 * step:
                bad.append("%s b %d: busy %.4f ms, (1 - bubble) x step = %.4f" % (src, b, busy, (1 - formula) * step))
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
          "the formula (P-1)/(M+P-1)" % (len(sizes), len(seen)))


if len(sys.argv) != 3:
    sys.exit(__doc__)
main(sys.argv[1], sys.argv[2])
