#!/usr/bin/env python3
"""check_buckets_replay.py CSV README: chapter 03's bucket sweep from its
records (rows bucket_mb,overlap,source,cluster,step_ms), recomputed here
without the table's generator: every bucket size has its four steps
(replayed and modeled, overlap on and off), the README's table equals the
one rebuilt here, and the README's sentence on where the best buckets lie
(the fastest step with overlap on, per source) says what the data says."""
import csv
import sys

t = {}
for b, o, src, cluster, ms in csv.reader(open(sys.argv[1])):
    t[float(b), o, src] = float(ms)
sizes = sorted({k[0] for k in t})
bad = [f"bucket {b} MiB has no {src} step with overlap {o}" for b in sizes
       for o in ("on", "off") for src in ("replayed", "modeled") if (b, o, src) not in t]
if bad:
    sys.exit("FAIL:\n" + "\n".join(bad))


def where(b):
    return "the smallest" if b == sizes[0] else "the largest: one bucket" if b == sizes[-1] else "between the extremes"


best = {src: min(sizes, key=lambda b: t[b, "on", src]) for src in ("replayed", "modeled")}
lines = ["| bucket (MiB) | replayed, overlap on (ms) | replayed, off (ms) | modeled H100, on (ms) | modeled H100, off (ms) |",
         "|---|---|---|---|---|"]
for b in sizes:
    lines.append(f"| {b:g} | {t[b, 'on', 'replayed']:.1f} | {t[b, 'off', 'replayed']:.1f} | "
                 f"{t[b, 'on', 'modeled']:.4f} | {t[b, 'off', 'modeled']:.4f} |")
lines.append(f"| best | {best['replayed']:g} MiB ({where(best['replayed'])}) | | "
             f"{best['modeled']:g} MiB ({where(best['modeled'])}) | |")
readme = open(sys.argv[2]).read()
rows = readme.split("\n")
start = rows.index("<!-- table: ddp_buckets_replay -->") + 1
table = rows[start:rows.index("<!-- end table -->", start)]
if table != lines:
    bad.append("the README's table differs from its recomputation:\n" + "\n".join(table)
               + "\nrecomputed:\n" + "\n".join(lines))
inside = [src for src in best if where(best[src]) == "between the extremes"]
says_neither = "Neither source has its best bucket between the extremes" in " ".join(readme.split())
if says_neither == bool(inside):
    bad.append(f"the README {'says' if says_neither else 'does not say'} that neither source has its best "
               f"bucket between the extremes; between them: {inside or 'none'}")
for src in best:
    b = best[src]
    print(f"{src}: best bucket {b:g} MiB ({where(b)}), {t[b, 'on', src]:g} ms; "
          f"extremes {t[sizes[0], 'on', src]:g} ms at {sizes[0]:g} MiB, {t[sizes[-1], 'on', src]:g} ms at {sizes[-1]:g} MiB")
if bad:
    print("FAIL:\n" + "\n".join(bad))
    sys.exit(1)
