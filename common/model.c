/* model.c: the Llama-style transformer on a device, written once over ops.h
 * so that the same code runs on the CPU and on a GPU, for the whole model or
 * any shard of it (model.h). The definition it implements is in MODEL.md;
 * the layout and the shards are in model_shard.c. Comments here say how the
 * passes are arranged and where the chapters' communication goes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "ops.h"

/* ---- small helpers ------------------------------------------------------------- */
static size_t es_of(const model_t *m) { return dtype_size(m->dtype); }
/* p + n elements of the model's dtype */
static void *at(const model_t *m, const void *p, size_t n) { return (char *)p + n * es_of(m); }
/* Element off of unit u's weights, and of its gradients. */
static void *W(const model_t *m, int u, size_t off) { return at(m, m->unit_w[u], off); }
static float *G(const model_t *m, int u, size_t off) { return m->unit_g[u] + off; }

static void unit_hooks(model_t *m, int unit, model_pass_t pass, int after) {
    for (int i = 0; i < m->n_hooks; i++) {
        model_unit_fn f = after ? m->hooks[i].after : m->hooks[i].before;
        if (f) f(m->hooks[i].ctx, m, unit, pass);
    }
    if (!after && (!m->unit_w[unit] || (pass == PASS_BACKWARD && !m->unit_g[unit])))
        die("model: unit %d has no %s (a hook must provide them when the model holds none)", unit,
            m->unit_w[unit] ? "gradients" : "weights");
}

