#!/usr/bin/env python3
"""check_lecture_figures.py: the data of the lectures' figures, checked
against computations of their own (not the suite's code).

    check_lecture_figures.py ring CSV       02's ring_steps.csv
    check_lecture_figures.py mesh CSV       10's mesh.csv
    check_lecture_figures.py llama3 CSV     06's llama3_failures.csv
    check_lecture_figures.py overlap CSV [TRACE]   03's ddp_overlap.csv or 04's fsdp_overlap.csv
    check_lecture_figures.py fedavg CSV     03's fedavg_round.csv
    check_lecture_figures.py roofline CSV [HFU H100]   01's roofline.csv

ring: 2(P-1) steps, every rank sends once per step to rank+1 and receives
  what rank-1 sent; replaying the sends on sets of contributors, every
  reduce-scatter message adds contributions the receiver does not hold yet
  (nothing added twice), after P-1 steps each chunk is complete on exactly
  one rank, and after the all-gather on every rank.
mesh: rank = ((dp_i pp + pp_i) cp + cp_i) tp + tp_i; each axis's group of a
  rank is exactly the ranks differing from it only on that axis, ordered by
  that coordinate; every rank is in one group of each kind, of the axis's size.
llama3: the causes sum to 419; M = 54 days / 466; Young's interval is
  sqrt(2 delta M), Daly's his formula, every goodput Daly's W / T(tau), and
  the model curve peaks within one grid step of Daly's interval.
overlap: every interval lies inside its rank's step and ends after it
  starts; compute intervals of a rank do not overlap; with TRACE (the
  Perfetto JSON it came from), every interval is a slice of the trace.
fedavg: each client's local time is E n_k / s_k, dropped exactly when over
  the deadline; a broadcast and an upload take the weights' bytes over the
  link's speed; the phases follow one another (broadcast, local steps,
  upload), the average starts when the last upload ends (or at the
  deadline), and the next round starts when it ends.
roofline: each kernel's intensity is 2 m n k / (bytes of A, B and C once)
  (the triad's 2 / 12), its roof min(peak, bandwidth x intensity), the
  triad's FLOP/s its bandwidth / 6, the H100's bandwidth the data sheet's,
  and with HFU and H100 (the sweeps it came from) every kernel's FLOP/s and
  peak those of its row there. (A kernel may sit above the memory roof: a
  small matrix lives in cache, and the roof counts main memory.)
Prints what differed; exit 1 if anything did.
"""
import csv
import json
import math
import sys

bad = []


def fail(msg):
    bad.append(msg)
    print("FAIL: " + msg)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def ring(path):
    rs = rows(path)
    P = 1 + max(int(r["rank"]) for r in rs)
    steps = sorted({int(r["step"]) for r in rs})
    if steps != list(range(1, 2 * (P - 1) + 1)):
        fail(f"steps {steps}, not 1..2(P-1) = {2 * (P - 1)} for P = {P}")
    have = [[{q} for _ in range(P)] for q in range(P)]   # have[rank][chunk]: whose contributions it holds
    for s in steps:
        at = {int(r["rank"]): r for r in rs if int(r["step"]) == s}
        if sorted(at) != list(range(P)):
            fail(f"step {s}: ranks {sorted(at)} send, not each of 0..{P - 1} once")
            continue
        phase = "reduce-scatter" if s <= P - 1 else "all-gather"
        new = [[set(c) for c in h] for h in have]
        for q, r in at.items():
            c, to = int(r["send_chunk"]), int(r["to"])
            if r["phase"] != phase:
                fail(f"step {s} rank {q}: phase {r['phase']}, expected {phase}")
            if to != (q + 1) % P:
                fail(f"step {s} rank {q} sends to {to}, not its right neighbour {(q + 1) % P}")
            left = at[(q - 1) % P]
            if int(r["from"]) != (q - 1) % P or int(r["recv_chunk"]) != int(left["send_chunk"]):
                fail(f"step {s} rank {q} receives chunk {r['recv_chunk']} from {r['from']}, but rank "
                     f"{(q - 1) % P} sent chunk {left['send_chunk']}")
            if phase == "reduce-scatter":
                twice = have[q][c] & have[to][c]
                if twice:
                    fail(f"step {s}: rank {to} adds chunk {c} from rank {q} holding ranks {sorted(twice)}' "
                         "contributions a second time")
                new[to][c] |= have[q][c]
            else:
                if len(have[q][c]) != P:
                    fail(f"step {s}: rank {q} forwards chunk {c} incomplete ({sorted(have[q][c])})")
                new[to][c] = set(have[q][c])
        have = new
        if s == P - 1:
            for c in range(P):
                owners = [q for q in range(P) if len(have[q][c]) == P]
                if len(owners) != 1:
                    fail(f"after the reduce-scatter chunk {c} is complete on ranks {owners}, not exactly one")
    for q in range(P):
        for c in range(P):
            if len(have[q][c]) != P:
                fail(f"at the end rank {q} holds chunk {c} summed over {sorted(have[q][c])} only")
    print(f"ring: P = {P}, {len(steps)} steps; every chunk summed once per rank, complete everywhere at the end")


