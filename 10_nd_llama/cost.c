/* cost.c: the cost model of a 4D-parallel step (see cost.h). Per micro-batch
 * on the fullest stage: compute (GEMMs, attention, memory-bound kernels,
 * recomputation) and the tensor-, context- and pipeline-parallel transfers it
 * waits for; per step: m micro-batches, the pipeline bubble, the
 * data-parallel gradient synchronisation that backward did not hide, and the
 * optimizer. */
#include "cost.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

const char *const sched_name[3] = {"gpipe", "1f1b", "interleaved"};
const char *const recompute_name[4] = {"none", "selective", "full", "block"};

/* The presets, by the name --cluster takes. */
static const struct { const char *key; cluster_t c; } clusters[] = {
    /* H100 SXM nodes of 8 GPUs (Llama 3's training cluster). Measured on one
     * H100 with PyTorch 2.11 at Llama 3 405B's per-GPU shapes under TP 8
     * (shipped in 01_matmul_hfu/reference/h100_llama405b_tp8_shapes.jsonl): bf16 GEMMs
     * 66-80% of the peak, 76% weighted by their FLOPs; causal flash attention
     * forward + backward 47-48% (on causal FLOPs); device copies 3.0 TB/s.
     * NVLink 4 carries 450 GB/s each way and a ring all-reduce reaches ~80%
     * of it; a 400 Gb/s NIC per GPU is 50 GB/s, ~80% reached. */
    {"h100", {.name = "H100 SXM 80GB, 8 per node", .peak = 989.4e12, .mem = 80e9, .node = 8,
              .intra_bw = 360e9, .intra_lat = 5e-6, .inter_bw = 40e9, .inter_lat = 10e-6, .mem_bw = 3.0e12,
              .gemm_eff = 0.76, .attn_eff = 0.48, .dp_overlap = 0.5, .cp_overlap = 1.0, .tp_overlap = 0.0,
              .elementwise = 24, .mem_headroom = 0.9}},
    /* This machine, every rank on one node. The planner fills in the
     * measured peak (build/cpu_peak) shared by the ranks on the cores; the
     * fractions are typical of bench_ops at chapter 03's model (fp32, 1
     * thread per rank), the link of 02_allreduce on 2 ranks over Open MPI's
     * shared memory; validate_cpu.sh measures all of them around each run.
     * Communication is not hidden: a rank with one thread advances MPI only
     * inside its calls. */
    {"cpu", {.name = "this machine's CPU, ranks on one node", .mem = 8e9, .node = 1 << 20,
             .intra_bw = 0.15e9, .intra_lat = 20e-6, .inter_bw = 0.15e9, .inter_lat = 20e-6, .mem_bw = 10e9,
             .gemm_eff = 0.30, .attn_eff = 0.10, .elementwise = 24, .mem_headroom = 1.0}},
};

static const struct { const char *name; model_config_t cfg; } model_presets[] = {
    {"llama3-8b", {128256, 4096, 32, 32, 8, 128, 14336, 8192}},
    {"llama3-70b", {128256, 8192, 80, 64, 8, 128, 28672, 8192}},
    {"llama3-405b", {128256, 16384, 126, 128, 8, 128, 53248, 8192}},
};

int cost_model(model_config_t *c, const char *preset) {
    for (size_t i = 0; i < sizeof model_presets / sizeof model_presets[0]; i++)
        if (!strcmp(preset, model_presets[i].name)) {
            *c = model_presets[i].cfg;
            return 0;
        }
    return -1;
}

int cost_cluster(cluster_t *c, const char *preset) {
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++)
        if (!strcmp(preset, clusters[i].key)) {
            *c = clusters[i].c;
            return 0;
        }
    memset(c, 0, sizeof *c);
    return -1;
}

