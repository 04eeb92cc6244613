#!/usr/bin/env python3
"""check_bench_row.py: a chapter's --bench-csv row says what its log says.

    check_bench_row.py LOG CSV

LOG is the standard output of one run of 04_fsdp, 05_hsdp, 08_tensor_parallel
or 09_context_parallel (its first line names the chapter), CSV the --bench-csv
file that run wrote (one row). Every column the log also prints is read from
the log, in the log's units, and compared to the digits the log prints: the
settings (ZeRO stage, degrees, links, dtype), the mean step time and its
parts, memory, bytes, the alpha-beta prediction. Columns the log does not
print (rss_mb) are left out. A column moved, dropped or fed the wrong value
shows as the column named, with both numbers. Exit 1 if any differed.
"""
import csv
import re
import sys

sys.path.insert(0, "tests")
from trainer_log import Checks, batch, grab, half_digit, model  # noqa: E402


class Row:
    """The CSV row against log text, column by column."""

    def __init__(self, row, ck):
        self.row, self.ck = row, ck

    def num(self, col, printed, scale=1.0, terms=1):
        """Column col x scale against the printed number (a sum of `terms` printed
        numbers), to their digits and the column's."""
        got = float(self.row[col]) * scale
        tol = terms * half_digit(printed) + half_digit(self.row[col]) * scale + 1e-9
        self.ck.same(col, got, float(printed), tol)

    def bound(self, col, printed, sign):
        """Column col at least (sign 1) or at most (sign -1) the printed number, to their digits."""
        got = float(self.row[col])
        tol = half_digit(printed) + half_digit(self.row[col]) + 1e-9
        limit = float(printed) - sign * tol
        self.ck.same("%s, at %s the log's" % (col, "least" if sign > 0 else "most"), got,
                     max(got, limit) if sign > 0 else min(got, limit), 0)

    def text(self, col, want):
        ok = self.row[col] == str(want)
        print("  %-40s %16s %16s  %s" % (col, self.row[col], want, "ok" if ok else "DIFFERS"))
        if not ok:
            self.ck.bad.append("%s: %s, the log says %s" % (col, self.row[col], want))


def mean_line(log):
    """The step time and its parts: (step, compute, exposed), as printed."""
    return grab(r"^mean of steps \d+-\d+: ([0-9.]+) ms/step \(([0-9.]+) compute \+ ([0-9.]+) exposed comm\)",
                log, "mean of steps").groups()


def world(log):
    return int(grab(r"^device: .*\| world (\d+) \|", log, "device").group(1))


def link(r, log):
    """node_size, inter_gbps, inter_us: the simulated link, 0 without one."""
    m = re.search(r"^link: +simulated nodes of (\d+) ranks; between them ([0-9.]+) GB/s and ([0-9.]+) us", log, re.M)
    for col, v in zip(("node_size", "inter_gbps", "inter_us"), m.groups() if m else ("0", "0", "0")):
        r.num(col, v)


def fsdp(r, log):
    m = grab(r"^memory: +ZeRO-(\d), N = (\d+) ranks sharing the state, P = ([0-9.]+)M parameters, (\w+) weights",
             log, "memory")
    r.text("zero", m.group(1))
    r.text("ranks", m.group(2))
    r.num("params", m.group(3), 1e-6)
    r.text("dtype", m.group(4))
    r.text("micro", batch(log)[1])
    r.text("overlap", "off" if "(--no-overlap)" in log else "on")
    m = re.search(r"^ +weights all-gathered in \w+ per unit, (\d+) units? ahead \(--prefetch\), "
                  r"(freed|kept until backward) after forward", log, re.M)
    if m:   # ZeRO-3 only
        r.text("prefetch", m.group(1))
        r.text("reshard", "on" if m.group(2) == "freed" else "off")
    step, comp, ex = mean_line(log)
    r.num("step_ms", step)
    r.num("compute_ms", comp)
    r.num("exposed_ms", ex)
    for kind in ("params", "grads", "optim", "comm"):
        m = grab(r"^ +%s +([0-9.]+) +([0-9.]+) " % kind, log, "memory %s" % kind)
        r.num(kind + "_mb", m.group(1))
    r.num("acts_mb", grab(r"^ +acts +([0-9.]+) ", log, "memory acts").group(1))
    m = grab(r"^ +total +([0-9.]+) +([0-9.]+) ", log, "memory total")
    r.num("mem_mb", m.group(1))
    r.num("mem_pred_mb", m.group(2))
    m = grab(r"^ +state .* = ([0-9.]+) MB \(w = (\d)\) .* = ([0-9.]+) MB$", log, "state")
    r.num("formula_mb", m.group(1))
    r.text("wbytes", m.group(2))
    r.num("paper_mb", m.group(3))
    r.num("sent_mb", grab(r"^ +together ([0-9.]+) MB", log, "bytes together").group(1))
    pred = [grab(r"^ +%s +[0-9.]+ +([0-9.]+) " % c, log, c).group(1) for c in ("reduce-scatter", "all-gather")]
    r.num("sent_pred_mb", "%.3f" % sum(float(p) for p in pred), terms=len(pred))


