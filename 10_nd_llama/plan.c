/* plan.c: 10_nd_llama/plan, the planner of 4D-parallel training.
 *
 *   ./10_nd_llama/plan --preset llama3-405b --gpus 16384 --tokens 16M --seq 8192
 *   ./10_nd_llama/plan --llama3-table4
 *   ./10_nd_llama/plan --preset llama3-70b --gpus 512 --eval tp=8,pp=4,cp=1,mbs=1,zero=1
 *
 * Given a model, a cluster and a global batch, it evaluates every way to lay
 * the GPUs out as tp x cp x pp x dp (with the micro-batch size, the pipeline
 * schedule, ZeRO's stage and the recomputation policy) with the cost model of
 * cost.h, ranks the plans that fit by MFU, and says why the others fail. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "check.h"
#include "cost.h"
#include "perf.h"

#define PLAN_CSV_HEADER "rank,tp,cp,pp,dp,schedule,vpp,mbs,zero,recompute,weights_gb,grads_gb,optim_gb," \
                        "acts_gb,total_gb,bubble,step_s,tflops,mfu,hfu"

/* Llama 3's table 4: the 405B runs on H100s, 16M tokens per batch. */
typedef struct { int gpus, tp, cp, pp, dp, seq, batch_per_dp; double tflops, mfu; } table4_row_t;
static const table4_row_t table4[] = {
    {8192, 8, 1, 16, 64, 8192, 32, 430, 0.43},
    {16384, 8, 1, 16, 128, 8192, 16, 400, 0.41},
    {16384, 8, 16, 16, 8, 131072, 16, 380, 0.38},
};

static void print_cluster(const cluster_t *c) {
    printf("cluster: %s: %.4g TFLOP/s per GPU, %.0f GB; links %.3g GB/s + %.3g us inside a node, %.3g GB/s + %.3g us "
           "between nodes; memory-bound kernels %.4g GB/s\n", c->name, c->peak / 1e12, c->mem / 1e9, c->intra_bw / 1e9,
           c->intra_lat * 1e6, c->inter_bw / 1e9, c->inter_lat * 1e6, c->mem_bw / 1e9);
    char gemm[128];
    const gemm_table_t *t = c->gemm_table;
    if (t) snprintf(gemm, sizeof gemm, "GEMMs at their shape's efficiency (%d sizes, %.1f%% at 2 x %.3g FLOPs to "
                    "%.1f%% at 2 x %.3g)", t->n, 100 * t->eff[0], t->flops[0] / 2, 100 * t->eff[t->n - 1],
                    t->flops[t->n - 1] / 2);
    else snprintf(gemm, sizeof gemm, "GEMMs at %.0f%% of the peak", 100 * c->gemm_eff);
    printf("assumed: %s, causal attention (fwd + bwd) at %.0f%%; hidden behind compute: "
           "%.0f%% of the data-parallel, %.0f%% of the context-parallel, %.0f%% of the tensor-parallel "
           "communication; plans use at most %.0f%% of the memory\n", gemm, 100 * c->attn_eff,
           100 * c->dp_overlap, 100 * c->cp_overlap, 100 * c->tp_overlap, 100 * c->mem_headroom);
}

static void print_plan(const par_t *p, const cost_t *o, int rank) {
    char sch[24];
    if (p->pp == 1) snprintf(sch, sizeof sch, "-");
    else if (p->schedule == SCHED_INTERLEAVED) snprintf(sch, sizeof sch, "interleaved x%d", p->vpp);
    else snprintf(sch, sizeof sch, "%s", sched_name[p->schedule]);
    char rec[24];
    if (p->recompute == RECOMPUTE_BLOCK) snprintf(rec, sizeof rec, "block %d", p->recompute_layers);
    else snprintf(rec, sizeof rec, "%s", recompute_name[p->recompute]);
    printf("%4d  %3d %3d %3d %5d  %-16s %3d %4d  %-9s %6.1f %6.1f %5.1f%% %8.2f %7.0f %6.1f%% %6.1f%%\n", rank, p->tp,
           p->cp, p->pp, p->dp, sch, p->mbs, p->zero, rec, o->mem_total / 1e9,
           o->mem_acts / 1e9, 100 * o->bubble, o->t_step, o->tflops, 100 * o->mfu, 100 * o->hfu);
}

static void table_head(void) {
    printf("rank   tp  cp  pp    dp  schedule         mbs zero  recompute  mem GB  acts GB bubble   step s TFLOP/s    MFU    HFU\n");
}