/* Its keys, each a field of cluster_t in the file's unit times scale. */
static const struct { const char *key; size_t off; double scale; } cluster_keys[] = {
    {"peak_tflops", offsetof(cluster_t, peak), 1e12},      {"mem_gb", offsetof(cluster_t, mem), 1e9},
    {"nvlink_gbps", offsetof(cluster_t, intra_bw), 1e9},   {"nvlink_us", offsetof(cluster_t, intra_lat), 1e-6},
    {"network_gbps", offsetof(cluster_t, inter_bw), 1e9},  {"network_us", offsetof(cluster_t, inter_lat), 1e-6},
    {"mem_gbps", offsetof(cluster_t, mem_bw), 1e9},        {"gemm_eff", offsetof(cluster_t, gemm_eff), 1},
};

int cost_cluster_file(cluster_t *c, const char *path, char *why, size_t len) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(why, len, "cannot read %s", path); return -1; }
    char line[256], key[64], val[128];
    int ln = 0, rc = 0, seen = 0;
    snprintf(c->name, sizeof c->name, "%.47s", path);
    while (rc == 0 && fgets(line, sizeof line, f)) {
        ln++;
        if (sscanf(line, " %63s", key) != 1 || key[0] == '#') continue;
        if (sscanf(line, " %63s %127[^\n]", key, val) != 2) { rc = -1; break; }
        if (!strcmp(key, "name")) { snprintf(c->name, sizeof c->name, "%.47s", val); continue; }
        if (!strcmp(key, "gpus_per_node")) { c->node = atoi(val); seen |= 1 << 8; continue; }
        int k = 0, n = (int)(sizeof cluster_keys / sizeof cluster_keys[0]);
        while (k < n && strcmp(key, cluster_keys[k].key)) k++;
        char *end;
        double v = strtod(val, &end);
        if (k == n || end == val || !(v > 0)) { rc = -1; break; }
        *(double *)((char *)c + cluster_keys[k].off) = v * cluster_keys[k].scale;
        seen |= 1 << k;
    }
    fclose(f);
    if (rc) { snprintf(why, len, "%s:%d: expected KEY VALUE with a known key and a positive value", path, ln); return -1; }
    if (seen != 0x1ff || c->node < 1) {
        snprintf(why, len, "%s: needs every key: name (optional), gpus_per_node, peak_tflops, mem_gb, nvlink_gbps, "
                 "nvlink_us, network_gbps, network_us, mem_gbps, gemm_eff", path);
        return -1;
    }
    c->mem_headroom = 1;
    return 0;
}

int gemm_table_load(gemm_table_t *t, const char *csv, const char *dtype, char *why, size_t len) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(csv, "r");
    if (!f) { snprintf(why, len, "cannot read %s", csv); return -1; }
    char line[512];
    int col[5] = {-1, -1, -1, -1, -1};   /* dtype, m, n, k, hfu */
    static const char *const names[5] = {"dtype", "m", "n", "k", "hfu"};
    if (fgets(line, sizeof line, f)) {
        int i = 0;
        for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), i++)
            for (int c = 0; c < 5; c++) if (!strcmp(tok, names[c])) col[c] = i;
    }
    for (int c = 0; c < 5; c++)
        if (col[c] < 0) { fclose(f); snprintf(why, len, "%s has no column %s", csv, names[c]); return -1; }
    while (fgets(line, sizeof line, f)) {
        char *field[16] = {0};
        int nf = 0;
        for (char *tok = strtok(line, ",\r\n"); tok && nf < 16; tok = strtok(NULL, ",\r\n")) field[nf++] = tok;
        if (nf <= col[0] || nf <= col[1] || nf <= col[2] || nf <= col[3] || nf <= col[4]) continue;
        if (strcmp(field[col[0]], dtype)) continue;
        double flops = 2.0 * atof(field[col[1]]) * atof(field[col[2]]) * atof(field[col[3]]);
        double eff = atof(field[col[4]]) / 100;
        if (!(flops > 0) || !(eff > 0 && eff <= 1)) {
            fclose(f);
            snprintf(why, len, "%s: a %s row with FLOPs %g and HFU %g%%", csv, dtype, flops, 100 * eff);
            return -1;
        }
        int j = 0;   /* insert in ascending FLOPs; equal FLOPs keep the best */
        while (j < t->n && t->flops[j] < flops) j++;
        if (j < t->n && t->flops[j] == flops) {
            if (eff > t->eff[j]) t->eff[j] = eff;
            continue;
        }
        if (t->n == (int)(sizeof t->flops / sizeof t->flops[0])) {
            fclose(f);
            snprintf(why, len, "%s: more than %d sizes", csv, t->n);
            return -1;
        }
        memmove(t->flops + j + 1, t->flops + j, sizeof(double) * (size_t)(t->n - j));
        memmove(t->eff + j + 1, t->eff + j, sizeof(double) * (size_t)(t->n - j));
        t->flops[j] = flops, t->eff[j] = eff, t->n++;
    }
    fclose(f);
    if (!t->n) { snprintf(why, len, "%s has no %s rows", csv, dtype); return -1; }
    return 0;
}

