#!/usr/bin/env python3
"""check_nd.py: every number 10_nd_llama/train prints about its axes, recomputed.

    check_nd.py LOG CSV [BENCH --peak TFLOPS]
                                 a training run (LOG: its output, CSV: its --csv,
                                 BENCH: its --bench-csv, run with --peak TFLOPS)
    check_nd.py LOG --dry-run    a dry run's per-rank table

A training run: each step's note (the exposed communication of tp, cp and dp)
adds up to the step's exposed communication; the means of the notes over the
timed steps are the "cause" line's; the causes add up to the step time (none
counted twice: what is left over is not negative) and
agree with the shared loop's "mean of steps" and "time" lines; each share is
its part of the step; the bytes per axis add up to their total, which is the
CSV's sent_mb of the last step; and the pipeline's bytes equal 2 M (P V - 1)
messages of mb x seq/cp (/tp with --sp) x dim x the dtype's size, / P ranks;
and the --bench-csv row says the same as the cause line, its MFU and tokens/s
follow from its step time and the FLOP formula, HFU >= MFU (equal without
recomputation), as the loop's mean line. With ZeRO, every rank's bytes on the
context x data group and its weights, gradients and optimizer memory equal
04_fsdp's formulas for its own units (the largest difference over the ranks
is 0 bytes).

A dry run: each rank's parameters from its shard (its stage's layers, its
tensor-parallel slices), weights, gradients and optimizer bytes per
parameter, the activations of the micro-batches the 1F1B schedule holds
(common/model.c's layout), their total, and the step's FLOPs / ranks.
Prints what differed and by how much; exit 1 if anything did.
"""
import csv
import re
import sys

sys.path.insert(0, "tests")
import trainer_log  # noqa: E402


def fl(x):
    return float(x)


