#!/usr/bin/env python3
"""check_replay.py: the pipeline's schedules and replays against timelines
simulated here, from the program's printed output only.

    check_replay.py zbh1 SHOW
        SHOW: `pipeline --show-schedule --schedule zbh1` (M >= P). Each
        stage's order of F, B and W simulated here with unequal times: every
        stage idles (P-1) max(T_B, T_F + max(0, T_B - T_W)) (the fill: a
        forward per stage ahead, the cool-down's wait for each B covered by
        a W as long; the last backward crosses P-1 stages one B at a time),
        and the step is M (T_F + T_B + T_W) plus that.
    check_replay.py terapipe SHOW LOG BUBBLE_CSV GANTT_CSV
        A terapipe run with --bubble-csv, --gantt-csv and --replay P, and
        SHOW its --show-schedule. Every slice of a stage lasts the same in
        the replay (its layers' time per slice); the replays' busy time per
        stage is the run's with its action times, within 5 % (the replay
        from layer times is not compared with the run: its times are taken
        apart from the run, and a load shifts them by more than the factor
        K a wrong normalisation would); the replay at P stages simulated here from its slice times
        (messages free) gives its step and bubble; with --balance, the
        slices the header names are the cuts at k/K of the FLOPs computed
        here from the model line (a token's matmuls 2 x the layer's weights,
        its attention 4 H hd per key it reads, causal: token t reads t + 1).
Prints what differed; exit 1 if anything did.
"""
import csv
import re
import sys


def orders(show):
    """each stage's compute actions in order, as (op, unit): unit = micro-batch x K + slice"""
    K = int((re.search(r"(\d+) token slices per micro-batch", show) or [None, 1])[1])
    rows = {}
    for line in show.splitlines():
        m = re.match(r"^  stage (\d+) +(.*)$", line)
        if m:
            rows[int(m.group(1))] = [(op, int(mb) * K + (ord(s) - ord("a") if s else 0))
                                     for op, mb, s in re.findall(r"([FBW])(\d+)([a-z]?)", m.group(2))]
    return [rows[s] for s in sorted(rows)]


def simulate(order, cost):
    """order: per stage [(op, unit)]; cost(stage, op) seconds. A forward waits for the stage
    before, a backward for the stage after; each stage runs its list in order. (step, busy)"""
    P, end, clock, pc, busy = len(order), {}, [0.0] * len(order), [0] * len(order), [0.0] * len(order)
    while any(pc[s] < len(order[s]) for s in range(P)):
        moved = False
        for s in range(P):
            while pc[s] < len(order[s]):
                op, u = order[s][pc[s]]
                dep = ("F", s - 1, u) if op == "F" and s > 0 else ("B", s + 1, u) if op == "B" and s < P - 1 else None
                if dep and dep not in end:
                    break
                d = cost(s, op)
                clock[s] = end[(op, s, u)] = max(clock[s], end[dep] if dep else 0.0) + d
                busy[s] += d
                pc[s] += 1
                moved = True
        if not moved:
            sys.exit("error: the printed lists deadlock")
    return max(clock), busy


def zbh1(show_path):
    order = orders(open(show_path).read())
    P, bad = len(order), []
    M = sum(op == "F" for op, _ in order[0])
    times = [(tf, tb, tw) for tf in (0.5, 1, 2) for tb in (0.5, 1, 2) for tw in (0.5, 1.5)]
    for tf, tb, tw in times:
        step, busy = simulate(order, lambda s, op: {"F": tf, "B": tb, "W": tw}[op])
        want = (P - 1) * max(tb, tf + max(0, tb - tw))
        if abs(step - M * (tf + tb + tw) - want) > 1e-9:
            bad.append("T_F %g T_B %g T_W %g: step %g, M (T_F + T_B + T_W) + idle = %g"
                       % (tf, tb, tw, step, M * (tf + tb + tw) + want))
        for s in range(P):
            if abs(step - busy[s] - want) > 1e-9:
                bad.append("T_F %g T_B %g T_W %g: stage %d idles %g, (P-1) max(T_B, T_F + max(0, T_B - T_W)) = %g"
                           % (tf, tb, tw, s, step - busy[s], want))
    return bad, ("zbh1 %d stages x %d micro-batches: every stage idles (P-1) max(T_B, T_F + max(0, T_B - T_W)) "
                 "at %d sets of times" % (P, M, len(times)))


