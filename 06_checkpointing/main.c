/* main.c: 06_checkpointing/ckpt, data-parallel training (common/train.h,
 * common/grad_sync.h) with the two trades of this chapter:
 *
 *   memory for compute   --recompute none|full|every:C|sqrt|block:K|selective
 *                        keeps fewer activations and recomputes them in
 *                        backward (recompute.h); the program reports the
 *                        activation memory, the recomputed FLOPs (HFU beside
 *                        MFU) and the time they took, each beside its model;
 *   time for safety      --ckpt-dir/--ckpt-every checkpoints, written in the
 *                        background with --ckpt-async (saver.h), and injected
 *                        failures (--fail-at-step, --fail-every-s: failure.h)
 *                        that 06_checkpointing/supervise.sh recovers from.
 *
 *   mpirun -np 2 ./06_checkpointing/ckpt --layers 16 --recompute sqrt
 *   bash 06_checkpointing/supervise.sh --np 2 -- ./06_checkpointing/ckpt \
 *        --ckpt-dir /tmp/ck --ckpt-every 10 --fail-every-s 5
 *
 * The step is data parallelism as in chapter 03 (the runner of
 * common/runner.h with DDP's strategy): micro-batches through forward and
 * backward (where the recomputation happens, inside model_backward),
 * gradients all-reduced in buckets during the last micro-batch's backward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "failure.h"
#include "grad_sync.h"
#include "perf.h"
#include "recompute.h"
#include "runner.h"
#include "saver.h"
#include "train.h"

#define BENCH_HEADER "policy,every,block,selective,layers,ranks,acts_mb,acts_model_mb,acts_peak_mb," \
                     "acts_peak_model_mb,input_mb,layer_mb,head_mb,scratch_mb,layers_recomputed," \
                     "attn_recomputed,extra_flops_pct,step_ms,fwd_ms,bwd_ms,recompute_ms,recompute_model_ms,mfu,hfu"

typedef struct {
    const char *recompute, *fail_at, *bench_csv, *goodput_model;
    double fail_every_s;
    int async, fail_seed, attempt;
    recompute_t policy;
    recompute_meter_t meter;
    grad_sync_t gs;
    runner_t run;
    saver_t saver;
    failure_t failure;
} ckpt_prog_t;

/* The runner's step, and what the recomputation cost in it. */
static void ckpt_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    ckpt_prog_t *p = ctx;
    recompute_meter_t before = p->meter;
    runner_step(tr, &p->run, step, st);   /* backward recomputes what the policy dropped */
    st->recompute_flops = recompute_meter_flops(&tr->model, &before, &p->meter, (double)tr->acts.rows_full);
}

static void after_step(train_t *tr, void *ctx, long step, int ckpt_due) {
    ckpt_prog_t *p = ctx;
    failure_at_step(&p->failure, tr->dist.rank, step);   /* before its checkpoint: the step is lost */
    saver_step(&p->saver, tr, step, ckpt_due);
}

/* --goodput-model DELTA,MTBF,RESTART[,TAU]: Daly's goodput against the
 * interval (a grid around Young's), or at the interval TAU alone. */
static void goodput_model(const char *s) {
    double delta, mtbf, restart, tau;
    const arg_t field[4] = {   /* each a finite number, checked as a flag's value */
        {"goodput-model DELTA", ARG_DOUBLE, &delta, NULL, NULL, 0, 0},
        {"goodput-model MTBF", ARG_DOUBLE, &mtbf, NULL, NULL, 0, 0},
        {"goodput-model RESTART", ARG_DOUBLE, &restart, NULL, NULL, 0, 0},
        {"goodput-model TAU", ARG_DOUBLE, &tau, NULL, NULL, 0, 0},
    };
    char buf[256], *rest = buf, *tok;
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    while ((tok = strsep(&rest, ",")) != NULL) {
        if (n == 4 || strlen(s) >= sizeof buf) { n = 5; break; }
        args_set(&field[n++], tok);
    }
    if (n < 3 || n > 4 || !(delta > 0) || !(mtbf > 0) || !(restart >= 0) || (n == 4 && !(tau > 0)))
        usage_error("--goodput-model %s: want DELTA,MTBF,RESTART[,TAU] in seconds (DELTA, MTBF and TAU "
                    "above 0, RESTART 0 or more), like 0.1,10,1.5", s);
    if (n == 4) {
        printf("%.6g,%.6g\n", tau, daly_goodput(tau, delta, restart, mtbf));
        return;
    }
    double ty = young_interval(delta, mtbf), td = daly_interval(delta, mtbf);
    printf("# checkpoint cost %g s, mean time between failures %g s, restart %g s\n", delta, mtbf, restart);
    printf("# young %.6g s (goodput %.6g), daly %.6g s (goodput %.6g)\n", ty,
           daly_goodput(ty, delta, restart, mtbf), td, daly_goodput(td, delta, restart, mtbf));
    printf("interval_s,goodput\n");
    for (int i = 0; i <= 80; i++) {   /* from tau_Young / 30 to 30 tau_Young */
        double t = ty * pow(30.0, (i - 40) / 40.0);
        printf("%.6g,%.6g\n", t, daly_goodput(t, delta, restart, mtbf));
    }
}

