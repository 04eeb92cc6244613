#!/usr/bin/env python3
"""check_hsdp_figure.py CSV README: chapter 05's chart data from its runs'
records (05_hsdp/sweep_links.sh: rows shard,link,source,cluster,step_ms,
link_pred_ms,cross_mb,cross_pred_mb), checked on its own:
  - every K of 1, 2, 4 has its step replayed without the link model, with
    the fast and with the slow link, and modeled on the H100 cluster;
  - the bytes per rank that cross between 2 nodes of 2, counted, equal the
    formula, and stand as a ring's do (X: the weights' bytes; a ring of 4
    over 2 nodes crosses on 2 of its 4 links): DDP 2 (3/4) X / 2 = 3/4 X,
    one group per node only the replicas' all-reduce of half the weights,
    2 (1/2) X / 2 = 1/2 X, so K = 2 crosses 2/3 of DDP's; FSDP over both
    nodes gathers twice and reduce-scatters once, (3/4) X each, half across:
    at most 9/8 X = 1.5 x DDP's, and more than 15/16 X = 1.25 x DDP's (only
    the last unit is not gathered again for backward);
  - the chart's lesson on the replayed source: with the slow link one
    group per node (K = 2) is faster than DDP and than FSDP over both nodes;
  - the README's generated table equals the one rebuilt here."""
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
t, lp, cross, pred = {}, {}, {}, {}
for k, link, src, cluster, ms, link_ms, c, p in rows:
    k = int(k)
    t[k, link, src] = float(ms)
    lp[k, link] = float(link_ms)
    cross[k, link], pred[k, link] = float(c), float(p)
bad = []
need = [(k, l, "replayed") for k in (1, 2, 4) for l in ("none", "fast", "slow")] + [(k, "none", "modeled") for k in (1, 2, 4)]
bad += [f"no {s} step for K = {k}, link {l}" for k, l, s in need if (k, l, s) not in t]
if bad:
    sys.exit("FAIL:\n" + "\n".join(bad))
for k in (1, 2, 4):
    for l in ("fast", "slow"):
        if abs(cross[k, l] - pred[k, l]) > 1e-3:
            bad.append(f"K = {k}, {l} link: {cross[k, l]} MB crossed, the formula says {pred[k, l]}")
ddp = cross[1, "slow"]
if abs(cross[2, "slow"] / ddp - 2 / 3) > 1e-3:
    bad.append(f"one group per node crosses {cross[2, 'slow']} MB, not 2/3 of DDP's {ddp}")
if not (1.25 < cross[4, "slow"] / ddp <= 1.5 + 1e-4):
    bad.append(f"FSDP over both nodes crosses {cross[4, 'slow']} MB: {cross[4, 'slow'] / ddp:.4f} x DDP's, not in (1.25, 1.5]")
slow = {k: t[k, "slow", "replayed"] for k in (1, 2, 4)}
print("replayed with the slow link: " + ", ".join(f"K = {k} {slow[k]:.1f} ms" for k in slow))
print("modeled on 2 nodes of 2 H100s: " + ", ".join(f"K = {k} {t[k, 'none', 'modeled']:.3f} ms" for k in (1, 2, 4)))
if not (slow[2] < slow[1] and slow[2] < slow[4]):
    bad.append("with the slow link, one group per node is not the fastest replayed step")
name = {1: "1 (DDP)", 2: "2 (a group per node)", 4: "4 (FSDP over both nodes)"}
lines = ["| K | MB per rank to the other node per step: counted (formula) | replayed, no link | fast link: replayed / predicted | slow link: replayed / predicted | modeled on 2 nodes of 2 H100s |",
         "|---|---|---|---|---|---|"]
for k in (1, 2, 4):
    b = t[k, "none", "replayed"]
    lines.append(f"| {name[k]} | {cross[k, 'slow']:.2f} ({pred[k, 'slow']:.2f}) | {b:.1f} ms | "
                 f"{t[k, 'fast', 'replayed']:.1f} / {b + lp[k, 'fast']:.1f} ms | "
                 f"{t[k, 'slow', 'replayed']:.1f} / {b + lp[k, 'slow']:.1f} ms | {t[k, 'none', 'modeled']:.3f} ms |")
readme = open(sys.argv[2]).read().split("\n")
start = readme.index("<!-- table: hsdp_replay -->") + 1
table = readme[start:readme.index("<!-- end table -->", start)]
if table != lines:
    bad.append("the README's table differs from its recomputation:\n" + "\n".join(table) + "\nrecomputed:\n" + "\n".join(lines))
if bad:
    print("FAIL:\n" + "\n".join(bad))
    sys.exit(1)