def hsdp(r, log):
    m = grab(r"^hsdp: +\d+ data-parallel ranks = \d+ groups of (\d+) \(shard\) x (\d+) replicas", log, "hsdp")
    r.text("shard", m.group(1))
    r.text("replicas", m.group(2))
    r.text("ranks", world(log))
    link(r, log)
    r.text("zero", grab(r"^zero: +ZeRO-(\d)", log, "zero").group(1))
    r.text("dtype", "fp32" if model(log)["es"] == 4 else "bf16")
    step, _, ex = mean_line(log)
    r.num("step_ms", step)
    r.num("exposed_ms", ex)
    m = re.search(r"^link: +per step, ([0-9.]+) MB per rank crossed between nodes \(formula ([0-9.]+)\); the slow "
                  r"links add ([0-9.]+) ms", log, re.M)
    for col, v in zip(("cross_mb", "cross_pred_mb", "link_pred_ms"), m.groups() if m else ("0", "0", "0")):
        r.num(col, v)
    r.num("sent_mb", grab(r"^ +together ([0-9.]+) MB", log, "bytes together").group(1))
    r.num("mem_mb", grab(r"^ +total +([0-9.]+) ", log, "memory total").group(1))


def tp(r, log):
    m = grab(r"^tp: +(\d+) ranks: .* sequence parallelism (on|off)", log, "tp")
    r.text("tp", m.group(1))
    r.text("sp", int(m.group(2) == "on"))
    r.text("dp", grab(r"^device: .*\| mesh .* x dp (\d+)$", log, "mesh").group(1))
    link(r, log)
    step, comp, ex = mean_line(log)
    r.num("step_ms", step)
    r.num("compute_ms", comp)
    r.num("exposed_comm_ms", ex)
    # the log prints rank 0's time in the seams, the row the slowest rank's
    r.bound("tp_comm_ms", grab(r"^tp time: ([0-9.]+) ms per step", log, "tp time").group(1), 1)
    r.num("tp_mb_per_step", grab(r"^ +step +total +([0-9.]+) ", log, "tp bytes total").group(1), 1e3)
    r.num("acts_mb", grab(r"^acts: +one micro-batch's activations per rank ([0-9.]+) MB", log, "acts").group(1))


def cp(r, log):
    m = grab(r"^cp: +(ring|ulysses)\w* .*over (\d+) ranks", log, "cp")
    r.text("algo", m.group(1))
    r.text("cp", m.group(2))
    r.text("dp", grab(r"^device: .*\| mesh .* x dp (\d+)$", log, "mesh").group(1))
    r.text("balance", int(re.search(r"^cp: .*, balanced", log, re.M) is not None))
    r.text("seq", model(log)["seq"])
    r.text("batch", grab(r"^batch: +(\d+) sequences", log, "batch").group(1))
    r.num("step_ms", mean_line(log)[0])
    ranks = re.findall(r"^  cp rank \d+: .*\| attention +([0-9.]+) ms \(cpu +([0-9.]+)\) \| comm +([0-9.]+) ms",
                       log, re.M)
    if not ranks:
        sys.exit("error: the log has no 'cp rank' lines")
    pairs = [("attn_ms_max", "attn_ms_min"), ("attn_cpu_ms_max", "attn_cpu_ms_min")]
    if re.search(r"^device: +cuda", log, re.M):   # the row leaves a GPU's host time out: 0
        r.num("attn_cpu_ms_max", "0")
        r.num("attn_cpu_ms_min", "0")
        pairs.pop()
    # the log prints the ranks of one context-parallel group, the row all ranks'
    # extremes: the same numbers with one group, bounds with several
    dp = int(r.row["dp"])
    for i, (hi, lo) in enumerate(pairs + [("attn_comm_ms", None)]):
        vals = sorted((x[i] for x in ranks), key=float)
        if dp == 1:
            r.num(hi, vals[-1])
        else:
            r.bound(hi, vals[-1], 1)
        if lo and dp == 1:
            r.num(lo, vals[0])
        elif lo:
            r.bound(lo, vals[0], -1)
    m = grab(r"^cp bytes: .* forward ([0-9.]+) kB .* backward ([0-9.]+) kB", log, "cp bytes")
    layers, micro = model(log)["layers"], batch(log)[1]
    r.num("cp_mb_per_step", "%.3f" % (layers * micro * (float(m.group(1)) + float(m.group(2)))), 1e3)
    r.num("acts_mb", grab(r"^memory: +activations of one micro-batch ([0-9.]+) MB", log, "memory").group(1),
          1.048576)
    r.num("mem_peak_mb", grab(r"^memory: +([0-9.]+) MB at most on a rank", log, "memory").group(1), 1.048576)


CHAPTERS = {"04_fsdp": fsdp, "05_hsdp": hsdp, "08_tensor_parallel": tp, "09_context_parallel": cp}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_bench_row.py LOG CSV")
    log = open(sys.argv[1]).read()
    chapter = log.split(":", 1)[0]
    if chapter not in CHAPTERS:
        sys.exit("error: the log's first line names no chapter this checks (%r)" % chapter)
    rows = list(csv.DictReader(open(sys.argv[2])))
    if len(rows) != 1:
        sys.exit("error: %d rows in the bench CSV, expected 1" % len(rows))
    ck = Checks()
    print("%s: the --bench-csv row against the log" % chapter)
    ck.header("column")
    CHAPTERS[chapter](Row(rows[0], ck), log)
    ck.finish("every column the log prints agrees")


if __name__ == "__main__":
    main()