/* Interpolated in log FLOPs because a GEMM's efficiency grows with the work
 * per launch and per tile roughly as its logarithm (chapter 01's curve);
 * the shape's aspect is ignored. */
double gemm_eff_at(const gemm_table_t *t, double m, double n, double k) {
    double x = log(2 * m * n * k);
    if (x <= log(t->flops[0])) return t->eff[0];
    for (int j = 1; j < t->n; j++) {
        double x1 = log(t->flops[j]);
        if (x <= x1) {
            double x0 = log(t->flops[j - 1]), a = (x - x0) / (x1 - x0);
            return t->eff[j - 1] + a * (t->eff[j] - t->eff[j - 1]);
        }
    }
    return t->eff[t->n - 1];
}

/* Seconds of one GEMM (m x k) @ (k x n): at its shape's efficiency when the
 * cluster has a table, else at the one fraction for GEMMs. */
static double gemm_seconds(const cluster_t *cl, double m, double n, double k) {
    double eff = cl->gemm_table ? gemm_eff_at(cl->gemm_table, m, n, k) : cl->gemm_eff;
    return 2 * m * n * k / (cl->peak * eff);
}

void cost_links(const cluster_t *c, replay_links_t *l) {
    *l = (replay_links_t){.node_size = c->node, .intra_us = 1e6 * c->intra_lat, .intra_gbps = c->intra_bw / 1e9,
                          .inter_us = 1e6 * c->inter_lat, .inter_gbps = c->inter_bw / 1e9};
}

/* One call of kind k over a group of n ranks spread evenly over `span`
 * consecutive mesh positions (tp fastest): priced by the replay engine's
 * alpha-beta formulas (common/replay.h), inside a node when the group is. */
static double coll(const cluster_t *cl, coll_kind k, double X, int n, int span) {
    replay_links_t l;
    cost_links(cl, &l);
    int *members = xmalloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) members[i] = i * (span / n);
    double t = replay_coll_cost(k, X, n, members, &l);
    free(members);
    return t;
}

double cost_acts_per_layer(const model_config_t *c, const par_t *p, double tokens) {
    double es = p->dtype_bytes, tp = p->tp, hd = c->head_dim;
    double Hl = c->heads / tp, KVl = c->kv_heads % p->tp == 0 ? c->kv_heads / tp : 1, Fl = c->ffn / tp;
    double rdiv = p->sp ? tp : 1;   /* the residual stream's rows under sequence parallelism */
    /* x, xn1, h, xn2 (R rows of C), rstd1, rstd2 (fp32 per R row);
     * q, att (H hd), k, v (KV hd), u1, u3, g (F) on all rows; lse (fp32, H per row) */
    double per_token = es * 4 * c->dim / rdiv + 4.0 * 2 / rdiv +
                       es * ((p->recompute == RECOMPUTE_SELECTIVE ? 1 : 2) * Hl * hd + 2 * KVl * hd + 3 * Fl) +
                       4.0 * Hl;
    return per_token * tokens;
}