/* ---- the object ------------------------------------------------------------------ */
void model_init(model_t *m, const model_config_t *c, const model_shard_t *s, int max_batch,
                dtype_t dtype, const device_t *d, int with_params) {
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    model_config_check(&m->cfg);
    model_shard_check(&m->cfg, s);
    if (max_batch < 1) usage_error("max batch must be >= 1 (got %d)", max_batch);
    c = &m->cfg;
    m->shard = *s;
    m->d = d;
    m->dtype = dtype;
    m->max_batch = max_batch;

    /* Shapes, read back from the tensor list so there is one definition. */
    int nt = model_tensors(c, s, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(c, s, ts, nt);
    m->hd = c->head_dim;
    m->has_embedding = ts[0].layer == -1;
    m->has_head = ts[nt - 1].layer == c->layers;
    m->n_layers = s->per_chunk * s->chunks;
    const model_tensor_t *L0 = &ts[m->has_embedding ? 1 : 0];   /* layer tensors, in order */
    m->H = (int)(L0[1].cols / m->hd);
    m->KV = (int)(L0[2].cols / m->hd);
    m->kv0 = (int)(L0[2].col0 / m->hd);
    m->F = (int)L0[6].cols;
    m->V = c->vocab / s->tp;
    m->v0 = s->tp_rank * m->V;
    size_t *lo = &m->lo.attn_norm;
    for (int k = 0; k < 9; k++) lo[k] = L0[k].offset - L0[0].offset;
    m->layer_size = L0[8].offset + L0[8].rows * L0[8].cols - L0[0].offset;
    m->size = ts[nt - 1].offset + ts[nt - 1].rows * ts[nt - 1].cols;
    free(ts);
    m->nck = s->cp > 1 && s->cp_balance ? 2 : 1;
    m->T = c->seq / s->cp;
    m->Tc = m->T / m->nck;
    m->chunk_pos[0] = model_cp_chunk_pos(m, s->cp_rank, 0);
    m->chunk_pos[1] = model_cp_chunk_pos(m, s->cp_rank, 1);

    /* Units: [embedding] layers [head], in flat order. */
    m->n_units = m->n_layers + m->has_embedding + m->has_head;
    m->units = xcalloc((size_t)m->n_units, sizeof *m->units);
    size_t off = 0;
    int u = 0;
    if (m->has_embedding) {
        m->units[u++] = (model_unit_t){0, (size_t)m->V * c->dim, -1, 0};
        off = (size_t)m->V * c->dim;
    }
    for (int i = 0; i < m->n_layers; i++, off += m->layer_size)
        m->units[u++] = (model_unit_t){off, m->layer_size, model_shard_layer(s, i), i / s->per_chunk};
    if (m->has_head) m->units[u++] = (model_unit_t){off, m->size - off, c->layers, s->chunks - 1};
    m->unit_w = xcalloc((size_t)m->n_units, sizeof *m->unit_w);
    m->unit_g = xcalloc((size_t)m->n_units, sizeof *m->unit_g);
    if (with_params != MODEL_NO_PARAMS) {
        m->params = dev_alloc_as(d, m->size * es_of(m), MEM_PARAMS);
        for (int k = 0; k < m->n_units; k++) m->unit_w[k] = at(m, m->params, m->units[k].offset);
    }
    if (with_params == MODEL_PARAMS_AND_GRADS) {
        m->grads = dev_alloc_as(d, m->size * sizeof(float), MEM_GRADS);
        for (int k = 0; k < m->n_units; k++) m->unit_g[k] = m->grads + m->units[k].offset;
    }

    size_t ncs = (size_t)c->seq * m->hd;   /* seq x hd/2 pairs of (cos, sin) */
    float *cs = xmalloc(ncs * sizeof(float));
    rope_table(cs, c->seq, m->hd, MODEL_ROPE_BASE);
    m->rope_cs = dev_alloc_as(d, ncs * sizeof(float), MEM_OTHER);
    dev_from_host(d, m->rope_cs, cs, ncs * sizeof(float));
    free(cs);

    /* Backward scratch, for the largest micro-batch. */
    size_t Rf = (size_t)max_batch * m->T, R = s->sp ? Rf / s->tp : Rf, C = c->dim;
    size_t Hq = (size_t)m->H * m->hd, Hkv = (size_t)m->KV * m->hd, F = m->F, es = es_of(m);
    if (s->sp && Rf % s->tp)
        usage_error("sequence parallelism: %zu tokens per micro-batch do not split over %d ranks",
                    Rf, s->tp);
#define SCR(name, n) m->scr.name = dev_alloc_as(d, (n) * es, MEM_ACTS)
    SCR(dres, R * C);
    SCR(dxn, Rf * C);
    m->scr.dxn_r = s->sp ? dev_alloc_as(d, R * C * es, MEM_ACTS) : m->scr.dxn;
    if (s->sp) { SCR(full, Rf * C); SCR(part, Rf * C); }
    SCR(dq, Rf * Hq); SCR(dk, Rf * Hkv); SCR(dv, Rf * Hkv); SCR(datt, Rf * Hq);
    SCR(du1, Rf * F); SCR(du3, Rf * F); SCR(dg, Rf * F);
    if (m->has_head) SCR(dlogits, Rf * m->V);
    SCR(out, R * C);
    SCR(att, Rf * Hq);
    SCR(att_b, (size_t)max_batch * m->Tc * Hq);
#undef SCR
    m->scr.dout.du1 = m->scr.du1; m->scr.dout.du3 = m->scr.du3;
    m->scr.dout.dq = m->scr.dq; m->scr.dout.dk = m->scr.dk; m->scr.dout.dv = m->scr.dv;
    /* dout.dy2, dout.dyo stay NULL: a fused backward takes dw2 and dwo in B (no copy) */
    m->scr.lse = dev_alloc_as(d, (size_t)max_batch * m->H * m->T * sizeof(float), MEM_ACTS);
    m->scr.lse_b = dev_alloc_as(d, (size_t)max_batch * m->H * m->Tc * sizeof(float), MEM_ACTS);
    m->attn = (model_attn_t){NULL, model_attn_local_forward, model_attn_local_backward};
}

void model_free(model_t *m) {
    const device_t *d = m->d;
    if (m->scr.dxn_r != m->scr.dxn) dev_free(d, m->scr.dxn_r);
    void *scr[] = {m->scr.dres, m->scr.dxn, m->scr.full, m->scr.part, m->scr.dq, m->scr.dk,
                   m->scr.dv, m->scr.datt, m->scr.du1, m->scr.du3, m->scr.dg, m->scr.dlogits,
                   m->scr.out, m->scr.att, m->scr.lse, m->scr.lse_b, m->scr.att_b};
    for (size_t i = 0; i < sizeof scr / sizeof scr[0]; i++) dev_free(d, scr[i]);
    dev_free(d, m->params);
    dev_free(d, m->grads);
    dev_free(d, m->rope_cs);
    free(m->units);
    free(m->unit_w);
    free(m->unit_g);
    memset(m, 0, sizeof *m);
}

void model_add_hook(model_t *m, model_unit_fn before, model_unit_fn after, void *ctx) {
    if (m->n_hooks == MODEL_MAX_HOOKS) die("model: more than %d hooks", MODEL_MAX_HOOKS);
    m->hooks[m->n_hooks].before = before;
    m->hooks[m->n_hooks].after = after;
    m->hooks[m->n_hooks].ctx = ctx;
    m->n_hooks++;
}

/* Balanced: rank r holds chunks r and 2 cp - 1 - r of 2 cp, an early and a
 * late one, so every rank has the same causal work. */
int model_cp_chunk_pos(const model_t *m, int r, int k) {
    if (m->nck == 2) return (k == 0 ? r : 2 * m->shard.cp - 1 - r) * m->Tc;
    return k == 0 ? r * m->T : 0;
}

int model_counts_loss(const model_t *m) { return m->has_head && m->shard.tp_rank == 0; }
void *model_grad_input(model_t *m) { return m->scr.dres; }

/* ---- activations --------------------------------------------------------------------- */
static void *acts_buf(model_t *m, model_acts_t *a, size_t bytes) {
    if (a->nbufs == a->capbufs) {
        a->capbufs = a->capbufs ? 2 * a->capbufs : 64;
        void **b = xmalloc(sizeof *b * (size_t)a->capbufs);
        if (a->nbufs) memcpy(b, a->bufs, sizeof *b * (size_t)a->nbufs);
        free(a->bufs);
        a->bufs = b;
    }
    void *p = dev_alloc_as(m->d, bytes, MEM_ACTS);
    a->bufs[a->nbufs++] = p;
    a->bytes += bytes;
    return p;
}

/* A block's own buffers (everything but x). */
static void block_alloc(model_t *m, model_acts_t *a, block_acts_t *b, int keep_att) {
    size_t R = a->rows, Rf = a->rows_full, C = m->cfg.dim, es = es_of(m);
    size_t Hq = (size_t)m->H * m->hd, Hkv = (size_t)m->KV * m->hd, F = m->F;
    b->xn1 = acts_buf(m, a, R * C * es);
    b->rstd1 = acts_buf(m, a, R * sizeof(float));
    b->q = acts_buf(m, a, Rf * Hq * es);
    b->k = acts_buf(m, a, Rf * Hkv * es);
    b->v = acts_buf(m, a, Rf * Hkv * es);
    b->att = keep_att ? acts_buf(m, a, Rf * Hq * es) : NULL;
    b->lse = acts_buf(m, a, Rf * m->H * sizeof(float));
    b->h = acts_buf(m, a, R * C * es);
    b->xn2 = acts_buf(m, a, R * C * es);
    b->rstd2 = acts_buf(m, a, R * sizeof(float));
    b->u1 = acts_buf(m, a, Rf * F * es);
    b->u3 = acts_buf(m, a, Rf * F * es);
    b->g = acts_buf(m, a, Rf * F * es);
    a->kv_bytes += 2 * Rf * Hkv * es;
    if (a->Tc * m->nck < m->T && a->pos + a->Tc < m->T) {   /* a slice with later ones */
        b->dk_later = acts_buf(m, a, Rf * Hkv * es);
        b->dv_later = acts_buf(m, a, Rf * Hkv * es);
        a->kv_bytes += 2 * Rf * Hkv * es;
    }
}

/* Recomputed layers come in segments: with recompute_every = C, every
 * segment of C layers (the last may be shorter); with the block policy, each
 * of the first K layers alone. A segment's first input has a buffer of its
 * own; its other inputs and all its blocks' insides share the `seg` slots,
 * which the backward pass refills one segment at a time. Layers outside the
 * segments (from K on) keep everything in buffers of their own. */
static void acts_setup(model_t *m, model_acts_t *a, int chunk, int B, model_recompute_t rc, int Tc, int pos) {
    const int every = rc.every, block = rc.block, selective = rc.selective;
    const model_shard_t *s = &m->shard;
    if (B < 1 || B > m->max_batch) die("model: micro-batch of %d sequences outside [1, %d]", B, m->max_batch);
    if (chunk < 0 || chunk >= s->chunks) die("model: chunk %d outside [0, %d)", chunk, s->chunks);
    if (every < 0 || block < 0 || (every && block)) die("model: recompute_every %d and block %d: one policy, >= 0", every, block);
    memset(a, 0, sizeof *a);
    a->chunk = chunk;
    a->B = B;
    a->Tc = Tc;
    a->pos = pos;
    a->n_layers = s->per_chunk;
    a->has_embedding = m->has_embedding && chunk == 0;
    a->has_head = m->has_head && chunk == s->chunks - 1;
    a->first_unit = m->has_embedding + chunk * s->per_chunk;
    a->rows_full = (size_t)B * m->nck * Tc;
    a->rows = s->sp ? a->rows_full / s->tp : a->rows_full;
    size_t R = a->rows, Rf = a->rows_full, C = m->cfg.dim, es = es_of(m);
    int n = a->n_layers;
    int seg = every ? (every < n ? every : n) : 1;   /* layers in a recomputed segment */
    int K = every ? n : (block < n ? block : n);     /* layers [0, K) are recomputed */
    int slots = K ? seg : 0;
    a->recompute_every = every;
    a->recompute_block = K;
    a->selective = selective;

    a->tokens = acts_buf(m, a, Rf * sizeof(int));
    a->targets = acts_buf(m, a, Rf * sizeof(int));
    a->targets_host = xcalloc(Rf, sizeof(int));
    a->resid = xcalloc((size_t)n + 1, sizeof *a->resid);
    a->blocks = xcalloc((size_t)n, sizeof *a->blocks);
    for (int i = K; i < n; i++) block_alloc(m, a, &a->blocks[i], !selective);
    block_acts_t *slot = xcalloc((size_t)(slots ? slots : 1), sizeof *slot);
    void **slot_x = xcalloc((size_t)(slots ? slots : 1), sizeof *slot_x);
    for (int j = 0; j < slots; j++) {
        /* Layer K is the last to go back before any recomputation, so the
         * block policy refills its buffers instead of holding a slot more. */
        if (K < n) slot[j] = a->blocks[K];
        else block_alloc(m, a, &slot[j], !selective);
        if (j > 0) slot_x[j] = acts_buf(m, a, R * C * es);
    }
    for (int i = 0; i <= n; i++) {
        int own = i >= K || i % seg == 0;
        a->resid[i] = own ? acts_buf(m, a, R * C * es) : slot_x[i % seg];
    }
    for (int i = 0; i < n; i++) {
        if (i < K) a->blocks[i] = slot[i % seg];
        a->blocks[i].x = a->resid[i];
    }
    free(slot);
    free(slot_x);
    if (a->has_head) {
        a->xnf = acts_buf(m, a, R * C * es);
        a->rstdf = acts_buf(m, a, R * sizeof(float));
        a->logits = acts_buf(m, a, Rf * (size_t)m->V * es);
        a->lse = acts_buf(m, a, Rf * sizeof(float));
        a->picked = acts_buf(m, a, Rf * sizeof(float));
        a->lse_host = xmalloc(Rf * sizeof(float));
        a->picked_host = xmalloc(Rf * sizeof(float));
    }
    if (rc.defer_w) {   /* W reads the forward's activations after B: none may be refilled */
        if (every || block || selective || s->sp)
            die("model: a split backward (defer_w) needs every activation kept and no sequence parallelism");
        size_t before = a->bytes, Hq = (size_t)m->H * m->hd, Hkv = (size_t)m->KV * m->hd, F = m->F;
        a->dout = xcalloc((size_t)n, sizeof *a->dout);
        for (int i = 0; i < n; i++) {
            layer_dout_t *o = &a->dout[i];
            o->dy2 = acts_buf(m, a, Rf * C * es);
            o->du1 = acts_buf(m, a, Rf * F * es);
            o->du3 = acts_buf(m, a, Rf * F * es);
            o->dyo = acts_buf(m, a, Rf * C * es);
            o->dq = acts_buf(m, a, Rf * Hq * es);
            o->dk = acts_buf(m, a, Rf * Hkv * es);
            o->dv = acts_buf(m, a, Rf * Hkv * es);
        }
        if (a->has_head) a->dlogits = acts_buf(m, a, Rf * (size_t)m->V * es);
        if (a->has_embedding) a->demb = acts_buf(m, a, Rf * C * es);
        a->dout_bytes = a->bytes - before;
    }
}

void model_acts_init(model_t *m, model_acts_t *a, int chunk, int B, model_recompute_t rc) {
    acts_setup(m, a, chunk, B, rc, m->Tc, 0);
}

void model_acts_init_slice(model_t *m, model_acts_t *a, int chunk, int B, int pos, int len) {
    if (m->nck != 1 || m->shard.cp != 1) die("model: token slices need context parallelism 1");
    if (len < 1 || pos < 0 || pos + len > m->T) die("model: slice [%d, %d) outside the sequence of %d", pos, pos + len, m->T);
    acts_setup(m, a, chunk, B, (model_recompute_t){0}, len, pos);
}

void model_acts_free(model_t *m, model_acts_t *a) {
    for (int i = 0; i < a->nbufs; i++) dev_free(m->d, a->bufs[i]);
    free(a->bufs);
    free(a->resid);
    free(a->blocks);
    free(a->dout);
    free(a->targets_host);
    free(a->lse_host);
    free(a->picked_host);
    memset(a, 0, sizeof *a);
}

/* Row (k, b, t) of this rank (chunk-major) is token chunk_pos[k] + t of
 * sequence b. */
void model_set_batch(model_t *m, model_acts_t *a, const int *tokens, const int *targets) {
    const int T = m->cfg.seq, Tc = a->Tc, B = a->B, V = m->cfg.vocab;
    const size_t Rf = a->rows_full;
    int *buf = xmalloc(Rf * sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        const int *src = pass == 0 ? tokens : targets;
        if (!src) continue;
        for (int k = 0; k < m->nck; k++)
            for (int b = 0; b < B; b++)
                for (int t = 0; t < Tc; t++) {
                    int p = m->chunk_pos[k] + a->pos + t, v = src[(size_t)b * T + p];
                    if (v >= V || (pass == 0 && v < 0))
                        die("model: %s %d at sequence %d, position %d is outside [0, %d)",
                            pass == 0 ? "token" : "target", v, b, p, V);
                    buf[((size_t)k * B + b) * Tc + t] = v;
                }
        dev_from_host(m->d, pass == 0 ? a->tokens : a->targets, buf, Rf * sizeof(int));
        if (pass == 1) memcpy(a->targets_host, buf, Rf * sizeof(int));
    }
    free(buf);
}

/* ---- parameters ------------------------------------------------------------------ */
void model_load_params(model_t *m, const float *host) {
    size_t n = m->size;
    if (!m->params) die("model_load_params: this model holds no parameters");
    if (m->dtype == DT_F32) {
        dev_from_host(m->d, m->params, host, n * sizeof(float));
        return;
    }
    bf16_t *tmp = xmalloc(n * sizeof(bf16_t));
    for (size_t i = 0; i < n; i++) tmp[i] = f32_to_bf16(host[i]);
    dev_from_host(m->d, m->params, tmp, n * sizeof(bf16_t));
    free(tmp);
}

void model_get_params(const model_t *m, float *host) {
    size_t n = m->size;
    if (!m->params) die("model_get_params: this model holds no parameters");
    if (m->dtype == DT_F32) {
        dev_to_host(m->d, host, m->params, n * sizeof(float));
        return;
    }
    bf16_t *tmp = xmalloc(n * sizeof(bf16_t));
    dev_to_host(m->d, tmp, m->params, n * sizeof(bf16_t));
    for (size_t i = 0; i < n; i++) host[i] = bf16_to_f32(tmp[i]);
    free(tmp);
}

void model_zero_grads(model_t *m) {
    if (m->grads) dev_memset0(m->d, m->grads, m->size * sizeof(float));
}

/* ---- the tensor-parallel seams ----------------------------------------------------
 * rows_of(x) is a residual-stream tensor (R rows), full tensors have Rf rows.
 * Without tensor parallelism both are no-ops; without sequence parallelism
 * "gather" is one too and "reduce" is an all-reduce in place. */
static const void *gathered(model_t *m, const model_acts_t *a, const void *x) {
    if (!m->shard.sp) return x;
    m->tp->gather(m->tp->ctx, x, m->scr.full, a->rows, m->cfg.dim, m->dtype);
    return m->scr.full;
}

static void *reduced(model_t *m, const model_acts_t *a, void *partial, void *dst) {
    if (m->shard.tp == 1) return partial;
    if (!m->shard.sp) dst = partial;
    m->tp->reduce(m->tp->ctx, partial, dst, a->rows_full, m->cfg.dim, m->dtype);
    return dst;
}

/* out (R rows) = resid + in @ Wt, in (Rf, K), Wt (K, C) row-parallel: each
 * rank adds its own rows of the residual into its block of the partial
 * product (rank 0 all of them without sp), so the reduce sums the residual
 * once. Without tensor parallelism: out = resid, then the GEMM accumulates
 * onto it (beta = 1), one rounding in bf16. */
static void residual_out(model_t *m, const model_acts_t *a, const void *resid, const void *in,
                         int K, const void *Wt, void *out) {
    const device_t *d = m->d;
    const size_t R = a->rows, Rf = a->rows_full, C = m->cfg.dim, es = es_of(m);
    const int r = m->shard.tp_rank;
    void *part = m->shard.sp ? m->scr.part : out;
    if (m->shard.sp) {
        dev_memset0(d, part, Rf * C * es);
        dev_copy(d, at(m, part, (size_t)r * R * C), resid, R * C * es);
    } else if (r == 0) {
        dev_copy(d, part, resid, R * C * es);
    } else {
        dev_memset0(d, part, R * C * es);
    }
    op_matmul(d, 0, 0, (int)Rf, (int)C, K, 1.0f, in, K, Wt, (int)C, m->dtype, 1.0f, part, (int)C, m->dtype);
    reduced(m, a, part, out);
}

/* Rotate q (H heads) or k (KV heads) of every local token chunk at its
 * positions; inverse for the backward pass. */
static void rope_chunks(model_t *m, const model_acts_t *a, void *x, int heads, int inverse) {
    size_t chunk = (size_t)a->B * a->Tc * heads * m->hd;
    for (int k = 0; k < m->nck; k++)
        op_rope(m->d, m->dtype, at(m, x, k * chunk), m->rope_cs, a->B, a->Tc, heads, m->hd,
                m->chunk_pos[k] + a->pos, inverse);
}

/* ---- the default attention core: every pair of this rank's chunks ----------------- */
/* Pair (qk, kk) has a key a query can see. */
static int visible(const model_t *m, const model_acts_t *a, int qk, int kk) {
    return m->chunk_pos[kk] <= m->chunk_pos[qk] + a->Tc - 1;
}

void model_attn_local_forward(void *ctx, model_t *m, const model_acts_t *a, const void *q,
                              const void *k, const void *v, void *out, float *lse) {
    (void)ctx;
    const int B = a->B, Tc = a->Tc, H = m->H, KV = m->KV, hd = m->hd, p0 = a->pos;
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    for (int qk = 0; qk < m->nck; qk++) {
        int first = 1;
        for (int kk = 0; kk < m->nck; kk++) {
            if (!visible(m, a, qk, kk)) continue;
            void *o = first ? at(m, out, qk * cq) : m->scr.att_b;
            float *l = first ? lse + qk * cl : m->scr.lse_b;
            op_attn_forward(m->d, m->dtype, at(m, q, qk * cq), at(m, k, kk * ck), at(m, v, kk * ck),
                            o, l, B, Tc, Tc, H, KV, hd, m->chunk_pos[qk] + p0, m->chunk_pos[kk] + p0);
            if (!first)
                op_attn_merge(m->d, m->dtype, at(m, out, qk * cq), lse + qk * cl, m->scr.att_b,
                              m->scr.lse_b, B, Tc, H, hd);
            first = 0;
        }
    }
    /* a token slice: the earlier slices' keys and values, all visible, merged in */
    for (int i = 0; i < a->n_before; i++) {
        const model_acts_t *e = a->before[i];
        const block_acts_t *eb = &e->blocks[a->layer];
        op_attn_forward(m->d, m->dtype, q, eb->k, eb->v, m->scr.att_b, m->scr.lse_b, B, Tc, e->Tc, H, KV,
                        hd, p0, e->pos);
        op_attn_merge(m->d, m->dtype, out, lse, m->scr.att_b, m->scr.lse_b, B, Tc, H, hd);
    }
}

void model_attn_local_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q,
                               const void *k, const void *v, const void *out, const void *dout,
                               const float *lse, void *dq, void *dk, void *dv) {
    (void)ctx;
    const int B = a->B, Tc = a->Tc, H = m->H, KV = m->KV, hd = m->hd, p0 = a->pos;
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    const block_acts_t *b = &a->blocks[a->layer];
    if (b->dk_later) {   /* what the later slices' backward added (dk, dv are zero here) */
        dev_copy(m->d, dk, b->dk_later, ck * es_of(m));
        dev_copy(m->d, dv, b->dv_later, ck * es_of(m));
    }
    for (int qk = 0; qk < m->nck; qk++)
        for (int kk = 0; kk < m->nck; kk++) {
            if (!visible(m, a, qk, kk)) continue;
            op_attn_backward(m->d, m->dtype, at(m, q, qk * cq), at(m, k, kk * ck), at(m, v, kk * ck),
                             at(m, out, qk * cq), at(m, dout, qk * cq), lse + qk * cl,
                             at(m, dq, qk * cq), at(m, dk, kk * ck), at(m, dv, kk * ck), B, Tc, Tc,
                             H, KV, hd, m->chunk_pos[qk] + p0, m->chunk_pos[kk] + p0);
        }
    for (int i = 0; i < a->n_before; i++) {   /* into the earlier slices' key and value gradients */
        const model_acts_t *e = a->before[i];
        const block_acts_t *eb = &e->blocks[a->layer];
        op_attn_backward(m->d, m->dtype, q, eb->k, eb->v, out, dout, lse, dq, eb->dk_later, eb->dv_later,
                         B, Tc, e->Tc, H, KV, hd, p0, e->pos);
    }
}

