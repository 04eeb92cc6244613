/* model.c: the Llama-style transformer, written once over ops.h so that the
 * same code runs on the CPU and on a GPU. The definition it implements is in
 * MODEL.md; the comments here say how the backward pass is arranged. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model.h"
#include "ops.h"

/* ---- config ------------------------------------------------------------------- */
void model_config_check(const model_config_t *c) {
    if (c->vocab < 2) usage_error("vocab must be at least 2 (got %d)", c->vocab);
    if (c->dim < 1 || c->layers < 1 || c->heads < 1 || c->kv_heads < 1 || c->ffn < 1 || c->seq < 1)
        usage_error("dim, layers, heads, kv-heads, ffn and seq must all be >= 1 "
                    "(got dim %d, layers %d, heads %d, kv-heads %d, ffn %d, seq %d)",
                    c->dim, c->layers, c->heads, c->kv_heads, c->ffn, c->seq);
    if (c->dim % c->heads)
        usage_error("heads (%d) must divide dim (%d)", c->heads, c->dim);
    if (c->heads % c->kv_heads)
        usage_error("kv-heads (%d) must divide heads (%d)", c->kv_heads, c->heads);
    if ((c->dim / c->heads) % 2)
        usage_error("head dim = dim / heads = %d must be even (RoPE rotates pairs)",
                    c->dim / c->heads);
}

int model_default_ffn(int dim) {
    int h = (8 * dim) / 3;
    return (h + 63) / 64 * 64;
}

/* ---- layout -------------------------------------------------------------------- */
void model_layout(model_layout_t *lay, const model_config_t *c, int first, int last) {
    size_t C = c->dim, hd = c->dim / c->heads, Hq = c->heads * hd, Hkv = c->kv_heads * hd;
    size_t F = c->ffn, V = c->vocab;
    memset(lay, 0, sizeof *lay);
    lay->first = first;
    lay->last = last;
    lay->has_embedding = first == 0;
    lay->has_head = last == c->layers;
    layer_offsets_t *o = &lay->in_layer;
    o->attn_norm = 0;
    o->wq = o->attn_norm + C;
    o->wk = o->wq + C * Hq;
    o->wv = o->wk + C * Hkv;
    o->wo = o->wv + C * Hkv;
    o->mlp_norm = o->wo + Hq * C;
    o->w1 = o->mlp_norm + C;
    o->w3 = o->w1 + C * F;
    o->w2 = o->w3 + C * F;
    lay->layer_size = o->w2 + F * C;
    size_t off = 0;
    lay->embedding = 0;
    if (lay->has_embedding) off += V * C;
    lay->layers_begin = off;
    off += (size_t)(last - first) * lay->layer_size;
    if (lay->has_head) {
        lay->final_norm = off;
        lay->lm_head = off + C;
        off += C + C * V;
    }
    lay->total = off;
}

size_t model_layer_begin(const model_layout_t *lay, int l) {
    return lay->layers_begin + (size_t)(l - lay->first) * lay->layer_size;
}
size_t model_layer_end(const model_layout_t *lay, int l) {
    return model_layer_begin(lay, l) + lay->layer_size;
}

size_t model_param_count(const model_config_t *c) {
    model_layout_t lay;
    model_layout(&lay, c, 0, c->layers);
    return lay.total;
}

double model_flops_per_token(const model_config_t *c) {
    double C = c->dim, hd = (double)c->dim / c->heads;
    double per_layer = C * hd * (c->heads + 2.0 * c->kv_heads)   /* wq, wk, wv */
                     + hd * c->heads * C                         /* wo */
                     + 3.0 * C * c->ffn;                         /* w1, w3, w2 */
    double n_matmul = c->layers * per_layer + C * c->vocab;      /* + lm_head */
    return 6.0 * n_matmul + 12.0 * c->layers * C * c->seq;
}

