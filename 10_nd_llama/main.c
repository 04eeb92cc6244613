/* main.c: 10_nd_llama/train, the 4D-parallel trainer: the shared training
 * loop (common/train.h) on a model split over a [tp, cp, pp, dp] mesh by the
 * modules of chapters 04-09, linked as they are:
 *
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 1 --pp 2 --dp 2 --micro 4
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 2 --pp 2 --sp --cp-algo ulysses
 *   mpirun -np 4 ./10_nd_llama/train --preset llama3-405b --tp 2 --pp 2 --dry-run
 *
 * The techniques wrap the model from the inside out, as Megatron does:
 *   1. tensor parallelism (08_tensor_parallel/tp.c) builds the model's tp
 *      seams: its all-reduces (or, with --sp, all-gathers and
 *      reduce-scatters) run on the tensor-parallel communicator, inside
 *      every layer;
 *   2. context parallelism (09_context_parallel/cp.c) swaps the attention
 *      core: ring attention's key/value blocks or Ulysses's all-to-alls run
 *      on the context-parallel communicator, inside every attention;
 *   3. the recomputation policy (06_checkpointing/recompute.c) decides what
 *      each micro-batch object keeps;
 *   4. the runner (common/runner.c) runs the schedule's actions (chapter
 *      07's; --pp 1: the 1F1B list of one stage) on this stage's layers,
 *      sending activations and gradients to the neighbouring stages on the
 *      pipeline communicator;
 *   5. the gradients are summed over the context x data group (tr.grad), by
 *      the strategy the runner calls at the schedule's points:
 *      context-parallel ranks hold the same weights and each computed the
 *      gradient of its own tokens, exactly as data-parallel ranks did of
 *      their own sequences. --zero 0 all-reduces them in buckets as each
 *      stage's last backward finishes (common/grad_sync.c); --zero 1|2|3
 *      shards the optimizer state, gradients and weights over that group
 *      (04_fsdp/fsdp.c), on any mesh: ZeRO-1 reduce-scatters after each
 *      chunk's last backward, ZeRO-2 and 3 after every backward, and
 *      ZeRO-3 gathers each unit's weights before it runs (kept across the
 *      stage's micro-batches with --reshard-after-backward off);
 *   6. blocks the tp ranks share but of which each computed a part (norm
 *      gains under --sp, kv heads shared by several ranks) are summed over
 *      the tensor-parallel communicator (tp_reduce_replicated_grads).
 * The loop then clips by the global norm over the unique shards and applies
 * AdamW to this rank's part.
 *
 * Per step the log line says the exposed communication of each axis (tp and
 * cp: the seams block, so all of their time; dp: what was left after
 * backward; pp: the bubble); at the end the time by cause and the bytes each
 * axis sent. --dry-run builds the mesh and the shards, prints per-rank
 * memory and FLOPs, and allocates no model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cost.h"
#include "09_context_parallel/cp.h"
#include "runner.h"
#include "04_fsdp/fsdp.h"
#include "grad_sync.h"
#include "perf.h"
#include "06_checkpointing/recompute.h"
#include "07_pipeline/schedule.h"
#include "08_tensor_parallel/tp.h"
#include "train.h"

#define BENCH_HEADER "config,tp,cp,pp,dp,zero,sp,cp_algo,schedule,micro,virtual,recompute,dtype,step_ms," \
                     "mfu,hfu,bubble,tp_ms,cp_ms,pp_ms,dp_ms,compute_ms,optimizer_ms,tok_s"

/* Named models. The Llama 3 405B shape (Llama Team 2024, table 3) for dry
 * runs; the small ones train on a CPU in seconds. */
typedef struct {
    const char *name;
    int dim, layers, heads, kv_heads, ffn, vocab, seq, batch, micro;
} nd_preset_t;
/* The 405B preset takes its shape from the planner's table (cost.h) and
 * one sequence per micro-batch on one replica (pass --batch and --micro for
 * others). */
static const nd_preset_t presets[] = {
    {"llama3-405b", 0, 0, 0, 0, 0, 0, 0, 16, 16},
    {"nd-tiny", 32, 4, 4, 2, 128, 32, 16, 16, 4},
    {"nd-small", 128, 8, 8, 4, 384, 256, 64, 32, 4},
};
#define PRESET_CHOICES "llama3-405b|nd-tiny|nd-small"

