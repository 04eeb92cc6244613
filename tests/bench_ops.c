/* bench_ops.c: every op of ops.h timed on one device at a trainer's shapes,
 * the fast CUDA kernels (ops_cuda) beside the simple ones they replaced
 * (ops_cuda_simple), each fast result checked against its simple twin.
 *
 *   build/tests/bench_ops --device cuda
 *
 * Defaults: the configuration the suite's CUDA trainer was measured at on an
 * H100 (bf16, dim 1024, 8 layers, 16 heads, 4 kv heads, ffn 2816, seq 1024,
 * batch 16, vocab 32000). Per op it prints
 *   ms       mean of --iters runs after --warmup (CUDA events on the compute
 *            stream; the wall clock on the CPU)
 *   GB/s     the bytes the op must move at least (each input read once, each
 *            output written once; accumulated outputs read and written) / ms
 *   TFLOP/s  for attention and matmul: visible (causal) query-key pairs x
 *            4 hd forward, x 10 hd backward (5 products; the kernels run 7,
 *            the dq kernel recomputes two), as FlashAttention's papers count
 *   % peak   against the device's bandwidth (memory-bound ops) or bf16
 *            tensor-core peak (attention, matmul): data-sheet figures, or
 *            --peak-gbs / --peak
 *   /step    calls per training step x ms, for the fast and the simple
 *            kernels: where a step's time goes, op by op
 *   check    max |fast - simple| / max(1, |simple|) over the op's outputs,
 *            from the same inputs; bf16 results may differ by a rounding or
 *            two (the flash kernels round p and ds to bf16, ops.h), fp32 by
 *            1e-5. A result beyond that prints WRONG and the exit status is 1.
 * On the CPU the same table has no simple column (ops_cpu is one backend);
 * pass smaller shapes there. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "check.h"
#include "device.h"
#include "dist.h"
#include "dtype.h"
#include "ops.h"
#include "perf.h"

#ifdef USE_CUDA
extern const ops_t ops_cuda_simple;   /* ops_cuda.cu: the simple kernels */
#endif

/* ---- shapes and buffers -------------------------------------------------------- */
typedef struct {
    int B, T, C, L, H, KV, hd, F, V, N;
    size_t P;                         /* parameters of the model */
    dtype_t t;
} shape_t;

/* A device buffer with the recipe for its contents, so that it can be put
 * back to the same values before each run that is compared. */
typedef struct {
    void *p;
    size_t n;
    dtype_t t;
    float scale;                      /* uniform in [-scale, scale); 0: zeros */
    uint64_t seed;
} buf_t;

static const device_t *dev;
static uint64_t next_seed = 1;

