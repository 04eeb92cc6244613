/* model_shard.c: the model's configuration, its flat parameter layout, and
 * how a shard (layers, tensor- and context-parallel slices) cuts it; the
 * deterministic initialisation of the full model. No device code: these are
 * host-side definitions every rank computes for itself (model.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data.h"
#include "model.h"

/* ---- config ------------------------------------------------------------------- */
void model_config_check(model_config_t *c) {
    if (c->vocab < 2) usage_error("vocab must be at least 2 (got %d)", c->vocab);
    if (c->dim < 1 || c->layers < 1 || c->heads < 1 || c->kv_heads < 1 || c->ffn < 1 || c->seq < 1 ||
        c->head_dim < 0)
        usage_error("dim, layers, heads, kv-heads, ffn and seq must all be >= 1 "
                    "(got dim %d, layers %d, heads %d, kv-heads %d, ffn %d, seq %d)",
                    c->dim, c->layers, c->heads, c->kv_heads, c->ffn, c->seq);
    if (c->head_dim == 0) {
        if (c->dim % c->heads)
            usage_error("heads (%d) must divide dim (%d), or give the head dim", c->heads, c->dim);
        c->head_dim = c->dim / c->heads;
    }
    if (c->heads % c->kv_heads)
        usage_error("kv-heads (%d) must divide heads (%d)", c->kv_heads, c->heads);
    if (c->head_dim % 2)
        usage_error("head dim %d must be even (RoPE rotates pairs)", c->head_dim);
}

int model_default_ffn(int dim) {
    int h = (8 * dim) / 3;
    return (h + 63) / 64 * 64;
}

/* The head dim of a config that may not have been checked yet. */
static int head_dim_of(const model_config_t *c) { return c->head_dim ? c->head_dim : c->dim / c->heads; }

/* Weights one layer's matmuls read. */
static double layer_matmul_params(const model_config_t *c) {
    double C = c->dim, hd = head_dim_of(c);
    return C * hd * (c->heads + 2.0 * c->kv_heads)   /* wq, wk, wv */
         + hd * c->heads * C                         /* wo */
         + 3.0 * C * c->ffn;                         /* w1, w3, w2 */
}

double model_flops_per_token(const model_config_t *c) {
    double n_matmul = c->layers * layer_matmul_params(c) + (double)c->dim * c->vocab;
    return 6.0 * n_matmul + 12.0 * c->layers * (double)c->heads * head_dim_of(c) * c->seq;
}

double model_layer_forward_flops_per_token(const model_config_t *c) {
    return 2.0 * layer_matmul_params(c) + 4.0 * (double)c->heads * head_dim_of(c) * c->seq;
}

/* ---- shards --------------------------------------------------------------------- */
model_shard_t model_shard_full(const model_config_t *c) {
    model_shard_t s = {0, c->layers, 1, c->layers, 1, 0, 0, 1, 0, 0};
    return s;
}

void model_shard_stage(model_shard_t *s, const model_config_t *c, int P, int stage, int V) {
    if (P < 1 || V < 1 || c->layers % (P * V))
        usage_error("%d layers cannot be cut into %d stage%s x %d chunk%s of equal size", c->layers,
                    P, P == 1 ? "" : "s", V, V == 1 ? "" : "s");
    int per = c->layers / (P * V);
    s->per_chunk = per;
    s->chunks = V;
    s->first = stage * per;
    s->chunk_stride = P * per;
}

int model_shard_layer(const model_shard_t *s, int i) {
    return s->first + (i / s->per_chunk) * s->chunk_stride + i % s->per_chunk;
}

