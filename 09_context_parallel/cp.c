/* cp.c: ring attention and Ulysses as attention cores of the model (cp.h).
 *
 * Shapes, for one micro-batch of B sequences of T tokens on C ranks: this
 * rank holds nck chunks (1 in order, 2 balanced) of Tc tokens of every
 * sequence, Rf = nck B Tc = B T / C rows, chunk-major (chunk k, sequence b,
 * token t). q and out are (Rf, H hd), k and v (Rf, KV hd), lse (nck, B, H,
 * Tc); chunk k of q starts at row k B Tc. H and KV are the shard's heads. */
#include "cp.h"

#include <string.h>
#include <time.h>

#include "check.h"
#include "ops.h"

const char *const cp_algo_name[2] = {"ring", "ulysses"};

static size_t es_of(const model_t *m) { return dtype_size(m->dtype); }
static void *at(const model_t *m, const void *p, size_t n) { return (char *)p + n * es_of(m); }

/* CPU time of the whole process (every thread of this rank). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Time on the device's compute stream (a GPU's events synchronise; the CPU's
 * work is synchronous anyway), and the CPU time this rank's threads spent:
 * on a CPU shared with other jobs the wall clock also counts the time the
 * rank waited for a core, the CPU time only its own work. */
#define TIMED(c, field, ...)                               \
    do {                                                   \
        dev_timer_t tm_;                                   \
        double cpu0_ = cpu_now();                          \
        dev_timer_start(&tm_, (c)->d);                     \
        __VA_ARGS__;                                       \
        (c)->st.field += dev_timer_stop_ms(&tm_) / 1e3;    \
        (c)->st.field##_cpu += cpu_now() - cpu0_;          \
    } while (0)

/* Query-key pairs of a block of Tq queries from position qp against Tk keys
 * from kp, causal: query qp + i sees keys up to its own position. */
static double pairs(int qp, int Tq, int kp, int Tk) {
    double n = 0;
    for (int i = 0; i < Tq; i++) {
        int seen = qp + i - kp + 1;
        n += seen < 0 ? 0 : seen > Tk ? Tk : seen;
    }
    return n;
}

/* ---- ring attention ---------------------------------------------------------------- */
static void ring_forward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                         const void *v, void *out, float *lse) {
    cp_t *c = ctx;
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int B = a->B, Tc = m->Tc, H = m->H, KV = m->KV, hd = m->hd, C = c->C, r = c->rank;
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    const size_t nkv = (size_t)m->nck * ck;   /* k (or v) of one rank's whole block */
    const double b0 = comm_sent_bytes(c->comm);
    if (C > 1) TIMED(c, comm_s, {   /* one buffer, so that one message carries both */
        dev_copy(d, c->kv[0], k, nkv * es_of(m));
        dev_copy(d, at(m, c->kv[0], nkv), v, nkv * es_of(m));
    });
    int cur = 0, first[2] = {1, 1};
    for (int s = 0; s < C; s++) {
        const int src = (r - s + C) % C;   /* the rank whose block we hold */
        const void *hk = C > 1 ? c->kv[cur] : k, *hv = C > 1 ? at(m, c->kv[cur], nkv) : v;
        comm_req_t req = {0};
        if (s < C - 1)   /* the next block is on its way while this one is used */
            comm_isendrecv(c->comm, c->kv[cur], 2 * nkv, (r + 1) % C, c->kv[1 - cur], 2 * nkv,
                           (r - 1 + C) % C, t, &req);
        TIMED(c, compute_s, {
            for (int qk = 0; qk < m->nck; qk++)
                for (int kk = 0; kk < m->nck; kk++) {
                    int qp = m->chunk_pos[qk], kp = model_cp_chunk_pos(m, src, kk);
                    if (kp > qp + Tc - 1) continue;   /* every key in this query chunk's future */
                    void *o = first[qk] ? at(m, out, qk * cq) : c->o_b;
                    float *l = first[qk] ? lse + qk * cl : c->l_b;
                    op_attn_forward(d, t, at(m, q, qk * cq), at(m, hk, kk * ck), at(m, hv, kk * ck), o, l,
                                    B, Tc, Tc, H, KV, hd, qp, kp);
                    if (!first[qk])   /* online softmax: the union of the two key sets */
                        op_attn_merge(d, t, at(m, out, qk * cq), lse + qk * cl, c->o_b, c->l_b, B, Tc, H, hd);
                    first[qk] = 0;
                    c->st.pairs += (double)B * H * pairs(qp, Tc, kp, Tc);
                    if (s < C - 1) comm_progress(c->comm, &req);   /* MPI moves data only when called */
                }
        });
        if (s < C - 1) {
            TIMED(c, comm_s, comm_wait(c->comm, &req));
            cur = 1 - cur;
        }
    }
    c->st.bytes[0] += comm_sent_bytes(c->comm) - b0;
    c->st.calls[0]++;
}

