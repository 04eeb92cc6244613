#!/usr/bin/env python3
"""trace_step.py: one training step of a Chrome trace (common/trace.h's
--trace), every rank's compute and communication intervals on one time
axis, as CSV for the overlap charts (03's ddp_overlap.gp, 04's
fsdp_overlap.gp).

    trace_step.py TRACE.json OUT.csv [--step K] [--prov COLUMNS]

A rank's steps end with its `optimizer` slice on the `compute` track; step
K (default 2: the middle of the three recorded) runs from the end of the
(K-1)-th optimizer slice to the end of the K-th. Slices of the `compute`
track are compute; every track whose name starts with `comm`, `all-gather`
or `all-reduce` is communication (a lane: slices in flight together sit on
separate lanes). The rows are the slices that lie inside their rank's step,
in ms from the earliest step start over the ranks; a slice that crosses the
step's ends is left out and counted on stderr. The trace's own numbers are
kept (ts_us, dur_us) so a check can find each row in the trace.

CSV (replaced): rank,kind,lane,name,start_ms,end_ms,ts_us,dur_us and, with
--prov, the provenance columns (scripts/provenance.sh: COLUMNS is what
prov_cols wrote for the traced run, ending every row)
  kind: step (the rank's step), compute or comm; lane: 0 for compute and
  the step, 1, 2, ... for the communication lanes in the trace's order.
"""
import json
import sys


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit("error: usage: trace_step.py TRACE.json OUT.csv [--step K] [--prov COLUMNS]")
    trace, out, step, prov = args[0], args[1], 2, ""
    rest = args[2:]
    while rest:
        if rest[0] == "--step" and len(rest) > 1:
            step = int(rest[1])
        elif rest[0] == "--prov" and len(rest) > 1:
            prov = rest[1]
        else:
            sys.exit(f"error: unknown argument {rest[0]}")
        rest = rest[2:]
    if step < 2:
        sys.exit("error: --step must be 2 or more (step K starts where step K-1's optimizer ends)")
    with open(trace) as f:
        ev = json.load(f)["traceEvents"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [e for e in ev if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in slices})
    window = {}
    for r in ranks:
        opt = sorted(e["ts"] + e["dur"] for e in slices
                     if e["pid"] == r and tracks[(r, e["tid"])] == "compute" and e["name"] == "optimizer")
        if len(opt) < step:
            sys.exit(f"error: rank {r} has {len(opt)} optimizer slices in {trace}, step {step} needs {step}")
        window[r] = (opt[step - 2], opt[step - 1])
    t0 = min(w[0] for w in window.values())
    rows, crossing = [], 0
    for r in ranks:
        a, b = window[r]
        rows.append([r, "step", 0, "step", (a - t0) / 1e3, (b - t0) / 1e3, a, b - a])
        lanes = []
        for e in sorted((e for e in slices if e["pid"] == r), key=lambda e: (e["ts"], e["tid"])):
            name = tracks[(r, e["tid"])]
            if name == "compute":
                kind, lane = "compute", 0
            elif name.startswith(("comm", "all-gather", "all-reduce")):
                if name not in lanes:
                    lanes.append(name)
                kind, lane = "comm", 1 + lanes.index(name)
            else:
                continue
            s, d = e["ts"], e["dur"]
            if s + d <= a or s >= b:
                continue
            if s < a or s + d > b:
                crossing += 1
                continue
            rows.append([r, kind, lane, e["name"], (s - t0) / 1e3, (s + d - t0) / 1e3, s, d])
    with open(out, "w") as f:
        f.write("rank,kind,lane,name,start_ms,end_ms,ts_us,dur_us"
                + (",cores,ranks,threads,cpu,load_before,load_after,run_s,source" if prov else "") + "\n")
        for r, kind, lane, name, a, b, ts, dur in rows:
            f.write(f"{r},{kind},{lane},{name.replace(',', ' ')},{a:.3f},{b:.3f},{ts:.3f},{dur:.3f}{prov}\n")
    print(f"step {step} of {len(ranks)} ranks from {trace}: {len(rows) - len(ranks)} intervals -> {out}"
          + (f"; {crossing} crossing the step's ends left out" if crossing else ""))


main()
