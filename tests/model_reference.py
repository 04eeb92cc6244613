#!/usr/bin/env python3
"""model_reference.py: an independent implementation of common/MODEL.md in
plain Python (double precision, no libraries), used to check a dump file.

    python3 tests/model_reference.py DUMP [--seed S] [--fd K]

Reads a gradient dump (the format in MODEL.md), recomputes the loss from the
parameters and tokens, and checks the dumped gradients by central finite
differences of the mean loss on K parameters of every tensor (default 6; the
model is differentiated in double, so h = 1e-5 is accurate). With --seed it
also regenerates the initial weights from the seed (splitmix64 + Box-Muller,
as MODEL.md states) and compares them with the dumped parameters. Prints what
differs and exits 1 on any mismatch. Meant for tiny configurations: it is
pure Python."""
import math
import struct
import sys


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"LLMDUMP1":
        sys.exit("error: %s is not a model dump (bad magic)" % path)
    version, = struct.unpack_from("<I", data, 8)
    if version not in (1, 2):
        sys.exit("error: dump version %d, this reference reads 1 and 2" % version)
    V, C, L, H, KV, F, T, B = struct.unpack_from("<8i", data, 12)
    eps, base = struct.unpack_from("<2f", data, 44)
    hd, = struct.unpack_from("<I", data, 52)   # version 1: 0, meaning C / H
    hd = hd or C // H
    n, = struct.unpack_from("<Q", data, 56)
    off = 64
    params = list(struct.unpack_from("<%df" % n, data, off)); off += 4 * n
    tokens = list(struct.unpack_from("<%di" % (B * T), data, off)); off += 4 * B * T
    targets = list(struct.unpack_from("<%di" % (B * T), data, off)); off += 4 * B * T
    loss, = struct.unpack_from("<d", data, off); off += 8
    grads = list(struct.unpack_from("<%df" % n, data, off)); off += 4 * n
    if off != len(data):
        sys.exit("error: dump size %d, expected %d" % (len(data), off))
    cfg = dict(V=V, C=C, L=L, H=H, KV=KV, hd=hd, F=F, T=T, B=B, eps=eps, base=base)
    return cfg, params, tokens, targets, loss, grads


def layout(c):
    """[(name, offset, rows, cols)] in flat order, from MODEL.md's table."""
    V, C, L, H, KV, F, hd = c["V"], c["C"], c["L"], c["H"], c["KV"], c["F"], c["hd"]
    out, off = [], 0

    def add(name, r, cc):
        nonlocal off
        out.append((name, off, r, cc))
        off += r * cc
    add("tok_embedding", V, C)
    for l in range(L):
        add("layers.%d.attn_norm" % l, 1, C)
        add("layers.%d.wq" % l, C, H * hd)
        add("layers.%d.wk" % l, C, KV * hd)
        add("layers.%d.wv" % l, C, KV * hd)
        add("layers.%d.wo" % l, H * hd, C)
        add("layers.%d.mlp_norm" % l, 1, C)
        add("layers.%d.w1" % l, C, F)
        add("layers.%d.w3" % l, C, F)
        add("layers.%d.w2" % l, F, C)
    add("final_norm", 1, C)
    add("lm_head", C, V)
    return out, off


def matvec(x, p, off, rows, cols):
    """x (rows) times the row-major (rows, cols) matrix at p[off]."""
    y = [0.0] * cols
    for r in range(rows):
        xr = x[r]
        base = off + r * cols
        for c in range(cols):
            y[c] += xr * p[base + c]
    return y


def rmsnorm(x, p, off, eps):
    ms = sum(v * v for v in x) / len(x)
    r = 1.0 / math.sqrt(ms + eps)
    return [x[i] * r * p[off + i] for i in range(len(x))]