/* Backward: the blocks go around again. The gradient of block `src`'s keys
 * and values collects one contribution per rank; it travels one step behind
 * its block (so its exchange overlaps the next step's compute): at step s
 * this rank computes its part for the block it holds into a zeroed buffer,
 * while the sum of the earlier ranks' parts for that same block arrives from
 * the previous rank, and then adds the two. After the last step each sum
 * holds every rank's part and takes one more hop: home. */
static void ring_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                          const void *v, const void *out, const void *dout, const float *lse,
                          void *dq, void *dk, void *dv) {
    cp_t *c = ctx;
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int B = a->B, Tc = m->Tc, H = m->H, KV = m->KV, hd = m->hd, C = c->C, r = c->rank;
    const int next = (r + 1) % C, prev = (r - 1 + C) % C;
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    const size_t nkv = (size_t)m->nck * ck, es = es_of(m);
    const double b0 = comm_sent_bytes(c->comm);
    if (C > 1) TIMED(c, comm_s, {
        dev_copy(d, c->kv[0], k, nkv * es);
        dev_copy(d, at(m, c->kv[0], nkv), v, nkv * es);
    });
    int cur = 0, ds = 0, dr = 1, dp = 2;   /* dkv buffers: sent on, arriving, computed here */
    for (int s = 0; s < C; s++) {
        const int src = (r - s + C) % C;
        /* one rank: its own block, its gradients straight into dk and dv */
        const void *hk = C > 1 ? c->kv[cur] : k, *hv = C > 1 ? at(m, c->kv[cur], nkv) : v;
        void *gk = C > 1 ? c->dkv[dp] : dk, *gv = C > 1 ? at(m, c->dkv[dp], nkv) : dv;
        comm_req_t kreq = {0}, dreq = {0};
        if (s < C - 1)
            comm_isendrecv(c->comm, c->kv[cur], 2 * nkv, next, c->kv[1 - cur], 2 * nkv, prev, t, &kreq);
        if (s > 0)   /* last step's complete sum on, the earlier ranks' sum for this block in */
            comm_isendrecv(c->comm, c->dkv[ds], 2 * nkv, next, c->dkv[dr], 2 * nkv, prev, t, &dreq);
        TIMED(c, compute_s, {
            if (C > 1) dev_memset0(d, c->dkv[dp], 2 * nkv * es);
            for (int qk = 0; qk < m->nck; qk++)
                for (int kk = 0; kk < m->nck; kk++) {
                    int qp = m->chunk_pos[qk], kp = model_cp_chunk_pos(m, src, kk);
                    if (kp > qp + Tc - 1) continue;
                    op_attn_backward(d, t, at(m, q, qk * cq), at(m, hk, kk * ck), at(m, hv, kk * ck),
                                     at(m, out, qk * cq), at(m, dout, qk * cq), lse + qk * cl,
                                     at(m, dq, qk * cq), at(m, gk, kk * ck), at(m, gv, kk * ck), B, Tc, Tc,
                                     H, KV, hd, qp, kp);
                    comm_progress(c->comm, &kreq);
                    comm_progress(c->comm, &dreq);
                }
        });
        TIMED(c, comm_s, {
            comm_wait(c->comm, &kreq);
            comm_wait(c->comm, &dreq);
        });
        if (s > 0) TIMED(c, compute_s, op_add(d, t, c->dkv[dr], c->dkv[dp], c->dkv[dp], 2 * nkv));
        int free_buf = ds;   /* dkv[dp] now holds the sum so far for block src: next to send */
        ds = dp;
        dp = free_buf;
        cur = 1 - cur;
    }
    if (C > 1) {   /* each sum one hop further: home */
        TIMED(c, comm_s, comm_sendrecv(c->comm, c->dkv[ds], 2 * nkv, next, c->dkv[dr], 2 * nkv, prev, t));
        TIMED(c, compute_s, {
            op_add(d, t, dk, c->dkv[dr], dk, nkv);
            op_add(d, t, dv, at(m, c->dkv[dr], nkv), dv, nkv);
        });
    }
    c->st.bytes[1] += comm_sent_bytes(c->comm) - b0;
    c->st.calls[1]++;
}