static int add_tensor(model_tensor_t *out, int max, int n, const char *name, size_t off,
                      size_t rows, size_t cols, int is_norm) {
    if (n < max) {
        snprintf(out[n].name, sizeof out[n].name, "%s", name);
        out[n].offset = off;
        out[n].rows = rows;
        out[n].cols = cols;
        out[n].is_norm = is_norm;
    }
    return n + 1;
}

int model_tensors(const model_layout_t *lay, const model_config_t *c, model_tensor_t *out,
                  int max) {
    size_t C = c->dim, hd = c->dim / c->heads, Hq = c->heads * hd, Hkv = c->kv_heads * hd;
    size_t F = c->ffn, V = c->vocab;
    int n = 0;
    char name[32];
    if (lay->has_embedding) n = add_tensor(out, max, n, "tok_embedding", lay->embedding, V, C, 0);
    for (int l = lay->first; l < lay->last; l++) {
        size_t b = model_layer_begin(lay, l);
        const layer_offsets_t *o = &lay->in_layer;
#define T_(nm, off, r, cc, norm)                                                        \
        snprintf(name, sizeof name, "layers.%d." nm, l);                                \
        n = add_tensor(out, max, n, name, b + (off), r, cc, norm);
        T_("attn_norm", o->attn_norm, 1, C, 1)
        T_("wq", o->wq, C, Hq, 0)
        T_("wk", o->wk, C, Hkv, 0)
        T_("wv", o->wv, C, Hkv, 0)
        T_("wo", o->wo, Hq, C, 0)
        T_("mlp_norm", o->mlp_norm, 1, C, 1)
        T_("w1", o->w1, C, F, 0)
        T_("w3", o->w3, C, F, 0)
        T_("w2", o->w2, F, C, 0)
#undef T_
    }
    if (lay->has_head) {
        n = add_tensor(out, max, n, "final_norm", lay->final_norm, 1, C, 1);
        n = add_tensor(out, max, n, "lm_head", lay->lm_head, C, V, 0);
    }
    return n;
}

/* ---- initialisation ------------------------------------------------------------
 * splitmix64 (Steele, Lea & Flood 2014) gives 64-bit words; Box-Muller turns
 * each pair of uniforms into two normals. Everything in double, so the
 * sequence is the same on every machine. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void model_init_params(float *p, const model_config_t *c, uint64_t seed) {
    model_layout_t lay;
    model_layout(&lay, c, 0, c->layers);
    int nt = model_tensors(&lay, c, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * nt);
    model_tensors(&lay, c, ts, nt);
    /* The std of every flat index, tensor by tensor; then one normal per index. */
    const double out_std = MODEL_INIT_STD / sqrt(2.0 * c->layers);
    uint64_t s = seed;
    double z[2];
    size_t i = 0;
    for (int k = 0; k < nt; k++) {
        size_t n = ts[k].rows * ts[k].cols;
        const char *dot = strrchr(ts[k].name, '.');
        const char *base = dot ? dot + 1 : ts[k].name;
        double std = ts[k].is_norm ? 0.0
                   : (!strcmp(base, "wo") || !strcmp(base, "w2")) ? out_std : MODEL_INIT_STD;
        for (size_t e = 0; e < n; e++, i++) {
            if (i % 2 == 0) {   /* a new pair of normals for indices i and i+1 */
                double u1 = ((double)(splitmix64(&s) >> 11) + 1.0) * 0x1.0p-53;   /* (0, 1] */
                double u2 = (double)(splitmix64(&s) >> 11) * 0x1.0p-53;           /* [0, 1) */
                double r = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
                z[0] = r * cos(a);
                z[1] = r * sin(a);
            }
            p[ts[k].offset + e] = ts[k].is_norm ? 1.0f : (float)(std * z[i % 2]);
        }
    }
    free(ts);
}

void model_stage_slice(const model_config_t *c, int first, int last, const float *full,
                       float *stage) {
    model_layout_t f, s;
    model_layout(&f, c, 0, c->layers);
    model_layout(&s, c, first, last);
    if (s.has_embedding) memcpy(stage + s.embedding, full + f.embedding, (size_t)c->vocab * c->dim * sizeof(float));
    memcpy(stage + s.layers_begin, full + model_layer_begin(&f, first),
           (size_t)(last - first) * s.layer_size * sizeof(float));
    if (s.has_head) memcpy(stage + s.final_norm, full + f.final_norm, (f.total - f.final_norm) * sizeof(float));
}