AXES = ["tp", "cp", "pp", "dp"]


def mesh(path):
    rs = rows(path)
    W = len(rs)
    size = {a: 1 + max(int(r[a]) for r in rs) for a in AXES}
    if math.prod(size.values()) != W:
        fail(f"sizes {size} do not multiply to the {W} ranks")
    coord = {}
    for r in rs:
        c = {a: int(r[a]) for a in AXES}
        want = ((c["dp"] * size["pp"] + c["pp"]) * size["cp"] + c["cp"]) * size["tp"] + c["tp"]
        if int(r["rank"]) != want:
            fail(f"rank {r['rank']} sits at {c}, which is rank {want}")
        coord[int(r["rank"])] = c
    for a in AXES:
        groups = {}
        for r in rs:
            q = int(r["rank"])
            want = sorted((p for p in coord if all(coord[p][b] == coord[q][b] for b in AXES if b != a)),
                          key=lambda p: coord[p][a])
            got = [int(x) for x in r[a + "_members"].split()]
            if got != want:
                fail(f"rank {q}: {a} group {got}, expected {want}")
            if len(got) != size[a]:
                fail(f"rank {q}: {a} group of {len(got)}, not {size[a]}")
            groups.setdefault(tuple(sorted(got)), set()).add(int(r[a + "_group"]))
        member_of = {}
        for g in groups:
            for p in g:
                member_of[p] = member_of.get(p, 0) + 1
        if any(member_of.get(p, 0) != 1 for p in coord):
            fail(f"{a}: a rank in {[p for p in coord if member_of.get(p, 0) != 1]} is not in exactly one group")
        numbers = [n for s in groups.values() for n in s]
        if any(len(s) != 1 for s in groups.values()) or len(set(numbers)) != len(groups):
            fail(f"{a}: group numbers {groups} are not one per group")
        print(f"mesh: {a}: {len(groups)} groups of {size[a]}")


def daly_goodput(tau, delta, restart, M):
    return tau / (M * math.exp(restart / M) * (math.exp((tau + delta) / M) - 1))


def llama3(path):
    rs = rows(path)
    n = sum(int(r["interruptions"]) for r in rs if r["kind"] == "cause")
    if n != 419:
        fail(f"the causes sum to {n}, the paper's table to 419")
    M = 54 * 86400 / 466
    for d in sorted({float(r["delta_s"]) for r in rs if r["kind"] == "model"}):
        sel = [r for r in rs if r["delta_s"] and float(r["delta_s"]) == d]
        for r in sel:
            if abs(float(r["mtbf_s"]) - M) > 1e-3:
                fail(f"delta {d}: M = {r['mtbf_s']}, not 54 days / 466 = {M:.3f}")
            R = float(r["restart_s"])
            tau, g = float(r["interval_s"]), float(r["goodput"])
            if abs(daly_goodput(tau, d, R, M) - g) > 1e-5:
                fail(f"delta {d}: goodput {g} at {tau} s, Daly's formula {daly_goodput(tau, d, R, M):.6f}")
        young = [float(r["interval_s"]) for r in sel if r["kind"] == "young"]
        daly = [float(r["interval_s"]) for r in sel if r["kind"] == "daly"]
        ty = math.sqrt(2 * d * M)
        td = ty * (1 + math.sqrt(d / (2 * M)) / 3 + d / (18 * M)) - d
        if len(young) != 1 or abs(young[0] - ty) > 1e-5 * ty:
            fail(f"delta {d}: Young's interval {young}, sqrt(2 delta M) = {ty:.6g}")
        if len(daly) != 1 or abs(daly[0] - td) > 1e-5 * td:
            fail(f"delta {d}: Daly's interval {daly}, his formula {td:.6g}")
        curve = sorted((float(r["interval_s"]), float(r["goodput"])) for r in sel if r["kind"] == "model")
        best = max(range(len(curve)), key=lambda i: curve[i][1])
        step = curve[1][0] / curve[0][0]
        if daly and not (curve[best][0] / step <= daly[0] <= curve[best][0] * step):
            fail(f"delta {d}: the curve peaks at {curve[best][0]:.4g} s, Daly's interval {daly[0]:.4g} s")
        print(f"llama3: delta {d:g} s: Young {ty:.1f} s, Daly {td:.1f} s, goodput {daly_goodput(td, d, 600, M):.4f}")


