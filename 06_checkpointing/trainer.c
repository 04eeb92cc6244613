/* trainer.c: 06_checkpointing/ckpt's composition (trainer.h): the policy,
 * the failure plan and the outputs checked, the model under the policy, DDP,
 * the saver, and the step that meters the recomputation. */
#include <stdio.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

/* The runner's step, and what the recomputation cost in it. */
static void ckpt_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    ckpt_prog_t *p = ctx;
    recompute_meter_t before = p->meter;
    runner_step(tr, &p->run, step, st);   /* backward recomputes what the policy dropped */
    st->recompute_flops = recompute_meter_flops(&tr->model, &before, &p->meter, (double)tr->acts.rows_full);
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

/* The policy, the failure plan and the outputs, checked before any collective. */
void ckpt_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    ckpt_prog_t *p = ctx;
    (void)tp, (void)cp, (void)pp;
    if (p->goodput_model) {
        if (tr->dist.rank == 0) ckpt_goodput_model(p->goodput_model);
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

/* After each step: the injected failure of this step, then its checkpoint. */
static void after_step(train_t *tr, void *ctx, long step, int ckpt_due) {
    ckpt_prog_t *p = ctx;
    failure_at_step(&p->failure, tr->dist.rank, step);   /* before its checkpoint: the step is lost */
    saver_step(&p->saver, tr, step, ckpt_due);
}

/* The model under the recomputation policy, DDP, the saver and its hook
 * after each step. */
train_step_fn ckpt_compose(train_t *tr, void *ctx, void **step_ctx) {
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
    runner_init(&p->run, NULL, tr, train_ddp(tr, &p->gs, 1), 0, 0);
    train_optimizer(tr, NULL, 0, 0);
    tr->after_step = after_step;
    tr->after_step_ctx = p;
    *step_ctx = p;
    return ckpt_step;
}

void ckpt_report(train_t *tr, void *ctx) {
    ckpt_prog_t *p = ctx;
    failure_disarm();
    ckpt_report_recompute(tr, p);
    saver_finish(&p->saver, tr);
    runner_free(&p->run);
    grad_sync_free(&p->gs);
}