/* ---- allocation ------------------------------------------------------------------ */
static void *alloc_t(const model_t *m, size_t n) { return dev_alloc(m->d, n * dtype_size(m->dtype)); }
static float *alloc_f(const model_t *m, size_t n) { return dev_alloc(m->d, n * sizeof(float)); }

void model_acts_alloc(const model_t *m, model_acts_t *a, int max_batch) {
    const model_config_t *c = &m->cfg;
    size_t N = (size_t)max_batch * c->seq, C = c->dim, Hq = (size_t)c->heads * m->hd;
    size_t Hkv = (size_t)c->kv_heads * m->hd, F = c->ffn;
    memset(a, 0, sizeof *a);
    a->n_layers = m->last - m->first;
    a->resid = xcalloc(a->n_layers + 1, sizeof *a->resid);
    a->blocks = xcalloc(a->n_layers, sizeof *a->blocks);
    for (int i = 0; i <= a->n_layers; i++) a->resid[i] = alloc_t(m, N * C);
    for (int i = 0; i < a->n_layers; i++) {
        block_acts_t *b = &a->blocks[i];
        b->x = a->resid[i];
        b->xn1 = alloc_t(m, N * C);
        b->rstd1 = alloc_f(m, N);
        b->q = alloc_t(m, N * Hq);
        b->k = alloc_t(m, N * Hkv);
        b->v = alloc_t(m, N * Hkv);
        b->att = alloc_t(m, N * Hq);
        b->lse = alloc_f(m, (size_t)max_batch * c->heads * c->seq);
        b->h = alloc_t(m, N * C);
        b->xn2 = alloc_t(m, N * C);
        b->rstd2 = alloc_f(m, N);
        b->u1 = alloc_t(m, N * F);
        b->u3 = alloc_t(m, N * F);
        b->g = alloc_t(m, N * F);
    }
    if (m->layout.has_head) {
        a->xnf = alloc_t(m, N * C);
        a->rstdf = alloc_f(m, N);
        a->logits = alloc_t(m, N * c->vocab);
        a->lse = alloc_f(m, N);
        a->loss = alloc_f(m, N);
    }
}

void model_acts_free(const model_t *m, model_acts_t *a) {
    const device_t *d = m->d;
    for (int i = 0; i < a->n_layers; i++) {
        block_acts_t *b = &a->blocks[i];
        void *bufs[] = {b->xn1, b->rstd1, b->q, b->k, b->v, b->att, b->lse, b->h, b->xn2,
                        b->rstd2, b->u1, b->u3, b->g};
        for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; j++) dev_free(d, bufs[j]);
    }
    for (int i = 0; i <= a->n_layers; i++) dev_free(d, a->resid[i]);
    if (a->xnf) {
        dev_free(d, a->xnf);
        dev_free(d, a->rstdf);
        dev_free(d, a->logits);
        dev_free(d, a->lse);
        dev_free(d, a->loss);
    }
    free(a->resid);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