def overlap(path, trace=None):
    rs = rows(path)
    slices = set()
    if trace:
        with open(trace) as f:
            ev = json.load(f)["traceEvents"]
        for e in ev:
            if e.get("ph") == "X":
                slices.add((e["pid"], e["name"].replace(",", " "), round(e["ts"], 3), round(e["dur"], 3)))
    ranks = sorted({int(r["rank"]) for r in rs})
    for q in ranks:
        mine = [r for r in rs if int(r["rank"]) == q]
        steps = [r for r in mine if r["kind"] == "step"]
        if len(steps) != 1:
            fail(f"rank {q}: {len(steps)} step rows, not 1")
            continue
        s0, s1 = float(steps[0]["start_ms"]), float(steps[0]["end_ms"])
        comp = []
        for r in mine:
            a, b = float(r["start_ms"]), float(r["end_ms"])
            if b < a or a < s0 - 1e-3 or b > s1 + 1e-3:
                fail(f"rank {q}: {r['kind']} {r['name']} [{a}, {b}] outside the step [{s0}, {s1}] or reversed")
            if r["kind"] == "compute":
                comp.append((a, b, r["name"]))
            if trace and r["kind"] != "step":
                key = (q, r["name"], round(float(r["ts_us"]), 3), round(float(r["dur_us"]), 3))
                if key not in slices:
                    fail(f"rank {q}: {r['kind']} {r['name']} at {r['ts_us']} us is no slice of {trace}")
        comp.sort()
        for (a0, b0, n0), (a1, b1, n1) in zip(comp, comp[1:]):
            if a1 < b0 - 1e-3:
                fail(f"rank {q}: compute {n0} and {n1} overlap")
        ncomm = sum(r["kind"] == "comm" for r in mine)
        if ncomm == 0:
            fail(f"rank {q}: no communication interval")
        print(f"overlap: rank {q}: step {s1 - s0:.2f} ms, {len(comp)} compute and {ncomm} communication intervals inside it")


def fedavg(path):
    rs = rows(path)
    E, D = None, None
    rounds = sorted({int(r["round"]) for r in rs})
    t = 0.0
    for rd in rounds:
        mine = [r for r in rs if int(r["round"]) == rd]
        clients = sorted({int(r["client"]) for r in mine if r["client"] != ""})
        last = t
        for k in clients:
            ph = {r["phase"]: r for r in mine if r["client"] != "" and int(r["client"]) == k}
            r = ph["local"]
            E, D = int(r["local_epochs"]), float(r["deadline"])
            secs = E * int(r["samples"]) / float(r["speed"])
            if abs(secs - float(r["seconds"])) > 1e-6 * secs:
                fail(f"round {rd} client {k}: {r['seconds']} s, E n_k / s_k = {secs:.6g}")
            late = D > 0 and secs > D
            if int(r["dropped"]) != late:
                fail(f"round {rd} client {k}: dropped {r['dropped']} with {secs:.4g} s against deadline {D}")
            b = ph["broadcast"]
            x = int(b["weight_bytes"]) / (float(b["link_mbps"]) * 1e6)
            for name in ("broadcast", "upload"):
                if name in ph and abs(float(ph[name]["end"]) - float(ph[name]["start"]) - x) > 1e-5:
                    fail(f"round {rd} client {k}: {name} takes {float(ph[name]['end']) - float(ph[name]['start']):.6g} s, "
                         f"{b['weight_bytes']} bytes at {b['link_mbps']} MB/s take {x:.6g}")
            if abs(float(b["start"]) - t) > 1e-6:
                fail(f"round {rd} client {k}: broadcast starts at {b['start']}, the round at {t}")
            if abs(float(r["start"]) - float(b["end"])) > 1e-6:
                fail(f"round {rd} client {k}: local steps start at {r['start']}, not after the broadcast")
            end = float(r["start"]) + (min(secs, D) if late else secs)
            if abs(float(r["end"]) - end) > 1e-6 * max(1, end):
                fail(f"round {rd} client {k}: local steps end at {r['end']}, expected {end:.6g}")
            if late:
                if "upload" in ph:
                    fail(f"round {rd} client {k}: dropped, yet uploads")
                last = max(last, t + float(b["end"]) - float(b["start"]) + D)
            else:
                u = ph["upload"]
                if abs(float(u["start"]) - float(r["end"])) > 1e-6:
                    fail(f"round {rd} client {k}: upload starts at {u['start']}, not when its steps end")
                last = max(last, float(u["end"]))
        avg = [r for r in mine if r["phase"] == "average"]
        if len(avg) != 1 or abs(float(avg[0]["start"]) - last) > 1e-6 * max(1, last):
            fail(f"round {rd}: the average starts at {[a['start'] for a in avg]}, the last upload (or the deadline) ends at {last:.6g}")
            return
        t = float(avg[0]["end"])
        print(f"fedavg: round {rd}: {len(clients)} clients, average at {last:.2f} s")