enum { NX_TP, NX_CP, NX_PP, NX_DP, NX };   /* the causes, in mesh order (pp: the bubble) */

typedef struct {
    int tp, cp, pp, dp, virt, sp, no_balance, dry_run;
    pipe_kind_t kind;
    int V;                   /* chunks per stage */
    const char *schedule, *cp_algo, *recompute, *preset, *bench_csv;
    fsdp_opts_t fo;
    cp_algo_t algo;
    recompute_t policy;
    tp_t t;
    cp_t c;
    pipe_schedule_t s;
    runner_t run;
    grad_sync_t gs;
    fsdp_t f;
    recompute_meter_t meter;
    int metered;
    double step_ax[NX];      /* this step's exposed time per cause, mean over ranks (s) */
    double sum_ax[NX];       /* over the timed steps */
    int timed;
    double sent_prev[NX];    /* bytes per axis at the start of the current step */
} nd_t;

static void axis_bytes(const train_t *tr, double out[NX]) {
    out[NX_TP] = comm_sent_bytes(&tr->axis[AXIS_TP]);
    out[NX_CP] = comm_sent_bytes(&tr->axis[AXIS_CP]);
    out[NX_PP] = comm_sent_bytes(&tr->axis[AXIS_PP]);
    out[NX_DP] = comm_sent_bytes(&tr->axis[AXIS_DP]) + comm_sent_bytes(&tr->grad);
}

/* The runner's step on this rank's stage, with the seams' blocking time out
 * of compute; then the blocks the tp ranks share, and the step's time per
 * axis for the log line. */
static void nd_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    nd_t *p = ctx;
    axis_bytes(tr, p->sent_prev);   /* a step's bytes run to the next step's start (ZeRO gathers after the update) */
    double tp0 = p->tp > 1 ? p->t.st.comm_s : 0, cp0 = p->cp > 1 ? p->c.st.comm_s : 0;
    recompute_meter_t before = p->meter;
    runner_step(tr, &p->run, step, st);
    double dp_s = p->run.sync_s;
    /* after the data-parallel sums have completed: they work on the same memory */
    if (p->tp > 1) tp_reduce_replicated_grads(&p->t, &tr->model, &tr->opt);
    double tp_s = p->tp > 1 ? p->t.st.comm_s - tp0 : 0, cp_s = p->cp > 1 ? p->c.st.comm_s - cp0 : 0;
    st->exposed_s = tp_s + cp_s + dp_s;
    if (p->metered) st->recompute_flops = recompute_meter_flops(&tr->model, &before, &p->meter, (double)tr->mb * tr->model.T);
    /* the per-axis means for the step line (rank 0 prints it, after the loop's own sums) */
    double ax[NX] = {tp_s, cp_s, st->bubble_s > 0 ? st->bubble_s : 0, dp_s};
    dist_allreduce(ax, NX, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "the per-axis times");
    for (int a = 0; a < NX; a++) p->step_ax[a] = ax[a] / tr->dist.world;
    if (step > tr->start + 1) {
        for (int a = 0; a < NX; a++) p->sum_ax[a] += p->step_ax[a];
        p->timed++;
    }
}

static void step_note(train_t *tr, void *ctx) {
    (void)tr;
    const nd_t *p = ctx;
    printf(" | tp %.2f cp %.2f dp %.2f ms", 1e3 * p->step_ax[NX_TP], 1e3 * p->step_ax[NX_CP],
           1e3 * p->step_ax[NX_DP]);
}