/* ---- Ulysses ----------------------------------------------------------------------- */
/* Columns [col0, col0 + w) of each of `rows` rows of src (width sw), into a
 * dense (rows, w) dst; and back. Elements of the model's dtype or fp32. */
static void cols_out(const device_t *d, size_t es, void *dst, const void *src, size_t rows, size_t sw,
                     size_t col0, size_t w) {
    dev_copy_2d(d, dst, w * es, (const char *)src + col0 * es, sw * es, w * es, rows);
}
static void cols_in(const device_t *d, size_t es, void *dst, size_t dw, size_t col0, const void *src,
                    size_t rows, size_t w) {
    dev_copy_2d(d, (char *)dst + col0 * es, dw * es, src, w * es, w * es, rows);
}

/* Rank i's rows (nck, B, Tc, w) to and from the head layout (B, T, w): chunk
 * k of sequence b is Tc consecutive tokens from model_cp_chunk_pos(m, i, k). */
static void to_seq(const model_t *m, void *dst, const void *src, int i, int B, size_t w) {
    const size_t es = es_of(m), Tc = m->Tc, T = m->cfg.seq;
    for (int k = 0; k < m->nck; k++)
        dev_copy_2d(m->d, at(m, dst, (size_t)model_cp_chunk_pos(m, i, k) * w), T * w * es,
                    at(m, src, (size_t)k * B * Tc * w), Tc * w * es, Tc * w * es, (size_t)B);
}
static void from_seq(const model_t *m, void *dst, const void *src, int i, int B, size_t w) {
    const size_t es = es_of(m), Tc = m->Tc, T = m->cfg.seq;
    for (int k = 0; k < m->nck; k++)
        dev_copy_2d(m->d, at(m, dst, (size_t)k * B * Tc * w), Tc * w * es,
                    at(m, src, (size_t)model_cp_chunk_pos(m, i, k) * w), T * w * es, Tc * w * es, (size_t)B);
}
/* The lse: this rank's (nck, B, Hc, Tc) from and to the head layout (B, Hc, T). */
static void lse_to_seq(const model_t *m, float *dst, const float *src, int i, int B, int Hc) {
    const size_t Tc = m->Tc, T = m->cfg.seq;
    for (int k = 0; k < m->nck; k++)
        dev_copy_2d(m->d, dst + model_cp_chunk_pos(m, i, k), T * 4, src + (size_t)k * B * Hc * Tc,
                    Tc * 4, Tc * 4, (size_t)B * Hc);
}
static void lse_from_seq(const model_t *m, float *dst, const float *src, int i, int B, int Hc) {
    const size_t Tc = m->Tc, T = m->cfg.seq;
    for (int k = 0; k < m->nck; k++)
        dev_copy_2d(m->d, dst + (size_t)k * B * Hc * Tc, Tc * 4, src + model_cp_chunk_pos(m, i, k),
                    T * 4, Tc * 4, (size_t)B * Hc);
}