void model_init(model_t *m, const model_config_t *c, int first, int last, int max_batch,
                dtype_t dtype, const device_t *d) {
    model_config_check(c);
    if (first < 0 || last > c->layers || first >= last)
        usage_error("layer range [%d, %d) is not inside [0, %d)", first, last, c->layers);
    if (max_batch < 1) usage_error("max batch must be >= 1 (got %d)", max_batch);
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    m->d = d;
    m->dtype = dtype;
    m->first = first;
    m->last = last;
    m->hd = c->dim / c->heads;
    m->max_batch = max_batch;
    model_layout(&m->layout, c, first, last);
    m->params = alloc_t(m, m->layout.total);
    m->grads = alloc_f(m, m->layout.total);

    size_t ncs = (size_t)c->seq * m->hd;   /* seq x hd/2 pairs of (cos, sin) */
    float *cs = xmalloc(ncs * sizeof(float));
    rope_table(cs, c->seq, m->hd, MODEL_ROPE_BASE);
    m->rope_cs = alloc_f(m, ncs);
    dev_from_host(d, m->rope_cs, cs, ncs * sizeof(float));
    free(cs);

    model_acts_alloc(m, &m->own_acts, max_batch);
    m->acts = &m->own_acts;

    size_t N = (size_t)max_batch * c->seq, C = c->dim, Hq = (size_t)c->heads * m->hd;
    size_t Hkv = (size_t)c->kv_heads * m->hd, F = c->ffn;
    model_scratch_t *s = &m->scratch;
    s->dres = alloc_t(m, N * C);
    s->dxn = alloc_t(m, N * C);
    s->dq = alloc_t(m, N * Hq);
    s->dk = alloc_t(m, N * Hkv);
    s->dv = alloc_t(m, N * Hkv);
    s->datt = alloc_t(m, N * Hq);
    s->du1 = alloc_t(m, N * F);
    s->du3 = alloc_t(m, N * F);
    s->dg = alloc_t(m, N * F);
    if (m->layout.has_head) s->dlogits = alloc_t(m, N * c->vocab);
    m->tokens = dev_alloc(d, N * sizeof(int));
    m->targets = dev_alloc(d, N * sizeof(int));
    m->loss_host = xmalloc(N * sizeof(float));
}

void model_free(model_t *m) {
    const device_t *d = m->d;
    model_acts_free(m, &m->own_acts);
    model_scratch_t *s = &m->scratch;
    void *bufs[] = {s->dres, s->dxn, s->dq, s->dk, s->dv, s->datt, s->du1, s->du3, s->dg,
                    s->dlogits, m->params, m->grads, m->rope_cs, m->tokens, m->targets};
    for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; j++)
        if (bufs[j]) dev_free(d, bufs[j]);
    free(m->loss_host);
    memset(m, 0, sizeof *m);
}

/* ---- parameters ------------------------------------------------------------------ */
void model_load_params(model_t *m, const float *host) {
    size_t n = m->layout.total;
    if (m->dtype == DT_F32) {
        dev_from_host(m->d, m->params, host, n * sizeof(float));
        return;
    }
    bf16_t *tmp = xmalloc(n * sizeof(bf16_t));
    for (size_t i = 0; i < n; i++) tmp[i] = f32_to_bf16(host[i]);
    dev_from_host(m->d, m->params, tmp, n * sizeof(bf16_t));
    free(tmp);
}

void model_load_full_params(model_t *m, const float *full) {
    float *stage = xmalloc(m->layout.total * sizeof(float));
    model_stage_slice(&m->cfg, m->first, m->last, full, stage);
    model_load_params(m, stage);
    free(stage);
}

void model_get_params(const model_t *m, float *host) {
    size_t n = m->layout.total;
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
    dev_memset0(m->d, m->grads, m->layout.total * sizeof(float));
}

void *model_input(model_t *m) { return m->acts->resid[0]; }
void *model_output(model_t *m) { return m->acts->resid[m->acts->n_layers]; }
void *model_grad_io(model_t *m) { return m->scratch.dres; }

/* ---- one block ----------------------------------------------------------------------- */
/* Element offset off of the working params, as a typed pointer. */
static void *W(const model_t *m, size_t off) {
    return (char *)m->params + off * dtype_size(m->dtype);
}