/* ---- the dry run ------------------------------------------------------------------------ */
/* This rank's state and one step's FLOPs, from the shard's shapes alone. */
static void dry_run(train_t *tr, nd_t *p) {
    const model_config_t *c = &tr->cfg;
    const model_shard_t *s = &tr->shard;
    int P = p->pp, V = s->chunks, M = tr->o.micro, stage = tr->mesh.coord[AXIS_PP];
    int N = tr->grad.size, z = p->fo.zero, es = (int)dtype_size(tr->dtype);
    double n = (double)model_shard_size(c, s);
    double w = z == 3 ? es * n / N : es * n;
    double g = z >= 2 ? 4 * n / N : 4 * n;
    double opt = z >= 1 ? 12 * n / N : 12 * n;   /* fp32 master + Adam m, v */
    par_t par = {.tp = p->tp, .cp = p->cp, .pp = P, .dp = tr->dp, .vpp = V, .sp = p->sp, .zero = z,
                 .mbs = tr->mb, .dtype_bytes = es,
                 .recompute = p->policy.keep.selective ? RECOMPUTE_SELECTIVE : p->policy.keep.every ? RECOMPUTE_FULL : RECOMPUTE_NONE};
    double tokens = (double)tr->mb * c->seq / p->cp;
    /* micro-batches in flight at the peak: the schedule's promise (07_pipeline) */
    int held = pipe_inflight_bound(p->kind, P, M, V, stage);
    double layer_acts = cost_acts_per_layer(c, &par, tokens);
    int kept = p->policy.keep.every ? (s->per_chunk + p->policy.keep.every - 1) / p->policy.keep.every : s->per_chunk;
    double acts = p->policy.keep.every ? held * (kept * tokens * c->dim * es / (p->sp ? p->tp : 1) + layer_acts * p->policy.keep.every)
                                  : held * V * s->per_chunk * layer_acts;
    double flops = tr->flops_token * (double)tr->global_tokens / tr->dist.world;
    double mine[7] = {n, w, g, opt, acts, w + g + opt + acts, flops};
    double *all = tr->dist.rank == 0 ? xmalloc(sizeof mine * (size_t)tr->dist.world) : NULL;
    dist_watch("the gather of every rank's memory", MPI_COMM_WORLD);
    MPI_CHECK(MPI_Gather(mine, 7, MPI_DOUBLE, all, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    watch_end();
    say("dry run: %s, zero %d, %d micro-batch%s of %d sequence%s per step and replica; per rank "
        "(no model allocated):\n", p->schedule, z, M, M == 1 ? "" : "es", tr->mb, tr->mb == 1 ? "" : "s");
    say("  %5s %3s %3s %3s %3s %14s %10s %10s %10s %10s %10s %10s\n", "rank", "tp", "cp", "pp", "dp", "params",
        "weights_GB", "grads_GB", "optim_GB", "acts_GB", "total_GB", "TFLOP");
    for (int r = 0; r < tr->dist.world && all; r++) {
        const double *a = all + 7 * r;
        int tpi = r % p->tp, cpi = r / p->tp % p->cp, ppi = r / (p->tp * p->cp) % P, dpi = r / (p->tp * p->cp * P);
        say("  %5d %3d %3d %3d %3d %14.0f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", r, tpi, cpi, ppi, dpi,
            a[0], a[1] / 1e9, a[2] / 1e9, a[3] / 1e9, a[4] / 1e9, a[5] / 1e9, a[6] / 1e12);
    }
    say("dry run: weights %d bytes, gradients 4, optimizer 12 per parameter (ZeRO-%d over the %d rank%s of "
        "the context x data group); activations: cost.h's bytes per layer x the stage's layers x the "
        "micro-batches its schedule holds at the peak (1F1B: min(M, P - stage)); TFLOP: the model FLOPs of "
        "one step / %d ranks\n", es, z, N, N == 1 ? "" : "s", tr->dist.world);
    free(all);
}

/* ---- the end ---------------------------------------------------------------------------- */
static void summary(train_t *tr, nd_t *p) {
    double last[NX];
    axis_bytes(tr, last);
    for (int a = 0; a < NX; a++) last[a] -= p->sent_prev[a];   /* the last step, its update included */
    dist_allreduce(last, NX, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "the bytes sent");
    int W = tr->dist.world;
    say("sent:    step %d, mean per rank: tp %.6f + cp %.6f + pp %.6f + dp %.6f = %.6f MB\n", tr->o.steps,
        last[NX_TP] / W / 1e6, last[NX_CP] / W / 1e6, last[NX_PP] / W / 1e6, last[NX_DP] / W / 1e6,
        (last[NX_TP] + last[NX_CP] + last[NX_PP] + last[NX_DP]) / W / 1e6);
    if (p->pp > 1)
        say("sent:    pp formula 2 M (P V - 1) x %zu bytes per message / P ranks = %.6f MB per rank\n",
            p->run.msg_bytes, 2.0 * tr->o.micro * (p->pp * p->s.V - 1) * (double)p->run.msg_bytes / p->pp / 1e6);
    if (p->timed == 0 || tr->timed == 0) return;
    double ms = tr->sum_ms / tr->timed, f = tr->sum_fwd / tr->timed, b = tr->sum_bwd / tr->timed;
    double op = tr->sum_opt / tr->timed, ax[NX];
    for (int a = 0; a < NX; a++) ax[a] = 1e3 * p->sum_ax[a] / p->timed;
    double other = ms - f - b - ax[NX_TP] - ax[NX_CP] - ax[NX_DP] - ax[NX_PP] - op;
    say("cause:   compute %.2f (forward %.2f + backward %.2f) + tp %.2f + cp %.2f + dp %.2f + bubble %.2f + "
        "optimizer %.2f + other %.2f = %.2f ms per step (means of steps %ld-%d over ranks)\n", f + b, f, b,
        ax[NX_TP], ax[NX_CP], ax[NX_DP], ax[NX_PP], op, other, ms, tr->start + 2, tr->o.steps);
    say("cause:   shares compute %.1f%% | tp %.1f%% | cp %.1f%% | dp %.1f%% | bubble %.1f%% | optimizer %.1f%% | "
        "other %.1f%%\n", 100 * (f + b) / ms, 100 * ax[NX_TP] / ms, 100 * ax[NX_CP] / ms, 100 * ax[NX_DP] / ms,
        100 * ax[NX_PP] / ms, 100 * op / ms, 100 * other / ms);
    if (p->bench_csv) {
        double fl = tr->flops_token * tr->global_tokens / (ms / 1e3) / W;
        double hf = fl + tr->sum_recompute / tr->timed / (ms / 1e3) / W;
        char cfg[96];
        int n = snprintf(cfg, sizeof cfg, "tp%d cp%d pp%d dp%d", p->tp, p->cp, p->pp, tr->dp);
        if (p->fo.zero) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " zero%d", p->fo.zero);
        if (p->sp) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " sp");
        if (p->cp > 1 && p->algo == CP_ULYSSES) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " ulysses");
        if (p->pp > 1 && strcmp(p->schedule, "1f1b")) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " %s", p->schedule);
        if (strcmp(p->policy.name, "none")) snprintf(cfg + n, sizeof cfg - (size_t)n, " rc %s", p->policy.name);
        csv_append_row(p->bench_csv, BENCH_HEADER,
                       "%s,%d,%d,%d,%d,%d,%d,%s,%s,%d,%d,%s,%s,%.3f,%.6g,%.6g,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f",
                       cfg, p->tp, p->cp, p->pp, tr->dp, p->fo.zero, p->sp, p->cp_algo,
                       p->schedule, tr->o.micro, p->s.V, p->policy.name,
                       dtype_name(tr->dtype), ms, tr->peak > 0 ? 100 * fl / tr->peak : NAN,
                       tr->peak > 0 ? 100 * hf / tr->peak : NAN, ax[NX_PP] / ms, ax[NX_TP], ax[NX_CP], ax[NX_PP],
                       ax[NX_DP], f + b, op, tr->global_tokens / (ms / 1e3));
    }
}