def check_run(log, csv_path, ck, bench=None, peak=None):
    steps = re.findall(r"^step +(\d+)/(\d+) \| .*\| comm ([0-9.]+) ms exposed.*\| tp ([0-9.]+) cp ([0-9.]+) "
                       r"dp ([0-9.]+) ms$", log, re.M)
    if not steps:
        sys.exit("error: no step line with a per-axis note")
    ck.header("per step: tp + cp + dp = exposed (ms)")
    for s in steps:
        ck.same("step %s" % s[0], fl(s[3]) + fl(s[4]) + fl(s[5]), fl(s[2]), 0.016)
    c = trainer_log.grab(r"^cause: +compute ([0-9.]+) \(forward ([0-9.]+) \+ backward ([0-9.]+)\) \+ tp ([0-9.]+) "
                         r"\+ cp ([0-9.]+) \+ dp ([0-9.]+) \+ bubble ([0-9.]+) \+ optimizer ([0-9.]+) \+ other "
                         r"(-?[0-9.]+) = ([0-9.]+) ms per step \(means of steps (\d+)-(\d+)", log, "cause").groups()
    comp, fwd, bwd, tp, cp, dp, bub, opt, other, ms = (fl(x) for x in c[:10])
    first, last = int(c[10]), int(c[11])
    ck.header("the causes (ms)")
    ck.same("compute = forward + backward", comp, fwd + bwd, 0.011)
    ck.same("the causes add up to the step", comp + tp + cp + dp + bub + opt + other, ms, 0.05)
    # "other" is what no cause claims: below zero, some time was counted twice
    # (a seam's blocking time both in compute and in its axis)
    ck.same("other is not negative", max(other, 0.0), other, 0.05)
    timed = [s for s in steps if first <= int(s[0]) <= last]
    n = len(timed)
    for i, name, v in ((3, "tp", tp), (4, "cp", cp), (5, "dp", dp)):
        ck.same("%s: the mean of the step notes" % name, sum(fl(s[i]) for s in timed) / n, v, 0.011)
    m = trainer_log.grab(r"^mean of steps \d+-\d+: ([0-9.]+) ms/step \(([0-9.]+) compute \+ ([0-9.]+) exposed comm\)",
                         log, "mean of steps")
    ck.same("the step, as the loop's mean line", ms, fl(m.group(1)), 0.051)
    ck.same("tp + cp + dp = the loop's exposed comm", tp + cp + dp, fl(m.group(3)), 0.02)
    t = trainer_log.grab(r"^time: +forward ([0-9.]+) \+ backward ([0-9.]+) \+ exposed comm ([0-9.]+)"
                         r"(?: \+ pipeline bubble ([0-9.]+))? \+ optimizer ([0-9.]+)", log, "time")
    ck.same("forward, as the loop's time line", fwd, fl(t.group(1)), 0.051)
    ck.same("backward, as the loop's time line", bwd, fl(t.group(2)), 0.051)
    ck.same("bubble, as the loop's time line", bub, fl(t.group(4) or 0), 0.051)
    ck.same("optimizer, as the loop's time line", opt, fl(t.group(5)), 0.051)
    sh = trainer_log.grab(r"^cause: +shares compute ([0-9.]+)% \| tp ([0-9.]+)% \| cp ([0-9.]+)% \| dp ([0-9.]+)% \| "
                          r"bubble ([0-9.]+)% \| optimizer ([0-9.]+)% \| other (-?[0-9.]+)%", log, "shares").groups()
    ck.header("shares (%)")
    for name, got, part in zip(("compute", "tp", "cp", "dp", "bubble", "optimizer", "other"), sh,
                               (comp, tp, cp, dp, bub, opt, other)):
        ck.same(name, fl(got), 100 * part / ms, 0.06 + 100 * 0.01 / ms)
    b = trainer_log.grab(r"^sent: +step (\d+), mean per rank: tp ([0-9.]+) \+ cp ([0-9.]+) \+ pp ([0-9.]+) \+ dp "
                         r"([0-9.]+) = ([0-9.]+) MB", log, "sent").groups()
    ck.header("bytes of the last step (MB per rank)")
    ck.same("tp + cp + pp + dp = the total", sum(fl(x) for x in b[1:5]), fl(b[5]), 3e-6)
    rows = list(csv.DictReader(open(csv_path)))
    row = [r for r in rows if int(r["step"]) == int(b[0])]
    if not row:
        sys.exit("error: the CSV has no row for step %s" % b[0])
    ck.same("the total, as the CSV's sent_mb", fl(b[5]), fl(row[-1]["sent_mb"]), 6e-5)
    # the pipeline's messages, from the header alone
    mesh = trainer_log.grab(r"^nd: +mesh \[tp (\d+), cp (\d+), pp (\d+), dp (\d+)\]", log, "nd").groups()
    T, C, P, D = (int(x) for x in mesh)
    pl = trainer_log.grab(r"^pp: +(\S+) schedule, \d+ stages? x (\d+) chunks?", log, "pp")
    if P > 1:
        cfg = trainer_log.model(log)
        _, micro, mb = trainer_log.batch(log)
        V = int(pl.group(2))
        sp = re.search(r"^tp: .*sequence parallelism on", log, re.M) is not None
        msg = mb * cfg["seq"] // C // (T if sp else 1) * cfg["dim"] * cfg["es"]
        ck.same("pp: 2 M (P V - 1) messages / P", fl(b[3]), 2 * micro * (P * V - 1) * msg / P / 1e6, 6e-7)
    if re.search(r"^dp: .*ZeRO-", log, re.M):
        check_zero(log, ck)
    if bench:
        check_bench(log, bench, peak, ck, (comp, fwd, bwd, tp, cp, dp, bub, opt, other, ms))