static void buf_fill(buf_t *b) {
    const size_t chunk = 1 << 20;
    void *h = xmalloc(chunk * 4);
    uint64_t s = b->seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i0 = 0; i0 < b->n; i0 += chunk) {
        size_t m = b->n - i0 < chunk ? b->n - i0 : chunk;
        for (size_t i = 0; i < m; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            float x = b->scale * (float)((double)(s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
            dtype_set(h, b->t, i, x);
        }
        dev_from_host(dev, (char *)b->p + i0 * dtype_size(b->t), h, m * dtype_size(b->t));
    }
    free(h);
}

static buf_t buf_new(size_t n, dtype_t t, float scale) {
    buf_t b = {dev_alloc(dev, n * dtype_size(t) + 16), n, t, scale, next_seed++};
    buf_fill(&b);
    return b;
}

typedef struct {
    shape_t s;
    int *tokens, *targets;
    size_t distinct;                  /* distinct tokens (rows the embedding backward touches) */
    float *cs;                        /* RoPE table (T, hd/2, 2) */
    buf_t x, w, y, rstd, dy, dres, dx, dw;
    buf_t table, dtable;
    buf_t q, k, v, att, lse, dout, dq, dk, dv, kq;
    buf_t a, b, g, da, db;
    buf_t logits, dlogits, picked, xlse;
    buf_t master, m, vv, grad, working;
    buf_t wmat, cmat;
} ctx_t;

static int *tokens_new(int n, int V, uint64_t seed, size_t *distinct) {
    int *h = xmalloc((size_t)n * sizeof(int));
    char *seen = xcalloc((size_t)V, 1);
    *distinct = 0;
    for (int i = 0; i < n; i++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        h[i] = (int)(seed % (uint64_t)V);
        if (!seen[h[i]]) { seen[h[i]] = 1; (*distinct)++; }
    }
    int *d = dev_alloc(dev, (size_t)n * sizeof(int));
    dev_from_host(dev, d, h, (size_t)n * sizeof(int));
    free(h);
    free(seen);
    return d;
}

static void ctx_init(ctx_t *c, shape_t s) {
    const dtype_t t = s.t;
    const size_t NC = (size_t)s.N * s.C, NQ = (size_t)s.N * s.H * s.hd, NK = (size_t)s.N * s.KV * s.hd;
    const size_t NF = (size_t)s.N * s.F, NV = (size_t)s.N * s.V;
    c->s = s;
    size_t unused;
    c->tokens = tokens_new(s.N, s.V, 11, &c->distinct);
    c->targets = tokens_new(s.N, s.V, 23, &unused);
    float *cs = xmalloc((size_t)s.T * s.hd * sizeof(float));
    rope_table(cs, s.T, s.hd, 10000.0);
    c->cs = dev_alloc(dev, (size_t)s.T * s.hd * sizeof(float));
    dev_from_host(dev, c->cs, cs, (size_t)s.T * s.hd * sizeof(float));
    free(cs);
    c->x = buf_new(NC, t, 2); c->w = buf_new(s.C, t, 1); c->y = buf_new(NC, t, 0);
    c->rstd = buf_new(s.N, DT_F32, 0); c->dy = buf_new(NC, t, 1); c->dres = buf_new(NC, t, 1);
    c->dx = buf_new(NC, t, 0); c->dw = buf_new(s.C, DT_F32, 0);
    c->table = buf_new((size_t)s.V * s.C, t, 1); c->dtable = buf_new((size_t)s.V * s.C, DT_F32, 0);
    c->q = buf_new(NQ, t, 2); c->k = buf_new(NK, t, 2); c->v = buf_new(NK, t, 1);
    c->att = buf_new(NQ, t, 0); c->lse = buf_new((size_t)s.B * s.H * s.T, DT_F32, 0);
    c->dout = buf_new(NQ, t, 1); c->dq = buf_new(NQ, t, 0); c->dk = buf_new(NK, t, 0);
    c->dv = buf_new(NK, t, 0); c->kq = buf_new(NQ, t, 1);
    c->a = buf_new(NF, t, 3); c->b = buf_new(NF, t, 2); c->g = buf_new(NF, t, 0);
    c->da = buf_new(NF, t, 0); c->db = buf_new(NF, t, 0);
    c->logits = buf_new(NV, t, 4); c->dlogits = buf_new(NV, t, 0);
    c->picked = buf_new(s.N, DT_F32, 0); c->xlse = buf_new(s.N, DT_F32, 0);
    c->master = buf_new(s.P, DT_F32, 1); c->m = buf_new(s.P, DT_F32, 0.01f);
    c->vv = buf_new(s.P, DT_F32, 0.0f); c->grad = buf_new(s.P, DT_F32, 1);
    c->working = buf_new(s.P, t, 0);
    c->wmat = buf_new((size_t)s.C * s.F, t, 0.05f); c->cmat = buf_new(NF, t, 0);
}

/* ---- the ops ------------------------------------------------------------------------ */
enum { MATMUL, EMB_FWD, EMB_BWD, NORM_FWD, NORM_BWD, ROPE_Q, ROPE_K, ATTN_FWD, ATTN_BWD,
       GLU_FWD, GLU_BWD, XENT_FWD, XENT_BWD, ADD, CAST, SUMSQ, ADAMW, NOPS };

typedef struct {
    const char *name;
    int compute;                      /* judged against FLOP/s, not bandwidth */
} op_desc_t;

static const op_desc_t ops_list[NOPS] = {
    [MATMUL] = {"matmul (N,C)x(C,F)", 1}, [EMB_FWD] = {"embedding_forward", 0},
    [EMB_BWD] = {"embedding_backward", 0}, [NORM_FWD] = {"rmsnorm_forward", 0},
    [NORM_BWD] = {"rmsnorm_backward", 0}, [ROPE_Q] = {"rope q", 0}, [ROPE_K] = {"rope k", 0},
    [ATTN_FWD] = {"attn_forward", 1}, [ATTN_BWD] = {"attn_backward", 1},
    [GLU_FWD] = {"swiglu_forward", 0}, [GLU_BWD] = {"swiglu_backward", 0},
    [XENT_FWD] = {"xent_forward", 0}, [XENT_BWD] = {"xent_backward", 0},
    [ADD] = {"add (N,C)", 0}, [CAST] = {"cast fp32->bf16 (P)", 0}, [SUMSQ] = {"sumsq fp32 (P)", 0},
    [ADAMW] = {"adamw (P)", 0},
};

/* Visible (query, key) pairs of causal attention over the whole sequence. */
static double causal_pairs(const shape_t *s) { return (double)s->B * s->H * s->T * (s->T + 1) / 2.0; }

/* Bytes an op must move, FLOPs it does, and calls per training step (a
 * layer: two norms, RoPE on q and k forward and on their gradients backward,
 * attention, SwiGLU; then the final norm, the head's cross-entropy, the
 * embedding, one clipping norm and one AdamW over every parameter). For
 * matmul, "calls" is the model's linear FLOPs per step (6 x N x linear
 * parameters) over this GEMM's: the linear layers' time at its rate. */
static void op_cost(int op, const ctx_t *c, double *bytes, double *flops, double *calls) {
    const shape_t *s = &c->s;
    const double es = dtype_size(s->t), N = s->N, C = s->C, NC = N * C;
    const double NQ = N * s->H * s->hd, NK = N * s->KV * s->hd, NF = N * s->F, NV = N * s->V;
    const double P = (double)s->P, L = s->L;
    *flops = 0;
    switch (op) {
    case MATMUL: {
        *bytes = (NC + C * s->F + NF) * es;
        *flops = 2 * N * C * s->F;
        const double linear = L * (C * s->H * s->hd * 2 + C * s->KV * s->hd * 2 + 3 * C * s->F) + C * s->V;
        *calls = 6 * N * linear / *flops;
        break;
    }
    case EMB_FWD: *bytes = N * 4 + 2 * NC * es; *calls = 1; break;
    case EMB_BWD: *bytes = N * 4 + NC * es + (double)c->distinct * C * 8; *calls = 1; break;
    case NORM_FWD: *bytes = 2 * NC * es + C * es + N * 4; *calls = 2 * L + 1; break;
    case NORM_BWD: *bytes = 4 * NC * es + C * es + C * 8 + N * 4; *calls = 2 * L + 1; break;
    case ROPE_Q: *bytes = 2 * NQ * es + (double)s->T * s->hd * 4; *calls = 2 * L; break;
    case ROPE_K: *bytes = 2 * NK * es + (double)s->T * s->hd * 4; *calls = 2 * L; break;
    case ATTN_FWD:
        *bytes = (2 * NQ + 2 * NK) * es + N * s->H * 4;
        *flops = 4.0 * s->hd * causal_pairs(s);
        *calls = L;
        break;
    case ATTN_BWD:
        *bytes = (3 * NQ + 2 * NK) * es + 2 * (NQ + 2 * NK) * es + N * s->H * 4;
        *flops = 10.0 * s->hd * causal_pairs(s);
        *calls = L;
        break;
    case GLU_FWD: *bytes = 3 * NF * es; *calls = L; break;
    case GLU_BWD: *bytes = 5 * NF * es; *calls = L; break;
    case XENT_FWD: *bytes = NV * es + N * 12; *calls = 1; break;
    case XENT_BWD: *bytes = 2 * NV * es + N * 8; *calls = 1; break;
    case ADD: *bytes = 3 * NC * es; *calls = 0; break;
    case CAST: *bytes = P * 6; *calls = 0; break;
    case SUMSQ: *bytes = P * 4; *calls = 1; break;
    default: *bytes = P * (28 + es); *calls = 1; break;   /* AdamW: 16 read, 12 + es written */
    }
}

/* The buffers an op writes, to compare; and the ones to refill before a
 * compared run (accumulated or updated in place). */
static int op_outputs(int op, ctx_t *c, buf_t **out) {
    int n = 0;
    switch (op) {
    case MATMUL: out[n++] = &c->cmat; break;
    case EMB_FWD: out[n++] = &c->y; break;
    case EMB_BWD: out[n++] = &c->dtable; break;
    case NORM_FWD: out[n++] = &c->y; out[n++] = &c->rstd; break;
    case NORM_BWD: out[n++] = &c->dx; out[n++] = &c->dw; break;
    case ROPE_Q: out[n++] = &c->q; break;
    case ROPE_K: out[n++] = &c->k; break;
    case ATTN_FWD: out[n++] = &c->att; out[n++] = &c->lse; break;
    case ATTN_BWD: out[n++] = &c->dq; out[n++] = &c->dk; out[n++] = &c->dv; break;
    case GLU_FWD: out[n++] = &c->g; break;
    case GLU_BWD: out[n++] = &c->da; out[n++] = &c->db; break;
    case XENT_FWD: out[n++] = &c->picked; out[n++] = &c->xlse; break;
    case XENT_BWD: out[n++] = &c->dlogits; break;
    case ADD: out[n++] = &c->y; break;
    case CAST: out[n++] = &c->working; break;
    case SUMSQ: break;
    default: out[n++] = &c->master; out[n++] = &c->m; out[n++] = &c->vv; out[n++] = &c->working; break;
    }
    return n;
}

static double sumsq_result;

static void op_run(int op, const ops_t *o, ctx_t *c) {
    const device_t *d = dev;
    const shape_t *s = &c->s;
    const dtype_t t = s->t;
    const size_t NC = (size_t)s->N * s->C, NF = (size_t)s->N * s->F;
    switch (op) {
    case MATMUL:
        o->matmul(d, 0, 0, s->N, s->F, s->C, 1.0f, c->x.p, s->C, c->wmat.p, s->F, t, 0.0f,
                  c->cmat.p, s->F, t);
        break;
    case EMB_FWD: o->embedding_forward(d, t, c->tokens, c->table.p, c->y.p, s->N, s->C, 0, s->V); break;
    case EMB_BWD: o->embedding_backward(d, t, c->tokens, c->dy.p, c->dtable.p, s->N, s->C, 0, s->V); break;
    case NORM_FWD: o->rmsnorm_forward(d, t, c->x.p, c->w.p, c->y.p, c->rstd.p, s->N, s->C, 1e-5f); break;
    case NORM_BWD:
        o->rmsnorm_backward(d, t, c->x.p, c->w.p, c->rstd.p, c->dy.p, c->dres.p, c->dx.p, c->dw.p,
                            s->N, s->C);
        break;
    case ROPE_Q: o->rope(d, t, c->q.p, c->cs, s->B, s->T, s->H, s->hd, 0, 0); break;
    case ROPE_K: o->rope(d, t, c->k.p, c->cs, s->B, s->T, s->KV, s->hd, 0, 0); break;
    case ATTN_FWD:
        o->attn_forward(d, t, c->q.p, c->k.p, c->v.p, c->att.p, c->lse.p, s->B, s->T, s->T, s->H,
                        s->KV, s->hd, 0, 0);
        break;
    case ATTN_BWD:
        o->attn_backward(d, t, c->q.p, c->k.p, c->v.p, c->att.p, c->dout.p, c->lse.p, c->dq.p,
                         c->dk.p, c->dv.p, s->B, s->T, s->T, s->H, s->KV, s->hd, 0, 0);
        break;
    case GLU_FWD: o->swiglu_forward(d, t, c->a.p, c->b.p, c->g.p, NF); break;
    case GLU_BWD: o->swiglu_backward(d, t, c->a.p, c->b.p, c->g.p, c->da.p, c->db.p, NF); break;
    case XENT_FWD:
        o->xent_forward(d, t, c->logits.p, c->targets, c->picked.p, c->xlse.p, s->N, s->V, 0);
        break;
    case XENT_BWD:
        o->xent_backward(d, t, c->logits.p, c->targets, c->xlse.p, c->dlogits.p, 1.0f / s->N,
                         s->N, s->V, 0);
        break;
    case ADD: o->add(d, t, c->x.p, c->dy.p, c->y.p, NC); break;
    case CAST: o->cast(d, c->master.p, DT_F32, c->working.p, t, s->P); break;
    case SUMSQ: sumsq_result = o->sumsq(d, DT_F32, c->grad.p, s->P); break;
    default:
        o->adamw(d, c->master.p, c->m.p, c->vv.p, c->grad.p, c->working.p, t, s->P, 1e-3f, 0.9f,
                 0.95f, 1e-8f, 0.1f, 1.0f, 1);
        break;
    }
}

/* Inputs an op reads that earlier ops (or its own timed runs) changed. */
static void op_reset(int op, ctx_t *c) {
    switch (op) {
    case ROPE_Q: buf_fill(&c->q); break;
    case ROPE_K: buf_fill(&c->k); break;
    case ATTN_BWD: buf_fill(&c->dq); buf_fill(&c->dk); buf_fill(&c->dv); break;
    case EMB_BWD: buf_fill(&c->dtable); break;
    case NORM_BWD: buf_fill(&c->dw); break;
    case ADAMW: buf_fill(&c->master); buf_fill(&c->m); buf_fill(&c->vv); break;
    default: break;
    }
}

/* Prerequisites: attention's backward needs the forward's out and lse, the
 * norm's backward its rstd, the cross-entropy's backward its lse. */
static void op_prepare(int op, const ops_t *o, ctx_t *c) {
    if (op == ATTN_BWD || op == ATTN_FWD) { buf_fill(&c->q); buf_fill(&c->k); }
    if (op == ATTN_BWD) op_run(ATTN_FWD, o, c);
    if (op == NORM_BWD) op_run(NORM_FWD, o, c);
    if (op == XENT_BWD) op_run(XENT_FWD, o, c);
}

static double time_op(int op, const ops_t *o, ctx_t *c, int warmup, int iters) {
    op_prepare(op, o, c);
    for (int i = 0; i < warmup; i++) op_run(op, o, c);
    dev_timer_t tm;
    dev_timer_start(&tm, dev);
    for (int i = 0; i < iters; i++) op_run(op, o, c);
    return dev_timer_stop_ms(&tm) / iters;
}

/* ---- the check ------------------------------------------------------------------------ */
static float *download(const buf_t *b) {
    void *h = xmalloc(b->n * dtype_size(b->t) + 1);
    dev_to_host(dev, h, b->p, b->n * dtype_size(b->t));
    float *f = xmalloc(b->n * sizeof(float) + 1);
    for (size_t i = 0; i < b->n; i++) f[i] = dtype_get(h, b->t, i);
    free(h);
    return f;
}

/* Worst |fast - simple| / max(1, |simple|) over the op's outputs, each run
 * from the same inputs; inf/NaN that differ count as infinitely wrong. */
static double check_op(int op, const ops_t *fast, const ops_t *simple, ctx_t *c) {
    buf_t *out[4];
    const int n = op_outputs(op, c, out);
    float *want[4];
    double s_simple = 0, worst = 0;
    op_prepare(op, simple, c);
    op_reset(op, c);
    op_run(op, simple, c);
    s_simple = sumsq_result;
    for (int i = 0; i < n; i++) want[i] = download(out[i]);
    op_prepare(op, fast, c);
    op_reset(op, c);
    op_run(op, fast, c);
    if (op == SUMSQ) worst = fabs(sumsq_result - s_simple) / fmax(1.0, fabs(s_simple));
    for (int i = 0; i < n; i++) {
        float *got = download(out[i]);
        for (size_t j = 0; j < out[i]->n; j++) {
            const double a = got[j], b = want[i][j];
            const double e = a == b ? 0 : fabs(a - b) / fmax(1.0, fabs(b));
            if (!(e <= worst)) worst = e != e ? INFINITY : e;
        }
        free(got);
        free(want[i]);
    }
    return worst;
}

/* bf16: one rounding either way (two for attention, whose tensor-core
 * kernels round p and ds to bf16); fp32: sums in another order. */
static double check_tol(int op, dtype_t t) {
    if (t == DT_F32) return 1e-5;
    return (op == ATTN_FWD || op == ATTN_BWD ? 2.0 : 1.0) / 128;
}

/* ---- peaks ------------------------------------------------------------------------------ */
/* Memory bandwidth from the vendors' data sheets, GB/s; the first match wins. */
static double gpu_bandwidth(const char *name) {
    static const struct { const char *match; double gbs; } table[] = {
        {"H100 NVL", 3900}, {"H100 PCIe", 2000}, {"H100", 3350}, {"H200", 4800},
        {"A100-SXM4-80GB", 2039}, {"A100 80GB PCIe", 1935}, {"A100", 1555}, {"B200", 8000},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strstr(name, table[i].match)) return table[i].gbs * 1e9;
    return 0;
}

int main(int argc, char **argv) {
    dist_t dist;
    dist_init(&argc, &argv, &dist);
    common_args_t ca = COMMON_ARGS_DEFAULT;
    const char *dtype = "bf16";
    int B = 16, T = 1024, C = 1024, L = 8, H = 16, KV = 4, F = 2816, V = 32000;
    int iters = 10, warmup = 3, check = 1;
    double peak_tflops = 0, peak_gbs = 0;
    arg_t flags[] = {
        COMMON_ARGS(ca),
        {"dtype", ARG_CHOICE, &dtype, "storage type of activations and weights", "fp32|bf16", 0, 0},
        {"batch", ARG_INT, &B, "sequences B", NULL, 1, 1 << 20},
        {"seq", ARG_INT, &T, "tokens per sequence T", NULL, 1, 1 << 20},
        {"dim", ARG_INT, &C, "model width C", NULL, 1, 1 << 20},
        {"layers", ARG_INT, &L, "transformer blocks (calls per step)", NULL, 1, 1 << 16},
        {"heads", ARG_INT, &H, "query heads H (head dim C / H)", NULL, 1, 1 << 16},
        {"kv-heads", ARG_INT, &KV, "key/value heads, dividing H", NULL, 1, 1 << 16},
        {"ffn", ARG_INT, &F, "SwiGLU hidden size F", NULL, 1, 1 << 20},
        {"vocab", ARG_INT, &V, "vocabulary V", NULL, 2, 1 << 24},
        {"iters", ARG_INT, &iters, "timed runs per op and kernel set", NULL, 1, 1e6},
        {"warmup", ARG_INT, &warmup, "untimed runs first", NULL, 0, 1e6},
        {"check", ARG_INT, &check, "1: compare each fast result with the simple kernels' (GPU)", NULL, 0, 1},
        {"peak", ARG_DOUBLE, &peak_tflops, "bf16 (or fp32) peak TFLOP/s instead of the table", NULL, 0, 1e9},
        {"peak-gbs", ARG_DOUBLE, &peak_gbs, "memory bandwidth GB/s instead of the table", NULL, 0, 1e9},
    };
    args_parse(argc, argv, "bench_ops",
               "Every op of ops.h timed at one trainer's shapes: the fast CUDA kernels beside the\n"
               "simple ones they replaced, bytes/s and FLOP/s against the device's peaks, time per\n"
               "training step, and each fast result checked against the simple kernels'.",
               flags, ARRAY_LEN(flags));
    if (dist.world > 1) usage_error("bench_ops measures one device; run it without mpirun");
    if (C % H) usage_error("--heads %d does not divide --dim %d", H, C);
    if (H % KV) usage_error("--kv-heads %d does not divide --heads %d", KV, H);
    if ((C / H) % 2) usage_error("head dim %d is odd (RoPE rotates pairs)", C / H);

    device_t d;
    device_init(&d, ca.device, dist.local_rank, dist.local_world, ca.threads);
    dev = &d;
    shape_t s = {B, T, C, L, H, KV, C / H, F, (int)V, B * T, 0, strcmp(dtype, "bf16") == 0 ? DT_BF16 : DT_F32};
    s.P = (size_t)V * C * 2 + (size_t)C +
          (size_t)L * ((size_t)2 * C + (size_t)C * H * s.hd * 2 + (size_t)C * KV * s.hd * 2 + (size_t)3 * C * F);
    const int gpu = d.kind == DEV_CUDA;
    const ops_t *fast = ops_of(&d), *simple = NULL;
#ifdef USE_CUDA
    if (gpu) simple = &ops_cuda_simple;
#endif
    const precision_t prec = s.t == DT_BF16 ? PREC_BF16 : PREC_FP32;
    const double flops_peak = perf_peak(&d, prec, peak_tflops);
    const double bw_peak = peak_gbs > 0 ? peak_gbs * 1e9 : gpu ? gpu_bandwidth(d.name) : 0;

    say("bench_ops: the ops of ops.h at one trainer's shapes%s\n",
        simple ? ", fast kernels (ops_cuda) beside the simple ones (ops_cuda_simple)" : "");
    if (gpu) say("device:  cuda %d (%s)\n", d.gpu, d.name);
    else say("device:  cpu (%s), %d thread%s\n", d.name, d.threads, d.threads == 1 ? "" : "s");
    const char *src = peak_tflops > 0 ? "--peak" : gpu ? "data sheet" : "measured";
    if (flops_peak > 0) say("peak:    %s %.1f TFLOP/s (%s)\n", precision_name[prec], flops_peak / 1e12, src);
    else say("peak:    %s FLOP/s unknown for this device; pass --peak TFLOPS\n", precision_name[prec]);
    if (bw_peak > 0) say("memory:  %.0f GB/s (%s)\n", bw_peak / 1e9, peak_gbs > 0 ? "--peak-gbs" : "data sheet");
    else say("memory:  bandwidth unknown for this device; pass --peak-gbs GBS\n");
    say("shape:   %s, B %d, T %d (N %d tokens), C %d, %d layers, H %d, KV %d, hd %d, F %d, V %d: "
        "%.1f M parameters\n", dtype_name(s.t), B, T, s.N, C, L, H, KV, s.hd, F, V, s.P / 1e6);
    say("timing:  mean of %d runs after %d warm-up runs (%s)\n\n", iters, warmup,
        gpu ? "CUDA events on the compute stream" : "wall clock");

    ctx_t c;
    ctx_init(&c, s);
    say("%-20s %9s %8s %8s %6s %6s %9s %7s %9s %9s  %s\n", "op", "calls/st", "ms", "GB/s", "TFLOP/s",
        "%peak", simple ? "simple ms" : "", simple ? "speedup" : "", "ms/step", simple ? "simple" : "",
        simple && check ? "check (tolerance)" : "");
    double step_fast = 0, step_simple = 0;
    int wrong = 0;
    for (int op = 0; op < NOPS; op++) {
        double bytes, flops, calls;
        op_cost(op, &c, &bytes, &flops, &calls);
        const double ms = time_op(op, fast, &c, warmup, iters);
        const double ms_simple = simple ? time_op(op, simple, &c, warmup, iters) : 0;
        const double gbs = bytes / (ms * 1e-3), tf = flops / (ms * 1e-3);
        const double pk = ops_list[op].compute ? (flops_peak > 0 ? tf / flops_peak : -1)
                                               : (bw_peak > 0 ? gbs / bw_peak : -1);
        char pct[16] = "-", tfs[16] = "-", sm[16] = "", sp[16] = "", stp[16] = "", chk[48] = "";
        if (pk >= 0) snprintf(pct, sizeof pct, "%.0f%%", 100 * pk);
        if (flops > 0) snprintf(tfs, sizeof tfs, "%.1f", tf / 1e12);
        if (simple) {
            snprintf(sm, sizeof sm, "%.3f", ms_simple);
            snprintf(sp, sizeof sp, "%.1fx", ms_simple / ms);
            snprintf(stp, sizeof stp, "%.2f", calls * ms_simple);
        }
        if (simple && check) {
            const double err = check_op(op, fast, simple, &c), tol = check_tol(op, s.t);
            snprintf(chk, sizeof chk, "%s %.1e (%.0e)", err <= tol ? "ok" : "WRONG", err, tol);
            if (!(err <= tol)) wrong++;
        }
        step_fast += calls * ms;
        step_simple += calls * ms_simple;
        say("%-20s %9.2f %8.3f %8.0f %6s %6s %9s %7s %9.2f %9s  %s\n", ops_list[op].name, calls, ms,
            gbs / 1e9, tfs, pct, sm, sp, calls * ms, stp, chk);
    }
    say("\nper step, these ops: %.2f ms", step_fast);
    if (simple) say(" (simple kernels: %.2f ms, %.1fx)", step_simple, step_simple / step_fast);
    say("\n");
    say("(matmul's calls/step: the model's linear-layer FLOPs over this GEMM's, so its ms/step\n"
        " is the linear layers' time at this GEMM's rate; add, cast: not in a one-GPU step)\n");
    if (wrong) fprintf(stderr, "error: %d fast result%s differ from the simple kernels' (see check)\n",
                       wrong, wrong == 1 ? "" : "s");
    device_finalize(&d);
    dist_finalize();
    return wrong ? 1 : 0;
}