/* ZeRO on this mesh: every rank's bytes on the context x data group in the
 * last step (its update's gathers included) and its state's memory, each
 * against 04_fsdp's formulas for the rank's own units (the stages hold
 * different ones). Rank 0's figures, and the largest difference over ranks. */
static void zero_report(train_t *tr, nd_t *p) {
    const fsdp_t *f = &p->f;
    fsdp_bytes_t b;
    fsdp_mem_t pred;
    fsdp_bytes_predict(f, &b);
    fsdp_mem_predict(f, &pred);
    static const int kinds[3] = {MEM_PARAMS, MEM_GRADS, MEM_OPTIM};
    double x[8] = {0}, diff[2] = {0, 0};   /* sent, its formula, then (measured, formula) per kind */
    for (int k = 0; k < COLL_KINDS; k++) {
        x[0] += f->shard->sent[k] - f->sent0[0][k];
        x[1] += b.shard[k];
    }
    for (int i = 0; i < 3; i++) {
        x[2 + 2 * i] = (double)dev_mem()->peak[kinds[i]];
        x[3 + 2 * i] = pred.kind[kinds[i]];
        diff[1] = fmax(diff[1], fabs(x[2 + 2 * i] - x[3 + 2 * i]));
    }
    diff[0] = fabs(x[0] - x[1]);
    dist_allreduce(diff, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the ZeRO report");
    say("zero:    %s, sent on the context x data group in step %d: %.6f MB per rank (rank 0; formula %.6f); "
        "largest difference over the ranks %.0f bytes\n", fsdp_stage_name(f->o.zero), tr->o.steps, x[0] / 1e6,
        x[1] / 1e6, diff[0]);
    say("zero:    state high-water (rank 0, MB): weights %.6f (formula %.6f), gradients %.6f (%.6f), optimizer "
        "%.6f (%.6f); largest difference over the ranks and kinds %.0f bytes\n", x[2] / 1e6, x[3] / 1e6,
        x[4] / 1e6, x[5] / 1e6, x[6] / 1e6, x[7] / 1e6, diff[1]);
}

/* --preset before the flags are read, so that any flag still overrides it. */
static void apply_preset(train_t *tr, int argc, char **argv) {
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc) name = argv[i + 1];
        else if (strncmp(argv[i], "--preset=", 9) == 0) name = argv[i] + 9;
    }
    for (size_t k = 0; name && k < ARRAY_LEN(presets); k++)
        if (strcmp(presets[k].name, name) == 0) {
            nd_preset_t q = presets[k];
            model_config_t c;
            if (cost_model(&c, name) == 0) {
                q.dim = c.dim; q.layers = c.layers; q.heads = c.heads; q.kv_heads = c.kv_heads;
                q.ffn = c.ffn; q.vocab = c.vocab; q.seq = c.seq;
            }
            train_opts_t *o = &tr->o;
            o->dim = q.dim; o->layers = q.layers; o->heads = q.heads; o->kv_heads = q.kv_heads;
            o->ffn = q.ffn; o->vocab = q.vocab; o->seq = q.seq; o->batch = q.batch; o->micro = q.micro;
            o->head_dim = 0;
        }
}