def balanced_cuts(log):
    m = re.search(r"model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), vocab \d+, "
                  r"seq (\d+)", log)
    C, _, H, KV, hd, F, T = (int(x) for x in m.groups())
    a = 2.0 * (C * hd * (H + 2 * KV) + hd * H * C + 3 * C * F)   # matmuls per token
    b = 4.0 * H * hd                                             # attention per key read
    cost = lambda t: a * t + b * t * (t + 1) / 2                 # tokens [0, t)
    return T, lambda K: [0] + [min(range(1, T), key=lambda t: abs(cost(t) - k * cost(T) / K)) for k in range(1, K)] + [T]


def terapipe(show_path, log_path, bubble_path, gantt_path):
    order, log, bad = orders(open(show_path).read()), open(log_path).read(), []
    P = len(order)
    head = re.search(r"cut into (\d+) token slices, run in order \(([^)]+)\): ((?:\[\d+, \d+\)[ ;])+)", log)
    K, cuts = int(head.group(1)), [int(x) for x in re.findall(r"\[(\d+),", head.group(3))]
    if head.group(2) == "equal FLOPs":
        T, want = balanced_cuts(log)
        if cuts + [T] != want(K):
            bad.append("balanced slices start at %s, equal FLOPs here at %s" % (cuts, want(K)[:-1]))
    busy = [float(x) for x in re.findall(r"^ +stage \d+: busy ([0-9.]+) \+", log, re.M)]
    rows = list(csv.DictReader(open(bubble_path)))
    for src, lo, hi in (("replay_actions", 0.95, 1.05),):
        r = next(r for r in rows if r["source"] == src and int(r["stages"]) == P)
        got = (1 - float(r["bubble"])) * float(r["step_ms"])
        if not lo * sum(busy) / P <= got <= hi * sum(busy) / P:
            bad.append("%s: busy per stage (1 - bubble) x step = %.3f ms, the run's stages %.3f ms"
                       % (src, got, sum(busy) / P))
    times = {}
    for g in csv.DictReader(open(gantt_path)):
        if g["source"] == "replayed" and int(g["stages"]) == P:
            times.setdefault((int(g["stage"]), g["op"]), []).append(float(g["end_ms"]) - float(g["start_ms"]))
    for (s, op), d in sorted(times.items()):
        if max(d) - min(d) > 2e-4:
            bad.append("stage %d: the replay's %s of a slice lasts from %.4f to %.4f ms, not one time per slice"
                       % (s, op, min(d), max(d)))
    step, sbusy = simulate(order, lambda s, op: sum(times[(s, op)]) / len(times[(s, op)]))
    r = [r for r in rows if r["source"] == "replay_layers" and int(r["stages"]) == P][-1]
    bubble = sum(1 - b / step for b in sbusy) / P
    if abs(step - float(r["step_ms"])) > 1e-3 + 1e-5 * step or abs(bubble - float(r["bubble"])) > 2e-5:
        bad.append("replay at %d stages: step %s ms and bubble %s, simulated here from its slice times %.3f ms, %.5f"
                   % (P, r["step_ms"], r["bubble"], step, bubble))
    return bad, ("terapipe %d stages x %d slices (%s, cuts %s): one time per slice, busy as the run's, "
                 "the replay's step %.3f ms and bubble %.5f as simulated here" % (P, K, head.group(2), cuts, step, bubble))


if len(sys.argv) == 3 and sys.argv[1] == "zbh1":
    bad, ok = zbh1(sys.argv[2])
elif len(sys.argv) == 6 and sys.argv[1] == "terapipe":
    bad, ok = terapipe(*sys.argv[2:])
else:
    sys.exit(__doc__)
for m in bad[:10]:
    print("  " + m)
if bad:
    sys.exit("error: %d numbers disagree" % len(bad))
print(ok)