def check_zero(log, ck):
    """ZeRO on the mesh: each rank's bytes on the context x data group and its state's
    memory equal 04_fsdp's formulas for its own units (the trainer compares on every
    rank and prints the largest difference)."""
    z = trainer_log.grab(r"^zero: +(ZeRO-\d), sent on the context x data group in step \d+: ([0-9.]+) MB per rank "
                         r"\(rank 0; formula ([0-9.]+)\); largest difference over the ranks (\d+) bytes", log,
                         "zero bytes").groups()
    ck.header("%s: bytes and state memory against the formulas, on every rank" % z[0])
    ck.same("dp bytes of the last step, rank 0 (MB)", fl(z[1]), fl(z[2]), 0)
    ck.same("largest difference over the ranks (bytes)", fl(z[3]), 0, 0)
    m = trainer_log.grab(r"^zero: +state high-water \(rank 0, MB\): weights ([0-9.]+) \(formula ([0-9.]+)\), "
                         r"gradients ([0-9.]+) \(([0-9.]+)\), optimizer ([0-9.]+) \(([0-9.]+)\); largest "
                         r"difference over the ranks and kinds (\d+) bytes", log, "zero memory").groups()
    for i, kind in enumerate(("weights", "gradients", "optimizer")):
        ck.same("%s, rank 0 (MB)" % kind, fl(m[2 * i]), fl(m[2 * i + 1]), 0)
    ck.same("largest difference over ranks and kinds (bytes)", fl(m[6]), 0, 0)


def flops_per_token(c):
    """Model FLOPs per token, forward + backward (common/model.h): 6 x the matmul weights + 12 L H hd T."""
    C, hd, L = c["dim"], c["hd"], c["layers"]
    matmul = L * (2 * C * c["heads"] * hd + 2 * C * c["kv"] * hd + 3 * C * c["ffn"]) + c["vocab"] * C
    return 6 * matmul + 12 * L * c["heads"] * hd * c["seq"]


def check_bench(log, bench_path, peak, ck, cause):
    """The --bench-csv row against the cause line and the MFU formula."""
    comp, fwd, bwd, tp, cp, dp, bub, opt, other, ms = cause
    rows = list(csv.DictReader(open(bench_path)))
    if len(rows) != 1:
        sys.exit("error: %d rows in the bench CSV, expected 1" % len(rows))
    r = rows[0]
    mesh = trainer_log.grab(r"^nd: +mesh \[tp (\d+), cp (\d+), pp (\d+), dp (\d+)\] = (\d+) ranks", log, "nd").groups()
    ck.header("the bench row")
    for i, k in enumerate(("tp", "cp", "pp", "dp")):
        ck.same("bench %s" % k, fl(r[k]), fl(mesh[i]), 0)
    for k, v in (("step_ms", ms), ("tp_ms", tp), ("cp_ms", cp), ("dp_ms", dp), ("pp_ms", bub), ("optimizer_ms", opt)):
        ck.same("bench %s, as the cause line" % k, fl(r[k]), v, 0.0056)
    ck.same("bench compute_ms, as the cause line", fl(r["compute_ms"]), comp, 0.0056)
    # both times printed to 0.0005 ms: the ratio to about 0.001 ms / step
    ck.same("bench bubble = pp_ms / step_ms", fl(r["bubble"]), fl(r["pp_ms"]) / fl(r["step_ms"]),
            5e-5 + 1e-3 / fl(r["step_ms"]))
    c = trainer_log.model(log)
    tokens = int(trainer_log.grab(r"^batch: +\d+ sequences = (\d+) tokens per step", log, "batch").group(1))
    world = int(mesh[4])
    sec = fl(r["step_ms"]) / 1e3
    mfu = 100 * flops_per_token(c) * tokens / sec / (world * peak)
    # the step is printed to 0.0005 ms: what follows from it is as exact, relatively
    # (utilisations carry 6 significant digits, however small against --peak)
    rel = 6e-4 / fl(r["step_ms"])
    ck.same("bench mfu (%), from its step and the formula", fl(r["mfu"]), mfu, (rel + 1e-5) * mfu)
    ck.same("bench tok_s, from its step", fl(r["tok_s"]), tokens / sec, 0.06 + rel * tokens / sec)
    ck.same("bench hfu >= mfu", max(fl(r["hfu"]), fl(r["mfu"])), fl(r["hfu"]), 0)
    if r["recompute"] == "none":
        ck.same("bench hfu = mfu without recomputation", fl(r["hfu"]), fl(r["mfu"]), 0)
    m = trainer_log.grab(r"^mean of steps .*\| MFU ([0-9.]+)%(?: \| HFU ([0-9.]+)%)?", log, "mean of steps")
    # to the digits the mean line prints
    ck.same("bench mfu, as the loop's mean line", fl(r["mfu"]), fl(m.group(1)),
            trainer_log.half_digit(m.group(1)) + 1e-3 * fl(r["mfu"]))
    if m.group(2):
        ck.same("bench hfu, as the loop's mean line", fl(r["hfu"]), fl(m.group(2)),
                trainer_log.half_digit(m.group(2)) + 1e-3 * fl(r["hfu"]))