void model_shard_check(const model_config_t *c, const model_shard_t *s) {
    int last = s->per_chunk < 1 || s->chunks < 1 ? c->layers
             : model_shard_layer(s, s->per_chunk * s->chunks - 1);
    if (s->first < 0 || last >= c->layers)
        usage_error("the shard's layers (from %d, %d chunk%s of %d) are not inside [0, %d)", s->first,
                    s->chunks, s->chunks == 1 ? "" : "s", s->per_chunk, c->layers);
    if (s->tp < 1 || s->tp_rank < 0 || s->tp_rank >= s->tp || s->cp < 1 || s->cp_rank < 0 ||
        s->cp_rank >= s->cp)
        usage_error("bad tensor/context-parallel rank (tp %d of %d, cp %d of %d)", s->tp_rank, s->tp,
                    s->cp_rank, s->cp);
    if (c->heads % s->tp)
        usage_error("tensor parallelism %d must divide the heads (%d)", s->tp, c->heads);
    if (c->kv_heads % s->tp && s->tp % c->kv_heads)
        usage_error("tensor parallelism %d must divide the kv-heads (%d) or be a multiple of them",
                    s->tp, c->kv_heads);
    if (c->ffn % s->tp) usage_error("tensor parallelism %d must divide ffn (%d)", s->tp, c->ffn);
    if (c->vocab % s->tp) usage_error("tensor parallelism %d must divide the vocabulary (%d)", s->tp, c->vocab);
    if (s->sp && s->tp < 2) usage_error("sequence parallelism needs tensor parallelism (tp >= 2)");
    int parts = s->cp * (s->cp > 1 && s->cp_balance ? 2 : 1);
    if (c->seq % parts)
        usage_error("the sequence (%d tokens) must split into %d equal chunks for context "
                    "parallelism %d%s", c->seq, parts, s->cp, s->cp_balance ? " (balanced: 2 per rank)" : "");
}

/* The shard's shapes (model.h names them on model_t). */
typedef struct { int hd, H, KV, kv0, kv_rep, F, V, v0, T, nck, Tc, pos[2], has_emb, has_head; } dims_t;

static dims_t dims_of(const model_config_t *c, const model_shard_t *s) {
    dims_t d;
    d.hd = head_dim_of(c);
    d.H = c->heads / s->tp;
    if (c->kv_heads % s->tp == 0) {          /* kv heads split */
        d.KV = c->kv_heads / s->tp;
        d.kv0 = s->tp_rank * d.KV;
        d.kv_rep = 1;
    } else {                                 /* tp a multiple of kv_heads: one each, shared */
        d.KV = 1;
        d.kv_rep = s->tp / c->kv_heads;
        d.kv0 = s->tp_rank / d.kv_rep;
    }
    d.F = c->ffn / s->tp;
    d.V = c->vocab / s->tp;
    d.v0 = s->tp_rank * d.V;
    d.nck = s->cp > 1 && s->cp_balance ? 2 : 1;
    d.T = c->seq / s->cp;
    d.Tc = d.T / d.nck;
    if (d.nck == 2) {   /* chunks i and 2 cp - 1 - i of 2 cp: early and late tokens */
        d.pos[0] = s->cp_rank * d.Tc;
        d.pos[1] = (2 * s->cp - 1 - s->cp_rank) * d.Tc;
    } else {
        d.pos[0] = s->cp_rank * d.Tc;
        d.pos[1] = 0;
    }
    d.has_emb = s->first == 0;
    d.has_head = model_shard_layer(s, s->per_chunk * s->chunks - 1) == c->layers - 1;
    return d;
}

/* The nine tensors of a layer, in flat order. */
enum { T_ATTN_NORM, T_WQ, T_WK, T_WV, T_WO, T_MLP_NORM, T_W1, T_W3, T_W2, T_PER_LAYER };
static const char *const layer_tensor_name[T_PER_LAYER] = {
    "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w1", "w3", "w2"};