static void breakdown(const cost_t *o) {
    printf("  step %.3f s = GEMMs %.3f + attention %.3f + memory-bound %.3f + recomputation %.3f + exposed tp %.3f "
           "+ cp %.3f + pp %.3f + bubble %.3f + dp %.3f + optimizer %.3f (%d micro-batches)\n", o->t_step,
           o->t_gemm, o->t_attn, o->t_elementwise, o->t_recompute, o->t_tp, o->t_cp, o->t_pp, o->t_bubble,
           o->t_dp, o->t_optimizer, o->micro);
    printf("  memory %.1f GB = weights %.1f + gradients %.1f + optimizer %.1f + activations %.1f (%.2fB parameters on the fullest GPU)\n",
           o->mem_total / 1e9, o->mem_weights / 1e9, o->mem_grads / 1e9, o->mem_optim / 1e9, o->mem_acts / 1e9,
           o->params_gpu / 1e9);
}

/* The best plan for a fixed mesh (micro-batch, schedule, ZeRO, recompute free). */
static int best_for_mesh(const model_config_t *c, long batch, const cluster_t *cl, int tp, int cp, int pp,
                         int dp, par_t *bp, cost_t *bo, char *why, size_t len);

/* Every plan of the search space, in a callback. */
typedef void (*visit_fn)(void *ctx, const par_t *p, const cost_t *o, int ok);
static void search(const model_config_t *c, long batch, const cluster_t *cl, int gpus, int dtype,
                   visit_fn visit, void *ctx, int tp_fix, int cp_fix, int pp_fix) {
    static const int mbs_list[] = {1, 2, 4};
    /* tp x cp x pp at most the GPUs: the product stays an int (the cpu
     * cluster's node is 2^20 GPUs, times 64 x 64 would wrap to 0) */
    for (int tp = 1; tp <= cl->node && tp <= gpus; tp *= 2)
        for (int cp = 1; cp <= 64 && tp * cp <= gpus; cp *= 2)
            for (int pp = 1; pp <= 64 && pp <= c->layers && tp * cp * pp <= gpus; pp *= 2) {
                if (gpus % (tp * cp * pp)) continue;
                if ((tp_fix && tp != tp_fix) || (cp_fix && cp != cp_fix) || (pp_fix && pp != pp_fix)) continue;
                int dp = gpus / (tp * cp * pp);
                for (int mi = 0; mi < 3; mi++)
                    for (int zero = 0; zero <= 3; zero++)
                        for (int rec = 0; rec < 4; rec++)
                            for (int k = 1; k <= (rec == RECOMPUTE_BLOCK ? (c->layers + pp - 1) / pp - 1 : 1); k++)
                            for (int sch = (pp > 1 ? SCHED_1F1B : SCHED_1F1B); sch <= (pp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B); sch++)
                                for (int v = (sch == SCHED_INTERLEAVED ? 2 : 1); v <= (sch == SCHED_INTERLEAVED ? 8 : 1); v *= 2) {
                                    par_t p = {tp, cp, pp, dp, v, tp > 1, zero, mbs_list[mi], sch, rec, k, dtype};
                                    cost_t o;
                                    int ok = cost_eval(c, batch, cl, &p, &o) == 0;
                                    visit(ctx, &p, &o, ok);
                                }
            }
}

typedef struct {
    par_t *p; cost_t *o; int n, cap;
    char key[16][64], example[16][160];   /* reasons by category: the text before the first number */
    int count[16], nreasons, rejected;
} collect_t;

/* A reason's category: its text before the first number. */
static void reason_key(const char *why, char key[64]) {
    size_t i = 0;
    while (why[i] && (why[i] < '0' || why[i] > '9') && i < 63) { key[i] = why[i]; i++; }
    key[i] = 0;
}

static void count_reason(collect_t *k, const char *why) {
    char key[64];
    reason_key(why, key);
    for (int r = 0; r < k->nreasons; r++)
        if (!strcmp(k->key[r], key)) { k->count[r]++; return; }
    if (k->nreasons == 16) return;
    snprintf(k->key[k->nreasons], sizeof k->key[0], "%s", key);
    snprintf(k->example[k->nreasons], sizeof k->example[0], "%s", why);
    k->count[k->nreasons++] = 1;
}

static void collect(void *ctx, const par_t *p, const cost_t *o, int ok) {
    collect_t *k = ctx;
    if (!ok) {
        k->rejected++;
        count_reason(k, o->why);
        return;
    }
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 1024;
        k->p = realloc(k->p, sizeof *k->p * (size_t)k->cap);
        k->o = realloc(k->o, sizeof *k->o * (size_t)k->cap);
        if (!k->p || !k->o) die("out of memory");
    }
    k->p[k->n] = *p;
    k->o[k->n++] = *o;
}