/* The first kv head of rank j's head group. */
static int kv_first(const cp_t *c, int j) {
    return (j * c->Hc) / c->heads_per_kv;
}

/* q, k, v (and, backward, out and dout) of this rank's tokens: segment j of
 * the send buffer holds peer j's heads of them, one tensor after the other,
 * each (Rf, heads hd); and the lse (nck, B, Hc, Tc) per peer. */
static size_t pack(cp_t *c, model_t *m, size_t Rf, const void *const *qo, int nq, const void *k,
                   const void *v) {
    const size_t es = es_of(m), hd = m->hd, Hw = (size_t)m->H * hd, KVw = (size_t)m->KV * hd;
    const size_t hw = (size_t)c->Hc * hd, kw = (size_t)c->KVc * hd;
    const size_t seg = Rf * (nq * hw + 2 * kw);
    for (int j = 0; j < c->C; j++) {
        char *p = (char *)c->send + j * seg * es;
        cols_out(m->d, es, p, qo[0], Rf, Hw, j * hw, hw);
        p += Rf * hw * es;
        cols_out(m->d, es, p, k, Rf, KVw, kv_first(c, j) * hd, kw);
        p += Rf * kw * es;
        cols_out(m->d, es, p, v, Rf, KVw, kv_first(c, j) * hd, kw);
        p += Rf * kw * es;
        for (int x = 1; x < nq; x++, p += Rf * hw * es) cols_out(m->d, es, p, qo[x], Rf, Hw, j * hw, hw);
    }
    return seg;
}

/* Segment i of the receive buffer (rank i's tokens of this rank's heads) into
 * the head layout: q, k, v, then the others. */
static void unpack(cp_t *c, model_t *m, size_t Rf, size_t seg, int B, void *const *qo, int nq) {
    const size_t es = es_of(m), hw = (size_t)c->Hc * m->hd, kw = (size_t)c->KVc * m->hd;
    for (int i = 0; i < c->C; i++) {
        const char *p = (const char *)c->recv + i * seg * es;
        to_seq(m, qo[0], p, i, B, hw);
        p += Rf * hw * es;
        to_seq(m, c->kh, p, i, B, kw);
        p += Rf * kw * es;
        to_seq(m, c->vh, p, i, B, kw);
        p += Rf * kw * es;
        for (int x = 1; x < nq; x++, p += Rf * hw * es) to_seq(m, qo[x], p, i, B, hw);
    }
}