def shard_params(c, tp, layers, first, last):
    C, hd, V = c["dim"], c["hd"], c["vocab"]
    H = c["heads"] // tp
    KV = c["kv"] // tp if c["kv"] % tp == 0 else 1
    F = c["ffn"] // tp
    n = layers * (2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F)
    if first:
        n += V // tp * C
    if last:
        n += C + V // tp * C
    return n, H, KV, F


def check_dry(log, ck):
    c = trainer_log.model(log)
    D, micro, mb = trainer_log.batch(log)
    tokens = int(trainer_log.grab(r"^batch: +\d+ sequences = (\d+) tokens per step", log, "batch").group(1))
    world = int(trainer_log.grab(r"^MFU: .* / \((\d+) x peak\)", log, "MFU").group(1))
    flops_token = flops_per_token(c)
    L = c["layers"]
    mesh = trainer_log.grab(r"^device: .* mesh tp (\d+) x cp (\d+) x pp (\d+) x dp (\d+)", log, "device").groups()
    T, C, P, D = (int(x) for x in mesh)
    z = int(trainer_log.grab(r"^dry run: .*, zero (\d)", log, "dry run").group(1))
    rows = re.findall(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) "
                      r"+([0-9.]+) +([0-9.]+)$", log, re.M)
    if len(rows) != world:
        sys.exit("error: %d rows in the dry run's table for %d ranks" % (len(rows), world))
    es, N = c["es"], C * D
    ck.header("dry run, per rank (parameters; GB; TFLOP)")
    for r in rows:
        rank, tpi, cpi, ppi = (int(x) for x in r[:4])
        n, H, KV, F = shard_params(c, T, L // P, ppi == 0, ppi == P - 1)
        ck.same("rank %d parameters" % rank, fl(r[5]), n, 0.5)
        w = es * n / (N if z == 3 else 1)
        g = 4 * n / (N if z >= 2 else 1)
        o = 12 * n / (N if z >= 1 else 1)
        held = min(micro, P - ppi) if P > 1 else 1
        toks = mb * c["seq"] / C
        per_token = es * 4 * c["dim"] + 8 + es * (2 * H * c["hd"] + 2 * KV * c["hd"] + 3 * F) + 4 * H
        acts = held * (L // P) * per_token * toks
        ck.same("rank %d weights GB" % rank, fl(r[6]), w / 1e9, 6e-4)
        ck.same("rank %d gradients GB" % rank, fl(r[7]), g / 1e9, 6e-4)
        ck.same("rank %d optimizer GB" % rank, fl(r[8]), o / 1e9, 6e-4)
        ck.same("rank %d activations GB" % rank, fl(r[9]), acts / 1e9, 6e-4)
        ck.same("rank %d total GB" % rank, fl(r[10]), (w + g + o + acts) / 1e9, 1.2e-3)
        ck.same("rank %d TFLOP" % rank, fl(r[11]), flops_token * tokens / world / 1e12, 6e-4)


def main():
    a = sys.argv[1:]
    if len(a) not in (2, 5) or (len(a) == 5 and a[3] != "--peak"):
        sys.exit("usage: check_nd.py LOG CSV [BENCH_CSV --peak TFLOPS] | check_nd.py LOG --dry-run")
    log = open(a[0]).read()
    ck = trainer_log.Checks()
    if a[1] == "--dry-run":
        check_dry(log, ck)
    else:
        check_run(log, a[1], ck, a[2] if len(a) == 5 else None, float(a[4]) * 1e12 if len(a) == 5 else None)
    ck.finish("every number agrees with its sum or formula")


main()
