#!/usr/bin/env python3
"""check_moves.py: weights of runs of chapter 03, as moves from a start,
against what they should be (03_ddp/test_ddp.sh reads them from the
trainers' --save-final files, common/train.c).

    check_moves.py W0 A FACTOR B TOL
        the move A - W0 is FACTOR times the move B - W0: |(A - W0) -
        FACTOR (B - W0)| / |FACTOR (B - W0)| <= TOL (Euclidean norms)
    check_moves.py --diloco DIR
        DiLoCo's outer step (common/local_sgd.h) by hand, in double, from
        DIR's runs: w0 (the start), w1 and w2 (plain averages after one and
        two outer steps), and with delta = w0 - w1:
          m9   one step, eta 0.5, mu 0.9:  w0 - eta (1 + mu) delta  (Nesterov)
          m0   one step, eta 0.5, mu 0:    w0 - eta delta
          two  two steps, eta 1/1.9, mu 0.9: the first lands on w1 (eta (1 + mu)
               = 1), so the second averages w2; its outer gradient w1 - w2
               and the momentum mu delta give w2 - eta mu^2 delta
        each within 1e-5 of its largest weight (max |a - b| / max |b|).

Prints each comparison; exit 1 with an "error:" line when one fails."""
import math
import struct
import sys


def weights(path):
    data = open(path, "rb").read()
    if data[:8] != b"DDPFINAL":
        sys.exit("error: %s is not a final-state file" % path)
    _, k, n = struct.unpack_from("<IIQ", data, 8)
    off = 24 + 24 * k
    return struct.unpack_from("<%df" % n, data, off)


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def moves(w0, a, factor, b, tol):
    w0, a, b = weights(w0), weights(a), weights(b)
    da = [x - y for x, y in zip(a, w0)]
    db = [factor * (x - y) for x, y in zip(b, w0)]
    if norm(db) == 0:
        sys.exit("error: the reference run did not move")
    err = norm([x - y for x, y in zip(da, db)]) / norm(db)
    ratio = sum(x * y for x, y in zip(da, db)) / sum(y * y for y in db) * factor
    print("move %.6g, reference move x %g = %.6g: ratio %.4f, relative difference %.3g (bound %g)" %
          (norm(da), factor, norm(db), ratio, err, tol))
    if err > tol:
        sys.exit("error: the move is not %g times the reference's" % factor)


def diloco(d):
    w = {k: weights("%s/%s.bin" % (d, k)) for k in ("w0", "w1", "w2", "m9", "m0", "two")}
    delta = [a - b for a, b in zip(w["w0"], w["w1"])]
    print("outer gradient of the first H steps: max |w0 - w1| = %.4g" % max(abs(x) for x in delta))
    eta2 = 1 / 1.9
    want = {
        "m9": [a - 0.5 * 1.9 * x for a, x in zip(w["w0"], delta)],
        "m0": [a - 0.5 * x for a, x in zip(w["w0"], delta)],
        "two": [a - eta2 * 0.81 * x for a, x in zip(w["w2"], delta)],
    }
    # what each would be with the other momentum (two: the momentum not
    # carried from the first outer step, which lands on w2), to show the
    # check can tell them apart
    without = {"m9": want["m0"], "m0": want["m9"], "two": w["w2"]}
    bad = 0
    for k in ("m9", "m0", "two"):
        scale = max(abs(x) for x in want[k])
        err = max(abs(a - b) for a, b in zip(w[k], want[k])) / scale
        other = max(abs(a - b) for a, b in zip(w[k], without[k])) / scale
        print("%-4s off the hand computation by %.3g of its largest weight (bound 1e-05); "
              "off the other momentum's by %.3g" % (k, err, other))
        bad |= err > 1e-5
    if bad:
        sys.exit("error: DiLoCo's outer step differs from the hand computation")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--diloco":
        diloco(sys.argv[2])
    elif len(sys.argv) == 6:
        moves(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
    else:
        sys.exit("usage: check_moves.py W0 A FACTOR B TOL | --diloco DIR")
