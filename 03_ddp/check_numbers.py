#!/usr/bin/env python3
"""check_numbers.py: the numbers 03_ddp/ddp prints, recomputed from the
model's shape alone (common/MODEL.md) and the rules of DDP; with
--dataparallel N, those 03_ddp/dataparallel prints.

    check_numbers.py LOG CSV [BENCH_CSV]
    check_numbers.py --dataparallel N LOG BENCH_CSV

LOG is the program's standard output, CSV its --csv file, BENCH_CSV its
--bench-csv file (the last row is checked). From the header's shape (C, L,
H, KV, hd, F, V, seq), dtype, world and batch:

  parameters  P = V C + L S + C + C V,  S = 2C + 2 C H hd + 2 C KV hd + 3 C F
              (the header's "M params", and "in matmuls": P - V C - (2L + 1) C)
  gradients   P x wire bytes (4 fp32, 2 bf16): the ddp: line's MB per step
  buckets     the units in backward order (head, layers L-1..0, embedding),
              gathered until a bucket holds at least the cap (bucket MiB x
              2^20 / wire bytes elements); what is left after the embedding
              is the last bucket; none on one rank
  memory      params P x dtype bytes, grads 4P (fp32 whatever the dtype, as
              Megatron's main_grad), optim 12P (fp32 master + Adam m + v),
              comm 2P (the bf16 wire copy, only with bf16 on several ranks);
              the total is the sum of the kinds (activations included)
  sent_mb     2 (N-1)/N x gradient bytes per step, on every row (ring
              all-reduce bus bytes)
  mem_peak_mb the memory line's total in MiB (2^20 bytes: the CSV's unit,
              where the log line counts 1e6)
  bench row   buckets, grad_mb, tokens = batch x seq, step_ms = compute_ms
              + exposed_comm_ms, tok_s = tokens / step time, ranks, threads

dataparallel (N replicas in one process, b = batch / N sequences each):
  moved       device 0 sends (N-1) P x dtype bytes of weights, receives
              (N-1) b seq V x dtype bytes of logits, sends as many of their
              gradients back, and receives (N-1) 4P of gradients; the total
  memory      params N P x dtype bytes and grads 4 N P (every replica its
              copy), optim 12P (device 0 only), comm 4P (the gradient
              staging buffer, N > 1)
  bench row   serial_ms = replicate + gather + scatter + reduce, tokens,
              tok_s, replicas, threads, device0_mb = the total moved

Prints each comparison; exit 1 with what differed and by how much.
"""
import csv
import re
import sys

bad = []
checked = []


def last_row(path):
    """A CSV's last row by column name; a name the provenance columns repeat
    (threads: the run's total beside the row's own per-rank count) is its
    first column's."""
    rows = list(csv.reader(open(path)))
    names, last = rows[0], rows[-1]
    return {n: last[i] for i, n in reversed(list(enumerate(names)))}


def near(what, got, want, rel=0.0, absolute=0.0):
    ok = abs(got - want) <= rel * abs(want) + absolute
    (checked if ok else bad).append("%s: printed %.6g, recomputed %.6g%s" % (
        what, got, want, "" if ok else " (off by %.3g)" % (got - want)))


def model_line(log):
    """The header's model: line as a match (groups: C L H KV hd F V seq, the
    params and in-matmuls counts with units, dtype), and P from the shape."""
    m = re.search(r"^model: +dim (\d+), (\d+) layers, (\d+) heads \((\d+) kv, head dim (\d+)\), ffn (\d+), "
                  r"vocab (\d+), seq (\d+) \| ([0-9.]+)([kM]) params \(([0-9.]+)([kM]) in matmuls\) \| (\w+)", log, re.M)
    if not m:
        sys.exit("error: no model: line in the log")
    C, L, H, KV, hd, F, V = (int(m.group(i)) for i in range(1, 8))
    S = 2 * C + 2 * C * H * hd + 2 * C * KV * hd + 3 * C * F
    return m, V * C + L * S + C + C * V, S