int cost_eval(const model_config_t *cfg, long batch, const cluster_t *cl, const par_t *p,
              cost_t *o) {
    memset(o, 0, sizeof *o);
    const model_config_t *c = cfg;
    const int tp = p->tp, cp = p->cp, pp = p->pp, dp = p->dp, v = p->vpp;
    const double es = p->dtype_bytes, C = c->dim, hd = c->head_dim, L = c->layers;
    const int N = tp * cp * pp * dp;
#define REJECT(...) do { snprintf(o->why, sizeof o->why, __VA_ARGS__); return -1; } while (0)
    if (tp < 1 || cp < 1 || pp < 1 || dp < 1 || p->mbs < 1)   /* before any division by them */
        REJECT("tp %d, cp %d, pp %d, dp %d and micro-batch %d must all be 1 or more", tp, cp, pp, dp, p->mbs);
    if (c->heads % tp) REJECT("tp %d does not divide the %d heads", tp, c->heads);
    if (c->kv_heads % tp && tp % c->kv_heads) REJECT("tp %d neither divides nor is a multiple of the %d kv-heads", tp, c->kv_heads);
    if (c->ffn % tp || c->vocab % tp) REJECT("tp %d does not divide ffn %d or vocab %d", tp, c->ffn, c->vocab);
    if (c->seq % (cp > 1 ? 2 * cp : 1)) REJECT("the sequence of %d does not cut into 2 x cp %d chunks", c->seq, cp);
    if (p->sp && tp < 2) REJECT("sequence parallelism needs tp >= 2");
    if (batch % ((long)dp * p->mbs)) REJECT("batch %ld is not divisible by dp %d x micro-batch %d", batch, dp, p->mbs);
    const int m = (int)(batch / ((long)dp * p->mbs));
    o->micro = m;
    if (pp > 1 && p->schedule != SCHED_GPIPE && m < pp)
        REJECT("too little batch for the pipeline: %d micro-batches for %d stages", m, pp);
    int stage_layers = (c->layers + pp - 1) / pp;   /* the fullest stage */
    if (p->schedule == SCHED_INTERLEAVED) {
        if (v < 2) REJECT("the interleaved schedule needs 2 or more chunks per stage");
        if (stage_layers % v) REJECT("%d layers per stage do not cut into %d chunks", stage_layers, v);
        if (m % pp) REJECT("interleaving needs the %d micro-batches to be a multiple of the %d stages", m, pp);
    } else if (v != 1) {
        REJECT("chunks per stage need the interleaved schedule");
    }
    if (stage_layers < 1 || pp > c->layers) REJECT("%d stages for %d layers", pp, c->layers);

    /* ---- parameters of the fullest stage's GPU ---- */
    double Hl = c->heads / (double)tp, KVl = c->kv_heads % tp == 0 ? c->kv_heads / (double)tp : 1;
    double Fl = c->ffn / (double)tp, Vl = c->vocab / (double)tp;
    double layer_mm = C * Hl * hd + 2 * C * KVl * hd + Hl * hd * C + 3 * C * Fl;   /* matmul weights */
    double layer_p = layer_mm + 2 * C;
    double head_p = pp == 1 ? Vl * C * 2 + C : Vl * C + C;   /* the last stage: lm_head (+ embedding when alone) */
    double P = stage_layers * layer_p + head_p;
    o->params_gpu = (long long)P;

    /* ---- memory ---- */
    /* Context-parallel ranks hold the same weights and see different tokens
     * of the same sequences, so their gradients are summed too: the gradient
     * sync and ZeRO's shards span dp x cp ranks (Megatron's data-and-context
     * group; Llama 3's FSDP over the same ranks). */
    const int dpcp = dp * cp;
    double shard = p->zero >= 1 ? dpcp : 1;
    /* ZeRO-3 gathers a layer at a time and the next ahead (04_fsdp's prefetch
     * 1); in a pipeline the stage's last layer also waits, gathered, for its
     * backward while other micro-batches' forwards run */
    o->mem_weights = p->zero == 3 ? es * P / dpcp + (pp > 1 ? 3 : 2) * es * layer_p : es * P;
    o->mem_grads = p->zero >= 2 ? 4 * P / dpcp + 2 * 4 * layer_p : 4 * P;
    o->mem_optim = 12 * P / shard;
    double tokens = (double)p->mbs * c->seq / cp;   /* this rank's tokens of a micro-batch */
    double per_layer = cost_acts_per_layer(c, p, tokens);
    double inflight = p->schedule == SCHED_GPIPE ? m : (m < pp ? m : pp);
    if (p->schedule == SCHED_INTERLEAVED) inflight *= 1.0 + (pp - 1.0) / (pp * v);
    /* recomputed layers keep only their input */
    double input = es * C / (p->sp ? tp : 1) * tokens;
    int rec_layers = p->recompute == RECOMPUTE_FULL ? stage_layers
                   : p->recompute == RECOMPUTE_BLOCK ? p->recompute_layers : 0;
    if (rec_layers > stage_layers) REJECT("%d recomputed layers of %d per stage", rec_layers, stage_layers);
    o->mem_acts = inflight * (rec_layers * input + (stage_layers - rec_layers) * per_layer)
                + (rec_layers ? per_layer : 0)                        /* the layer being recomputed */
                + per_layer                                          /* backward's scratch */
                + tokens * Vl * es * 2;                              /* logits and their gradient */
    o->mem_total = o->mem_weights + o->mem_grads + o->mem_optim + o->mem_acts;
    if (o->mem_total > cl->mem * cl->mem_headroom)
        REJECT("out of memory: %.1f GB per GPU (weights %.1f, grads %.1f, optimizer %.1f, activations %.1f) > %.0f%% of %.0f GB",
               o->mem_total / 1e9, o->mem_weights / 1e9, o->mem_grads / 1e9, o->mem_optim / 1e9,
               o->mem_acts / 1e9, 100 * cl->mem_headroom, cl->mem / 1e9);

    /* ---- compute of one micro-batch on the last stage (it has the head) ---- */
    /* a layer's forward GEMMs on this rank's rows: q, k, v, o, w1, w3, w2; then
     * the head. Backward's two GEMMs per weight have the forward's FLOPs. */
    double Ql = Hl * hd, Kl = KVl * hd;
    double layer_fwd_s = gemm_seconds(cl, tokens, Ql, C) + 2 * gemm_seconds(cl, tokens, Kl, C) +
                         gemm_seconds(cl, tokens, C, Ql) + 2 * gemm_seconds(cl, tokens, Fl, C) +
                         gemm_seconds(cl, tokens, C, Fl);
    double attn_fwd = 2.0 * p->mbs * ((double)c->seq * c->seq / cp) * Hl * hd;   /* causal, per layer */
    double t_gemm = 3 * (stage_layers * layer_fwd_s + gemm_seconds(cl, tokens, Vl, C));
    double t_attn = stage_layers * 3.5 * attn_fwd / (cl->peak * cl->attn_eff);
    double t_elem = tokens * stage_layers * cl->elementwise * es * (C + Fl) / cl->mem_bw;
    double t_rec = 0, rec_flops = 0;
    if (rec_layers) {   /* one more forward of the recomputed layers */
        double share = (double)rec_layers / stage_layers, layers_fwd = 2 * tokens * stage_layers * layer_mm;
        t_rec = share * (stage_layers * layer_fwd_s + t_attn / 3.5 + t_elem / 3);
        rec_flops = share * (layers_fwd + stage_layers * attn_fwd);
    } else if (p->recompute == RECOMPUTE_SELECTIVE) {
        t_rec = t_attn / 3.5;
        rec_flops = stage_layers * attn_fwd;
    }

    /* ---- communication of one micro-batch ---- */
    double t_tp = 0, t_cp = 0, t_pp = 0;
    if (tp > 1) {   /* 2 collectives forward and 2 backward per layer (3 forward when recomputed) */
        double X = tokens * C * es;
        double per = coll(cl, COLL_ALLREDUCE, X, tp, tp);
        double n = stage_layers * 4 + rec_layers * 2 + 3;   /* + embedding, head */
        t_tp = n * per * (1 - cl->tp_overlap);
    }
    if (cp > 1) {   /* ring attention: cp - 1 key/value blocks forward, twice as many backward */
        double kv = tokens * 2 * KVl * hd * es;
        double comm = 3 * (cp - 1) * coll(cl, COLL_SEND, kv, cp, tp * cp);
        double hide = cl->cp_overlap * 3.5 * attn_fwd / (cl->peak * cl->attn_eff);
        t_cp = stage_layers * fmax(0.0, comm - hide);
    }
    if (pp > 1) {   /* the stage's output forward, its gradient backward: once per model chunk, so v
                       times under interleaving (Narayanan et al. 2021, section 2.2) */
        double X = tokens * C * es / (p->sp ? tp : 1);
        t_pp = 2 * coll(cl, COLL_SEND, X, pp, tp * cp * pp) * (p->schedule == SCHED_INTERLEAVED ? v : 1);
    }
    double t_micro = t_gemm + t_attn + t_elem + t_rec + t_tp + t_cp + t_pp;

    /* ---- the step ---- */
    double vv = p->schedule == SCHED_INTERLEAVED ? v : 1;
    o->t_bubble = (pp - 1) / vv * t_micro;
    double t_dp = 0;
    if (dpcp > 1) {   /* over the dp x cp ranks that hold the same weights */
        /* One reduce-scatter or all-gather of the stage's weights moves
         * (n-1)/n of them. DDP and ZeRO-1 keep whole gradients and sync them
         * once per step (an all-reduce: 2 of them). ZeRO-2 keeps only its
         * shard of the gradients, so every micro-batch's are reduce-scattered
         * as backward makes them, and the updated weights gathered once.
         * ZeRO-3 also drops the weights after use: every micro-batch gathers
         * them for forward and again for backward (what Llama 3 avoids by
         * not resharding after forward, section 3.3.2). */
        double n = p->zero <= 1 ? 2 : p->zero == 2 ? m + 1 : 3.0 * m;
        t_dp = n * coll(cl, COLL_REDUCE_SCATTER, es * P, dpcp, N) * (1 - cl->dp_overlap);
    }
    o->t_optimizer = 30.0 * P / shard / cl->mem_bw;
    o->t_gemm = m * t_gemm;
    o->t_attn = m * t_attn;
    o->t_elementwise = m * t_elem;
    o->t_recompute = m * t_rec;
    o->t_tp = m * t_tp;
    o->t_cp = m * t_cp;
    o->t_pp = m * t_pp;
    o->t_dp = t_dp;
    o->t_step = m * t_micro + o->t_bubble + t_dp + o->t_optimizer;
    o->bubble = o->t_bubble / o->t_step;
    double tokens_step = (double)batch * c->seq;
    double per_token = model_flops_per_token(c);
    if (cl->causal_credit) per_token -= 6.0 * c->layers * (double)c->heads * hd * c->seq;   /* half of 12 L H hd T */
    o->model_flops = per_token * tokens_step / N;
    o->hw_flops = o->model_flops + m * rec_flops;
    o->mfu = o->model_flops / (o->t_step * cl->peak);
    o->hfu = o->hw_flops / (o->t_step * cl->peak);
    o->tflops = o->model_flops / o->t_step / 1e12;
    o->tokens_s = tokens_step / o->t_step;
    (void)L;
    return 0;
#undef REJECT
}
