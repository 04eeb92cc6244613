#!/usr/bin/env python3
"""check_numbers.py: every number 06_checkpointing/ckpt reports about
recomputation, recomputed here from the model's shape alone.

    check_numbers.py LOG CSV BENCH_CSV

LOG is the program's standard output, CSV its --csv file, BENCH_CSV its
--bench-csv file. From the header (model, batch, dtype, MFU line) and the
policy's name this script computes, independently of the C code:
  - the bytes one layer keeps (MODEL.md's list: x, xn1, h, xn2, rstd1,
    rstd2, q, k, v, the attention output unless selective, lse, u1, u3, g),
    the head's and the tokens' buffers, the backward scratch, and from them
    the micro-batch's activations under the policy and the high-water mark;
  - the layer forwards and attention cores backward recomputes, and their
    FLOPs (2 per weight of q, k, v, o, w1, w3, w2 per token, 4 T H hd for
    the attention core) as a share of the model FLOPs the header states;
  - HFU = MFU x (1 + that share) on every step of the CSV and in the bench row;
  - the recomputation time model: the counts times the forward's per-layer
    and per-attention-core times the program printed.
Prints what differed and by how much; exit 1 if anything did.
"""
import csv
import math
import re
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_numbers.py LOG CSV BENCH_CSV")
    log = open(sys.argv[1]).read()
    m = re.search(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
                  r"vocab (\d+), seq (\d+) .*\| (fp32|bf16)$", log, re.M)
    C, L, H, KV, hd, F, V, T = (int(g) for g in m.groups()[:8])
    es = 4 if m.group(9) == "fp32" else 2
    b = re.search(r"^batch: .* = (\d+) data-parallel ranks? x (\d+) micro-batch(?:es)? x (\d+) sequences", log, re.M)
    dp, micro, B = (int(g) for g in b.groups())
    flops_token = float(re.search(r"^MFU: .* = ([0-9.e+]+) MFLOP per token", log, re.M).group(1)) * 1e6
    name = re.search(r"^recompute: (\S+)(?: \(every:\d+\))?: keeps", log, re.M).group(1)
    every = block = sel = 0
    if name == "full":
        every = 1
    elif name == "sqrt":
        every = max(1, int(math.floor(math.sqrt(L) + 0.5)))
    elif name.startswith("every:"):
        every = int(name[6:])
    elif name.startswith("block:"):
        block = min(int(name[6:]), L)
    elif name == "selective":
        sel = 1
    bad = []

    def near(what, got, want, tol):
        if abs(got - want) > tol:
            bad.append("%s: reported %.6g, recomputed %.6g (off by %.3g)" % (what, got, want, got - want))

    # ---- bytes (one rank, no tensor or context parallelism) ----
    Hq, Hkv, R = H * hd, KV * hd, B * T
    x = R * C * es
    inner = (3 * R * C * es + 2 * R * 4 + R * (2 * Hkv + (1 if sel else 2) * Hq) * es + B * H * T * 4
             + 3 * R * F * es)
    head = 2 * R * 4 + R * C * es + R * 4 + R * V * es + 2 * R * 4
    if every:
        c = min(every, L)
        acts = math.ceil(L / c) * x + c * (x + inner)                   # ceil(L/C) x + C A
    elif block and block < L:
        acts = (L + 1) * x + (L - block) * inner
    elif block:
        acts = L * x + (x + inner)
    else:
        acts = x + L * (x + inner)
    acts += head
    scratch = es * (R * C + R * C + 2 * R * Hq + 2 * R * Hkv + 3 * R * F + R * C + R * Hq + R * Hq) \
        + 4 * B * H * 2 * T + es * R * V
    line = re.search(r"^recompute: .* activations of a micro-batch ([0-9.]+) MB \(model ([0-9.]+) MB.*"
                     r"high-water with backward scratch ([0-9.]+) MB \(model ([0-9.]+) MB\)", log, re.M)
    got_acts, model_acts, got_peak, model_peak = (float(g) for g in line.groups())
    near("activations of a micro-batch (MB)", got_acts, acts / 1e6, 6e-5)
    near("their model (MB)", model_acts, acts / 1e6, 6e-5)
    near("high-water with the backward scratch (MB)", got_peak, (acts + scratch) / 1e6, 6e-5)
    near("its model (MB)", model_peak, (acts + scratch) / 1e6, 6e-5)

    # ---- recomputed work ----
    layers = L if every else block
    attn = L if sel else 0
    line = re.search(r"^recompute: per micro-batch ([0-9]+) layer forwards? \(model (\d+)\) and ([0-9]+) attention "
                     r"cores? \(model (\d+)\) recomputed = ([0-9.e+-]+) GFLOP per step, \+([0-9.]+)% of the model's "
                     r"([0-9.e+-]+) GFLOP", log, re.M)
    g = line.groups()
    for what, got, want in (("layer forwards recomputed", g[0], layers), ("their model", g[1], layers),
                            ("attention cores recomputed", g[2], attn), ("their model", g[3], attn)):
        near(what, float(got), want, 0)
    layer_fwd = 2 * (2 * C * Hq + 2 * C * Hkv + 3 * C * F) + 4 * T * Hq
    tokens = dp * micro * B * T
    extra = tokens * (layers * layer_fwd + attn * 4 * T * Hq)
    model = flops_token * tokens
    near("recomputed GFLOP per step", float(g[4]), extra / 1e9, 5e-4 * extra / 1e9 + 1e-9)
    near("recomputed share of the model FLOPs (%)", float(g[5]), 100 * extra / model, 0.051)
    near("model GFLOP per step", float(g[6]), model / 1e9, 5e-4 * model / 1e9)
    share = extra / model

    # ---- HFU beside MFU, every step ----
    rows = list(csv.DictReader(open(sys.argv[2])))
    for r in rows:
        mfu, hfu = float(r["mfu"]), float(r["hfu"])
        near("step %s: hfu (%%)" % r["step"], hfu, mfu * (1 + share), 1e-3 * hfu)
    bench = list(csv.DictReader(open(sys.argv[3])))[-1]
    near("bench acts_mb", float(bench["acts_mb"]), acts / 1e6, 1e-6)
    near("bench acts_peak_mb", float(bench["acts_peak_mb"]), (acts + scratch) / 1e6, 1e-6)
    near("bench extra_flops_pct", float(bench["extra_flops_pct"]), 100 * share, 0.0006)
    near("bench hfu", float(bench["hfu"]), float(bench["mfu"]) * (1 + share), 1e-3 * float(bench["hfu"]))

    # ---- the time model: counts x the forward's own times ----
    t = re.search(r"^recompute: time per step ([0-9.]+) ms recomputing \(model ([0-9.]+) ms = the forward's "
                  r"([0-9.]+) ms per layer and ([0-9.]+) ms per attention core", log, re.M).groups()
    near("recomputation time model (ms)", float(t[1]), micro * (layers * float(t[2]) + attn * float(t[3])),
         0.006 + micro * (layers + attn) * 0.0005)

    print("%s on %d layers: activations %.4f MB, high-water %.4f MB, %d layer forwards and %d attention cores "
          "recomputed = +%.2f%% FLOPs; %d steps of HFU checked" % (name, L, acts / 1e6, (acts + scratch) / 1e6,
                                                                  layers, attn, 100 * share, len(rows)))
    for b_ in bad:
        print("  " + b_)
    if bad:
        sys.exit("error: %d reported numbers disagree with their formulas" % len(bad))
    print("every reported number agrees with its formula")


main()
