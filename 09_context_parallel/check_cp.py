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
  - the activations of one micro-batch and the communication buffers: the
    model's activation formula (chapter 08's) for B T / C rows, and the
    core's buffers (the ring's five blocks; Ulysses's packed segments);
  - with CSV: each step's sent_mb = layers x micro-batches x those bytes + the
    gradient all-reduce over the context x data group.
Prints each check; exit 1 with what differed and by how much.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from trainer_log import Checks, batch, grab, model, params  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_cp.py LOG [CSV]")
    log = open(sys.argv[1]).read()
    c = model(log)
    L, H, KV, hd, T, es = (c[k] for k in ("layers", "heads", "kv", "hd", "seq", "es"))
    dp, micro, B = batch(log)
    m = grab(r"^cp: +(ring|ulysses) attention over (\d+) ranks?; .*, (balanced|in order)", log, "cp")
    algo, C, balanced = m.group(1), int(m.group(2)), m.group(3) == "balanced"

    # every rank's chunks, from the layout rule alone
    nck = 2 if balanced and C > 1 else 1
    Tc = T // (C * nck)

    def chunks(r):
        if nck == 2:
            return [r * Tc, (2 * C - 1 - r) * Tc]
        return [r * Tc]

    ck = Checks()
    print("%s attention, cp %d (%s), dp %d, %d sequences of %d tokens per micro-batch, %d-byte values"
          % (algo, C, "balanced" if balanced else "in order", dp, B, T, es))
    ck.header("query-key pairs per layer")
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
        ck.same("rank %d measured" % r, float(row.group(1)), n)
        ck.same("rank %d formula" % r, float(row.group(2)), n)
    ck.same("all ranks together", total, B * H * T * (T + 1) / 2)

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
    ck.header("bytes per layer and micro-batch")
    ck.same("forward measured", float(row.group(1)) * 1e3, fwd)
    ck.same("forward formula", float(row.group(2)) * 1e3, fwd)
    ck.same("backward measured", float(row.group(3)) * 1e3, bwd)
    ck.same("backward formula", float(row.group(4)) * 1e3, bwd)

    # memory: one micro-batch's activations (the model's, R = B T / C rows:
    # 08's formula with T = 1) and the communication buffers (the core's,
    # and grad_sync's bf16 copy of the gradients when it has peers)
    R, Cd, F, V = B * T // C, c["dim"], c["ffn"], c["vocab"]
    acts = (L * R * (4 * Cd * es + 8 + es * (2 * H * hd + 2 * KV * hd + 3 * F) + 4 * H)
            + R * (2 * Cd * es + 4) + R * (V * es + 8) + 8 * R)
    if algo == "ring":
        buffers = 5 * 2 * R * KV * hd * es if C > 1 else 0
    else:
        Hc, KVc = H // C, KV // C if KV % C == 0 else 1
        buffers = 2 * C * R * (3 * Hc + 2 * KVc) * hd * es + 2 * C * R * Hc * 4
    if es == 2 and C * dp > 1:
        buffers += params(c) * 2
    row = grab(r"^memory: +activations of one micro-batch ([0-9.]+) MB per rank .*; communication buffers "
               r"([0-9.]+) MB", log, "memory")
    ck.header("memory per rank (bytes)")
    ck.same("activations of one micro-batch", float(row.group(1)) * 1e6, acts)
    ck.same("communication buffers", float(row.group(2)) * 1e6, buffers)

    if len(sys.argv) > 2:
        P = params(c)
        G = C * dp
        step = L * micro * (fwd + bwd) + 2 * (G - 1) / G * P * es
        ck.header("CSV sent_mb per step (bytes)")
        for r in csv.DictReader(open(sys.argv[2])):
            ck.same("step %s sent_mb" % r["step"], float(r["sent_mb"]) * 1e6, step, 60)
    ck.finish("every printed pair, byte and memory count agrees with its formula")


main()