/* ---- one layer ------------------------------------------------------------------------
 * Forward of layer j of the micro-batch's chunk: writes the block's insides
 * and its output y (R rows; y != the block's input). */
static void layer_forward(model_t *m, model_acts_t *a, int j, void *y) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    block_acts_t *b = &a->blocks[j];
    const int u = a->first_unit + j;
    const int Rs = (int)a->rows, Rf = (int)a->rows_full, C = m->cfg.dim, F = m->F;
    const int Hq = m->H * m->hd, Hkv = m->KV * m->hd;
    a->layer = j;

    /* attention: h = x + attn(rmsnorm(x)) @ wo */
    op_rmsnorm_forward(d, t, b->x, W(m, u, m->lo.attn_norm), b->xn1, b->rstd1, Rs, C, MODEL_NORM_EPS);
    const void *xn = gathered(m, a, b->xn1);                                                     // (Rf, C)
    op_matmul(d, 0, 0, Rf, Hq, C, 1.0f, xn, C, W(m, u, m->lo.wq), Hq, t, 0.0f, b->q, Hq, t);     // (Rf, H*hd)
    op_matmul(d, 0, 0, Rf, Hkv, C, 1.0f, xn, C, W(m, u, m->lo.wk), Hkv, t, 0.0f, b->k, Hkv, t);  // (Rf, KV*hd)
    op_matmul(d, 0, 0, Rf, Hkv, C, 1.0f, xn, C, W(m, u, m->lo.wv), Hkv, t, 0.0f, b->v, Hkv, t);
    rope_chunks(m, a, b->q, m->H, 0);
    rope_chunks(m, a, b->k, m->KV, 0);
    void *att = b->att ? b->att : m->scr.att;   /* selective recomputation keeps no output */
    m->attn.forward(m->attn.ctx, m, a, b->q, b->k, b->v, att, b->lse);
    residual_out(m, a, b->x, att, Hq, W(m, u, m->lo.wo), b->h);

    /* MLP: y = h + (silu(xn2 @ w1) * (xn2 @ w3)) @ w2 */
    op_rmsnorm_forward(d, t, b->h, W(m, u, m->lo.mlp_norm), b->xn2, b->rstd2, Rs, C, MODEL_NORM_EPS);
    xn = gathered(m, a, b->xn2);
    op_matmul(d, 0, 0, Rf, F, C, 1.0f, xn, C, W(m, u, m->lo.w1), F, t, 0.0f, b->u1, F, t);       // (Rf, F)
    op_matmul(d, 0, 0, Rf, F, C, 1.0f, xn, C, W(m, u, m->lo.w3), F, t, 0.0f, b->u3, F, t);
    op_swiglu_forward(d, t, b->u1, b->u3, b->g, (size_t)Rf * F);
    residual_out(m, a, b->h, b->g, F, W(m, u, m->lo.w2), y);
}