/* Why no plan fits: for each mesh (tp, cp, pp), the least memory any of its
 * plans needs (0: none got as far as the memory check) or else the first
 * reason it was rejected. */
typedef struct {
    int n;
    struct { int tp, cp, pp; double mem; char why[160]; } m[512];
} meshes_t;

static void mesh_reason(void *ctx, const par_t *p, const cost_t *o, int ok) {
    meshes_t *k = ctx;
    (void)ok;   /* called only when no plan fits */
    int j = 0;
    while (j < k->n && !(k->m[j].tp == p->tp && k->m[j].cp == p->cp && k->m[j].pp == p->pp)) j++;
    if (j == k->n) {
        if (k->n == ARRAY_LEN(k->m)) return;
        k->n++;
        k->m[j].tp = p->tp, k->m[j].cp = p->cp, k->m[j].pp = p->pp, k->m[j].mem = 0;
        snprintf(k->m[j].why, sizeof k->m[j].why, "%s", o->why);
    }
    if (o->mem_total > 0 && (k->m[j].mem == 0 || o->mem_total < k->m[j].mem)) k->m[j].mem = o->mem_total;
}

/* The error when no plan fits: one line, counting the meshes by reason. */
static void no_plan(const model_config_t *c, long batch, const cluster_t *cl, int gpus, int dtype) {
    static meshes_t k;
    search(c, batch, cl, gpus, dtype, mesh_reason, &k, 0, 0, 0);
    char line[1200];
    int n = snprintf(line, sizeof line, "no plan fits %d GPUs: of its %d meshes (tp x cp x pp)", gpus, k.n);
    int big = 0, least = -1;
    for (int j = 0; j < k.n; j++)
        if (k.m[j].mem > 0) {
            big++;
            if (least < 0 || k.m[j].mem < k.m[least].mem) least = j;
        }
    if (big)
        n += snprintf(line + n, sizeof line - (size_t)n, ", %d need more memory than %.0f%% of the %.0f GB a GPU "
                      "has (the least: %.1f GB per GPU, at tp %d cp %d pp %d)", big, 100 * cl->mem_headroom,
                      cl->mem / 1e9, k.m[least].mem / 1e9, k.m[least].tp, k.m[least].cp, k.m[least].pp);
    for (int j = 0; j < k.n && n < (int)sizeof line; j++) {   /* the other reasons by category */
        if (k.m[j].mem > 0 || !k.m[j].why[0]) continue;
        char key[64], other[64];
        reason_key(k.m[j].why, key);
        int same = 1;
        for (int i = j + 1; i < k.n; i++) {
            reason_key(k.m[i].why, other);
            if (k.m[i].mem == 0 && k.m[i].why[0] && !strcmp(key, other)) { same++; k.m[i].why[0] = 0; }
        }
        n += snprintf(line + n, sizeof line - (size_t)n, ", %d %s (e.g. %s)", same, same == 1 ? "is rejected" :
                      "are rejected", k.m[j].why);
    }
    if (k.n == 0) snprintf(line + n, sizeof line - (size_t)n, ": none divides the GPUs into tp x cp x pp x dp");
    fprintf(stderr, "error: %s\n", line);
}

static int best_for_mesh(const model_config_t *c, long batch, const cluster_t *cl, int tp, int cp, int pp,
                         int dp, par_t *bp, cost_t *bo, char *why, size_t len) {
    collect_t k = {0};
    search(c, batch, cl, tp * cp * pp * dp, 2, collect, &k, tp, cp, pp);
    int best = -1;
    for (int i = 0; i < k.n; i++)
        if (best < 0 || k.o[i].mfu > k.o[best].mfu) best = i;
    if (best >= 0) { *bp = k.p[best]; *bo = k.o[best]; }
    else snprintf(why, len, "%s", k.nreasons ? k.example[0] : "no plan");
    free(k.p);
    free(k.o);
    return best >= 0 ? 0 : -1;
}

/* "tp=8,pp=16,cp=1,mbs=1,zero=1,schedule=interleaved,v=4,recompute=none":
 * each value checked as a flag's would be (an error reads "--eval tp ..."). */
