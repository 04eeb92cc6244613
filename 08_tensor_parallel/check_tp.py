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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from trainer_log import Checks, batch, grab, model  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_tp.py LOG [CSV]")
    log = open(sys.argv[1]).read()
    c = model(log)
    C, L, heads, kv, hd, ffn, vocab, seq, es = (c[k] for k in
                                                ("dim", "layers", "heads", "kv", "hd", "ffn", "vocab", "seq", "es"))
    dp, micro, mb = batch(log)
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
        total = grads = 0.0

    ck = Checks()
    print("tp %d, sp %s, dp %d, %d x %d rows per micro-batch, %d micro-batches, %d-byte values" %
          (T, "on" if sp else "off", dp, mb, seq, micro, es))
    if T > 1:
        ck.header("bytes (per unit pass, micro-batch)")
        for (unit, ps), b in want.items():
            row = grab(r"^  %s +%s +([0-9.]+) +([0-9.]+)" % (unit, ps), log, "tp bytes %s %s" % (unit, ps))
            ck.same("%s %s measured" % (unit, ps), float(row.group(1)) * 1e3, b)
            ck.same("%s %s formula" % (unit, ps), float(row.group(2)) * 1e3, b)
        row = grab(r"^  gradients +per step +([0-9.]+) +([0-9.]+)", log, "tp bytes gradients")
        ck.same("replicated gradients measured", float(row.group(1)) * 1e3, grads)
        ck.same("replicated gradients formula", float(row.group(2)) * 1e3, grads)
        row = grab(r"^  step +total +([0-9.]+) +([0-9.]+)", log, "tp bytes total")
        ck.same("step total measured", float(row.group(1)) * 1e3, total)
        ck.same("step total formula", float(row.group(2)) * 1e3, total)

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
    ck.header("activations of one micro-batch (bytes)")
    ck.same("measured", float(row.group(1)) * 1e6, o + i + t)
    ck.same("formula", float(row.group(2)) * 1e6, o + i + t)
    ck.same("outside the tp regions", float(row.group(3)) * 1e6, o)
    ck.same("inside", float(row.group(4)) * 1e6, i)
    if T > 1:
        o2, i2, t2 = acts(not sp)
        row = grab(r"^acts: +(?:with|without) --sp the formula gives ([0-9.]+) MB \(outside ([0-9.]+)\)", log, "acts toggled")
        ck.same("with sp toggled", float(row.group(1)) * 1e6, o2 + i2 + t2)
        ck.same("with sp toggled, outside", float(row.group(2)) * 1e6, o2)
        print("  outside the tp regions: %.0f bytes without sp, %.0f with: ratio %.4g (T = %d)"
              % (acts(False)[0], acts(True)[0], acts(False)[0] / acts(True)[0], T))

    if len(sys.argv) > 2:   # the shard's gradients, all-reduced over its dp replicas
        H, F, V = heads // T, ffn // T, vocab // T
        KV = kv // T if kv % T == 0 else 1
        shard = V * C + L * (2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F) + C + C * V
        dp_bytes = 2 * (dp - 1) / dp * shard * es
        ck.header("CSV sent_mb per step (bytes)")
        for r in csv.DictReader(open(sys.argv[2])):
            ck.same("step %s sent_mb" % r["step"], float(r["sent_mb"]) * 1e6, total + dp_bytes, 60)
    ck.finish("every printed byte and memory count agrees with its formula")


main()