/* Backward of layer j, in two halves (model.h). B: scr.dres carries
 * dL/d(residual stream) (R rows) and is updated in place: each sub-layer's
 * input gradient is the residual's plus what flows back through the branch
 * (op_rmsnorm_backward adds dres, and adds the gain's gradient). With tensor
 * parallelism the branch gradient of a norm's output is partial on each rank
 * (it went through this rank's heads or ffn slice only): `reduced` sums it
 * before the norm's backward (Megatron's f operator). B leaves every linear's
 * output gradient in o for W. */
/* dw2 += g^T dy and dwo += att^T dy (dy: the gradient of the block's output,
 * of h), in fp32. */
static void weight_grad_w2(model_t *m, model_acts_t *a, int j, const void *dy) {
    const int u = a->first_unit + j, Rf = (int)a->rows_full, C = m->cfg.dim, F = m->F;
    op_matmul(m->d, 1, 0, F, C, Rf, 1.0f, a->blocks[j].g, F, dy, C, m->dtype, 1.0f, G(m, u, m->lo.w2), C, DT_F32);
}
static void weight_grad_wo(model_t *m, model_acts_t *a, int j, const void *att, const void *dy) {
    const int u = a->first_unit + j, Rf = (int)a->rows_full, C = m->cfg.dim, Hq = m->H * m->hd;
    op_matmul(m->d, 1, 0, Hq, C, Rf, 1.0f, att, Hq, dy, C, m->dtype, 1.0f, G(m, u, m->lo.wo), C, DT_F32);
}