/* Shape of layer tensor k in a shard with dims d, and the whole tensor's. */
static void layer_tensor(const model_config_t *c, const model_shard_t *s, const dims_t *d, int k,
                         model_tensor_t *t) {
    size_t C = c->dim, hd = d->hd;
    t->is_norm = k == T_ATTN_NORM || k == T_MLP_NORM;
    t->tp_replicas = 1;
    t->tp_partial_grad = 0;
    t->row0 = t->col0 = 0;
    switch (k) {
    case T_ATTN_NORM: case T_MLP_NORM:
        t->rows = t->full_rows = 1; t->cols = t->full_cols = C;
        t->tp_replicas = s->tp;
        t->tp_partial_grad = s->sp;   /* each rank normalised only its rows */
        break;
    case T_WQ:
        t->rows = t->full_rows = C; t->cols = d->H * hd; t->full_cols = (size_t)c->heads * hd;
        t->col0 = (size_t)s->tp_rank * d->H * hd;
        break;
    case T_WK: case T_WV:
        t->rows = t->full_rows = C; t->cols = d->KV * hd; t->full_cols = (size_t)c->kv_heads * hd;
        t->col0 = (size_t)d->kv0 * hd;
        t->tp_replicas = d->kv_rep;
        t->tp_partial_grad = d->kv_rep > 1;   /* each replica saw only its query heads */
        break;
    case T_WO:
        t->cols = t->full_cols = C; t->rows = d->H * hd; t->full_rows = (size_t)c->heads * hd;
        t->row0 = (size_t)s->tp_rank * d->H * hd;
        break;
    case T_W1: case T_W3:
        t->rows = t->full_rows = C; t->cols = d->F; t->full_cols = c->ffn;
        t->col0 = (size_t)s->tp_rank * d->F;
        break;
    case T_W2:
        t->cols = t->full_cols = C; t->rows = d->F; t->full_rows = c->ffn;
        t->row0 = (size_t)s->tp_rank * d->F;
        break;
    }
    t->tp_owner = t->tp_replicas == 1 || s->tp_rank % t->tp_replicas == 0;
}

static size_t full_layer_size(const model_config_t *c) {
    size_t C = c->dim, hd = head_dim_of(c);
    return 2 * C + 2 * C * c->heads * hd + 2 * C * c->kv_heads * hd + 3 * C * c->ffn;
}

static int add_tensor(model_tensor_t *out, int max, int n, const model_tensor_t *t) {
    if (n < max) out[n] = *t;
    return n + 1;
}

int model_tensors(const model_config_t *c, const model_shard_t *s, model_tensor_t *out, int max) {
    dims_t d = dims_of(c, s);
    size_t C = c->dim, V = c->vocab, full_emb = V * C, off = 0;
    int n = 0;
    model_tensor_t t;
    if (d.has_emb) {
        memset(&t, 0, sizeof t);
        snprintf(t.name, sizeof t.name, "tok_embedding");
        t.layer = -1;
        t.offset = 0;
        t.rows = d.V; t.cols = C; t.full_rows = V; t.full_cols = C; t.row0 = d.v0;
        t.tp_replicas = 1; t.tp_owner = 1;
        n = add_tensor(out, max, n, &t);
        off += (size_t)d.V * C;
    }
    for (int i = 0; i < s->per_chunk * s->chunks; i++) {
        int l = model_shard_layer(s, i);
        size_t full_off = full_emb + (size_t)l * full_layer_size(c);
        for (int k = 0; k < T_PER_LAYER; k++) {
            memset(&t, 0, sizeof t);
            layer_tensor(c, s, &d, k, &t);
            snprintf(t.name, sizeof t.name, "layers.%d.%s", l, layer_tensor_name[k]);
            t.layer = l;
            t.offset = off;
            t.full_offset = full_off;
            off += t.rows * t.cols;
            full_off += t.full_rows * t.full_cols;
            n = add_tensor(out, max, n, &t);
        }
    }
    if (d.has_head) {
        size_t full_head = full_emb + (size_t)c->layers * full_layer_size(c);
        memset(&t, 0, sizeof t);
        snprintf(t.name, sizeof t.name, "final_norm");
        t.layer = c->layers;
        t.offset = off;
        t.full_offset = full_head;
        t.rows = t.full_rows = 1; t.cols = t.full_cols = C;
        t.is_norm = 1;
        t.tp_replicas = s->tp; t.tp_owner = s->tp_rank == 0; t.tp_partial_grad = s->sp;
        n = add_tensor(out, max, n, &t);
        off += C;
        memset(&t, 0, sizeof t);
        snprintf(t.name, sizeof t.name, "lm_head");
        t.layer = c->layers;
        t.offset = off;
        t.full_offset = full_head + C;
        t.rows = t.full_rows = C; t.cols = d.V; t.full_cols = V; t.col0 = d.v0;
        t.tp_replicas = 1; t.tp_owner = 1;
        n = add_tensor(out, max, n, &t);
    }
    return n;
}