def roofline(path, hfu=None, h100=None):
    rs = rows(path)
    src = {}
    for machine, f in (("CPU", hfu), ("H100", h100)):
        for r in rows(f) if f else []:
            src[(machine, r["variant"], r["dtype"], r["m"])] = r
    for r in rs:
        m, n, k = (int(r[x]) for x in "mnk")
        es = {"fp32": 4, "tf32": 4, "bf16": 2}[r["dtype"]]
        intensity = 2 / 12 if r["variant"] == "triad" else 2 * m * n * k / (es * (m * k + k * n) + 4 * m * n)
        if abs(float(r["flops_per_byte"]) - intensity) > 1e-4 * intensity:
            fail(f"{r['machine']} {r['variant']} {m}: intensity {r['flops_per_byte']}, expected {intensity:.6g}")
        roof = min(float(r["peak_tflops"]), float(r["mem_tbps"]) * intensity)
        if abs(float(r["roof_tflops"]) - roof) > 1e-4 * roof:
            fail(f"{r['machine']} {r['variant']} {m}: roof {r['roof_tflops']}, min(peak, bandwidth x intensity) = {roof:.6g}")
        if r["variant"] == "triad" and abs(float(r["tflops"]) - float(r["mem_tbps"]) / 6) > 1e-4 * float(r["tflops"]):
            fail(f"the triad's {r['tflops']} TFLOP/s is not its bandwidth / 6 = {float(r['mem_tbps']) / 6:.6g}")
        if r["machine"] == "H100" and abs(float(r["mem_tbps"]) - 3.35) > 1e-9:
            fail(f"H100 bandwidth {r['mem_tbps']} TB/s, the data sheet's 3.35")
        if r["variant"] != "triad" and src:
            want = src.get((r["machine"], r["variant"], r["dtype"], r["m"]))
            if want is None:
                fail(f"{r['machine']} {r['variant']} {r['dtype']} {m}: in no source CSV")
            elif abs(float(want["tflops"]) - float(r["tflops"])) > 1e-5 * float(want["tflops"]) or \
                    abs(float(want["peak_tflops"]) - float(r["peak_tflops"])) > 1e-5 * float(want["peak_tflops"]):
                fail(f"{r['machine']} {r['variant']} {m}: {r['tflops']} of {r['peak_tflops']} TFLOP/s, "
                     f"its source says {want['tflops']} of {want['peak_tflops']}")
    if src and len([r for r in rs if r["variant"] != "triad"]) != len(src):
        fail(f"{len(rs)} rows for {len(src)} kernels of the sources")
    print(f"roofline: {len(rs)} kernels at their intensities and roofs" + (", each its source's" if src else ""))


kind = sys.argv[1]
{"ring": ring, "mesh": mesh, "llama3": llama3, "overlap": overlap, "fedavg": fedavg, "roofline": roofline}[kind](*sys.argv[2:])
sys.exit(1 if bad else 0)