/* B of layer j: every input gradient and the norm gains'; each linear's
 * output gradient left in o for W (o->dy2 and o->dyo NULL: a fused backward,
 * which takes dw2 and dwo here instead, before dres moves on). */
static void layer_backward_input(model_t *m, model_acts_t *a, int j, const layer_dout_t *o) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    block_acts_t *b = &a->blocks[j];
    const int u = a->first_unit + j;
    const int Rs = (int)a->rows, Rf = (int)a->rows_full, C = m->cfg.dim, F = m->F;
    const int Hq = m->H * m->hd, Hkv = m->KV * m->hd;
    const size_t es = es_of(m);
    void *dres = m->scr.dres, *dxn = m->scr.dxn;
    a->layer = j;

    /* MLP branch. dy, the gradient of the block's output, is overwritten
     * below: a split backward keeps a copy for W, a fused one takes dw2 now. */
    const void *dy = gathered(m, a, dres);                                                        // (Rf, C)
    if (o->dy2) { dev_copy(d, o->dy2, dy, (size_t)Rf * C * es); dy = o->dy2; }
    op_matmul(d, 0, 1, Rf, F, C, 1.0f, dy, C, W(m, u, m->lo.w2), C, t, 0.0f, m->scr.dg, F, t);       // dg = dy w2^T
    if (!o->dy2) weight_grad_w2(m, a, j, dy);
    op_swiglu_backward(d, t, b->u1, b->u3, m->scr.dg, o->du1, o->du3, (size_t)Rf * F);
    op_matmul(d, 0, 1, Rf, C, F, 1.0f, o->du1, F, W(m, u, m->lo.w1), F, t, 0.0f, dxn, C, t);
    op_matmul(d, 0, 1, Rf, C, F, 1.0f, o->du3, F, W(m, u, m->lo.w3), F, t, 1.0f, dxn, C, t);
    void *dxr = reduced(m, a, dxn, m->scr.dxn_r);
    op_rmsnorm_backward(d, t, b->h, W(m, u, m->lo.mlp_norm), b->rstd2, dxr, dres, dres,
                        G(m, u, m->lo.mlp_norm), Rs, C);                                              // dres = dL/dh

    /* attention branch */
    void *att = b->att;
    if (!att) {   /* selective recomputation: the attention core again, from q, k, v */
        att = m->scr.att;
        m->attn.forward(m->attn.ctx, m, a, b->q, b->k, b->v, att, m->scr.lse);
    }
    dy = gathered(m, a, dres);                                                                    // of h
    if (o->dyo) { dev_copy(d, o->dyo, dy, (size_t)Rf * C * es); dy = o->dyo; }
    op_matmul(d, 0, 1, Rf, Hq, C, 1.0f, dy, C, W(m, u, m->lo.wo), C, t, 0.0f, m->scr.datt, Hq, t);
    if (!o->dyo) weight_grad_wo(m, a, j, att, dy);
    dev_memset0(d, o->dq, (size_t)Rf * Hq * es);     /* the attention core accumulates */
    dev_memset0(d, o->dk, (size_t)Rf * Hkv * es);
    dev_memset0(d, o->dv, (size_t)Rf * Hkv * es);
    m->attn.backward(m->attn.ctx, m, a, b->q, b->k, b->v, att, m->scr.datt, b->lse, o->dq, o->dk, o->dv);
    rope_chunks(m, a, o->dq, m->H, 1);
    rope_chunks(m, a, o->dk, m->KV, 1);
    op_matmul(d, 0, 1, Rf, C, Hq, 1.0f, o->dq, Hq, W(m, u, m->lo.wq), Hq, t, 0.0f, dxn, C, t);
    op_matmul(d, 0, 1, Rf, C, Hkv, 1.0f, o->dk, Hkv, W(m, u, m->lo.wk), Hkv, t, 1.0f, dxn, C, t);
    op_matmul(d, 0, 1, Rf, C, Hkv, 1.0f, o->dv, Hkv, W(m, u, m->lo.wv), Hkv, t, 1.0f, dxn, C, t);
    dxr = reduced(m, a, dxn, m->scr.dxn_r);
    op_rmsnorm_backward(d, t, b->x, W(m, u, m->lo.attn_norm), b->rstd1, dxr, dres, dres,
                        G(m, u, m->lo.attn_norm), Rs, C);                                             // dres = dL/dx
}