static void parse_eval(const char *s, par_t *p) {
    const char *schedule = NULL, *recompute = NULL;
    const arg_t keys[] = {
        {"eval tp", ARG_INT, &p->tp, NULL, NULL, 1, 65536},
        {"eval cp", ARG_INT, &p->cp, NULL, NULL, 1, 65536},
        {"eval pp", ARG_INT, &p->pp, NULL, NULL, 1, 65536},
        {"eval mbs", ARG_INT, &p->mbs, NULL, NULL, 1, 65536},
        {"eval zero", ARG_INT, &p->zero, NULL, NULL, 0, 3},
        {"eval v", ARG_INT, &p->vpp, NULL, NULL, 1, 64},
        {"eval sp", ARG_INT, &p->sp, NULL, NULL, 0, 1},
        {"eval schedule", ARG_CHOICE, &schedule, NULL, "gpipe|1f1b|interleaved", 0, 0},
        {"eval recompute", ARG_CHOICE, &recompute, NULL, "none|selective|full|block", 0, 0},
        {"eval recompute_layers", ARG_INT, &p->recompute_layers, NULL, NULL, 0, 65536},
    };
    char buf[256];
    if (strlen(s) >= sizeof buf) usage_error("--eval: '%.40s...' is too long", s);
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) usage_error("--eval: '%s' is not key=value", tok);
        *eq = 0;
        int i = 0;
        while (i < ARRAY_LEN(keys) && strcmp(keys[i].name + 5, tok)) i++;
        if (i == ARRAY_LEN(keys))
            usage_error("--eval: unknown key '%s' (tp, cp, pp, mbs, zero, v, sp, schedule, recompute, "
                        "recompute_layers)", tok);
        args_set(&keys[i], eq + 1);
    }
    for (int i = 0; schedule && i < 3; i++) if (!strcmp(schedule, sched_name[i])) p->schedule = i;
    for (int i = 0; recompute && i < 4; i++) if (!strcmp(recompute, recompute_name[i])) p->recompute = i;
}

/* The command line. */
typedef struct {
    const char *preset, *cluster_name, *eval, *csv, *attn_flops, *dtype_name, *gemm_table, *gemm_at;
    int gpus, top, table, seq, node, batch_seqs;
    double tokens_m, gemm_eff, attn_eff, dp_overlap, tp_overlap, cp_overlap;
    double intra, inter, intra_us, inter_us, peak_tf, mem_gbs;
    model_config_t cfg;   /* the shape flags; the preset fills the rest */
} options_t;

