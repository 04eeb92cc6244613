"""trainer_log.py: the configuration a trainer's log header states, and the
comparison every checker of printed numbers makes (imported by the chapters'
check_*.py, which recompute those numbers from their formulas)."""
import re
import sys


def grab(pattern, text, what):
    """The first match of pattern (multi-line) in text; exit with an error naming `what` if none."""
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit("error: the log has no %s line" % what)
    return m


def model(log):
    """dim, layers, heads, kv heads, head dim, ffn, vocab, seq and bytes per value (es)."""
    m = grab(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
             r"vocab (\d+), seq (\d+) .*\| (fp32|bf16)$", log, "model")
    keys = ("dim", "layers", "heads", "kv", "hd", "ffn", "vocab", "seq")
    c = {k: int(v) for k, v in zip(keys, m.groups()[:8])}
    c["es"] = 4 if m.group(9) == "fp32" else 2
    return c


def batch(log):
    """(data-parallel ranks, micro-batches, sequences per micro-batch)."""
    m = grab(r"^batch: .* = (\d+) data-parallel ranks? x (\d+) micro-batch(?:es)? x (\d+) sequences", log, "batch")
    return tuple(int(x) for x in m.groups())


def params(c):
    """Parameters of the whole model (MODEL.md's layout)."""
    C, L = c["dim"], c["layers"]
    return c["vocab"] * C * 2 + C + L * (2 * C + 2 * C * c["heads"] * c["hd"] + 2 * C * c["kv"] * c["hd"]
                                        + 3 * C * c["ffn"])


def half_digit(text):
    """Half a unit in the last digit of a printed number: what rounding it to its digits can change."""
    return 0.5 * 10 ** -(len(text.split(".")[1]) if "." in text else 0)


class Checks:
    """Printed against recomputed, one line each; finish() exits 1 if any differed."""

    def __init__(self):
        self.bad = []

    def header(self, what):
        print("  %-40s %16s %16s" % (what, "printed", "recomputed"))

    def same(self, what, got, exp, tol=0.6):   # printed to the byte: half a byte of rounding
        ok = abs(got - exp) <= tol
        print("  %-40s %16.6g %16.6g  %s" % (what, got, exp, "ok" if ok else "DIFFERS by %.4g" % (got - exp)))
        if not ok:
            self.bad.append("%s: %.6g, recomputed %.6g (off by %.4g)" % (what, got, exp, got - exp))

    def finish(self, good):
        for b in self.bad[:10]:
            print("error: " + b)
        if self.bad:
            sys.exit("error: %d printed numbers differ from their formulas" % len(self.bad))
        print(good)