/* W of layer j: weight gradients accumulate (+=, beta 1) in fp32,
 * dW = input^T @ dout, the inputs from the forward's activations (the
 * attention output recomputed by B when not kept: a fused backward only). */
static void layer_backward_weights(model_t *m, model_acts_t *a, int j, const layer_dout_t *o) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    block_acts_t *b = &a->blocks[j];
    const int u = a->first_unit + j;
    const int Rf = (int)a->rows_full, C = m->cfg.dim, F = m->F;
    const int Hq = m->H * m->hd, Hkv = m->KV * m->hd;
    if (o->dy2) weight_grad_w2(m, a, j, o->dy2);
    const void *xn = gathered(m, a, b->xn2);
    op_matmul(d, 1, 0, C, F, Rf, 1.0f, xn, C, o->du1, F, t, 1.0f, G(m, u, m->lo.w1), F, DT_F32);
    op_matmul(d, 1, 0, C, F, Rf, 1.0f, xn, C, o->du3, F, t, 1.0f, G(m, u, m->lo.w3), F, DT_F32);
    if (o->dyo) weight_grad_wo(m, a, j, b->att ? b->att : m->scr.att, o->dyo);
    xn = gathered(m, a, b->xn1);
    op_matmul(d, 1, 0, C, Hq, Rf, 1.0f, xn, C, o->dq, Hq, t, 1.0f, G(m, u, m->lo.wq), Hq, DT_F32);
    op_matmul(d, 1, 0, C, Hkv, Rf, 1.0f, xn, C, o->dk, Hkv, t, 1.0f, G(m, u, m->lo.wk), Hkv, DT_F32);
    op_matmul(d, 1, 0, C, Hkv, Rf, 1.0f, xn, C, o->dv, Hkv, t, 1.0f, G(m, u, m->lo.wv), Hkv, DT_F32);
}

/* ---- embedding and head ------------------------------------------------------------ */
/* resid[0] = E[tokens]: with tensor parallelism each rank looks up the
 * tokens of its vocabulary slice (zeros elsewhere) and the reduce sums them. */
static void embedding_forward(model_t *m, model_acts_t *a) {
    const int u = 0;
    void *part = m->shard.sp ? m->scr.part : a->resid[0];
    op_embedding_forward(m->d, m->dtype, a->tokens, W(m, u, 0), part, (int)a->rows_full,
                         m->cfg.dim, m->v0, m->V);
    reduced(m, a, part, a->resid[0]);
}

/* B of the embedding keeps the gradient of its output; W scatter-adds it. */
static void embedding_backward_input(model_t *m, model_acts_t *a, void *demb) {
    dev_copy(m->d, demb, gathered(m, a, m->scr.dres), a->rows_full * m->cfg.dim * es_of(m));
}

static void embedding_backward_weights(model_t *m, model_acts_t *a, const void *demb) {
    op_embedding_backward(m->d, m->dtype, a->tokens, demb, G(m, 0, 0), (int)a->rows_full,
                          m->cfg.dim, m->v0, m->V);
}

static double head_forward(model_t *m, model_acts_t *a) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int u = m->n_units - 1, Rs = (int)a->rows, Rf = (int)a->rows_full, C = m->cfg.dim, V = m->V;
    op_rmsnorm_forward(d, t, a->resid[a->n_layers], W(m, u, 0), a->xnf, a->rstdf, Rs, C, MODEL_NORM_EPS);
    const void *xn = gathered(m, a, a->xnf);
    op_matmul(d, 0, 0, Rf, V, C, 1.0f, xn, C, W(m, u, C), V, t, 0.0f, a->logits, V, t);    // (Rf, V)
    op_xent_forward(d, t, a->logits, a->targets, a->picked, a->lse, Rf, V, m->v0);
    if (m->shard.tp > 1) m->tp->vocab(m->tp->ctx, a->lse, a->picked, Rf);
    dev_to_host(d, a->lse_host, a->lse, (size_t)Rf * sizeof(float));
    dev_to_host(d, a->picked_host, a->picked, (size_t)Rf * sizeof(float));
    double sum = 0.0;
    for (int i = 0; i < Rf; i++)
        if (a->targets_host[i] >= 0) sum += (double)a->lse_host[i] - a->picked_host[i];
    return sum;
}

/* dy: the logits' gradient computed elsewhere (DataParallel's device 0
 * takes the loss), or NULL: computed here from the logits. */