def memory_kinds(log, want):
    """The memory: line's kinds against want (bytes per kind), and its total."""
    mem = re.search(r"^memory: +([0-9.]+) MB at most on a rank \(largest per kind:(.*)\)", log, re.M)
    kinds = {k: float(v) for k, v in re.findall(r"(\w+) ([0-9.]+)", mem.group(2))}
    for k, v in want.items():
        near("memory %s (MB)" % k, kinds.get(k, 0.0), v / 1e6, 0, 0.005)
    near("memory total = sum of the kinds (MB)", float(mem.group(1)), sum(kinds.values()), 0, 0.005 * len(kinds))
    return mem, kinds


def dataparallel(n, log, bench):
    m, P, _ = model_line(log)
    V, T, dtype = int(m.group(7)), int(m.group(8)), m.group(13)
    size = {"fp32": 4, "bf16": 2}[dtype]
    threads = int(re.search(r"^device: .*?(\d+) threads? per rank", log, re.M).group(1))
    batch = int(re.search(r"^batch: +(\d+) sequences", log, re.M).group(1))
    b = batch // n
    d = re.search(r"^dataparallel: (\d+) replicas? x (\d+) sequences, (\d+) threads? each; device 0 moves "
                  r"([0-9.]+) MB of weights, ([0-9.]+) MB of logits, ([0-9.]+) MB of logit gradients and "
                  r"([0-9.]+) MB of gradients per step \(([0-9.]+) MB\)", log, re.M)
    near("replicas", int(d.group(1)), n)
    near("sequences per replica", int(d.group(2)), b)
    near("threads per replica", int(d.group(3)), threads)
    near("weights moved (MB)", float(d.group(4)), (n - 1) * P * size / 1e6, 0, 0.005)
    near("logits moved (MB)", float(d.group(5)), (n - 1) * b * T * V * size / 1e6, 0, 0.005)
    near("logit gradients moved (MB)", float(d.group(6)), (n - 1) * b * T * V * size / 1e6, 0, 0.005)
    near("gradients moved (MB)", float(d.group(7)), (n - 1) * 4 * P / 1e6, 0, 0.005)
    moved = (n - 1) * (P * size + 2 * b * T * V * size + 4 * P) / 1e6
    near("total moved (MB)", float(d.group(8)), moved, 0, 0.005)
    want = {"params": n * P * size, "grads": n * 4 * P, "optim": 12 * P, "comm": 4 * P if n > 1 else 0}
    memory_kinds(log, want)
    r = last_row(bench)
    serial = sum(float(r[k + "_ms"]) for k in ("replicate", "gather", "scatter", "reduce"))
    near("bench serial_ms = replicate + gather + scatter + reduce", float(r["serial_ms"]), serial, 0, 0.003)
    near("bench device0_mb", float(r["device0_mb"]), moved, 1e-6, 0.0001)
    near("bench replicas", int(r["replicas"]), n)
    near("bench threads", int(r["threads"]), threads)
    near("bench tokens", int(r["tokens"]), batch * T)
    step = float(r["step_ms"])
    near("bench tok_s = tokens / step", float(r["tok_s"]), batch * T / (step / 1e3), 1e-4 + 0.0005 / step, 0.05)
    return "P = %d, %s, %d replica%s" % (P, dtype, n, "" if n == 1 else "s")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--dataparallel":
        report(dataparallel(int(sys.argv[2]), open(sys.argv[3]).read(), sys.argv[4]))
        return
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: check_numbers.py LOG CSV [BENCH_CSV] | --dataparallel N LOG BENCH_CSV")
    log = open(sys.argv[1]).read()
    rows = list(csv.DictReader(open(sys.argv[2])))
    m, P, S = model_line(log)
    C, L, H, KV, hd, F, V, T = (int(m.group(i)) for i in range(1, 9))
    unit = {"k": 1e3, "M": 1e6}
    dtype = m.group(13)
    world = int(re.search(r"\| world (\d+) \|", log).group(1))
    threads = int(re.search(r"^device: .*?(\d+) threads? per rank", log, re.M).group(1))
    b = re.search(r"^batch: +(\d+) sequences = (\d+) tokens per step = (\d+) data-parallel ranks? x (\d+) "
                  r"micro-batch(?:es)? x (\d+) sequences", log, re.M)
    batch, tokens = int(b.group(1)), int(b.group(2))
    d = re.search(r"^ddp: +(\w+) gradients in buckets of ([0-9.e+]+) MiB, .*; ([0-9.]+) MB of gradients per step",
                  log, re.M)
    wire = {"fp32": 4, "bf16": 2}[d.group(1)]
    bucket_mib, grad_mb = float(d.group(2)), float(d.group(3))

    # parameters, by tensor (MODEL.md's layout)
    near("parameters (M)", float(m.group(9)) * unit[m.group(10)], P, 0, 0.0005 * unit[m.group(10)])
    near("parameters in matmuls (M)", float(m.group(11)) * unit[m.group(12)], P - V * C - (2 * L + 1) * C,
         0, 0.0005 * unit[m.group(12)])
    near("batch tokens", tokens, batch * T)
    near("gradient MB per step", grad_mb, P * wire / 1e6, 0, 0.005)

    # buckets, as grad_sync forms them (one rank: nothing to send)
    cap = max(1, int(bucket_mib * 1048576 / wire))
    buckets, pending = 0, 0
    for size in [C + C * V] + [S] * L + [V * C]:
        pending += size
        if pending >= cap:
            buckets, pending = buckets + 1, 0
    buckets += pending > 0
    if world == 1:
        buckets = 0
    nb = re.search(r"^ddp: +(\d+) buckets? per step", log, re.M)
    near("buckets per step (ddp: line)", int(nb.group(1)), buckets)

    # memory per kind (MB = 1e6 bytes, 2 decimals)
    want = {"params": P * (4 if dtype == "fp32" else 2), "grads": 4 * P, "optim": 12 * P,
            "comm": 2 * P if dtype == "bf16" and world > 1 else 0}
    mem, kinds = memory_kinds(log, want)
    state = sum(want.values())
    print("bytes per parameter in weights, gradients, optimizer%s: %.2f" % (
        " and the bf16 wire copy" if want["comm"] else "", state / P))

    # the CSV: bytes sent and memory, every row
    sent = 2 * (world - 1) / world * P * wire / 1e6
    for r in rows:
        near("step %s sent_mb" % r["step"], float(r["sent_mb"]), sent, 1e-3, 1e-4)
    near("last row's mem_peak_mb (MiB)", float(rows[-1]["mem_peak_mb"]), float(mem.group(1)) * 1e6 / 1048576,
         0, 0.006)

    if len(sys.argv) == 4:
        brow = last_row(sys.argv[3])
        step, comp, exp = float(brow["step_ms"]), float(brow["compute_ms"]), float(brow["exposed_comm_ms"])
        near("bench buckets", int(brow["buckets"]), buckets)
        near("bench grad_mb", float(brow["grad_mb"]), P * wire / 1e6, 0, 1e-4)
        near("bench tokens", int(brow["tokens"]), tokens)
        near("bench ranks", int(brow["ranks"]), world)
        near("bench threads", int(brow["threads"]), threads)
        near("bench bucket_mb", float(brow["bucket_mb"]), bucket_mib, 1e-4)
        near("bench step_ms = compute + exposed", step, comp + exp, 0, 0.0015)
        near("bench tok_s = tokens / step", float(brow["tok_s"]), tokens / (step / 1e3), 1e-4 + 0.0005 / step, 0.05)
        timed = [float(r["ms"]) for r in rows[1:]]
        if timed:
            near("bench step_ms = mean of the CSV's steps 2..", step, sum(timed) / len(timed), 0,
                 0.0005 * len(timed) + 0.001)

    report("P = %d, %s, %d rank%s, %d buckets" % (P, dtype, world, "" if world == 1 else "s", buckets))


def report(what):
    for c in checked:
        print("  ok    " + c)
    for c in bad:
        print("  WRONG " + c)
    if bad:
        sys.exit("error: %d printed numbers disagree with their formulas" % len(bad))
    print("%d numbers agree with their formulas (%s)" % (len(checked), what))


main()