static void parse_options(int argc, char **argv, options_t *o) {
    *o = (options_t){.cluster_name = "h100", .attn_flops = "square", .dtype_name = "bf16", .top = 10,
                     .tokens_m = 16, .dp_overlap = -1, .tp_overlap = -1, .cp_overlap = -1,
                     .intra_us = -1, .inter_us = -1};
    arg_t flags[] = {
        {"preset", ARG_CHOICE, &o->preset, "the model", COST_MODEL_CHOICES, 0, 0},
        {"dim", ARG_INT, &o->cfg.dim, "or the model by its shape: dimension", NULL, 0, 1e6},
        {"layers", ARG_INT, &o->cfg.layers, "layers", NULL, 0, 1e4},
        {"heads", ARG_INT, &o->cfg.heads, "heads", NULL, 0, 1e4},
        {"kv-heads", ARG_INT, &o->cfg.kv_heads, "key/value heads", NULL, 0, 1e4},
        {"head-dim", ARG_INT, &o->cfg.head_dim, "head dimension (0: dim / heads)", NULL, 0, 1e5},
        {"ffn", ARG_INT, &o->cfg.ffn, "MLP hidden size", NULL, 0, 1e7},
        {"vocab", ARG_INT, &o->cfg.vocab, "vocabulary", NULL, 0, 1e7},
        {"seq", ARG_INT, &o->seq, "tokens per sequence (0: the preset's 8192)", NULL, 0, 1e8},
        {"tokens", ARG_DOUBLE, &o->tokens_m, "global batch, millions of tokens", NULL, 1e-6, 1e6},
        {"batch", ARG_INT, &o->batch_seqs, "or the global batch in sequences (0: from --tokens)", NULL, 0, 1e9},
        {"dtype", ARG_CHOICE, &o->dtype_name, "weights and activations (the CPU trainers compute in fp32)", "bf16|fp32", 0, 0},
        {"gpus", ARG_INT, &o->gpus, "GPUs", NULL, 0, 1e8},
        {"cluster", ARG_CHOICE, &o->cluster_name, "GPU and links (the assumptions are printed); cpu: this machine, "
                                                  "its measured peak shared by the ranks on its cores", "h100|cpu", 0, 0},
        {"peak", ARG_DOUBLE, &o->peak_tf, "override: peak TFLOP/s per GPU (or CPU rank)", NULL, 0, 1e5},
        {"mem-gbs", ARG_DOUBLE, &o->mem_gbs, "override: GB/s memory-bound kernels reach", NULL, 0, 1e6},
        {"gpus-per-node", ARG_INT, &o->node, "override the cluster's GPUs per node", NULL, 0, 1024},
        {"intra-gbps", ARG_DOUBLE, &o->intra, "override: GB/s per GPU inside a node", NULL, 0, 1e5},
        {"inter-gbps", ARG_DOUBLE, &o->inter, "override: GB/s per GPU between nodes", NULL, 0, 1e5},
        {"intra-us", ARG_DOUBLE, &o->intra_us, "override: latency inside a node, microseconds", NULL, -1, 1e6},
        {"inter-us", ARG_DOUBLE, &o->inter_us, "override: latency between nodes, microseconds", NULL, -1, 1e6},
        {"gemm-eff", ARG_DOUBLE, &o->gemm_eff, "override: share of the peak GEMMs reach", NULL, 0, 1},
        {"gemm-table", ARG_STRING, &o->gemm_table, "or each GEMM at its shape's efficiency, interpolated in a "
                                                   "measured CSV of chapter 01's (rows of the --dtype)", NULL, 0, 0},
        {"gemm-at", ARG_STRING, &o->gemm_at, "print the --gemm-table efficiency and time of one GEMM M,N,K and exit", NULL, 0, 0},
        {"attn-eff", ARG_DOUBLE, &o->attn_eff, "override: share of the peak attention reaches", NULL, 0, 1},
        {"dp-overlap", ARG_DOUBLE, &o->dp_overlap, "override: share of data-parallel traffic hidden", NULL, -1, 1},
        {"tp-overlap", ARG_DOUBLE, &o->tp_overlap, "override: share of tensor-parallel traffic hidden", NULL, -1, 1},
        {"cp-overlap", ARG_DOUBLE, &o->cp_overlap, "override: share of ring attention's traffic hidden", NULL, -1, 1},
        {"attn-flops", ARG_CHOICE, &o->attn_flops, "attention's FLOPs in MFU: the whole T x T square (PaLM) or its causal half", "square|causal", 0, 0},
        {"top", ARG_INT, &o->top, "plans to list", NULL, 1, 1e6},
        {"eval", ARG_STRING, &o->eval, "evaluate one plan in detail: tp=8,cp=1,pp=16,mbs=1,zero=1,schedule=interleaved,v=2,recompute=none", NULL, 0, 0},
        {"llama3-table4", ARG_FLAG, &o->table, "the three 405B runs of Llama 3's table 4 against their published MFU", NULL, 0, 0},
        {"csv", ARG_STRING, &o->csv, "append the listed plans (or the table-4 rows) to this CSV", NULL, 0, 0},
    };
    args_parse(argc, argv, "10_nd_llama/plan",
               "The planner: memory, step time and MFU of 4D-parallel training plans\n"
               "(tp x cp x pp x dp, micro-batch, schedule, ZeRO, recomputation) from a\n"
               "cost model (10_nd_llama/cost.h), ranked; rejected plans say why.",
               flags, ARRAY_LEN(flags));
}

/* The cluster preset with the overrides applied (the GEMM table in `t`). */
static void build_cluster(const options_t *o, cluster_t *cl, gemm_table_t *t) {
    cost_cluster(cl, o->cluster_name);
    if (o->gemm_table) {
        char why[200];
        if (o->gemm_eff > 0) usage_error("--gemm-eff and --gemm-table: give one");
        if (gemm_table_load(t, o->gemm_table, o->dtype_name, why, sizeof why)) usage_error("--gemm-table: %s", why);
        cl->gemm_table = t;
    } else if (o->gemm_at) {
        usage_error("--gemm-at needs a --gemm-table");
    }
    if (!strcmp(o->cluster_name, "cpu")) {
        /* one thread per rank at the measured single-core peak; ranks beyond
         * the cores share them */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int ranks = o->gpus > 0 ? o->gpus : 1;
        cl->peak = perf_cpu_peak(1)->flops * (ranks > cores ? (double)cores / ranks : 1.0);
    }
    if (o->peak_tf > 0) cl->peak = o->peak_tf * 1e12;
    if (o->mem_gbs > 0) cl->mem_bw = o->mem_gbs * 1e9;
    if (o->intra_us >= 0) cl->intra_lat = o->intra_us * 1e-6;
    if (o->inter_us >= 0) cl->inter_lat = o->inter_us * 1e-6;
    if (o->node) cl->node = o->node;
    if (o->intra > 0) cl->intra_bw = o->intra * 1e9;
    if (o->inter > 0) cl->inter_bw = o->inter * 1e9;
    if (o->gemm_eff > 0) cl->gemm_eff = o->gemm_eff;
    if (o->attn_eff > 0) cl->attn_eff = o->attn_eff;
    if (o->dp_overlap >= 0) cl->dp_overlap = o->dp_overlap;
    if (o->tp_overlap >= 0) cl->tp_overlap = o->tp_overlap;
    if (o->cp_overlap >= 0) cl->cp_overlap = o->cp_overlap;
    cl->causal_credit = !strcmp(o->attn_flops, "causal");
}

