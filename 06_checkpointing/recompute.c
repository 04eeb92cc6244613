/* recompute.c: recomputation policies, their cost model and the meter of
 * what was recomputed (recompute.h). */
#include "recompute.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device.h"

/* "every:12" with prefix "every:": 0 and *v = 12 when 1 <= 12 <= layers;
 * -1 with the reason in err otherwise; 1 when s does not start with prefix. */
static int count_after(const char *s, const char *prefix, int layers, const char *what, int *v, char *err,
                       size_t len) {
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) != 0) return 1;
    char *end;
    long x = s[n] >= '0' && s[n] <= '9' ? strtol(s + n, &end, 10) : -1;
    if (x < 1 || *end) {
        snprintf(err, len, "--recompute %s: %s must be a whole number >= 1 (%s1 is the %s)", s, what, prefix,
                 prefix[0] == 'e' ? "full recomputation" : "first layer alone");
        return -1;
    }
    if (x > layers) {
        snprintf(err, len, "--recompute %s: %s is %ld, but a chunk has only %d layers", s, what, x, layers);
        return -1;
    }
    *v = (int)x;
    return 0;
}

int recompute_parse(const char *s, int layers, recompute_t *r, char *err, size_t len) {
    memset(r, 0, sizeof *r);
    int rc;
    if (!strcmp(s, "none")) {
        snprintf(r->name, sizeof r->name, "none");
    } else if (!strcmp(s, "full")) {
        r->keep.every = 1;
        snprintf(r->name, sizeof r->name, "full");
    } else if (!strcmp(s, "sqrt")) {   /* Chen et al.: segments of sqrt(L) layers */
        r->keep.every = (int)lround(sqrt((double)layers));
        if (r->keep.every < 1) r->keep.every = 1;
        snprintf(r->name, sizeof r->name, "sqrt (every:%d)", r->keep.every);
    } else if (!strcmp(s, "selective")) {
        r->keep.selective = 1;
        snprintf(r->name, sizeof r->name, "selective");
    } else if ((rc = count_after(s, "every:", layers, "C, the layers of a segment,", &r->keep.every, err, len)) != 1) {
        if (rc) return -1;
        snprintf(r->name, sizeof r->name, "every:%d", r->keep.every);
    } else if ((rc = count_after(s, "block:", layers, "K, the layers recomputed,", &r->keep.block, err, len)) != 1) {
        if (rc) return -1;
        snprintf(r->name, sizeof r->name, "block:%d", r->keep.block);
    } else {
        snprintf(err, len, "--recompute %s: not a policy (none, full, every:C, sqrt, block:K, selective)", s);
        return -1;
    }
    return 0;
}

double recompute_attn_flops(const model_t *m) { return 4.0 * m->cfg.seq * (double)m->H * m->hd; }

double recompute_layer_flops(const model_t *m) {
    double C = m->cfg.dim, Hq = (double)m->H * m->hd, Hkv = (double)m->KV * m->hd, F = m->F;
    /* q, k, v, o projections and w1, w3, w2: 2 FLOPs per weight per token */
    return 2.0 * (C * Hq + 2 * C * Hkv + Hq * C + 3 * C * F) + recompute_attn_flops(m);
}

/* The bytes follow MODEL.md's list of what one block keeps; R rows of the
 * residual stream (split under sequence parallelism), Rf rows in the
 * tensor-parallel regions. */
