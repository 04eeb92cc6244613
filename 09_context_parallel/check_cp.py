#!/usr/bin/env python3
"""check_cp.py: the numbers 09_context_parallel/cp prints, recomputed from the
configuration its header states (the formulas of the chapter's README, written
again here without the program's code).

    check_cp.py LOG [CSV]

From the header: the model, dtype, sequences per micro-batch, micro-batches,
dp, the algorithm, cp and the layout (balanced or in order). Then:
  - each rank's query-key pairs per layer (measured and the program's
    formula) = recomputed by counting, position by position, the keys each of
    its queries sees; their sum = the causal triangle B H T (T+1) / 2;
  - the bytes per layer forward and backward (measured, formula) = recomputed;
  - with CSV: each step's sent_mb = layers x micro-batches x those bytes + the
    gradient all-reduce over the context x data group.
Prints each check; exit 1 with what differed and by how much.
"""
import csv
import re
import sys


def grab(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit("error: the log has no %s line" % what)
    return m


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_cp.py LOG [CSV]")
    log = open(sys.argv[1]).read()
    m = grab(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
             r"vocab (\d+), seq (\d+) .*\| (fp32|bf16)$", log, "model")
    Cd, L, H, KV, hd, ffn, V, T = (int(x) for x in m.groups()[:8])
    es = 4 if m.group(9) == "fp32" else 2
    m = grab(r"^batch: .* = (\d+) data-parallel ranks? x (\d+) micro-batch(?:es)? x (\d+) sequences", log, "batch")
    dp, micro, B = (int(x) for x in m.groups())
    m = grab(r"^cp: +(ring|ulysses) attention over (\d+) ranks?; .*, (balanced|in order)", log, "cp")
    algo, C, balanced = m.group(1), int(m.group(2)), m.group(3) == "balanced"

    # every rank's chunks, from the layout rule alone
    nck = 2 if balanced and C > 1 else 1
    Tc = T // (C * nck)

    def chunks(r):
        if nck == 2:
            return [r * Tc, (2 * C - 1 - r) * Tc]
        return [r * Tc]

    bad = []

    def same(what, got, exp, tol=0.6):
        ok = abs(got - exp) <= tol
        print("  %-34s %16.3f %16.3f  %s" % (what, got, exp, "ok" if ok else "DIFFERS by %.3f" % (got - exp)))
        if not ok:
            bad.append("%s: %.3f, recomputed %.3f (off by %.3f)" % (what, got, exp, got - exp))

    print("%s attention, cp %d (%s), dp %d, %d sequences of %d tokens per micro-batch, %d-byte values"
          % (algo, C, "balanced" if balanced else "in order", dp, B, T, es))
    print("  %-34s %16s %16s" % ("query-key pairs per layer", "printed", "recomputed"))
    total = 0
    for r in range(C):
        if algo == "ulysses":   # H / C heads of whole sequences
            n = B * (H // C) * T * (T + 1) // 2
        else:                   # all heads of this rank's queries against every key before them
            n = 0
            for q0 in chunks(r):
                for pos in range(q0, q0 + Tc):
                    n += pos + 1
            n *= B * H
        total += n
        row = grab(r"^  cp rank %d: +(\d+) pairs \(formula +(\d+)," % r, log, "cp rank %d" % r)
        same("rank %d measured" % r, float(row.group(1)), n)
        same("rank %d formula" % r, float(row.group(2)), n)
    same("all ranks together", total, B * H * T * (T + 1) / 2)

    Rf = B * T // C
    if algo == "ring":
        block = 2 * Rf * KV * hd * es
        fwd, bwd = (C - 1) * block, (C - 1) * block + (C * block if C > 1 else 0)
    else:
        KVa = KV if KV % C == 0 else C
        f = (C - 1) / C
        fwd = f * Rf * (hd * es * (2 * H + 2 * KVa) + 4 * H)
        bwd = f * Rf * (hd * es * (4 * H + 4 * KVa) + 4 * H)
    row = grab(r"^cp bytes: .* forward ([0-9.]+) kB \(formula ([0-9.]+) kB\), backward ([0-9.]+) kB "
               r"\(formula ([0-9.]+) kB\)", log, "cp bytes")
    print("  %-34s %16s %16s" % ("bytes per layer and micro-batch", "printed", "recomputed"))
    same("forward measured", float(row.group(1)) * 1e3, fwd)
    same("forward formula", float(row.group(2)) * 1e3, fwd)
    same("backward measured", float(row.group(3)) * 1e3, bwd)
    same("backward formula", float(row.group(4)) * 1e3, bwd)

    if len(sys.argv) > 2:
        P = V * Cd + L * (2 * Cd + 2 * Cd * H * hd + 2 * Cd * KV * hd + 3 * Cd * ffn) + Cd + Cd * V
        G = C * dp
        step = L * micro * (fwd + bwd) + 2 * (G - 1) / G * P * es
        print("  %-34s %16s %16s" % ("CSV sent_mb per step (bytes)", "printed", "recomputed"))
        for r in csv.DictReader(open(sys.argv[2])):
            same("step %s sent_mb" % r["step"], float(r["sent_mb"]) * 1e6, step, 60)
    if bad:
        for b in bad[:10]:
            print("error: " + b)
        sys.exit("error: %d printed numbers differ from their formulas" % len(bad))
    print("every printed pair count and byte count agrees with its formula")


main()