static void uly_forward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                        const void *v, void *out, float *lse) {
    cp_t *c = ctx;
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int B = a->B, T = m->cfg.seq, Hc = c->Hc, H = m->H;
    const size_t Rf = a->rows_full, es = es_of(m), hw = (size_t)Hc * m->hd;
    const double b0 = comm_sent_bytes(c->comm);
    TIMED(c, comm_s, {   /* sequence-sharded -> head-sharded */
        const void *qs[1] = {q};
        void *qh[1] = {c->qh};
        size_t seg = pack(c, m, Rf, qs, 1, k, v);
        comm_alltoall(c->comm, c->send, c->recv, seg, t);
        unpack(c, m, Rf, seg, B, qh, 1);
    });
    TIMED(c, compute_s, op_attn_forward(d, t, c->qh, c->kh, c->vh, c->oh, c->lseh, B, T, T, Hc, c->KVc,
                                        m->hd, 0, 0));
    c->st.pairs += (double)B * Hc * pairs(0, T, 0, T);
    TIMED(c, comm_s, {   /* and back: out and lse of this rank's tokens, every head */
        for (int i = 0; i < c->C; i++) {
            from_seq(m, at(m, c->send, i * Rf * hw), c->oh, i, B, hw);
            lse_from_seq(m, c->lsend + i * Rf * Hc, c->lseh, i, B, Hc);
        }
        comm_alltoall(c->comm, c->send, c->recv, Rf * hw, t);
        comm_alltoall(c->comm, c->lsend, c->lrecv, Rf * Hc, DT_F32);
        for (int j = 0; j < c->C; j++) {
            cols_in(d, es, out, (size_t)H * m->hd, j * hw, at(m, c->recv, j * Rf * hw), Rf, hw);
            /* (nck, B, Hc, Tc) of heads j Hc.. into (nck, B, H, Tc) */
            dev_copy_2d(d, lse + (size_t)j * Hc * m->Tc, (size_t)H * m->Tc * 4, c->lrecv + j * Rf * Hc,
                        (size_t)Hc * m->Tc * 4, (size_t)Hc * m->Tc * 4, (size_t)m->nck * B);
        }
    });
    c->st.bytes[0] += comm_sent_bytes(c->comm) - b0;
    c->st.calls[0]++;
}

static void uly_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                         const void *v, const void *out, const void *dout, const float *lse, void *dq,
                         void *dk, void *dv) {
    cp_t *c = ctx;
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int B = a->B, T = m->cfg.seq, Hc = c->Hc, H = m->H, KV = m->KV, C = c->C;
    const size_t Rf = a->rows_full, es = es_of(m), hd = m->hd, hw = (size_t)Hc * hd, kw = (size_t)c->KVc * hd;
    const size_t Tc = m->Tc;
    const double b0 = comm_sent_bytes(c->comm);
    TIMED(c, comm_s, {
        const void *qs[3] = {q, out, dout};
        void *qh[3] = {c->qh, c->oh, c->doh};
        size_t seg = pack(c, m, Rf, qs, 3, k, v);
        for (int j = 0; j < C; j++)   /* (nck, B, H, Tc) -> peer j's heads (nck, B, Hc, Tc) */
            dev_copy_2d(d, c->lsend + j * Rf * Hc, (size_t)Hc * Tc * 4, lse + (size_t)j * Hc * Tc,
                        (size_t)H * Tc * 4, (size_t)Hc * Tc * 4, (size_t)m->nck * B);
        comm_alltoall(c->comm, c->send, c->recv, seg, t);
        comm_alltoall(c->comm, c->lsend, c->lrecv, Rf * Hc, DT_F32);
        unpack(c, m, Rf, seg, B, qh, 3);
        for (int i = 0; i < C; i++) lse_to_seq(m, c->lseh, c->lrecv + i * Rf * Hc, i, B, Hc);
    });
    TIMED(c, compute_s, {
        dev_memset0(d, c->dqh, (size_t)B * T * hw * es);
        dev_memset0(d, c->dkh, (size_t)B * T * kw * es);
        dev_memset0(d, c->dvh, (size_t)B * T * kw * es);
        op_attn_backward(d, t, c->qh, c->kh, c->vh, c->oh, c->doh, c->lseh, c->dqh, c->dkh, c->dvh, B, T,
                         T, Hc, c->KVc, (int)hd, 0, 0);
    });
    const size_t seg = Rf * (hw + 2 * kw);
    TIMED(c, comm_s, {   /* dq, dk, dv of each rank's tokens back to it */
        for (int i = 0; i < C; i++) {
            char *p = (char *)c->send + i * seg * es;
            from_seq(m, p, c->dqh, i, B, hw);
            from_seq(m, p + Rf * hw * es, c->dkh, i, B, kw);
            from_seq(m, p + Rf * (hw + kw) * es, c->dvh, i, B, kw);
        }
        comm_alltoall(c->comm, c->send, c->recv, seg, t);
    });
    TIMED(c, compute_s, {
        /* a kv head read by several peers' query heads: their gradients summed, in
         * peer order, in the first one's segment */
        for (int j = 0; j < C; j++) {
            int j0 = j;
            while (j0 > 0 && kv_first(c, j0 - 1) == kv_first(c, j)) j0--;
            if (j0 == j) continue;
            char *p0 = (char *)c->recv + j0 * seg * es, *p = (char *)c->recv + j * seg * es;
            op_add(d, t, p0 + Rf * hw * es, p + Rf * hw * es, p0 + Rf * hw * es, 2 * Rf * kw);
        }
        const size_t Hw = (size_t)H * hd, KVw = (size_t)KV * hd;
        for (int j = 0; j < C; j++) {
            const char *p = (const char *)c->recv + j * seg * es;
            cols_in(d, es, c->scr_q, Hw, j * hw, p, Rf, hw);
            if (j > 0 && kv_first(c, j - 1) == kv_first(c, j)) continue;   /* summed above */
            cols_in(d, es, c->scr_kv, KVw, kv_first(c, j) * hd, p + Rf * hw * es, Rf, kw);
            cols_in(d, es, at(m, c->scr_kv, Rf * KVw), KVw, kv_first(c, j) * hd, p + Rf * (hw + kw) * es, Rf, kw);
        }
        op_add(d, t, dq, c->scr_q, dq, Rf * Hw);
        op_add(d, t, dk, c->scr_kv, dk, Rf * KVw);
        op_add(d, t, dv, at(m, c->scr_kv, Rf * KVw), dv, Rf * KVw);
    });
    c->st.bytes[1] += comm_sent_bytes(c->comm) - b0;
    c->st.calls[1]++;
}