/* ---- the steps of main ------------------------------------------------------------------ */
/* The mesh and the schedule's parameters, checked on every rank before
 * anything is built. */
static void check_mesh(train_t *tr, nd_t *p) {
    int world = tr->dist.world, L = tr->cfg.layers, M = tr->o.micro;
    long inner = (long)p->tp * p->cp * p->pp;
    if (p->dp == 0) {
        if (world % inner) usage_error("--tp %d x --cp %d x --pp %d = %ld ranks does not divide the world of %d",
                                       p->tp, p->cp, p->pp, inner, world);
        p->dp = (int)(world / inner);
    }
    if (inner * p->dp != world)
        usage_error("--tp %d x --cp %d x --pp %d x --dp %d = %ld ranks, but the world has %d", p->tp, p->cp, p->pp,
                    p->dp, inner * p->dp, world);
    if (p->sp && p->tp < 2) usage_error("--sp needs tensor parallelism (--tp 2 or more)");
    p->kind = (pipe_kind_t)pipe_kind_parse(p->schedule);
    p->V = p->virt ? p->virt : p->kind == PIPE_INTERLEAVED ? 2 : 1;
    char why[300];
    if (pipe_schedule_valid(p->kind, p->pp, M, p->V, why, sizeof why)) usage_error("%s", why);
    if (L % (p->pp * p->V))
        usage_error("%d layers do not cut into %d stage%s x %d chunk%s of equal size", L, p->pp,
                    p->pp == 1 ? "" : "s", p->V, p->V == 1 ? "" : "s");
    if (recompute_parse(p->recompute, L / (p->pp * p->V), &p->policy, why, sizeof why)) usage_error("%s", why);
    p->algo = strcmp(p->cp_algo, "ulysses") == 0 ? CP_ULYSSES : CP_RING;
}

/* This rank's shard of the model, and the schedule (after train_setup: the
 * communicators). */
static void shard(train_t *tr, nd_t *p) {
    if (tr->dp != p->dp) die("the mesh has %d data-parallel ranks, expected %d", tr->dp, p->dp);
    if (p->V > 1) model_shard_stage(&tr->shard, &tr->cfg, p->pp, tr->mesh.coord[AXIS_PP], p->V);
    tr->shard.sp = p->sp;
    tr->shard.cp_balance = !p->no_balance;
    tr->recompute = p->policy.keep;
    model_shard_check(&tr->cfg, &tr->shard);
    if (p->cp > 1) cp_check(&tr->cfg, &tr->shard, p->algo);
    if (p->sp && ((size_t)tr->mb * tr->cfg.seq / p->cp) % (size_t)p->tp)
        usage_error("--sp: %d sequence%s x %d tokens per rank do not cut into %d tensor-parallel pieces", tr->mb,
                    tr->mb == 1 ? "" : "s", tr->cfg.seq / p->cp, p->tp);
    pipe_schedule_build(&p->s, p->kind, p->pp, tr->o.micro, p->V);
    char err[300];
    if (pipe_schedule_check(&p->s, err, sizeof err)) die("the %s schedule fails its check: %s", p->schedule, err);
}

