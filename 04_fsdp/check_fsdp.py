#!/usr/bin/env python3
"""check_fsdp.py: the memory and bytes that 04_fsdp/fsdp and 05_hsdp/hsdp
report, computed again here from the model's shape and the run's flags.

    check_fsdp.py LOG CSV [the run's flags: --zero Z --shard K --dtype D --micro M
                           --prefetch K --reshard-after-forward on|off
                           --reshard-after-backward on|off --no-overlap
                           --node-size G --inter-gbps B --inter-us A]

From the header (model shape, world size) this script lays out the units
(embedding V C; each layer 2 C + C H hd + 2 C KV hd + H hd C + 3 C F; head
C + C V), cuts each into N pieces of ceil(count / N), and derives what each
ZeRO stage holds per rank (fp32 gradients; w = 2 or 4 bytes per weight):

  DDP   weights w P, gradients 4 P, Adam 12 P (+ a bf16 wire copy 2 P)
  1     weights w P, gradients 4 N S + 4 S (whole padded + shard), Adam 12 S
  2     weights w P, gradients 4 S + slots x 4 N per_max, Adam 12 S
  3     gathered-weight slots x w N per_max, gradients as 2, Adam 12 S
  comm  reduce-scatter receive slots (and bf16 wire copies), the bounce
        buffer of ZeRO-1/2 when a unit does not split evenly, the replicas'
        bf16 copy of the shard

(S = sum of the pieces, per_max the largest; slots from the overlap and
prefetch rules of fsdp.h) and the bytes each rank sends per step by
collective (bus bytes). It checks the program's memory table (measured and
predicted), its bytes table, every step line's note and the CSV's sent_mb
against them; with the link model (05_hsdp), the bytes that cross between
simulated nodes and the alpha-beta time they add. Prints what differed; exit 1 if anything did.
"""
import csv
import math
import re
import sys