void block_forward(model_t *m, int layer, block_acts_t *a, void *y, int B) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int T = m->cfg.seq, N = B * T, C = m->cfg.dim, H = m->cfg.heads, KV = m->cfg.kv_heads;
    const int hd = m->hd, Hq = H * hd, Hkv = KV * hd, F = m->cfg.ffn;
    const size_t L = model_layer_begin(&m->layout, layer);
    const layer_offsets_t *o = &m->layout.in_layer;
    const size_t es = dtype_size(t);

    /* attention: h = x + attn(rmsnorm(x)) @ wo */
    op_rmsnorm_forward(d, t, a->x, W(m, L + o->attn_norm), a->xn1, a->rstd1, N, C, MODEL_NORM_EPS);
    op_matmul(d, 0, 0, N, Hq, C, 1.0f, a->xn1, C, W(m, L + o->wq), Hq, t, 0.0f, a->q, Hq, t);   // (N, H*hd)
    op_matmul(d, 0, 0, N, Hkv, C, 1.0f, a->xn1, C, W(m, L + o->wk), Hkv, t, 0.0f, a->k, Hkv, t); // (N, KV*hd)
    op_matmul(d, 0, 0, N, Hkv, C, 1.0f, a->xn1, C, W(m, L + o->wv), Hkv, t, 0.0f, a->v, Hkv, t);
    op_rope(d, t, a->q, m->rope_cs, B, T, H, hd, 0, 0);
    op_rope(d, t, a->k, m->rope_cs, B, T, KV, hd, 0, 0);
    op_attn_forward(d, t, a->q, a->k, a->v, a->att, a->lse, B, T, T, H, KV, hd, 0, 0);
    dev_copy(d, a->h, a->x, (size_t)N * C * es);   /* the residual, then += att @ wo */
    op_matmul(d, 0, 0, N, C, Hq, 1.0f, a->att, Hq, W(m, L + o->wo), C, t, 1.0f, a->h, C, t);

    /* MLP: y = h + (silu(xn2 @ w1) * (xn2 @ w3)) @ w2 */
    op_rmsnorm_forward(d, t, a->h, W(m, L + o->mlp_norm), a->xn2, a->rstd2, N, C, MODEL_NORM_EPS);
    op_matmul(d, 0, 0, N, F, C, 1.0f, a->xn2, C, W(m, L + o->w1), F, t, 0.0f, a->u1, F, t);     // (N, F)
    op_matmul(d, 0, 0, N, F, C, 1.0f, a->xn2, C, W(m, L + o->w3), F, t, 0.0f, a->u3, F, t);
    op_swiglu_forward(d, t, a->u1, a->u3, a->g, (size_t)N * F);
    dev_copy(d, y, a->h, (size_t)N * C * es);
    op_matmul(d, 0, 0, N, C, F, 1.0f, a->g, F, W(m, L + o->w2), C, t, 1.0f, y, C, t);
}

/* Backward of one block. dres carries dL/d(residual stream) and is updated
 * in place: each sub-layer's input gradient is the residual's gradient plus
 * what flows back through the branch (op_rmsnorm_backward adds dres).
 * Weight gradients accumulate (+= , beta 1) in fp32: dW = input^T @ dout. */
