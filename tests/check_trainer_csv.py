#!/usr/bin/env python3
"""check_trainer_csv.py: every number a trainer reports, recomputed.

    check_trainer_csv.py LOG CSV --peak TFLOPS [--ddp]

LOG is the program's standard output, CSV its --csv file (common/train.h's
columns), TFLOPS the --peak it ran with. From the header the check reads the
tokens per step, the model FLOPs per token and the world size; then, for every
step, it recomputes from the step time:
  tok_s      = tokens per step / (ms / 1000)
  mfu (%)    = 100 x FLOPs per token x tokens / (ms / 1000) / (world x peak)
  hfu        >= mfu (recomputation only adds), and neither above 100
(all relative: the CSV keeps 6 significant digits of a utilisation however
small, so a peak far above the machine's, as tests pass, still checks them)
  compute_ms = ms - exposed_comm_ms
  ranks      = world
and checks the log line of the step says the same loss, time, MFU (and HFU,
when it prints one) and exposed communication as the CSV row, to the digits
the log prints. With --ddp it
also checks the bytes each rank sent: the all-reduce of every gradient once,
2 (N-1)/N x the gradient bytes the ddp: line states. Prints what differed; exit 1 if
anything did.
"""
import csv
import re
import sys

sys.path.insert(0, "tests")
from trainer_log import half_digit  # noqa: E402


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--peak":
        sys.exit("usage: check_trainer_csv.py LOG CSV --peak TFLOPS [--ddp]")
    log_path, csv_path, peak = args[0], args[1], float(args[3]) * 1e12
    ddp = "--ddp" in args
    log = open(log_path).read()
    tokens = int(re.search(r"^batch: +\d+ sequences = (\d+) tokens per step", log, re.M).group(1))
    m = re.search(r"^MFU: .* = ([0-9.e+]+) MFLOP per token .* / \((\d+) x peak\)", log, re.M)
    flops_token, world = float(m.group(1)) * 1e6, int(m.group(2))
    steps = {int(s.group(1)): s for s in re.finditer(
        r"^step +(\d+)/\d+ \| loss ([0-9.]+) \| lr \S+ \| norm \S+ \| +([0-9.]+) ms \| \S+ tok/s \| "
        r"MFU ([0-9.]+)% \| comm ([0-9.]+) ms exposed(?: \| bubble [0-9.]+%)?(?: \| HFU ([0-9.]+)%)?", log, re.M)}
    grad_mb = None
    if ddp:
        grad_mb = float(re.search(r"^ddp: .*; ([0-9.]+) MB of gradients per step", log, re.M).group(1))
    bad = []

    def near(what, got, want, rel, absolute=0.0):
        if abs(got - want) > rel * abs(want) + absolute:
            bad.append("step %d: %s is %.6g, recomputed %.6g" % (step, what, got, want))

    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        sys.exit("error: %s has no rows" % csv_path)
    for r in rows:
        step = int(r["step"])
        ms, tok_s = float(r["ms"]), float(r["tok_s"])
        mfu, hfu = float(r["mfu"]), float(r["hfu"])
        rel = 1e-3 + 0.0005 / ms   # ms is printed to 3 decimals
        near("tok_s", tok_s, tokens / (ms / 1e3), rel, 0.1)
        near("mfu", mfu, 100 * flops_token * tokens / (ms / 1e3) / (world * peak), rel)
        if hfu < mfu * (1 - 1e-5):
            bad.append("step %d: hfu %.6g below mfu %.6g" % (step, hfu, mfu))
        if mfu > 100 or hfu > 100:
            bad.append("step %d: utilisation above 100%% (mfu %.6g, hfu %.6g)" % (step, mfu, hfu))
        near("compute_ms", float(r["compute_ms"]), ms - float(r["exposed_comm_ms"]), 0, 2e-3)
        if int(r["ranks"]) != world:
            bad.append("step %d: ranks %s, the header says %d" % (step, r["ranks"], world))
        if ddp:
            near("sent_mb", float(r["sent_mb"]), 2 * (world - 1) / world * grad_mb, 2e-3, 1e-3)
        s = steps.get(step)
        if not s:
            bad.append("step %d: no log line" % step)
            continue
        near("the log's loss", float(s.group(2)), float(r["loss"]), 0, 6e-5)
        near("the log's ms", float(s.group(3)), ms, 0, 0.06)
        near("the log's MFU", float(s.group(4)), mfu, 1e-5, half_digit(s.group(4)))
        near("the log's exposed comm", float(s.group(5)), float(r["exposed_comm_ms"]), 0, 6e-3)
        if s.group(6):   # printed when something was recomputed
            near("the log's HFU", float(s.group(6)), hfu, 1e-5, half_digit(s.group(6)))
    print("%d rows checked: tokens %d, %.4g FLOP per token, %d ranks, peak %.3g TFLOP/s%s"
          % (len(rows), tokens, flops_token, world, peak / 1e12,
             ", %.4g MB of gradients all-reduced" % grad_mb if ddp else ""))
    for b in bad[:10]:
        print("  " + b)
    if bad:
        sys.exit("error: %d reported numbers disagree with their formulas" % len(bad))
    print("every reported number agrees with its formula")


main()