def flag(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    log_path, csv_path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    log = open(log_path).read()
    m = re.search(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
                  r"vocab (\d+), seq (\d+)", log, re.M)
    C, L, H, KV, hd, F, V, T = map(int, m.groups())
    world = int(re.search(r"/ \((\d+) x peak\)", log).group(1))
    zero = int(flag(args, "--zero", "3"))
    N = int(flag(args, "--shard", str(world)))
    R = world // N
    w = 2 if flag(args, "--dtype", "fp32") == "bf16" else 4
    micro = int(flag(args, "--micro", "1"))
    prefetch = int(flag(args, "--prefetch", "1"))
    reshard = flag(args, "--reshard-after-forward", "on") == "on"
    kept = flag(args, "--reshard-after-backward", "on") == "off"   # every unit gathered once per step
    overlap = "--no-overlap" not in args

    layer = 2 * C + C * H * hd + 2 * C * KV * hd + H * hd * C + 3 * C * F
    count = [V * C] + [layer] * L + [C + C * V]
    U, P = len(count), sum(count)
    per = [(c + N - 1) // N for c in count]
    S, pmax = sum(per), max(per)
    uneven = any(c % N for c in count)

    # what each kind holds (bytes per rank)
    rs = min(U, 2 if overlap else 1)
    gslots = (min(U, 3) if overlap else 1) if zero >= 2 and N > 1 else 0
    wslots = (min(U, 1 + prefetch) if reshard and not kept else U) if zero == 3 else 0
    kind = {"params": 0, "grads": 0, "optim": 0, "comm": 0}
    if zero == 0:
        kind.update(params=w * P, grads=4 * P, optim=12 * P, comm=2 * P if w == 2 and N > 1 else 0)
    else:
        kind["params"] = w * P if zero <= 2 else wslots * N * pmax * w
        kind["grads"] = 4 * S + (4 * N * S if zero == 1 and N > 1 else 0) + gslots * N * pmax * 4
        kind["optim"] = 12 * S
        if N > 1:
            kind["comm"] = rs * pmax * 4 + (rs * pmax * (N + 1) * 2 if w == 2 else 0)
            if zero <= 2 and uneven:
                kind["comm"] += N * pmax * w
        if R > 1 and w == 2:
            kind["comm"] += 2 * S
    state = {0: (w + 16) * P, 1: (w + 4) * P * (N > 1) + 16 * P / N, 2: w * P + 16 * P / N, 3: 16 * P / N}[zero]
    paper = {0: 16 * P, 1: 4 * P + 12 * P / N, 2: 2 * P + 14 * P / N, 3: 16 * P / N}[zero]
    rope = T * hd * 4

    # bytes per rank and step, by collective
    sent = {}
    if zero == 0:
        if N > 1:
            sent["all-reduce"] = 2 * (N - 1) / N * P * w
    else:
        if N > 1:
            sent["reduce-scatter"] = (1 if zero == 1 else micro) * (N - 1) * S * w
            if zero <= 2:
                sent["all-gather"] = (N - 1) * S * w
            elif kept:
                sent["all-gather"] = (N - 1) * S * w
            else:
                back = S - per[-1] if reshard else 0
                sent["all-gather"] = micro * (N - 1) * (S + back) * w
        if R > 1:
            sent["all-reduce across groups"] = 2 * (R - 1) / R * S * w
    total = sum(sent.values())

    bad = []

    def near(what, got, want, tol):
        if abs(got - want) > tol:
            bad.append("%s: reported %.6g, computed %.6g (off by %.3g)" % (what, got, want, got - want))

    # the memory table
    rows = {k: (a, b) for k, a, b in re.findall(
        r"^ {9}(params|grads|optim|comm|acts|total) +([0-9.]+)(?: +([0-9.]+))?", log, re.M)}
    for k, v in kind.items():
        meas, pred = map(float, rows[k])
        near("memory %s, measured (MB)" % k, meas, v / 1e6, 0.0051)
        near("memory %s, predicted (MB)" % k, pred, v / 1e6, 0.0051)
    acts = float(rows["acts"][0]) * 1e6
    tot_meas, tot_pred = map(float, rows["total"])
    near("memory total, predicted (MB)", tot_pred, (sum(kind.values()) + acts + rope) / 1e6, 0.011)
    near("memory total, measured (MB)", tot_meas, (sum(kind.values()) + acts + rope) / 1e6, 0.011)
    peak = float(re.search(r"^memory: +([0-9.]+) MB at most on a rank", log, re.M).group(1))
    near("the summary's memory (MB)", peak, tot_meas, 0.0051)
    m = re.search(r"^ +state .* = ([0-9.]+) MB \(w = (\d)\) \+ buffers ([0-9.]+) MB; the ZeRO paper's .* = "
                  r"([0-9.]+) MB", log, re.M)
    near("state formula (MB)", float(m.group(1)), state / 1e6, 0.0051)
    near("ZeRO paper's formula (MB)", float(m.group(4)), paper / 1e6, 0.0051)

    # the bytes table
    table = {("%s%s" % (k, g)).strip(): (float(a), float(b)) for k, g, a, b in re.findall(
        r"^ {9}(all-reduce|reduce-scatter|all-gather)( across groups)? +([0-9.]+) +([0-9.]+)", log, re.M)}
    if set(table) != set(sent):
        bad.append("bytes table lists %s, computed %s" % (sorted(table), sorted(sent)))
    for k, v in sent.items():
        if k in table:
            near("bytes %s, measured (MB)" % k, table[k][0], v / 1e6, 0.00051)
            near("bytes %s, formula (MB)" % k, table[k][1], v / 1e6, 0.00051)

    # every step's note and CSV row
    notes = re.findall(r"^step +(\d+)/\d+ .*\| sent ([0-9.]+) MB(?: \(gather ([0-9.]+), reduce-scatter ([0-9.]+)"
                       r"(?:, across groups ([0-9.]+))?\))?", log, re.M)
    if not notes:
        bad.append("no step line carries the bytes sent")
    for step, tot, ag, rsb, rep in notes:
        near("step %s: sent (MB)" % step, float(tot), total / 1e6, 0.0051)
        if ag:
            near("step %s: all-gather (MB)" % step, float(ag), sent.get("all-gather", 0) / 1e6, 0.0051)
            near("step %s: reduce-scatter (MB)" % step, float(rsb), sent.get("reduce-scatter", 0) / 1e6, 0.0051)
        if rep:
            near("step %s: across groups (MB)" % step, float(rep), sent["all-reduce across groups"] / 1e6, 0.0051)
    for r in csv.DictReader(open(csv_path)):
        near("CSV step %s: sent_mb" % r["step"], float(r["sent_mb"]), total / 1e6, 0.00051)

    # the link model (05_hsdp): bytes to a ring neighbour on another node, and the time
    # alpha + piece / beta of every ring step in which some message crosses
    G = int(flag(args, "--node-size", "0"))
    if G:
        gbps, us = float(flag(args, "--inter-gbps", "10")), float(flag(args, "--inter-us", "20"))
        node = lambda r: r // G
        shard_next = lambda r: (r // N) * N + (r % N + 1) % N          # world rank of the successor
        rep_next = lambda r: ((r // N + 1) % R) * N + r % N
        shard_bytes = sum(v for k, v in sent.items() if "across" not in k)
        rep_bytes = sent.get("all-reduce across groups", 0)
        cross = sum(shard_bytes * (node(r) != node(shard_next(r))) + rep_bytes * (node(r) != node(rep_next(r)))
                    for r in range(world)) / world
        step = lambda piece: us * 1e-6 + piece / (gbps * 1e9)
        shard_x = any(node(r) != node(shard_next(r)) for r in range(world))
        rep_x = any(node(r) != node(rep_next(r)) for r in range(world))
        link = 0
        for u in range(U):
            piece = per[u] * w
            if N > 1 and shard_x:
                gathers = 1 if zero <= 2 or kept else micro * (1 + (reshard and u != U - 1))
                link += (gathers + (1 if zero == 1 else micro)) * (N - 1) * step(piece)
            if R > 1 and rep_x:
                link += 2 * (R - 1) * step(piece / R)
        m = re.search(r"^link: +per step, ([0-9.]+) MB per rank crossed between nodes \(formula ([0-9.]+)\); "
                      r"the slow links add ([0-9.]+) ms", log, re.M)
        if not m:
            bad.append("no link: line")
        else:
            near("bytes crossing between nodes, measured (MB)", float(m.group(1)), cross / 1e6, 0.00051)
            near("bytes crossing between nodes, formula (MB)", float(m.group(2)), cross / 1e6, 0.00051)
            near("link time by alpha-beta (ms)", float(m.group(3)), link * 1e3, 0.0051)
            print("link model: nodes of %d ranks, %.4f MB per rank cross between nodes, %.3f ms by alpha-beta"
                  % (G, cross / 1e6, link * 1e3))

    print("%s on %d ranks (%d x %d), P = %d in %d units, pieces up to %d: memory %s MB, %.4f MB sent per step %s"
          % (["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"][zero], world, R, N, P, U, pmax,
             " ".join("%s %.3f" % (k, v / 1e6) for k, v in kind.items()), total / 1e6,
             " ".join("(%s %.4f)" % (k, v / 1e6) for k, v in sent.items())))
    for b in bad[:12]:
        print("  " + b)
    if bad:
        sys.exit("error: %d reported numbers disagree with their formulas" % len(bad))
    print("every memory and byte count agrees with its formula")


main()