/* The whole list, allocated. */
static model_tensor_t *tensor_list(const model_config_t *c, const model_shard_t *s, int *n) {
    *n = model_tensors(c, s, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)*n);
    model_tensors(c, s, ts, *n);
    return ts;
}

size_t model_shard_size(const model_config_t *c, const model_shard_t *s) {
    int n;
    model_tensor_t *ts = tensor_list(c, s, &n);
    size_t total = ts[n - 1].offset + ts[n - 1].rows * ts[n - 1].cols;
    free(ts);
    return total;
}

size_t model_param_count(const model_config_t *c) {
    model_shard_t s = model_shard_full(c);
    return model_shard_size(c, &s);
}

/* Copy the shard's elements [flat, flat + count) from (to_full = 0) or into
 * (1) the full array, row segment by row segment of each tensor block. */
static void shard_copy(const model_config_t *c, const model_shard_t *s, size_t flat, size_t count,
                       float *part, float *full, int to_full, int owners_only) {
    int n;
    model_tensor_t *ts = tensor_list(c, s, &n);
    size_t end = flat + count;
    for (int k = 0; k < n; k++) {
        const model_tensor_t *t = &ts[k];
        size_t tb = t->offset, te = tb + t->rows * t->cols;
        if (te <= flat || tb >= end || (to_full && owners_only && !t->tp_owner)) continue;
        size_t lo = tb > flat ? tb : flat, hi = te < end ? te : end;
        for (size_t e = lo; e < hi;) {
            size_t li = e - tb, r = li / t->cols, col = li % t->cols;
            size_t run = t->cols - col < hi - e ? t->cols - col : hi - e;
            float *a = part + (e - flat);
            float *b = full + t->full_offset + (t->row0 + r) * t->full_cols + t->col0 + col;
            if (to_full) memcpy(b, a, run * sizeof(float));
            else memcpy(a, b, run * sizeof(float));
            e += run;
        }
    }
    free(ts);
}

void model_shard_slice(const model_config_t *c, const model_shard_t *s, size_t flat, size_t count,
                       const float *full, float *out) {
    shard_copy(c, s, flat, count, out, (float *)full, 0, 0);
}

void model_shard_place(const model_config_t *c, const model_shard_t *s, size_t flat, size_t count,
                       const float *in, float *full, int owners_only) {
    shard_copy(c, s, flat, count, (float *)in, full, 1, owners_only);
}

/* ---- initialisation ------------------------------------------------------------
 * splitmix64 (data.h; Steele, Lea & Flood 2014) gives 64-bit words, stepped
 * as a counter; Box-Muller turns each pair of uniforms into two normals.
 * Everything in double, so the sequence is the same on every machine. */
void model_init_params(float *p, const model_config_t *c, uint64_t seed) {
    model_shard_t full = model_shard_full(c);
    int nt;
    model_tensor_t *ts = tensor_list(c, &full, &nt);
    /* The std of every flat index, tensor by tensor; then one normal per index. */
    const double out_std = MODEL_INIT_STD / sqrt(2.0 * c->layers);
    uint64_t state = seed;
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
                uint64_t w1 = splitmix64(state), w2 = splitmix64(state + 0x9e3779b97f4a7c15ull);
                state += 2 * 0x9e3779b97f4a7c15ull;
                double u1 = ((double)(w1 >> 11) + 1.0) * 0x1.0p-53;   /* (0, 1] */
                double u2 = (double)(w2 >> 11) * 0x1.0p-53;           /* [0, 1) */
                double r = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
                z[0] = r * cos(a);
                z[1] = r * sin(a);
            }
            p[ts[k].offset + e] = ts[k].is_norm ? 1.0f : (float)(std * z[i % 2]);
        }
    }
    free(ts);
}