def rope(u, pos, hd, base):
    out = list(u)
    for i in range(hd // 2):
        a = pos * base ** (-2.0 * i / hd)
        ca, sa = math.cos(a), math.sin(a)
        x0, x1 = u[2 * i], u[2 * i + 1]
        out[2 * i] = x0 * ca - x1 * sa
        out[2 * i + 1] = x0 * sa + x1 * ca
    return out


def mean_loss(c, p, tokens, targets):
    V, C, L, H, KV, F, T, B, hd = (c[k] for k in ("V", "C", "L", "H", "KV", "F", "T", "B", "hd"))
    lay, _ = layout(c)
    off = {name: o for name, o, _, _ in lay}
    total = 0.0
    for b in range(B):
        hs = [list(p[off["tok_embedding"] + tokens[b * T + t] * C:][:C]) for t in range(T)]
        for l in range(L):
            pre = "layers.%d." % l
            qs, ks, vs = [], [], []
            for t in range(T):
                a = rmsnorm(hs[t], p, off[pre + "attn_norm"], c["eps"])
                q = matvec(a, p, off[pre + "wq"], C, H * hd)
                k = matvec(a, p, off[pre + "wk"], C, KV * hd)
                v = matvec(a, p, off[pre + "wv"], C, KV * hd)
                qs.append([x for h in range(H) for x in rope(q[h * hd:(h + 1) * hd], t, hd, c["base"])])
                ks.append([x for g in range(KV) for x in rope(k[g * hd:(g + 1) * hd], t, hd, c["base"])])
                vs.append(v)
            for t in range(T):
                o = []
                for h in range(H):
                    g = h // (H // KV)
                    s = [sum(qs[t][h * hd + e] * ks[j][g * hd + e] for e in range(hd)) / math.sqrt(hd)
                         for j in range(t + 1)]
                    m = max(s)
                    w = [math.exp(x - m) for x in s]
                    z = sum(w)
                    o += [sum(w[j] / z * vs[j][g * hd + e] for j in range(t + 1)) for e in range(hd)]
                proj = matvec(o, p, off[pre + "wo"], H * hd, C)
                hs[t] = [hs[t][i] + proj[i] for i in range(C)]
            for t in range(T):
                bn = rmsnorm(hs[t], p, off[pre + "mlp_norm"], c["eps"])
                u1 = matvec(bn, p, off[pre + "w1"], C, F)
                u3 = matvec(bn, p, off[pre + "w3"], C, F)
                gl = [u1[i] / (1.0 + math.exp(-u1[i])) * u3[i] for i in range(F)]
                proj = matvec(gl, p, off[pre + "w2"], F, C)
                hs[t] = [hs[t][i] + proj[i] for i in range(C)]
        for t in range(T):
            z = rmsnorm(hs[t], p, off["final_norm"], c["eps"])
            logits = matvec(z, p, off["lm_head"], C, V)
            m = max(logits)
            lse = m + math.log(sum(math.exp(x - m) for x in logits))
            total += lse - logits[targets[b * T + t]]
    return total / (B * T)


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    w = state
    w = ((w ^ (w >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    w = ((w ^ (w >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, w ^ (w >> 31)


def init_params(c, seed):
    lay, n = layout(c)
    out = [0.0] * n
    state, z = seed, [0.0, 0.0]
    i = 0
    for name, o, r, cc in lay:
        leaf = name.split(".")[-1]
        norm = leaf.endswith("norm")
        std = 0.02 / math.sqrt(2.0 * c["L"]) if leaf in ("wo", "w2") else 0.02
        for e in range(r * cc):
            if i % 2 == 0:
                state, w1 = splitmix64(state)
                state, w2 = splitmix64(state)
                u1 = ((w1 >> 11) + 1) * 2.0 ** -53
                u2 = (w2 >> 11) * 2.0 ** -53
                rr = math.sqrt(-2.0 * math.log(u1))
                z = [rr * math.cos(2 * math.pi * u2), rr * math.sin(2 * math.pi * u2)]
            out[o + e] = 1.0 if norm else struct.unpack("<f", struct.pack("<f", std * z[i % 2]))[0]
            i += 1
    return out


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    path, seed, k = args[0], None, 6
    i = 1
    while i < len(args):
        if args[i] == "--seed":
            seed = int(args[i + 1]); i += 2
        elif args[i] == "--fd":
            k = int(args[i + 1]); i += 2
        else:
            sys.exit("error: unknown argument %s" % args[i])
    c, p, tokens, targets, loss, grads = read_dump(path)
    bad = 0
    print("config: vocab %(V)d dim %(C)d layers %(L)d heads %(H)d kv_heads %(KV)d head_dim %(hd)d ffn %(F)d "
          "seq %(T)d batch %(B)d" % c)
    if seed is not None:
        ref = init_params(c, seed)
        diff = [i for i in range(len(p)) if ref[i] != p[i]]
        print("init from seed %d: %d of %d parameters differ" % (seed, len(diff), len(p)))
        for i in diff[:5]:
            print("  param %d: dump %.9g, reference %.9g" % (i, p[i], ref[i]))
        bad += len(diff) > 0
    ref_loss = mean_loss(c, p, tokens, targets)
    rel = abs(ref_loss - loss) / abs(ref_loss)
    print("loss: dump %.9f, reference %.9f (relative difference %.2e, tolerance 1e-5)"
          % (loss, ref_loss, rel))
    bad += not rel < 1e-5
    lay, _ = layout(c)
    h = 1e-5
    worst = 0.0
    for name, o, r, cc in lay:
        n = r * cc
        for j in range(k):
            idx = o + (j * 7919) % n
            save = p[idx]
            p[idx] = save + h
            lp = mean_loss(c, p, tokens, targets)
            p[idx] = save - h
            lm = mean_loss(c, p, tokens, targets)
            p[idx] = save
            fd = (lp - lm) / (2 * h)
            gmax = max(abs(g) for g in grads[o:o + n])
            err = abs(fd - grads[idx]) / max(gmax, 1e-6)
            worst = max(worst, err)
            if err > 1e-3:
                bad += 1
                print("  %s[%d]: dump gradient %.7g, reference %.7g (error %.2g of the "
                      "tensor's largest gradient)" % (name, idx - o, grads[idx], fd, err))
    print("gradients: %d parameters of each of %d tensors, worst error %.2g of the tensor's "
          "largest gradient (tolerance 1e-3)" % (k, len(lay), worst))
    print("ok" if not bad else "MISMATCH")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