static int flag_given(int argc, char **argv, const char *flag) {
    int given = 0;
    for (int i = 1; i < argc; i++) given |= strncmp(argv[i], flag, strlen(flag)) == 0;
    return given;
}

/* Where the published mesh (its best plan: o) stands among all meshes of
 * the cluster, and the best plan of all beside it. */
static void mesh_standing(const model_config_t *c, long batch, const cluster_t *cl, const table4_row_t *t,
                          const cost_t *o) {
    collect_t k = {0};
    search(c, batch, cl, t->gpus, 2, collect, &k, 0, 0, 0);
    typedef struct { int tp, cp, pp; double mfu; } mesh_best_t;   /* each mesh's best plan */
    mesh_best_t mb[512];
    int nm = 0;
    for (int i = 0; i < k.n; i++) {
        int j = 0;
        while (j < nm && !(mb[j].tp == k.p[i].tp && mb[j].cp == k.p[i].cp && mb[j].pp == k.p[i].pp)) j++;
        if (j == nm && nm < 512) mb[nm++] = (mesh_best_t){k.p[i].tp, k.p[i].cp, k.p[i].pp, 0};
        if (j < nm && k.o[i].mfu > mb[j].mfu) mb[j].mfu = k.o[i].mfu;
    }
    int better = 0, same_cp = 0, better_cp = 0;
    for (int j = 0; j < nm; j++) {
        better += mb[j].mfu > o->mfu + 1e-12;
        same_cp += mb[j].cp == t->cp;
        better_cp += mb[j].cp == t->cp && mb[j].mfu > o->mfu + 1e-12;
    }
    /* the best plan of all, in full, to set beside the published mesh's */
    int bi = 0;
    for (int i = 1; i < k.n; i++) if (k.o[i].mfu > k.o[bi].mfu) bi = i;
    printf("  the best plan of the search:\n");
    print_plan(&k.p[bi], &k.o[bi], 1);
    breakdown(&k.o[bi]);
    printf("  among the %d meshes with cp %d the published one ranks %d\n", same_cp, t->cp, better_cp + 1);
    printf("  among the %d meshes that fit this cluster, the published one ranks %d", nm, better + 1);
    for (int shown = 0, j; shown < 3; shown++) {   /* the three best meshes */
        int b = -1;
        for (j = 0; j < nm; j++) if (mb[j].mfu >= 0 && (b < 0 || mb[j].mfu > mb[b].mfu)) b = j;
        if (b < 0) break;
        printf("%s tp %d cp %d pp %d %.1f%%", shown ? "," : "; the best: ", mb[b].tp, mb[b].cp, mb[b].pp,
               100 * mb[b].mfu);
        mb[b].mfu = -1;
    }
    printf("\n\n");
    free(k.p);
    free(k.o);
}

/* One row of table 4: the best plan on its mesh against the published MFU,
 * and a CSV row (f: NULL for none). */
static void table4_row(const model_config_t *base, const cluster_t *cl, int r, FILE *f) {
    const table4_row_t *t = &table4[r];
    model_config_t c = *base;
    c.seq = t->seq;
    long batch = (long)t->dp * t->batch_per_dp;
    par_t p;
    cost_t o;
    char why[160];
    printf("row %d: %d GPUs, tp %d cp %d pp %d dp %d, seq %d, %ld sequences (%.1fM tokens): published "
           "%.0f TFLOP/s per GPU, MFU %.0f%%\n", r + 1, t->gpus, t->tp, t->cp, t->pp, t->dp, t->seq, batch,
           batch * (double)t->seq / 1e6, t->tflops, 100 * t->mfu);
    if (best_for_mesh(&c, batch, cl, t->tp, t->cp, t->pp, t->dp, &p, &o, why, sizeof why) != 0) {
        printf("  no plan fits this mesh: %s\n\n", why);
        return;
    }
    table_head();
    print_plan(&p, &o, 1);
    breakdown(&o);
    printf("  predicted MFU %.1f%% against the published %.0f%% (%+.1f points)\n", 100 * o.mfu,
           100 * t->mfu, 100 * (o.mfu - t->mfu));
    mesh_standing(&c, batch, cl, t, &o);
    if (f) fprintf(f, "%d,%d,%d,%d,%d,%d,%d,%.3f,%.4f,%.0f,%.1f,%.4f,%.3f", r + 1, t->gpus, t->tp, t->cp,
                   t->pp, t->dp, t->seq, t->mfu, o.mfu, t->tflops, o.tflops, o.bubble, o.t_step);
    if (f) csv_end_row(f, "modeled");
}