void recompute_cost(const model_t *m, int B, const recompute_t *r, recompute_cost_t *c) {
    memset(c, 0, sizeof *c);
    const double es = dtype_size(m->dtype), f4 = 4, C = m->cfg.dim;
    const double Hq = (double)m->H * m->hd, Hkv = (double)m->KV * m->hd, F = m->F, V = m->V;
    const int sp = m->shard.sp, tp = m->shard.tp, L = m->shard.per_chunk;
    double Rf = (double)B * m->T, R = sp ? Rf / tp : Rf;
    c->input = R * C * es;
    double norms = 3 * R * C * es + 2 * R * f4;                       /* xn1, h, xn2; rstd1, rstd2 */
    double attn = Rf * (2 * Hkv + (r->keep.selective ? 1 : 2) * Hq) * es   /* q, k, v, the output */
                + (double)B * m->H * m->T * f4;                       /* lse */
    double mlp = 3 * Rf * F * es;                                     /* u1, u3, g */
    c->layer = c->input + norms + attn + mlp;
    c->head = 2 * Rf * f4;                                            /* tokens, targets */
    if (m->has_head) c->head += R * C * es + R * f4 + Rf * V * es + 2 * Rf * f4;   /* xnf, rstdf, logits, lse, picked */

    if (r->keep.every) {
        int C_ = r->keep.every < L ? r->keep.every : L;
        c->checkpoints = ceil((double)L / C_) + 1;   /* every segment's first input, and the output */
        c->inputs = c->checkpoints + C_ - 1;          /* + the other inputs of the segment refilled */
        c->kept_layers = C_;                          /* the slots one segment refills */
        c->layers_recomputed = L;
    } else if (r->keep.block) {
        int K = r->keep.block < L ? r->keep.block : L;
        c->checkpoints = c->inputs = L + 1;
        c->kept_layers = K < L ? L - K : 1;   /* layer K's buffers are refilled for the others */
        c->layers_recomputed = K;
    } else {
        c->checkpoints = c->inputs = L + 1;
        c->kept_layers = L;
    }
    c->bytes = c->inputs * c->input + c->kept_layers * (c->layer - c->input);
    if (r->keep.selective) c->attn_recomputed = L;
    c->bytes += c->head;
    c->flops = Rf * (c->layers_recomputed * recompute_layer_flops(m) + c->attn_recomputed * recompute_attn_flops(m));

    /* Backward scratch, sized for the model's largest micro-batch. */
    double Rm = (double)m->max_batch * m->T, Rs = sp ? Rm / tp : Rm, Tc = m->Tc;
    c->scratch = es * (Rs * C + Rm * C + 2 * Rm * Hq + 2 * Rm * Hkv + 3 * Rm * F + Rs * C + Rm * Hq +
                       (double)m->max_batch * Tc * Hq) +
                 f4 * (double)m->max_batch * m->H * (m->T + Tc);
    if (sp) c->scratch += es * (Rs * C + 2 * Rm * C);   /* the reduced input gradient, gathered and partial rows */
    if (m->has_head) c->scratch += es * Rm * V;         /* dlogits */
}

/* ---- the meter --------------------------------------------------------------- */
static void meter_before(void *ctx, model_t *m, int unit, model_pass_t pass) {
    recompute_meter_t *mt = ctx;
    int l = m->units[unit].layer;
    mt->pass = l >= 0 && l < m->cfg.layers ? (int)pass : -1;   /* layers only */
    mt->t0 = now_s();
}

static void meter_after(void *ctx, model_t *m, int unit, model_pass_t pass) {
    recompute_meter_t *mt = ctx;
    (void)m; (void)unit;
    if (mt->pass < 0) return;
    double dt = now_s() - mt->t0;
    if (pass == PASS_FORWARD) { mt->fwd_layers++; mt->fwd_s += dt; }
    if (pass == PASS_RECOMPUTE) { mt->rec_layers++; mt->rec_s += dt; }
    mt->pass = -1;
}

/* Attention forwards in a layer's forward or recomputation are part of that
 * layer; one inside backward is the selective policy's recomputation. */
static void meter_attn(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                       const void *v, void *out, float *lse) {
    recompute_meter_t *mt = ctx;
    double t0 = now_s();
    mt->inner.forward(mt->inner.ctx, m, a, q, k, v, out, lse);
    double dt = now_s() - t0;
    if (mt->pass == PASS_BACKWARD) { mt->attn_rec++; mt->attn_rec_s += dt; }
    else if (mt->pass == PASS_FORWARD) { mt->attn_fwd++; mt->attn_fwd_s += dt; }
}

static void meter_attn_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q,
                                const void *k, const void *v, const void *out, const void *dout,
                                const float *lse, void *dq, void *dk, void *dv) {
    recompute_meter_t *mt = ctx;
    mt->inner.backward(mt->inner.ctx, m, a, q, k, v, out, dout, lse, dq, dk, dv);
}

void recompute_meter_attach(recompute_meter_t *mt, model_t *m) {
    memset(mt, 0, sizeof *mt);
    mt->pass = -1;
    mt->inner = m->attn;
    m->attn = (model_attn_t){mt, meter_attn, meter_attn_backward};
    model_add_hook(m, meter_before, meter_after, mt);
}

double recompute_meter_flops(const model_t *m, const recompute_meter_t *a, const recompute_meter_t *b,
                             double rows) {
    return rows * ((double)(b->rec_layers - a->rec_layers) * recompute_layer_flops(m) +
                   (double)(b->attn_rec - a->attn_rec) * recompute_attn_flops(m));
}