void block_backward(model_t *m, int layer, const block_acts_t *a, void *dres, int B) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const int T = m->cfg.seq, N = B * T, C = m->cfg.dim, H = m->cfg.heads, KV = m->cfg.kv_heads;
    const int hd = m->hd, Hq = H * hd, Hkv = KV * hd, F = m->cfg.ffn;
    const size_t L = model_layer_begin(&m->layout, layer);
    const layer_offsets_t *o = &m->layout.in_layer;
    float *G = m->grads + L;
    model_scratch_t *s = &m->scratch;
    const size_t es = dtype_size(t);

    /* MLP branch */
    op_matmul(d, 0, 1, N, F, C, 1.0f, dres, C, W(m, L + o->w2), C, t, 0.0f, s->dg, F, t);      // dg = dy w2^T
    op_matmul(d, 1, 0, F, C, N, 1.0f, a->g, F, dres, C, t, 1.0f, G + o->w2, C, DT_F32);        // dw2 += g^T dy
    op_swiglu_backward(d, t, a->u1, a->u3, s->dg, s->du1, s->du3, (size_t)N * F);
    op_matmul(d, 0, 1, N, C, F, 1.0f, s->du1, F, W(m, L + o->w1), F, t, 0.0f, s->dxn, C, t);
    op_matmul(d, 0, 1, N, C, F, 1.0f, s->du3, F, W(m, L + o->w3), F, t, 1.0f, s->dxn, C, t);
    op_matmul(d, 1, 0, C, F, N, 1.0f, a->xn2, C, s->du1, F, t, 1.0f, G + o->w1, F, DT_F32);
    op_matmul(d, 1, 0, C, F, N, 1.0f, a->xn2, C, s->du3, F, t, 1.0f, G + o->w3, F, DT_F32);
    op_rmsnorm_backward(d, t, a->h, W(m, L + o->mlp_norm), a->rstd2, s->dxn, dres, dres,
                        G + o->mlp_norm, N, C);                                                   // dres = dL/dh

    /* attention branch */
    op_matmul(d, 0, 1, N, Hq, C, 1.0f, dres, C, W(m, L + o->wo), C, t, 0.0f, s->datt, Hq, t);
    op_matmul(d, 1, 0, Hq, C, N, 1.0f, a->att, Hq, dres, C, t, 1.0f, G + o->wo, C, DT_F32);
    dev_memset0(d, s->dq, (size_t)N * Hq * es);     /* op_attn_backward accumulates */
    dev_memset0(d, s->dk, (size_t)N * Hkv * es);
    dev_memset0(d, s->dv, (size_t)N * Hkv * es);
    op_attn_backward(d, t, a->q, a->k, a->v, a->att, s->datt, a->lse, s->dq, s->dk, s->dv,
                     B, T, T, H, KV, hd, 0, 0);
    op_rope(d, t, s->dq, m->rope_cs, B, T, H, hd, 0, 1);
    op_rope(d, t, s->dk, m->rope_cs, B, T, KV, hd, 0, 1);
    op_matmul(d, 0, 1, N, C, Hq, 1.0f, s->dq, Hq, W(m, L + o->wq), Hq, t, 0.0f, s->dxn, C, t);
    op_matmul(d, 0, 1, N, C, Hkv, 1.0f, s->dk, Hkv, W(m, L + o->wk), Hkv, t, 1.0f, s->dxn, C, t);
    op_matmul(d, 0, 1, N, C, Hkv, 1.0f, s->dv, Hkv, W(m, L + o->wv), Hkv, t, 1.0f, s->dxn, C, t);
    op_matmul(d, 1, 0, C, Hq, N, 1.0f, a->xn1, C, s->dq, Hq, t, 1.0f, G + o->wq, Hq, DT_F32);
    op_matmul(d, 1, 0, C, Hkv, N, 1.0f, a->xn1, C, s->dk, Hkv, t, 1.0f, G + o->wk, Hkv, DT_F32);
    op_matmul(d, 1, 0, C, Hkv, N, 1.0f, a->xn1, C, s->dv, Hkv, t, 1.0f, G + o->wv, Hkv, DT_F32);
    op_rmsnorm_backward(d, t, a->x, W(m, L + o->attn_norm), a->rstd1, s->dxn, dres, dres,
                        G + o->attn_norm, N, C);                                                  // dres = dL/dx
}