static void head_backward_input(model_t *m, model_acts_t *a, float scale, void *dlogits, const void *dy) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int u = m->n_units - 1, Rs = (int)a->rows, Rf = (int)a->rows_full, C = m->cfg.dim, V = m->V;
    if (dy) dev_copy(d, dlogits, dy, (size_t)Rf * V * es_of(m));
    else op_xent_backward(d, t, a->logits, a->targets, a->lse, dlogits, scale, Rf, V, m->v0);
    op_matmul(d, 0, 1, Rf, C, V, 1.0f, dlogits, V, W(m, u, C), V, t, 0.0f, m->scr.dxn, C, t);
    void *dxr = reduced(m, a, m->scr.dxn, m->scr.dxn_r);
    op_rmsnorm_backward(d, t, a->resid[a->n_layers], W(m, u, 0), a->rstdf, dxr, NULL, m->scr.dres,
                        G(m, u, 0), Rs, C);
}

static void head_backward_weights(model_t *m, model_acts_t *a, const void *dlogits) {
    const int u = m->n_units - 1, Rf = (int)a->rows_full, C = m->cfg.dim, V = m->V;
    const void *xn = gathered(m, a, a->xnf);
    op_matmul(m->d, 1, 0, C, V, Rf, 1.0f, xn, C, dlogits, V, m->dtype, 1.0f, G(m, u, C), V, DT_F32);
}

/* ---- the chunk ------------------------------------------------------------------------- */
static void check_seams(const model_t *m) {
    if (m->shard.tp > 1 && !m->tp)
        die("model: tensor parallelism %d needs its seams (model_tp_t)", m->shard.tp);
    if (m->shard.cp > 1 && m->attn.forward == model_attn_local_forward)
        die("model: context parallelism %d needs an attention core that sees the other ranks' keys",
            m->shard.cp);
}

double model_forward(model_t *m, model_acts_t *a) {
    check_seams(m);
    for (int j = 0; j < a->n_layers; j++)   /* a token slice: nothing from later slices yet */
        if (a->blocks[j].dk_later) {
            size_t bytes = a->rows_full * (size_t)m->KV * m->hd * es_of(m);
            dev_memset0(m->d, a->blocks[j].dk_later, bytes);
            dev_memset0(m->d, a->blocks[j].dv_later, bytes);
        }
    if (a->has_embedding) {
        unit_hooks(m, 0, PASS_FORWARD, 0);
        embedding_forward(m, a);
        unit_hooks(m, 0, PASS_FORWARD, 1);
    }
    for (int j = 0; j < a->n_layers; j++) {
        int u = a->first_unit + j;
        unit_hooks(m, u, PASS_FORWARD, 0);
        layer_forward(m, a, j, a->resid[j + 1]);
        unit_hooks(m, u, PASS_FORWARD, 1);
    }
    if (!a->has_head) return 0.0;
    int u = m->n_units - 1;
    unit_hooks(m, u, PASS_FORWARD, 0);
    double loss = head_forward(m, a);
    unit_hooks(m, u, PASS_FORWARD, 1);
    return loss;
}

/* Layer j's backward: its B and then its W, through the one scratch set o,
 * between its unit's hooks. */
static void layer_backward(model_t *m, model_acts_t *a, int j, const layer_dout_t *o) {
    int u = a->first_unit + j;
    unit_hooks(m, u, PASS_BACKWARD, 0);
    layer_backward_input(m, a, j, o);
    layer_backward_weights(m, a, j, o);
    unit_hooks(m, u, PASS_BACKWARD, 1);
}

/* Backward through the recomputed layers [0, recompute_block), one segment
 * at a time from the top (model_acts_init's layout): a segment is refilled
 * from its checkpointed input first (a forward again: the recomputation),
 * its last output, not needed again, going to scratch; then it goes back. */
static void recomputed_backward(model_t *m, model_acts_t *a, const layer_dout_t *o) {
    /* ASSIGNMENT 06-recompute: the recomputed backward (06_checkpointing/README.md, "Assignment: the recomputed backward") */
    /* STUB: (void)m, (void)a, (void)o; */
    /* STUB: not_implemented("recomputed backward (recomputed_backward in common/model.c)", "06_checkpointing/README.md, Assignment: the recomputed backward"); */
    int n = a->n_layers, K = a->recompute_block;
    int seg = a->recompute_every ? (a->recompute_every < n ? a->recompute_every : n) : 1;
    for (int s1 = K, s0; s1 > 0; s1 = s0) {
        s0 = (s1 - 1) / seg * seg;
        for (int j = s0; j < s1; j++) {
            int u = a->first_unit + j;
            unit_hooks(m, u, PASS_RECOMPUTE, 0);
            layer_forward(m, a, j, j == s1 - 1 ? m->scr.out : a->resid[j + 1]);
            unit_hooks(m, u, PASS_RECOMPUTE, 1);
        }
        a->recomputed += s1 - s0;
        for (int j = s1 - 1; j >= s0; j--) layer_backward(m, a, j, o);
    }
    /* END ASSIGNMENT 06-recompute */
}

/* Backward from the top: the layers that kept everything (from
 * recompute_block on) in one run, then the recomputed ones. */
void model_backward(model_t *m, model_acts_t *a, float scale, const void *dy) {
    check_seams(m);
    a->recomputed = 0;
    const layer_dout_t *o = &m->scr.dout;
    if (a->has_head) {
        int u = m->n_units - 1;
        unit_hooks(m, u, PASS_BACKWARD, 0);
        head_backward_input(m, a, scale, m->scr.dlogits, dy);
        head_backward_weights(m, a, m->scr.dlogits);
        unit_hooks(m, u, PASS_BACKWARD, 1);
    } else {
        if (!dy) die("model_backward: a chunk without the head needs the gradient of its output");
        dev_copy(m->d, m->scr.dres, dy, a->rows * m->cfg.dim * es_of(m));
    }
    for (int j = a->n_layers - 1; j >= a->recompute_block; j--) layer_backward(m, a, j, o);
    if (a->recompute_block) recomputed_backward(m, a, o);
    if (a->has_embedding) {
        unit_hooks(m, 0, PASS_BACKWARD, 0);
        embedding_backward_weights(m, a, gathered(m, a, m->scr.dres));   /* nothing to keep */
        unit_hooks(m, 0, PASS_BACKWARD, 1);
    }
}

