/* tp.c: the tensor-parallel seams over a communicator, their accounting, and
 * the formulas the chapter checks them against (see tp.h). */
#include "tp.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"

/* Every seam call blocks until its collective is done (on a GPU: until it
 * is done on the compute stream, which the timer's events measure), so its
 * whole time is exposed communication. */
#define TIMED(t, call)                                      \
    do {                                                    \
        dev_timer_t tm_;                                    \
        dev_timer_start(&tm_, (t)->comm->dev);              \
        call;                                               \
        (t)->st.comm_s += dev_timer_stop_ms(&tm_) / 1e3;    \
    } while (0)

/* forward of f under sp: the ranks' row blocks, in rank order */
static void gather(void *ctx, const void *src, void *dst, size_t rows, int C, dtype_t t) {
    /* ASSIGNMENT 08-seams: the seams f and g (08_tensor_parallel/README.md, "Assignment: the seams f and g") */
    /* STUB: (void)ctx, (void)src, (void)dst, (void)rows, (void)C, (void)t; */
    /* STUB: not_implemented("seam gather (f forward under sp)", "08_tensor_parallel/README.md, Assignment: the seams f and g"); */
    tp_t *tp = ctx;
    TIMED(tp, comm_allgather(tp->comm, src, dst, rows * (size_t)C, t));
    /* END ASSIGNMENT 08-seams */
}

/* g forward / f backward: the sum over the ranks; with sp only this rank's
 * block of rows of it */
static void reduce(void *ctx, void *src, void *dst, size_t rows, int C, dtype_t t) {
    /* ASSIGNMENT 08-seams: the seams f and g (08_tensor_parallel/README.md, "Assignment: the seams f and g") */
    /* STUB: (void)ctx, (void)src, (void)dst, (void)rows, (void)C, (void)t; */
    /* STUB: not_implemented("seam reduce (g forward, f backward)", "08_tensor_parallel/README.md, Assignment: the seams f and g"); */
    tp_t *tp = ctx;
    if (src == dst) TIMED(tp, comm_allreduce(tp->comm, src, src, rows * (size_t)C, t, RED_SUM));
    else TIMED(tp, comm_reduce_scatter(tp->comm, src, dst, rows / (size_t)tp->comm->size * (size_t)C, t, RED_SUM));
    /* END ASSIGNMENT 08-seams */
}

/* Vocabulary-parallel cross-entropy: lse over the whole vocabulary from the
 * ranks' lse of their slices; the target logit from the one rank that has
 * it (the others contribute 0). */
static void vocab(void *ctx, float *lse, float *picked, int n) {
    tp_t *tp = ctx;
    const device_t *d = tp->comm->dev;
    size_t need = (size_t)tp->comm->size * (size_t)n;
    if (need > tp->lse_cap) {
        dev_free(d, tp->lse_parts);
        tp->lse_parts = dev_alloc_as(d, need * sizeof(float), MEM_COMM);
        tp->lse_cap = need;
    }
    TIMED(tp, comm_allgather(tp->comm, lse, tp->lse_parts, (size_t)n, DT_F32));
    op_lse_combine(d, tp->lse_parts, lse, tp->comm->size, n);
    TIMED(tp, comm_allreduce(tp->comm, picked, picked, (size_t)n, DT_F32, RED_SUM));
}