/* Activation memory, recomputed work and its time, each beside the model. */
static void report_recompute(train_t *tr, ckpt_prog_t *p) {
    model_t *m = &tr->model;
    const recompute_meter_t *mt = &p->meter;
    recompute_cost_t c;
    recompute_cost(m, tr->mb, &p->policy, &c);
    double peak = (double)dev_mem()->peak[MEM_ACTS], bytes = (double)tr->acts.bytes;
    dist_allreduce(&peak, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "memory totals");
    int L = m->shard.per_chunk;
    say("recompute: %s | activations of a micro-batch %.4f MB (model %.4f MB = %.0f layer inputs x %.1f kB "
        "+ %.0f layer%s x %.1f kB + %.1f kB tokens and head) | high-water with backward scratch %.4f MB "
        "(model %.4f MB)\n", p->policy.name, bytes / 1e6, c.bytes / 1e6, c.inputs, c.input / 1e3,
        c.kept_layers, c.kept_layers == 1 ? "" : "s", (c.layer - c.input) / 1e3, c.head / 1e3, peak / 1e6,
        (c.bytes + c.scratch) / 1e6);
    long runs = (long)tr->nrun * p->run.s->M;   /* backward passes this run */
    if (runs == 0) return;
    double rec_l = (double)mt->rec_layers / runs, rec_a = (double)mt->attn_rec / runs;
    double model_flops = tr->flops_token * tr->global_tokens;
    double extra = recompute_meter_flops(m, &(recompute_meter_t){0}, mt, (double)tr->acts.rows_full) /
                   tr->nrun * tr->dist.world;
    say("recompute: per micro-batch %.0f layer forward%s (model %d) and %.0f attention core%s (model %d) "
        "recomputed = %.4g GFLOP per step, +%.1f%% of the model's %.4g GFLOP\n", rec_l, rec_l == 1 ? "" : "s",
        c.layers_recomputed, rec_a, rec_a == 1 ? "" : "s", c.attn_recomputed, extra / 1e9,
        100 * extra / model_flops, model_flops / 1e9);
    double per_layer = mt->fwd_layers ? mt->fwd_s / mt->fwd_layers : 0;
    double per_attn = mt->attn_fwd ? mt->attn_fwd_s / mt->attn_fwd : 0;
    double steps = tr->nrun;
    say("recompute: time per step %.2f ms recomputing (model %.2f ms = the forward's %.3f ms per layer and "
        "%.3f ms per attention core, times the counts) of %.2f ms in the forward pass's %d layers\n",
        (mt->rec_s + mt->attn_rec_s) / steps * 1e3,
        (mt->rec_layers * per_layer + mt->attn_rec * per_attn) / steps * 1e3, per_layer * 1e3,
        per_attn * 1e3, mt->fwd_s / steps * 1e3, L);

    if (p->bench_csv && tr->timed > 0) {
        double ms = tr->sum_ms / tr->timed, world = tr->dist.world;
        double mfu = tr->peak > 0 ? model_flops / (ms / 1e3) / (world * tr->peak) : NAN;
        double hfu = tr->peak > 0 ? (model_flops + tr->sum_recompute / tr->timed) / (ms / 1e3) / (world * tr->peak) : NAN;
        csv_append_row(p->bench_csv, BENCH_HEADER, "%s,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.0f,"
                       "%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.6g,%.6g", p->recompute, p->policy.keep.every, p->policy.keep.block,
                       p->policy.keep.selective, L, tr->dist.world, bytes / 1e6, c.bytes / 1e6, peak / 1e6,
                       (c.bytes + c.scratch) / 1e6, c.input / 1e6, c.layer / 1e6, c.head / 1e6, c.scratch / 1e6, rec_l,
                       rec_a, 100 * extra / model_flops, ms, tr->sum_fwd / tr->timed, tr->sum_bwd / tr->timed,
                       (mt->rec_s + mt->attn_rec_s) / steps * 1e3,
                       (mt->rec_layers * per_layer + mt->attn_rec * per_attn) / steps * 1e3, 100 * mfu, 100 * hfu);
    }
}

static int injecting(const ckpt_prog_t *p) { return (p->fail_at && *p->fail_at) || p->fail_every_s > 0; }

/* Which failure this attempt injects, for the header. */
static void failure_line(const ckpt_prog_t *p) {
    char by_step[64] = "", by_time[96] = "";
    if (p->failure.at_step) snprintf(by_step, sizeof by_step, " at the end of step %ld", p->failure.at_step);
    if (p->failure.after_s > 0)
        snprintf(by_time, sizeof by_time, "%s %.2f s after its start (exponential, mean %.3g s)",
                 p->failure.at_step ? " or" : "", p->failure.after_s, p->fail_every_s);
    if (*by_step || *by_time)
        say("failure: attempt %d kills rank %d%s%s\n", p->attempt, p->failure.victim, by_step, by_time);
    else
        say("failure: attempt %d runs to the end (no failure listed for it)\n", p->attempt);
}