void model_backward_input(model_t *m, model_acts_t *a, float scale, const void *dy) {
    check_seams(m);
    if (!a->dout) die("model_backward_input: the micro-batch object was made without defer_w");
    if (a->b_done) die("model_backward_input: the last B of this micro-batch still waits for its W");
    if (a->has_head) {
        int u = m->n_units - 1;
        unit_hooks(m, u, PASS_INPUT_GRAD, 0);
        head_backward_input(m, a, scale, a->dlogits, dy);
        unit_hooks(m, u, PASS_INPUT_GRAD, 1);
    } else {
        if (!dy) die("model_backward_input: a chunk without the head needs the gradient of its output");
        dev_copy(m->d, m->scr.dres, dy, a->rows * m->cfg.dim * es_of(m));
    }
    for (int j = a->n_layers - 1; j >= 0; j--) {
        int u = a->first_unit + j;
        unit_hooks(m, u, PASS_INPUT_GRAD, 0);
        layer_backward_input(m, a, j, &a->dout[j]);
        unit_hooks(m, u, PASS_INPUT_GRAD, 1);
    }
    if (a->has_embedding) {
        unit_hooks(m, 0, PASS_INPUT_GRAD, 0);
        embedding_backward_input(m, a, a->demb);
        unit_hooks(m, 0, PASS_INPUT_GRAD, 1);
    }
    a->b_done = 1;
}

void model_backward_weights(model_t *m, model_acts_t *a) {
    if (!a->b_done) die("model_backward_weights: micro-batch without its B (model_backward_input) first");
    if (a->has_head) {
        int u = m->n_units - 1;
        unit_hooks(m, u, PASS_BACKWARD, 0);
        head_backward_weights(m, a, a->dlogits);
        unit_hooks(m, u, PASS_BACKWARD, 1);
    }
    for (int j = a->n_layers - 1; j >= 0; j--) {
        int u = a->first_unit + j;
        unit_hooks(m, u, PASS_BACKWARD, 0);
        layer_backward_weights(m, a, j, &a->dout[j]);
        unit_hooks(m, u, PASS_BACKWARD, 1);
    }
    if (a->has_embedding) {
        unit_hooks(m, 0, PASS_BACKWARD, 0);
        embedding_backward_weights(m, a, a->demb);
        unit_hooks(m, 0, PASS_BACKWARD, 1);
    }
    a->b_done = 0;
}

size_t model_dout_bytes(const model_t *m, const model_acts_t *a) {
    size_t C = m->cfg.dim, F = m->F, hd = m->hd;
    size_t per = a->n_layers * (2 * C + 2 * F + ((size_t)m->H + 2 * (size_t)m->KV) * hd);
    if (a->has_head) per += m->V;
    if (a->has_embedding) per += C;
    return es_of(m) * a->rows_full * per;
}

/* ---- gradient dump -------------------------------------------------------------------- */
typedef struct {
    char magic[8];                      /* "LLMDUMP1" */
    uint32_t version;
    int32_t vocab, dim, layers, heads, kv_heads, ffn, seq, batch;
    float norm_eps, rope_base;
    uint32_t head_dim;                  /* version 1: 0 (dim / heads) */
    uint64_t n_params;
} dump_header_t;                        /* 64 bytes, little-endian */

_Static_assert(sizeof(dump_header_t) == 64, "dump header must be 64 bytes");

static void check_little_endian(void) {
    const uint16_t one = 1;
    if (*(const uint8_t *)&one != 1) die("model dump: only little-endian hosts are supported");
}

static void wr(FILE *f, const void *p, size_t bytes, const char *path) {
    if (bytes && fwrite(p, 1, bytes, f) != bytes) die("writing %s: %s", path, strerror(errno));
}

void model_dump_write(const char *path, const model_config_t *c, const float *params,
                      const int *tokens, const int *targets, int B, double loss,
                      const float *grads) {
    check_little_endian();
    dump_header_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, "LLMDUMP1", 8);
    h.version = MODEL_DUMP_VERSION;
    h.vocab = c->vocab; h.dim = c->dim; h.layers = c->layers; h.heads = c->heads;
    h.kv_heads = c->kv_heads; h.ffn = c->ffn; h.seq = c->seq; h.batch = B;
    h.norm_eps = MODEL_NORM_EPS;
    h.rope_base = (float)MODEL_ROPE_BASE;
    h.head_dim = (uint32_t)c->head_dim;
    h.n_params = model_param_count(c);
    size_t nt = (size_t)B * c->seq;
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write dump %s: %s", path, strerror(errno));
    wr(f, &h, sizeof h, path);
    wr(f, params, h.n_params * sizeof(float), path);
    wr(f, tokens, nt * sizeof(int32_t), path);
    wr(f, targets, nt * sizeof(int32_t), path);
    wr(f, &loss, sizeof loss, path);
    wr(f, grads, h.n_params * sizeof(float), path);
    if (fclose(f) != 0) die("writing %s: %s", path, strerror(errno));
}

static void rd(FILE *f, void *p, size_t bytes, const char *path) {
    if (bytes && fread(p, 1, bytes, f) != bytes) die("dump %s is truncated", path);
}

void model_dump_read(const char *path, model_config_t *c, int *B, float **params, int **tokens,
                     int **targets, double *loss, float **grads) {
    check_little_endian();
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot read dump %s: %s", path, strerror(errno));
    dump_header_t h;
    rd(f, &h, sizeof h, path);
    if (memcmp(h.magic, "LLMDUMP1", 8) != 0) die("%s is not a model dump (bad magic)", path);
    if (h.version != 1 && h.version != MODEL_DUMP_VERSION)
        die("dump %s has version %u, this build reads 1 and %d", path, h.version, MODEL_DUMP_VERSION);
    model_config_t cc = {h.vocab, h.dim, h.layers, h.heads, h.kv_heads, (int)h.head_dim, h.ffn, h.seq};
    if (cc.vocab < 2 || cc.dim < 1 || cc.layers < 1 || cc.heads < 1 || cc.kv_heads < 1 ||
        cc.ffn < 1 || cc.seq < 1 || cc.heads % cc.kv_heads || (!cc.head_dim && cc.dim % cc.heads) ||
        cc.head_dim % 2 || cc.head_dim > 65536)
        die("dump %s: header holds an impossible configuration", path);
    if (!cc.head_dim) cc.head_dim = cc.dim / cc.heads;
    if (h.batch < 1 || h.n_params != model_param_count(&cc))
        die("dump %s: header inconsistent (batch %d, %llu params for this config, expected %zu)",
            path, h.batch, (unsigned long long)h.n_params, model_param_count(&cc));
    size_t nt = (size_t)h.batch * h.seq;
    *c = cc;
    *B = h.batch;
    *params = xmalloc(h.n_params * sizeof(float));
    *grads = xmalloc(h.n_params * sizeof(float));
    *tokens = xmalloc(nt * sizeof(int));
    *targets = xmalloc(nt * sizeof(int));
    rd(f, *params, h.n_params * sizeof(float), path);
    rd(f, *tokens, nt * sizeof(int), path);
    rd(f, *targets, nt * sizeof(int), path);
    rd(f, loss, sizeof *loss, path);
    rd(f, *grads, h.n_params * sizeof(float), path);
    fclose(f);
}