/* The model, wrapped from the inside out (the list at the top), and the
 * runner over it. */
static void wrap(train_t *tr, nd_t *p) {
    model_t *m = &tr->model;
    if (p->fo.zero) fsdp_init(&p->f, tr, &tr->grad, NULL, &p->fo);   /* builds the model (ZeRO's arrays) */
    else train_model(tr, MODEL_PARAMS_AND_GRADS);
    if (p->tp > 1) tp_init(&p->t, &tr->axis[AXIS_TP], m);             /* 1. seams on the tp axis */
    if (p->cp > 1) cp_init(&p->c, &tr->axis[AXIS_CP], m, p->algo);     /* 2. attention on the cp axis */
    const model_recompute_t *k = &p->policy.keep;
    if (k->every || k->block || k->selective) {                       /* 3. what recomputation costs */
        recompute_meter_attach(&p->meter, m);
        p->metered = 1;
    }
    grad_strategy_t sync = {0};                                       /* 4. and 5. */
    if (p->fo.zero) sync = fsdp_strategy(&p->f);   /* reduce-scatters at the backwards (ZeRO-1: each chunk's last) */
    else if (tr->grad.size > 1) sync = train_ddp(tr, &p->gs, !p->fo.no_overlap);
    runner_init(&p->run, &p->s, tr, sync, 1, 0);
    if (p->tp > 1) runner_add_seam(&p->run, &p->t.st.comm_s);
    if (p->cp > 1) runner_add_seam(&p->run, &p->c.st.comm_s);
}

/* The header: the mesh and what each axis holds on this rank (rank 0's). */
static void print_mesh(const train_t *tr, const nd_t *p) {
    const model_t *m = &tr->model;
    int L = tr->cfg.layers, V = p->V, M = tr->o.micro;
    say("nd:      mesh [tp %d, cp %d, pp %d, dp %d] = %d ranks, tp fastest; this rank: tp %d, cp %d, stage %d, "
        "replica %d\n", p->tp, p->cp, p->pp, tr->dp, tr->dist.world, tr->mesh.coord[AXIS_TP],
        tr->mesh.coord[AXIS_CP], tr->mesh.coord[AXIS_PP], tr->dp_rank);
    say("tp:      %d rank%s: %d of %d heads, %d kv head%s, ffn %d of %d, vocabulary %d of %d per rank; sequence "
        "parallelism %s\n", p->tp, p->tp == 1 ? "" : "s", m->H, tr->cfg.heads, m->KV, m->KV == 1 ? "" : "s", m->F,
        tr->cfg.ffn, m->V, tr->cfg.vocab, p->sp ? "on" : "off");
    say("cp:      %d rank%s, %s attention, %d of %d tokens of each sequence per rank (%s)\n", p->cp,
        p->cp == 1 ? "" : "s", p->cp > 1 ? p->cp_algo : "local", m->T, tr->cfg.seq,
        m->nck == 2 ? "balanced: chunks i and 2C-1-i" : "in order");
    say("pp:      %s schedule, %d stage%s x %d chunk%s of %d layer%s, %d micro-batches of %d sequence%s\n",
        p->schedule, p->pp, p->pp == 1 ? "" : "s", V, V == 1 ? "" : "s", L / (p->pp * V),
        L / (p->pp * V) == 1 ? "" : "s", M, tr->mb, tr->mb == 1 ? "" : "s");
    say("dp:      %d rank%s in the context x data group (cp %d x dp %d): %s; recompute %s\n", tr->grad.size,
        tr->grad.size == 1 ? "" : "s", p->cp, tr->dp,
        p->fo.zero ? fsdp_stage_name(p->fo.zero) : tr->grad.size > 1 ? "gradients all-reduced in buckets after "
        "each stage's last backward" : "nothing to sum", p->policy.name);
}