/* --llama3-table4: the three published runs, predicted. */
static int llama3_table4(cluster_t *cl, const char *csv, int argc, char **argv) {
    /* Llama 3's TFLOP/s per GPU fit attention's causal FLOPs, not the
     * square (see the README), unless the flag says otherwise */
    if (!flag_given(argc, argv, "--attn-flops")) cl->causal_credit = 1;
    /* Llama 3 all-gathers K and V before attention and says the
     * all-gather is exposed (section 3.3.2): none of it hidden */
    if (!flag_given(argc, argv, "--cp-overlap")) cl->cp_overlap = 0;
    model_config_t c;
    cost_model(&c, "llama3-405b");
    print_cluster(cl);
    printf("model:   Llama 3 405B (126 layers, dim 16384, 128 heads, 8 kv, ffn 53248, vocab 128256); MFU with "
           "attention's %s FLOPs\n\n", cl->causal_credit ? "causal" : "whole-square");
    FILE *f = NULL;
    if (csv) {
        unlink(csv);   /* the three rows, alone */
        f = csv_open(csv, "row,gpus,tp,cp,pp,dp,seq,published_mfu,predicted_mfu,published_tflops,predicted_tflops,"
                          "bubble,step_s");
    }
    for (int r = 0; r < 3; r++) table4_row(&c, cl, r, f);
    if (f) out_close(f, csv);
    return 0;
}

/* The model (a preset, its dimension and layers overridable, or a shape
 * given in full) and the global batch in sequences, checked. */
static long build_model(const options_t *o, model_config_t *cfg) {
    *cfg = o->cfg;
    if (o->preset) {
        cost_model(cfg, o->preset);
        if (o->cfg.dim) cfg->dim = o->cfg.dim;
        if (o->cfg.layers) cfg->layers = o->cfg.layers;
    }
    if (o->seq) cfg->seq = o->seq;
    if (!cfg->dim || !cfg->layers || !cfg->heads || !cfg->kv_heads || !cfg->ffn || !cfg->vocab || !cfg->seq)
        usage_error("give a --preset, or --dim --layers --heads --kv-heads --ffn --vocab --seq");
    model_config_check(cfg);
    if (o->gpus < 1) usage_error("--gpus N: how many GPUs to plan for");
    long batch = o->batch_seqs ? o->batch_seqs : (long)(o->tokens_m * 1e6 / cfg->seq + 0.5);
    if (batch < 1) usage_error("--tokens %.3gM is less than one sequence of %d", o->tokens_m, cfg->seq);
    return batch;
}

static void print_setup(const cluster_t *cl, const model_config_t *cfg, long batch, int gpus,
                        const char *dtype_name) {
    print_cluster(cl);
    printf("model:   dim %d, %d layers, %d heads (%d kv, head dim %d), ffn %d, vocab %d, seq %d | %.2fB parameters\n",
           cfg->dim, cfg->layers, cfg->heads, cfg->kv_heads, cfg->head_dim, cfg->ffn, cfg->vocab, cfg->seq,
           model_param_count(cfg) / 1e9);
    printf("batch:   %ld sequences = %.4gM tokens on %d GPUs (%s weights and activations, fp32 gradients and Adam)\n\n",
           batch, batch * (double)cfg->seq / 1e6, gpus, dtype_name);
}

/* --eval: one plan in detail; 1 when it is rejected. */
static int eval_plan(const model_config_t *cfg, long batch, const cluster_t *cl, const char *eval, int gpus,
                     int dtype) {
    par_t p = {1, 1, 1, 0, 1, -1, 1, 1, SCHED_1F1B, RECOMPUTE_NONE, 0, dtype};
    parse_eval(eval, &p);
    if (p.sp < 0) p.sp = p.tp > 1;   /* as the search: sequence parallelism whenever tp > 1 */
    long long mesh = (long long)p.tp * p.cp * p.pp;   /* each at most 65536: no overflow */
    if (gpus % mesh)
        usage_error("--eval: tp %d x cp %d x pp %d = %lld must divide the %d GPUs", p.tp, p.cp, p.pp, mesh, gpus);
    p.dp = (int)(gpus / mesh);
    if (p.schedule == SCHED_INTERLEAVED && p.vpp < 2) p.vpp = 2;
    cost_t o;
    table_head();
    if (cost_eval(cfg, batch, cl, &p, &o) != 0) {
        printf("rejected: %s\n", o.why);
        return 1;
    }
    print_plan(&p, &o, 1);
    breakdown(&o);
    return 0;
}

