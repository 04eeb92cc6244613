/* trainer.c: 03_ddp/ddp's composition and report (trainer.h): the flags'
 * combinations checked, the strategy (buckets, compressed gradients, or
 * local SGD's none) in the runner, and the summary lines and row. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

static compress_spec_t spec;

/* --bucket-mb 1: the default model's 6.7 MB of fp32 gradients in 5 buckets,
 * one per layer (1.57 MB each; the head rides with the last layer, the
 * embedding comes alone), so the first all-reduce starts after one layer's
 * backward. PyTorch's 25 MB is sized for models with hundreds of MB of
 * gradients; here it would make one bucket, sent after backward. */
void ddp_defaults(train_t *tr, void *ctx, int argc, char **argv) {
    (void)ctx, (void)argc, (void)argv;
    tr->o.bucket_mb = 1;
}

void ddp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    ddp_t *d = ctx;
    (void)tp, (void)cp, (void)pp;
    if (d->compress && compress_parse(d->compress, &spec))
        usage_error("--compress %s: expected none, int8, sign, topk:F (0 < F <= 1) or powersgd:R", d->compress);
    args_check_output(MPI_COMM_WORLD, "bench-csv", d->bench_csv, BENCH_HEADER);
    if (d->outer_lr > 0 && !d->local_steps) usage_error("--outer-lr needs --local-steps");
    if (args_given(&d->outer_momentum) && !(d->outer_lr > 0))
        usage_error("--outer-momentum is the momentum of DiLoCo's outer step: it needs --local-steps and --outer-lr");
    if (args_given(&d->error_feedback) && !d->compress)
        usage_error("--error-feedback needs --compress (uncompressed gradients drop nothing to feed back)");
    if (d->compress && d->bench_csv) usage_error("--compress takes no --bench-csv (its row describes buckets)");
    if (d->compress && d->no_overlap)
        usage_error("--compress sends the gradients after backward already: --no-overlap does nothing with it");
    if (d->compress && d->local_steps) usage_error("--compress and --local-steps are two ways to send less: use one");
    /* the ranks' optimizer states differ: a checkpoint of one rank's would not resume the run */
    if (d->local_steps && tr->o.ckpt_dir) usage_error("--local-steps takes no --ckpt-dir (each rank has its own optimizer state)");
    if (d->local_steps && d->bench_csv) usage_error("--local-steps takes no --bench-csv (its row describes buckets)");
}

/* The strategy: buckets, compressed gradients, or none (local SGD). */
train_step_fn ddp_compose(train_t *tr, void *ctx, void **step_ctx) {
    ddp_t *d = ctx;
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    grad_strategy_t strategy = {0};   /* local SGD: no gradient synchronisation */
    if (d->compress) {
        char name[32];
        grad_compress_init(&d->gc, &tr->grad, &tr->model, &spec, strcmp(d->error_feedback, "on") == 0);
        strategy = grad_compress_strategy(&d->gc);
        tr->compressor = &d->gc.z;   /* its residuals and Q join the checkpoints */
        say("compress: %s, error feedback %s, after backward: %.0f B per rank per step (formula: %s; "
            "uncompressed ring %.0f B)\n", compress_name(&spec, name), d->error_feedback,
            compressor_sent_bytes(&d->gc.z, tr->dp), compress_formula(&spec),
            compress_sent_bytes(&(compress_spec_t){0}, tr->model.size, NULL, 0, tr->dp));
    } else if (!d->local_steps) {
        say("ddp:     %s gradients in buckets of %.4g MiB, %s; %.2f MB of gradients per step\n",
            dtype_name(tr->dtype), tr->o.bucket_mb,
            d->no_overlap ? "all-reduced after backward (--no-overlap)" : "all-reduced during backward",
            tr->model.size * dtype_size(tr->dtype) / 1e6);
        strategy = train_ddp(tr, &d->gs, !d->no_overlap);
    }
    runner_init(&d->run, NULL, tr, strategy, 0, 0);
    train_optimizer(tr, NULL, 0, 0);
    if (d->local_steps) {
        local_sgd_init(&d->lsgd, tr, d->local_steps, (float)d->outer_lr, (float)d->outer_momentum);
        int A = local_sgd_averages(&d->lsgd, tr);
        long S = tr->o.steps - tr->start;
        say("local:   each rank steps alone; fp32 weights averaged every %d step%s%s; %.7g MB sent per rank "
            "per step = 2 (N-1)/N x 4 x %zu / %.7g (%ld steps / %d average%s%s)\n", d->local_steps,
            d->local_steps == 1 ? "" : "s", d->outer_lr > 0 ? ", through DiLoCo's outer Nesterov step" : "",
            local_sgd_bytes_per_step(&d->lsgd, tr) / 1e6, tr->opt.n, A ? (double)S / A : 0.0, S, A,
            A == 1 ? "" : "s", S % d->local_steps ? ", the last after the last step" : "");
    }
    *step_ctx = &d->run;
    return runner_step;
}

void ddp_report(train_t *tr, void *ctx) {
    ddp_t *d = ctx;
    if (d->bench_csv && tr->timed > 0) {
        double ms = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
        csv_append_row(d->bench_csv, BENCH_HEADER, "%.6g,%s,%d,%d,%.4f,%.3f,%.3f,%.3f,%ld,%.1f,%d", tr->o.bucket_mb,
                       d->no_overlap ? "off" : "on", tr->dp, d->gs.nbuckets,
                       tr->model.size * dtype_size(tr->dtype) / 1e6, ms, ms - ex, ex, tr->global_tokens,
                       tr->global_tokens / (ms / 1e3), tr->dev.threads);
    }
    if (d->local_steps)
        say("local:   %d weight average%s; %.7g MB sent per rank per step (counted: each call's ring bytes)\n",
            d->lsgd.averages, d->lsgd.averages == 1 ? "" : "s", comm_sent_bytes(&tr->grad) / tr->o.steps / 1e6);
    else if (!d->compress)
        say("ddp:     %d bucket%s per step%s\n", d->gs.nbuckets, d->gs.nbuckets == 1 ? "" : "s",
            tr->grad.size == 1 ? " (one rank: nothing to all-reduce)" : "");
    runner_free(&d->run);
    if (d->compress) grad_compress_free(&d->gc);
    else grad_sync_free(&d->gs);
    local_sgd_free(&d->lsgd, tr);
}