/* ---- set-up -------------------------------------------------------------------------- */
void cp_check(const model_config_t *cfg, const model_shard_t *s, cp_algo_t algo) {
    if (algo != CP_ULYSSES) return;
    int C = s->cp, H = cfg->heads / s->tp, KV = cfg->kv_heads % s->tp == 0 ? cfg->kv_heads / s->tp : 1;
    if (C > H)
        usage_error("Ulysses splits the attention heads over the context-parallel ranks: cp %d is more "
                    "than the %d query heads%s (use --cp-algo ring)", C, H, s->tp > 1 ? " of a tensor-parallel shard" : "");
    if (H % C)
        usage_error("Ulysses splits the attention heads over the context-parallel ranks: cp %d must divide "
                    "the %d query heads", C, H);
    if (KV % C && C % KV)
        usage_error("Ulysses: cp %d must divide the %d kv heads or be a multiple of them (each kv head "
                    "then goes to the ranks whose query heads read it)", C, KV);
}

static void *buf(const device_t *d, size_t bytes, mem_kind kind) { return dev_alloc_as(d, bytes, kind); }

void cp_init(cp_t *c, comm_t *comm, model_t *m, cp_algo_t algo) {
    memset(c, 0, sizeof *c);
    if (comm->size != m->shard.cp)
        die("cp_init: the model has context parallelism %d, the communicator %d ranks", m->shard.cp,
            comm->size);
    cp_check(&m->cfg, &m->shard, algo);
    c->algo = algo;
    c->comm = comm;
    c->d = m->d;
    c->C = comm->size;
    c->rank = comm->rank;
    const device_t *d = m->d;
    const size_t es = es_of(m), hd = m->hd, B = (size_t)m->max_batch, Rf = B * m->T;
    const size_t nkv = Rf * m->KV * hd;
    if (algo == CP_RING) {
        if (c->C > 1) {   /* one rank has nothing to pass on and one block, nothing to merge */
            for (int i = 0; i < 2; i++) c->kv[i] = buf(d, 2 * nkv * es, MEM_COMM);
            for (int i = 0; i < 3; i++) c->dkv[i] = buf(d, 2 * nkv * es, MEM_COMM);
            c->o_b = buf(d, B * m->Tc * m->H * hd * es, MEM_ACTS);
            c->l_b = buf(d, B * m->Tc * m->H * sizeof(float), MEM_ACTS);
        }
        m->attn = (model_attn_t){c, ring_forward, ring_backward};
    } else {
        const int C = c->C;
        c->Hc = m->H / C;
        c->KVc = m->KV % C == 0 ? m->KV / C : 1;
        c->heads_per_kv = m->H / m->KV;
        const size_t hw = (size_t)c->Hc * hd, kw = (size_t)c->KVc * hd, all = B * m->cfg.seq;
        const size_t seg = Rf * (3 * hw + 2 * kw);   /* the largest: backward's q, k, v, out, dout */
        c->send = buf(d, C * seg * es, MEM_COMM);
        c->recv = buf(d, C * seg * es, MEM_COMM);
        c->lsend = buf(d, C * Rf * c->Hc * sizeof(float), MEM_COMM);
        c->lrecv = buf(d, C * Rf * c->Hc * sizeof(float), MEM_COMM);
        void **h[] = {&c->qh, &c->oh, &c->doh, &c->dqh};
        for (int i = 0; i < 4; i++) *h[i] = buf(d, all * hw * es, MEM_ACTS);
        void **kvh[] = {&c->kh, &c->vh, &c->dkh, &c->dvh};
        for (int i = 0; i < 4; i++) *kvh[i] = buf(d, all * kw * es, MEM_ACTS);
        c->lseh = buf(d, all * c->Hc * sizeof(float), MEM_ACTS);
        c->scr_q = buf(d, Rf * m->H * hd * es, MEM_ACTS);
        c->scr_kv = buf(d, 2 * nkv * es, MEM_ACTS);
        m->attn = (model_attn_t){c, uly_forward, uly_backward};
    }
}