/* Move the best n plans by MFU to the front, in order (a selection sort). */
static void sort_top(collect_t *k, int n) {
    for (int i = 0; i < n; i++) {
        int b = i;
        for (int j = i + 1; j < k->n; j++) if (k->o[j].mfu > k->o[b].mfu) b = j;
        par_t tp_ = k->p[i]; k->p[i] = k->p[b]; k->p[b] = tp_;
        cost_t to = k->o[i]; k->o[i] = k->o[b]; k->o[b] = to;
    }
}

static void print_ranking(const collect_t *k, int n) {
    printf("%d plans fit, %d rejected. The best %d by MFU:\n", k->n, k->rejected, n);
    table_head();
    for (int i = 0; i < n; i++) print_plan(&k->p[i], &k->o[i], i + 1);
    if (n > 0) {
        printf("\nthe best plan:\n");
        breakdown(&k->o[0]);
    }
    printf("\nwhy plans were rejected (count, first example):\n");
    for (int r = 0; r < k->nreasons; r++) printf("  %6d  %s\n", k->count[r], k->example[r]);
}

static void write_plans_csv(const char *csv, const collect_t *k, int n) {
    FILE *f = csv_open(csv, PLAN_CSV_HEADER);
    for (int i = 0; i < n; i++) {
        const par_t *q = &k->p[i];
        const cost_t *o = &k->o[i];
        fprintf(f, "%d,%d,%d,%d,%d,%s,%d,%d,%d,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.1f,%.4f,%.4f", i + 1,
                q->tp, q->cp, q->pp, q->dp, q->pp > 1 ? sched_name[q->schedule] : "-", q->vpp, q->mbs, q->zero,
                recompute_name[q->recompute], o->mem_weights / 1e9, o->mem_grads / 1e9, o->mem_optim / 1e9,
                o->mem_acts / 1e9, o->mem_total / 1e9, o->bubble, o->t_step, o->tflops, o->mfu, o->hfu);
        csv_end_row(f, "modeled");
    }
    out_close(f, csv);
}

/* The search: the best --top plans, why the others fail, the CSV; 1 when
 * none fits. */
static int rank_plans(const model_config_t *cfg, long batch, const cluster_t *cl, const options_t *o, int dtype) {
    collect_t k = {0};
    search(cfg, batch, cl, o->gpus, dtype, collect, &k, 0, 0, 0);
    int n = k.n < o->top ? k.n : o->top;
    sort_top(&k, n);
    print_ranking(&k, n);
    if (k.n == 0) {
        no_plan(cfg, batch, cl, o->gpus, dtype);
        return 1;
    }
    if (o->csv) write_plans_csv(o->csv, &k, n);
    free(k.p);
    free(k.o);
    return 0;
}

/* --gemm-at M,N,K: one GEMM's FLOPs, efficiency and time on the cluster. */
static int gemm_at(const cluster_t *cl, const char *shape) {
    long d[3];
    if (args_size_list(shape, d, 3, "gemm-at") != 3) usage_error("--gemm-at: give M,N,K");
    double eff = gemm_eff_at(cl->gemm_table, d[0], d[1], d[2]), flops = 2.0 * d[0] * d[1] * d[2];
    printf("gemm %ld x %ld x %ld: %.6g FLOPs at %.4f%% of %.4g TFLOP/s = %.6g ms\n", d[0], d[1], d[2], flops,
           100 * eff, cl->peak / 1e12, 1e3 * flops / (cl->peak * eff));
    return 0;
}

int main(int argc, char **argv) {
    options_t o;
    parse_options(argc, argv, &o);
    cluster_t cl;
    gemm_table_t table;
    build_cluster(&o, &cl, &table);
    if (o.gemm_at) return gemm_at(&cl, o.gemm_at);
    if (o.table) return llama3_table4(&cl, o.csv, argc, argv);
    const int dtype = strcmp(o.dtype_name, "fp32") ? 2 : 4;   /* bytes */
    model_config_t cfg;
    long batch = build_model(&o, &cfg);
    print_setup(&cl, &cfg, batch, o.gpus, o.dtype_name);
    if (o.eval) return eval_plan(&cfg, batch, &cl, o.eval, o.gpus, dtype);
    return rank_plans(&cfg, batch, &cl, &o, dtype);
}