static nd_t nd = {.tp = 1, .cp = 1, .pp = 1, .schedule = "1f1b", .cp_algo = "ring", .recompute = "none",
                  .fo = FSDP_OPTS_DEFAULT};

/* DDP, 4 micro-batches, and a --preset's shape (later flags still apply). */
static void defaults(train_t *tr, void *ctx, int argc, char **argv) {
    ((nd_t *)ctx)->fo.zero = 0;
    tr->o.micro = 4;
    apply_preset(tr, argc, argv);
}

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    nd_t *p = ctx;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    check_mesh(tr, p);
    *tp = p->tp;
    *cp = p->cp;
    *pp = p->pp;
}

static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    nd_t *p = ctx;
    shard(tr, p);
    if (p->dry_run) {
        dry_run(tr, p);
        pipe_schedule_free(&p->s);
        usage_exit_ok();
    }
    wrap(tr, p);
    print_mesh(tr, p);
    if (p->fo.zero) train_optimizer(tr, p->f.pieces, p->f.n_units, p->f.S);
    else train_optimizer(tr, NULL, 0, 0);
    train_hooks_add(&tr->step_note, step_note, p);
    *step_ctx = p;
    return nd_step;
}

static void report(train_t *tr, void *ctx) {
    nd_t *p = ctx;
    summary(tr, p);
    if (p->fo.zero) zero_report(tr, p);
    runner_free(&p->run);
    if (p->fo.zero) fsdp_free(&p->f);
    else if (tr->grad.size > 1) grad_sync_free(&p->gs);
    if (p->cp > 1) cp_free(&p->c);
    if (p->tp > 1) tp_free(&p->t);
    pipe_schedule_free(&p->s);
}

static arg_t flags[] = {
    {"tp", ARG_INT, &nd.tp, "tensor-parallel degree (mesh axis 0, fastest)", NULL, 1, 1e6},
    {"cp", ARG_INT, &nd.cp, "context-parallel degree (axis 1)", NULL, 1, 1e6},
    {"pp", ARG_INT, &nd.pp, "pipeline stages (axis 2)", NULL, 1, 1e6},
    {"dp", ARG_INT, &nd.dp, "data-parallel degree (axis 3; 0: the rest of the world)", NULL, 0, 1e6},
    {"sp", ARG_FLAG, &nd.sp, "sequence parallelism inside the tensor-parallel group", NULL, 0, 0},
    {"cp-algo", ARG_CHOICE, &nd.cp_algo, "context-parallel attention", "ring|ulysses", 0, 0},
    {"no-balance", ARG_FLAG, &nd.no_balance, "context parallelism: one chunk per rank in order (causal work unbalanced)", NULL, 0, 0},
    {"schedule", ARG_CHOICE, &nd.schedule, "pipeline schedule", "naive|gpipe|1f1b|interleaved", 0, 0},
    {"virtual", ARG_INT, &nd.virt, "model chunks per stage for the interleaved schedule (0: 2 there, 1 elsewhere)", NULL, 0, 1e4},
    {"recompute", ARG_STRING, &nd.recompute, "activation recomputation: none, full, every:C, sqrt, selective, block:K", NULL, 0, 0},
    FSDP_FLAGS(nd.fo),
    {"preset", ARG_CHOICE, &nd.preset, "a named model (sets the shape flags; later flags still apply)", PRESET_CHOICES, 0, 0},
    {"dry-run", ARG_FLAG, &nd.dry_run, "build the mesh and the shards, print per-rank memory and FLOPs, allocate no model, exit", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &nd.bench_csv, "append one summary row (configuration, MFU, HFU, time by cause) to this CSV", NULL, 0, 0},
};

static const train_chapter_t chapter = {
    {"10_nd_llama", "10_nd_llama/train", "4D parallelism (tp x cp x pp x dp)",
     "The Llama-style model on a [tp, cp, pp, dp] mesh: tensor parallelism (and\n"
     "sequence parallelism) inside each layer, context parallelism inside attention,\n"
     "pipeline stages under a schedule, and data parallelism (DDP or ZeRO-1/2/3) over\n"
     "the context x data group -- chapters 04-09's modules composed. Prints the\n"
     "exposed communication of each axis per step and the time by cause at the end.",
     flags, ARRAY_LEN(flags), NULL, 0},
    &nd, defaults, check, compose, report};

int main(int argc, char **argv) { return train_main(argc, argv, &chapter); }