static ckpt_prog_t prog = {.recompute = "none", .fail_seed = -1};

/* The policy, the failure plan and the outputs, checked before any collective. */
static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    ckpt_prog_t *p = ctx;
    (void)tp, (void)cp, (void)pp;
    if (p->goodput_model) {
        if (tr->dist.rank == 0) goodput_model(p->goodput_model);
        usage_exit_ok();
    }
    char err[300];
    if (recompute_parse(p->recompute, tr->o.layers, &p->policy, err, sizeof err) != 0) usage_error("%s", err);
    if (injecting(p) && !(tr->o.ckpt_dir && tr->o.ckpt_every))
        usage_error("failure injection needs --ckpt-dir and --ckpt-every: without checkpoints every restart "
                    "begins again at step 0, and no progress survives a failure");
    if (failure_plan(&p->failure, p->fail_at, p->fail_every_s, p->fail_seed >= 0 ? p->fail_seed : tr->o.c.seed,
                     p->attempt, tr->dist.world, tr->o.steps, err, sizeof err) != 0)
        usage_error("%s", err);
    failure_arm(&p->failure, tr->dist.rank);   /* a time failure may strike during start-up too */
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
}

/* The model under the recomputation policy, DDP, and the saver. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    ckpt_prog_t *p = ctx;
    tr->recompute = p->policy.keep;
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    recompute_meter_attach(&p->meter, &tr->model);
    say("ddp:     %s gradients in buckets of %.4g MiB, all-reduced during backward; %.4f MB of gradients "
        "per step\n", dtype_name(tr->dtype), tr->o.bucket_mb, tr->model.size * dtype_size(tr->dtype) / 1e6);
    recompute_cost_t c;
    recompute_cost(&tr->model, tr->mb, &p->policy, &c);
    say("recompute: %s: keeps %.0f checkpoints (layer inputs) and the activations of %.0f layer%s of %d; "
        "backward recomputes %d layer forward%s and %d attention core%s per micro-batch (+%.1f%% FLOPs)\n",
        p->policy.name, c.checkpoints, c.kept_layers, c.kept_layers == 1 ? "" : "s", tr->model.shard.per_chunk,
        c.layers_recomputed, c.layers_recomputed == 1 ? "" : "s", c.attn_recomputed,
        c.attn_recomputed == 1 ? "" : "s",
        100 * c.flops * tr->dp * tr->o.micro / (tr->flops_token * tr->global_tokens));
    if (tr->o.ckpt_dir)
        say("saver:   checkpoints every %d steps in %s, %s\n", tr->o.ckpt_every, tr->o.ckpt_dir,
            p->async ? "written in the background (--ckpt-async)" : "written synchronously");
    if (injecting(p)) failure_line(p);
    saver_init(&p->saver, p->async);
    tr->after_step = after_step;
    tr->after_step_ctx = p;
    runner_init(&p->run, NULL, tr, train_ddp(tr, &p->gs, 1), 0, 0);
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = p;
    return ckpt_step;
}

static void report(train_t *tr, void *ctx) {
    ckpt_prog_t *p = ctx;
    failure_disarm();
    report_recompute(tr, p);
    saver_finish(&p->saver, tr);
    runner_free(&p->run);
    grad_sync_free(&p->gs);
}

static arg_t flags[] = {
    {"recompute", ARG_STRING, &prog.recompute, "activation recomputation: none, full, every:C, sqrt, block:K, selective", NULL, 0, 0},
    {"ckpt-async", ARG_FLAG, &prog.async, "write checkpoints in a background thread (the step waits only for the copy to host memory)", NULL, 0, 0},
    {"fail-at-step", ARG_STRING, &prog.fail_at, "inject failures: attempt k kills a random rank at the end of the k-th listed step (5,12,...)", NULL, 0, 0},
    {"fail-every-s", ARG_DOUBLE, &prog.fail_every_s, "inject failures: kill a random rank after an exponential time of this mean (seconds)", NULL, 0, 1e9},
    {"fail-seed", ARG_INT, &prog.fail_seed, "seed of the injected failures (-1: --seed)", NULL, -1, 2147483647.0},
    {"attempt", ARG_INT, &prog.attempt, "which attempt of the job this is (set by supervise.sh: picks its failure)", NULL, 0, 1e9},
    {"bench-csv", ARG_STRING, &prog.bench_csv, "append one summary row (policy, memory, times, MFU, HFU) to this CSV", NULL, 0, 0},
    {"goodput-model", ARG_STRING, &prog.goodput_model, "print Daly's goodput against the checkpoint interval for DELTA,MTBF,RESTART[,TAU] (s) and exit", NULL, 0, 0},
};

TRAIN_MAIN("06_checkpointing", "06_checkpointing/ckpt", "activation recomputation and failure recovery",
           "Data-parallel training of the Llama-style model with activation recomputation\n"
           "(memory for compute) and checkpoints that survive injected failures (time for\n"
           "safety): synchronous or asynchronous checkpoint sets, failure injection for\n"
           "06_checkpointing/supervise.sh, which restarts the job until it completes.",
           flags, &prog, NULL, check, compose, report)
