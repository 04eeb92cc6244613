#!/usr/bin/env python3
"""check_zero_comm.py CSV README: chapter 04's table of bytes sent per rank
per step, recomputed here from the sweep's rows (04_fsdp/sweep_memory.sh)
without the table's generator, and the counts checked against the ring's
bytes and the ZeRO paper's volumes (Rajbhandari et al. 2020, section 7):
  DDP, ZeRO-1, ZeRO-2  2 (N-1)/N Psi w exactly (the ring of an all-reduce, or
                       a reduce-scatter and an all-gather of the same vector)
  ZeRO-3               above 2.5 (N-1)/N Psi w (at most one unit is not gathered
                       again for backward) and at most 3 (N-1)/N Psi w
  every stage          counted == the suite's formula
and the README's generated table equals the table rebuilt here."""
import csv
import sys

rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r["ranks"]) > 1]
bad = []
paper = {0: 2, 1: 2, 2: 2, 3: 3}
name = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
cell, ns = {}, sorted({int(r["ranks"]) for r in rows})
for r in rows:
    z, n = int(r["zero"]), int(r["ranks"])
    psi = int(r["params"]) * int(r["wbytes"]) / 1e6
    sent, pred = float(r["sent_mb"]), float(r["sent_pred_mb"])
    ring = (n - 1) / n * psi
    if abs(sent - pred) > 1e-3:
        bad.append(f"{name[z]} N={n}: counted {sent} MB, formula {pred} MB")
    if z < 3 and abs(sent - 2 * ring) > 1e-3:
        bad.append(f"{name[z]} N={n}: counted {sent} MB, a ring's 2 (N-1)/N Psi w = {2 * ring:.4f} MB")
    if z == 3 and not (2.5 * ring < sent <= 3 * ring + 1e-3):
        bad.append(f"ZeRO-3 N={n}: counted {sent} MB outside ({2.5 * ring:.4f}, {3 * ring:.4f}]")
    cell[z, n] = (sent, pred, psi)
top = ns[-1]
lines = ["| stage | the paper | the paper, MB |" + "".join(f" N = {n}: counted (formula) |" for n in ns)
         + f" counted / paper at N = {top} |",
         "|---|---|---|" + "---|" * len(ns) + "---|"]
for z in range(4):
    psi = cell[z, top][2]
    lines.append(f"| {name[z]} | {paper[z]} Psi | {paper[z] * psi:.2f} |"
                 + "".join(f" {cell[z, n][0]:.2f} ({cell[z, n][1]:.2f}) |" for n in ns)
                 + f" {100 * cell[z, top][0] / (paper[z] * psi):.1f}% |")
readme = open(sys.argv[2]).read().split("\n")
start = readme.index("<!-- table: zero_memory-comm -->") + 1
table = readme[start:readme.index("<!-- end table -->", start)]
if table != lines:
    bad.append("the README's table differs from its recomputation:\n" + "\n".join(table)
               + "\nrecomputed:\n" + "\n".join(lines))
for z in range(4):
    print(f"{name[z]}: counted at N = {top} {cell[z, top][0]:.2f} MB = "
          f"{100 * cell[z, top][0] / (paper[z] * cell[z, top][2]):.1f}% of the paper's {paper[z]} Psi")
if bad:
    print("FAIL:\n" + "\n".join(bad))
    sys.exit(1)
