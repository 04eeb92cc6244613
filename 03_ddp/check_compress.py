#!/usr/bin/env python3
"""check_compress.py: the bytes per step of 03_ddp/ddp --compress, recomputed
from the model's shape alone.

    check_compress.py LOG CSV

From the header's shape the gradient has n = P values (check_numbers.py's
parameter formula, common/MODEL.md); on N ranks one rank sends per step
(common/compress.h; pieces rounded up to 4-byte words, B = 256):
  none        2 (N-1)/N x 4n               (ring all-reduce)
  int8        (N-1) x (n + 4 ceil(n/B))    (ring all-gather of the pieces)
  sign        (N-1) x (ceil(n/8) + 4 ceil(n/B))
  topk:F      (N-1) x 8 ceil(F n)
  powersgd:R  2 (N-1)/N x 4 (sum over the m x c weight matrices R (m + c)
              + the norm gains' values): per layer wq C x H hd, wk and wv
              C x KV hd, wo H hd x C, w1 and w3 C x F, w2 F x C, two gains
              of C; the embedding V x C, lm_head C x V, the final gain C
The compress: line must state it, and every CSV row's sent_mb (MB, 4
decimals) must equal it. Exit 1 with what differed.
"""
import csv
import math
import re
import sys


def main():
    log = open(sys.argv[1]).read()
    rows = list(csv.DictReader(open(sys.argv[2])))
    m = re.search(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
                  r"vocab (\d+)", log, re.M)
    C, L, H, KV, hd, F, V = (int(m.group(i)) for i in range(1, 8))
    n = V * C + L * (2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F) + C + C * V
    N = int(re.search(r"\| world (\d+) \|", log).group(1))
    line = re.search(r"^compress: (\S+), error feedback \w+, after backward: (\d+) B per rank per step", log, re.M)
    spec, printed = line.group(1), int(line.group(2))
    word = lambda b: (b + 3) // 4 * 4
    B = 256
    if spec == "none":
        want = 2 * (N - 1) / N * 4 * n
    elif spec == "int8":
        want = (N - 1) * word(n + 4 * math.ceil(n / B))
    elif spec == "sign":
        want = (N - 1) * word(math.ceil(n / 8) + 4 * math.ceil(n / B))
    elif spec.startswith("topk:"):
        want = (N - 1) * 8 * max(1, math.ceil(float(spec[5:]) * n - 1e-9))
    else:
        R = int(spec.split(":")[1])
        layer = (2 * (C + H * hd) + 2 * (C + KV * hd) + 3 * (C + F)) * R + 2 * C
        want = 2 * (N - 1) / N * 4 * (2 * (V + C) * R + L * layer + C)
    bad = 0
    print(f"{spec} on {N} ranks, n = {n}: formula {want:.0f} B per rank per step, printed {printed}")
    if abs(printed - round(want)) > 0:
        print(f"printed {printed} B, the formula gives {want:.0f}")
        bad += 1
    for r in rows:
        if abs(float(r["sent_mb"]) - want / 1e6) > 0.00005 + 1e-9:
            print(f"step {r['step']}: sent_mb {r['sent_mb']}, the formula gives {want / 1e6:.4f}")
            bad += 1
    print(f"{len(rows)} steps checked" if not bad else f"{bad} differences")
    sys.exit(1 if bad or not rows else 0)


main()