/* ---- the whole (stage of the) model ----------------------------------------------------- */
double model_forward(model_t *m, const int *tokens, const int *targets, int B) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const model_layout_t *lay = &m->layout;
    model_acts_t *a = m->acts;
    if (B < 1 || B > m->max_batch) die("model_forward: batch %d outside [1, %d]", B, m->max_batch);
    const int N = B * m->cfg.seq, C = m->cfg.dim, V = m->cfg.vocab;
    m->batch = B;
    if (lay->has_embedding) {
        for (int i = 0; i < N; i++)
            if (tokens[i] < 0 || tokens[i] >= V) die("model_forward: token %d at %d outside [0, %d)", tokens[i], i, V);
        dev_from_host(d, m->tokens, tokens, (size_t)N * sizeof(int));
        op_embedding_forward(d, t, m->tokens, W(m, lay->embedding), a->resid[0], N, C, 0, V);
    }
    for (int i = 0; i < a->n_layers; i++) {
        a->blocks[i].x = a->resid[i];
        block_forward(m, m->first + i, &a->blocks[i], a->resid[i + 1], B);
    }
    if (!lay->has_head) return 0.0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= V) die("model_forward: target %d at %d outside [0, %d)", targets[i], i, V);
    dev_from_host(d, m->targets, targets, (size_t)N * sizeof(int));
    op_rmsnorm_forward(d, t, a->resid[a->n_layers], W(m, lay->final_norm), a->xnf, a->rstdf, N, C,
                       MODEL_NORM_EPS);
    op_matmul(d, 0, 0, N, V, C, 1.0f, a->xnf, C, W(m, lay->lm_head), V, t, 0.0f, a->logits, V, t);
    op_xent_forward(d, t, a->logits, m->targets, a->loss, a->lse, N, V, 0);   /* loss: picked */
    float *lse_host = xmalloc((size_t)N * sizeof(float));
    dev_to_host(d, m->loss_host, a->loss, (size_t)N * sizeof(float));
    dev_to_host(d, lse_host, a->lse, (size_t)N * sizeof(float));
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) sum += (double)lse_host[i] - m->loss_host[i];
    free(lse_host);
    return sum;
}

void model_backward(model_t *m, float dlogits_scale, grad_ready_fn grad_ready, void *ctx) {
    const device_t *d = m->d;
    const dtype_t t = m->dtype;
    const model_layout_t *lay = &m->layout;
    model_acts_t *a = m->acts;
    model_scratch_t *s = &m->scratch;
    const int B = m->batch, N = B * m->cfg.seq, C = m->cfg.dim, V = m->cfg.vocab;
    if (B < 1) die("model_backward: no forward pass to go back through");
    if (lay->has_head) {
        float *G = m->grads;
        op_xent_backward(d, t, a->logits, m->targets, a->lse, s->dlogits, dlogits_scale, N, V, 0);
        op_matmul(d, 1, 0, C, V, N, 1.0f, a->xnf, C, s->dlogits, V, t, 1.0f, G + lay->lm_head, V, DT_F32);
        op_matmul(d, 0, 1, N, C, V, 1.0f, s->dlogits, V, W(m, lay->lm_head), V, t, 0.0f, s->dxn, C, t);
        op_rmsnorm_backward(d, t, a->resid[a->n_layers], W(m, lay->final_norm), a->rstdf, s->dxn,
                            NULL, s->dres, G + lay->final_norm, N, C);
        if (grad_ready) grad_ready(ctx, lay->final_norm, lay->total - lay->final_norm);
    }
    for (int i = a->n_layers - 1; i >= 0; i--) {
        int l = m->first + i;
        block_backward(m, l, &a->blocks[i], s->dres, B);
        if (grad_ready) grad_ready(ctx, model_layer_begin(lay, l), lay->layer_size);
    }
    if (lay->has_embedding) {
        op_embedding_backward(d, t, m->tokens, s->dres, m->grads + lay->embedding, N, C, 0, V);
        if (grad_ready) grad_ready(ctx, lay->embedding, (size_t)V * C);
    }
}

/* ---- gradient dump -------------------------------------------------------------------- */
typedef struct {
    char magic[8];                      /* "LLMDUMP1" */
    uint32_t version;
    int32_t vocab, dim, layers, heads, kv_heads, ffn, seq, batch;
    float norm_eps, rope_base;
    uint32_t reserved;
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
    if (h.version != MODEL_DUMP_VERSION)
        die("dump %s has version %u, this build reads %d", path, h.version, MODEL_DUMP_VERSION);
    model_config_t cc = {h.vocab, h.dim, h.layers, h.heads, h.kv_heads, h.ffn, h.seq};
    if (cc.vocab < 2 || cc.dim < 1 || cc.layers < 1 || cc.heads < 1 || cc.kv_heads < 1 ||
        cc.ffn < 1 || cc.seq < 1 || cc.dim % cc.heads || cc.heads % cc.kv_heads)
        die("dump %s: header holds an impossible configuration", path);
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
