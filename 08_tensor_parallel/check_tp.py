#!/usr/bin/env python3
"""check_tp.py: the numbers 08_tensor_parallel/tp prints, recomputed from the
configuration its header states (the formulas of the chapter's README, written
again here without the program's code).

    check_tp.py LOG [CSV]

From the header: dim, layers, heads, kv heads, head dim, ffn, vocab, seq,
dtype, sequences per micro-batch, micro-batches, tp, sp, dp. Then:
  - every row of the "tp bytes" table (bytes per unit pass and micro-batch,
    the replicated-gradient sums, the step total): measured = recomputed;
  - the program's own formula column = recomputed;
  - the activations of one micro-batch: measured = recomputed, and the
    formula with --sp toggled;
  - with CSV: each step's sent_mb (mean bytes per rank) = the step total +
    the data-parallel all-reduce of this shard's gradients.
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
        sys.exit("usage: check_tp.py LOG [CSV]")
    log = open(sys.argv[1]).read()
    m = grab(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
             r"vocab (\d+), seq (\d+) .*\| (fp32|bf16)$", log, "model")
    C, L, heads, kv, hd, ffn, vocab, seq = (int(x) for x in m.groups()[:8])
    es = 4 if m.group(9) == "fp32" else 2
    m = grab(r"^batch: .* = (\d+) data-parallel ranks? x (\d+) micro-batch(?:es)? x (\d+) sequences", log, "batch")
    dp, micro, mb = (int(x) for x in m.groups())
    m = grab(r"^tp: +(\d+) ranks: .*sequence parallelism (on|off)", log, "tp")
    T, sp = int(m.group(1)), m.group(2) == "on"

    rows = mb * seq
    X, f = rows * C * es, (T - 1) / T
    vocab_b = (T - 1) * rows * 4 + 2 * f * rows * 4   # lse all-gathered, picked all-reduced (fp32)
    if sp:
        want = {("embedding", "forward"): f * X, ("embedding", "backward"): f * X,
                ("layer", "forward"): 4 * f * X, ("layer", "backward"): 6 * f * X,
                ("head", "forward"): f * X + vocab_b, ("head", "backward"): 2 * f * X}
    else:
        want = {("embedding", "forward"): 2 * f * X, ("embedding", "backward"): 0,
                ("layer", "forward"): 4 * f * X, ("layer", "backward"): 4 * f * X,
                ("head", "forward"): vocab_b, ("head", "backward"): 2 * f * X}
    grads = 0.0
    if sp:
        grads += (2 * L + 1) * 2 * f * C * 4
    if kv % T:
        r = T // kv
        grads += L * 2 * 2 * (r - 1) / r * C * hd * 4
    total = micro * (want["embedding", "forward"] + want["embedding", "backward"] +
                     L * (want["layer", "forward"] + want["layer", "backward"]) +
                     want["head", "forward"] + want["head", "backward"]) + grads
    if T == 1:
        want = {k: 0 for k in want}
        total = grads = 0.0

    bad = []

    def same(what, got, exp, tol=0.6):   # printed to 1e-3 kB or 1e-6 MB: half a byte
        ok = abs(got - exp) <= tol
        print("  %-40s %16.3f %16.3f  %s" % (what, got, exp, "ok" if ok else "DIFFERS by %.3f" % (got - exp)))
        if not ok:
            bad.append("%s: %.3f, recomputed %.3f (off by %.3f)" % (what, got, exp, got - exp))

    print("tp %d, sp %s, dp %d, %d x %d rows per micro-batch, %d micro-batches, %d-byte values" %
          (T, "on" if sp else "off", dp, mb, seq, micro, es))
    print("  %-40s %16s %16s" % ("bytes (per unit pass, micro-batch)", "printed", "recomputed"))
    if T > 1:
        for (unit, ps), b in want.items():
            row = grab(r"^  %s +%s +([0-9.]+) +([0-9.]+)" % (unit, ps), log, "tp bytes %s %s" % (unit, ps))
            same("%s %s measured" % (unit, ps), float(row.group(1)) * 1e3, b)
            same("%s %s formula" % (unit, ps), float(row.group(2)) * 1e3, b)
        row = grab(r"^  gradients +per step +([0-9.]+) +([0-9.]+)", log, "tp bytes gradients")
        same("replicated gradients measured", float(row.group(1)) * 1e3, grads)
        same("replicated gradients formula", float(row.group(2)) * 1e3, grads)
        row = grab(r"^  step +total +([0-9.]+) +([0-9.]+)", log, "tp bytes total")
        same("step total measured", float(row.group(1)) * 1e3, total, 0.6 * (2 * L + 4) * micro)
        same("step total formula", float(row.group(2)) * 1e3, total, 0.6 * (2 * L + 4) * micro)

    def acts(sp_on):
        H, F, V = heads // T, ffn // T, vocab // T
        KV = kv // T if kv % T == 0 else 1
        R = rows // T if sp_on else rows
        outside = L * R * (4 * C * es + 8) + R * (2 * C * es + 4)
        inside = L * rows * (es * (2 * H * hd + 2 * KV * hd + 3 * F) + 4 * H) + rows * (V * es + 8)
        return outside, inside, 8 * rows

    o, i, t = acts(sp)
    row = grab(r"^acts: +one micro-batch's activations per rank ([0-9.]+) MB \(formula ([0-9.]+) MB = outside "
               r"the tp regions ([0-9.]+) \+ inside ([0-9.]+) \+ tokens ([0-9.]+)\)", log, "acts")
    print("  %-40s %16s %16s" % ("activations of one micro-batch (bytes)", "printed", "recomputed"))
    same("measured", float(row.group(1)) * 1e6, o + i + t)
    same("formula", float(row.group(2)) * 1e6, o + i + t)
    same("outside the tp regions", float(row.group(3)) * 1e6, o)
    same("inside", float(row.group(4)) * 1e6, i)
    if T > 1:
        o2, i2, t2 = acts(not sp)
        row = grab(r"^acts: +(?:with|without) --sp the formula gives ([0-9.]+) MB \(outside ([0-9.]+)\)", log, "acts toggled")
        same("with sp toggled", float(row.group(1)) * 1e6, o2 + i2 + t2)
        same("with sp toggled, outside", float(row.group(2)) * 1e6, o2)
        outside_sp = acts(True)[0]
        print("  outside the tp regions: %.0f bytes without sp, %.0f with: ratio %.4g (T = %d)"
              % (acts(False)[0], outside_sp, acts(False)[0] / outside_sp, T))

    if len(sys.argv) > 2:
        H, F, V = heads // T, ffn // T, vocab // T
        KV = kv // T if kv % T == 0 else 1
        shard = V * C + L * (2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F) + C + C * V
        dp_bytes = 2 * (dp - 1) / dp * shard * es
        print("  %-40s %16s %16s" % ("CSV sent_mb per step (bytes)", "printed", "recomputed"))
        for r in csv.DictReader(open(sys.argv[2])):
            same("step %s sent_mb" % r["step"], float(r["sent_mb"]) * 1e6, total + dp_bytes, 60)
    if bad:
        for b in bad[:10]:
            print("error: " + b)
        sys.exit("error: %d printed numbers differ from their formulas" % len(bad))
    print("every printed byte and memory count agrees with its formula")


main()