void cp_free(cp_t *c) {
    void *b[] = {c->kv[0], c->kv[1], c->dkv[0], c->dkv[1], c->dkv[2], c->o_b, c->l_b, c->send, c->recv,
                 c->lsend, c->lrecv, c->qh, c->kh, c->vh, c->oh, c->doh, c->dqh, c->dkh, c->dvh,
                 c->lseh, c->scr_q, c->scr_kv};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) dev_free(c->d, b[i]);
    memset(c, 0, sizeof *c);
}

void cp_stats_reset(cp_t *c) { memset(&c->st, 0, sizeof c->st); }

/* ---- the formulas ------------------------------------------------------------------ */
double cp_pairs_formula(const model_t *m, cp_algo_t algo, int rank, int B) {
    const double C = m->shard.cp, T = m->cfg.seq, H = m->H;
    if (algo == CP_ULYSSES) return B * (H / C) * T * (T + 1) / 2;
    if (m->nck == 2) {
        double Tc = T / (2 * C);
        return B * H * ((2 * C - 1) * Tc * Tc + Tc * (Tc + 1));
    }
    double Tc = T / C;
    return B * H * (rank * Tc * Tc + Tc * (Tc + 1) / 2);
}

void cp_bytes_formula(const model_t *m, cp_algo_t algo, int B, double out[2]) {
    const double C = m->shard.cp, Rf = (double)B * m->T, es = es_of(m), hd = m->hd, H = m->H;
    const double KV = m->KV;
    if (algo == CP_RING) {
        double block = 2 * Rf * KV * hd * es;
        out[0] = (C - 1) * block;
        out[1] = (C - 1) * block + (C > 1 ? C * block : 0);
        return;
    }
    const double KVa = (int)KV % (int)C == 0 ? KV : C;   /* kv heads in the all-to-all */
    const double f = (C - 1) / C;
    out[0] = f * Rf * (hd * es * (2 * H + 2 * KVa) + 4 * H);
    out[1] = f * Rf * (hd * es * (4 * H + 4 * KVa) + 4 * H);
}