void tp_init(tp_t *t, comm_t *comm, model_t *m) {
    memset(t, 0, sizeof *t);
    t->comm = comm;
    t->seams = (model_tp_t){t, gather, reduce, vocab};
    m->tp = &t->seams;
    if (m->shard.tp != comm->size)
        die("tp_init: the model has tensor parallelism %d, the communicator %d ranks", m->shard.tp,
            comm->size);
    /* kv heads shared by r consecutive ranks: a communicator per group */
    int nt = model_tensors(&m->cfg, &m->shard, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(&m->cfg, &m->shard, ts, nt);
    int r = 1;
    for (int k = 0; k < nt; k++)
        if (!ts[k].is_norm && ts[k].tp_replicas > 1) r = ts[k].tp_replicas;
    free(ts);
    if (r > 1) {
        MPI_Comm g;
        MPI_CHECK(MPI_Comm_split(comm->mpi, comm->rank / r, comm->rank, &g));
        comm_init(&t->kv, g, comm->backend == COMM_NCCL ? "nccl" : "mpi", comm->dev);
        t->kv.name = "shared kv-head";
        MPI_Comm_free(&g);
        t->has_kv = 1;
    }
}

void tp_free(tp_t *t) {
    if (t->has_kv) comm_destroy(&t->kv);
    dev_free(t->comm->dev, t->lse_parts);
    memset(t, 0, sizeof *t);
}

void tp_stats_reset(tp_t *t) { memset(&t->st, 0, sizeof t->st); }

/* ---- bytes per unit --------------------------------------------------------------- */
static int place_of(const model_t *m, int unit) {
    int l = m->units[unit].layer;
    return l < 0 ? TP_EMBEDDING : l == m->cfg.layers ? TP_HEAD : TP_LAYER;
}

static void count_before(void *ctx, model_t *m, int unit, model_pass_t pass) {
    (void)m; (void)unit; (void)pass;
    tp_t *t = ctx;
    t->mark = comm_sent_bytes(t->comm);
}

static void count_after(void *ctx, model_t *m, int unit, model_pass_t pass) {
    tp_t *t = ctx;
    int p = place_of(m, unit);
    t->st.bytes[p][pass] += comm_sent_bytes(t->comm) - t->mark;
    t->st.passes[p][pass]++;
}

void tp_count_bytes(tp_t *t, model_t *m) { model_add_hook(m, count_before, count_after, t); }

void tp_reduce_replicated_grads(tp_t *t, model_t *m, const optim_t *opt) {
    double b0 = comm_sent_bytes(t->comm);
    dev_timer_t tm;
    dev_timer_start(&tm, t->comm->dev);
    int nt = model_tensors(&m->cfg, &m->shard, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(&m->cfg, &m->shard, ts, nt);
    for (int p = 0; p < opt->npieces; p++) {
        const optim_piece_t *pc = &opt->pieces[p];
        for (int k = 0; k < nt; k++) {
            if (!ts[k].tp_partial_grad) continue;
            size_t b = ts[k].offset, e = b + ts[k].rows * ts[k].cols;
            if (b < pc->flat) b = pc->flat;
            if (e > pc->flat + pc->count) e = pc->flat + pc->count;
            if (e <= b) continue;
            float *g = pc->grad + (b - pc->flat);
            if (ts[k].tp_replicas == m->shard.tp) {
                comm_allreduce(t->comm, g, g, e - b, DT_F32, RED_SUM);
            } else {   /* the shared-kv group is part of the tp group: its bytes count there */
                double k0 = comm_sent_bytes(&t->kv);
                comm_allreduce(&t->kv, g, g, e - b, DT_F32, RED_SUM);
                t->comm->sent[COLL_ALLREDUCE] += comm_sent_bytes(&t->kv) - k0;
            }
        }
    }
    free(ts);
    t->st.comm_s += dev_timer_stop_ms(&tm) / 1e3;
    t->st.grad_bytes += comm_sent_bytes(t->comm) - b0;
}

/* ---- the formulas ------------------------------------------------------------------ */
tp_bytes_t tp_bytes_formula(const model_t *m, size_t rows_full) {
    tp_bytes_t r;
    memset(&r, 0, sizeof r);
    const double T = m->shard.tp, f = (T - 1) / T;
    const double X = (double)rows_full * m->cfg.dim * dtype_size(m->dtype);
    const double ag = f * X, rs = f * X, ar = 2 * f * X;
    /* the vocabulary: each rank's lse (fp32) gathered, the picked logits summed */
    const double vocab = (T - 1) * rows_full * 4.0 + 2 * f * rows_full * 4.0;
    if (m->shard.sp) {
        r.b[TP_LAYER][0] = 2 * ag + 2 * rs;       /* gather xn1, xn2; scatter the two branch outputs */
        r.b[TP_LAYER][1] = 4 * ag + 2 * rs;       /* gather dres twice and xn1, xn2 again; scatter dxn twice */
        r.b[TP_EMBEDDING][0] = rs;
        r.b[TP_EMBEDDING][1] = ag;
        r.b[TP_HEAD][0] = ag + vocab;
        r.b[TP_HEAD][1] = ag + rs;
    } else {
        r.b[TP_LAYER][0] = 2 * ar;                /* g after wo and after w2 */
        r.b[TP_LAYER][1] = 2 * ar;                /* f before wq/wk/wv and before w1/w3 */
        r.b[TP_EMBEDDING][0] = ar;
        r.b[TP_EMBEDDING][1] = 0;
        r.b[TP_HEAD][0] = vocab;
        r.b[TP_HEAD][1] = ar;
    }
    if (m->shard.tp == 1) memset(&r, 0, sizeof r);
    return r;
}

double tp_grad_bytes_formula(const model_t *m) {
    const double T = m->shard.tp, C = m->cfg.dim, hd = m->hd;
    double b = 0;
    int norms = 2 * m->n_layers + m->has_head;
    if (m->shard.sp) b += norms * 2 * (T - 1) / T * C * 4;
    /* kv heads shared by r ranks: wk and wv of each layer, C x hd each */
    if (m->cfg.kv_heads % m->shard.tp) {
        double r = m->shard.tp / m->cfg.kv_heads;
        b += m->n_layers * 2 * (2 * (r - 1) / r * C * hd * 4);
    }
    return b;
}

tp_acts_t tp_acts_formula(const model_t *m, int B) {
    tp_acts_t a;
    const double es = dtype_size(m->dtype), C = m->cfg.dim, hd = m->hd, L = m->n_layers;
    const double Rf = (double)B * m->T, R = m->shard.sp ? Rf / m->shard.tp : Rf;
    const double H = m->H, KV = m->KV, F = m->F, V = m->V;
    a.outside = L * R * (4 * C * es + 8) + (m->has_head ? R * (2 * C * es + 4) : R * C * es);
    a.inside = L * Rf * (es * (2 * H * hd + 2 * KV * hd + 3 * F) + 4 * H) +
               (m->has_head ? Rf * (V * es + 8) : 0);
    a.other = Rf * 8;
    a.total = a.outside + a.inside + a.other;
    return a;
}
