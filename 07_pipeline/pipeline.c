/* pipeline.c: 07_pipeline/pipeline's composition (pipeline.h): the
 * schedule's parameters checked against the world and the model, this
 * stage's layers, the schedule built and checked, and the runner over it. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pipeline.h"

/* "embedding + layers 0-3" for a stage's chunks. */
static void stage_layers(char *buf, size_t len, int P, int V, int L, int st) {
    int per = L / (P * V), n = 0;
    buf[0] = 0;
    for (int c = 0; c < V; c++) {
        int vs = c * P + st, a = vs * per, b = a + per - 1;
        char lay[32];
        if (a == b) snprintf(lay, sizeof lay, "layer %d", a);
        else snprintf(lay, sizeof lay, "layers %d-%d", a, b);
        n += snprintf(buf + n, len - (size_t)n, "%s%s%s%s", c ? ", " : "", vs == 0 ? "embedding + " : "", lay,
                      vs == P * V - 1 ? " + head" : "");
        if ((size_t)n >= len) break;
    }
}

/* The pipeline's defaults: 8 micro-batches, 8 layers (2, 4 or 8 stages). */
void pipeline_defaults(train_t *tr, void *ctx, int argc, char **argv) {
    (void)ctx, (void)argc, (void)argv;
    tr->o.micro = 8;
    tr->o.layers = 8;
}

/* The schedule's parameters against the world and the model; --show-schedule
 * prints the checked schedule and exits. */
void pipeline_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    pipeline_t *p = ctx;
    (void)tp, (void)cp;
    int world = tr->dist.world, L = tr->cfg.layers, M = tr->o.micro;
    p->kind = (pipe_kind_t)pipe_kind_parse(p->schedule);
    if (p->stages < 1) p->stages = p->show ? 1 : world / p->dp;
    int P = p->stages, V = p->V = p->virt ? p->virt : p->kind == PIPE_INTERLEAVED ? 2 : 1;
    char why[200];
    if (pipe_schedule_valid(p->kind, P, M, V, why, sizeof why)) usage_error("%s", why);
    int K = p->K = p->slices ? p->slices : p->kind == PIPE_TERAPIPE ? 4 : 1;
    if (K > 1 && p->kind != PIPE_TERAPIPE) usage_error("%d token slices need the terapipe schedule", K);
    if (p->balance && K == 1) usage_error("--balance needs token slices (--schedule terapipe)");
    if (p->balance && K > 64) usage_error("--balance cuts at most 64 slices");
    if (tr->cfg.seq % K) usage_error("%d token slices do not cut the sequence of %d tokens evenly", K, tr->cfg.seq);
    if (p->show) {   /* the picture, checked, and nothing else */
        pipe_schedule_make(&p->s, p->kind, P, M, V, K);
        char err[300];
        if (pipe_schedule_check(&p->s, err, sizeof err)) die("the %s schedule fails its check: %s", p->schedule, err);
        if (tr->dist.rank == 0) {
            pipe_schedule_print(&p->s, stdout);
            printf("checked: forwards before backwards, sends match receives in order, no deadlock "
                   "(MPI, or one stream per rank as NCCL), activations within the promise\n");
        }
        pipe_schedule_free(&p->s);
        usage_exit_ok();
    }
    if (P * p->dp != world)
        usage_error("--stages %d x --dp %d = %d ranks, but the world has %d", P, p->dp, P * p->dp, world);
    if (P > L) usage_error("%d stages need at least %d layers (the model has %d)", P, P, L);
    if (L % (P * V))
        usage_error("%d layers do not cut into %d stages x %d chunk%s of equal size", L, P, V, V == 1 ? "" : "s");
    args_check_output(MPI_COMM_WORLD, "bubble-csv", p->bubble_csv, BUBBLE_HEADER);
    args_check_output(MPI_COMM_WORLD, "memory-csv", p->memory_csv, MEMORY_HEADER);
    args_check_output(MPI_COMM_WORLD, "gantt-csv", p->gantt_csv, GANTT_HEADER);
    if (strcmp(p->replay, "none")) {
        long tmp[16];
        args_size_list(p->replay, tmp, 16, "replay");
    }
    *pp = P;
}

/* This stage's layers, the schedule, and the runner executing it. */
train_step_fn pipeline_compose(train_t *tr, void *ctx, void **step_ctx) {
    pipeline_t *p = ctx;
    int P = p->stages, V = p->V, K = p->K, M = tr->o.micro, L = tr->cfg.layers;
    if (V > 1) model_shard_stage(&tr->shard, &tr->cfg, P, tr->mesh.coord[AXIS_PP], V);
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    pipe_schedule_make(&p->s, p->kind, P, M, V, K);
    char err[300];
    if (pipe_schedule_check(&p->s, err, sizeof err)) die("the %s schedule fails its check: %s", p->schedule, err);
    runner_init(&p->e, &p->s, tr, tr->dp > 1 ? train_ddp(tr, &p->gs, 1) : (grad_strategy_t){0}, 1, 1);
    if (p->balance) {   /* a token's matmuls, and its attention per key (model_layer_forward_flops_per_token) */
        int pos[65], T = tr->cfg.seq;
        double b = 4.0 * tr->cfg.heads * tr->cfg.head_dim, a = model_layer_forward_flops_per_token(&tr->cfg) - b * T;
        pipe_slices_balanced(T, K, a, b, pos);
        runner_slices(&p->e, pos);
    }
    say("pipeline: %s schedule, %d stage%s x %d chunk%s, %d micro-batches of %d sequence%s per step and "
        "replica, %d replica%s%s\n", p->schedule, P, P == 1 ? "" : "s", V, V == 1 ? "" : "s", p->s.M / K, tr->mb,
        tr->mb == 1 ? "" : "s", tr->dp, tr->dp == 1 ? "" : "s",
        tr->dp > 1 ? " (gradients all-reduced after each stage's last backward)" : "");
    for (int st = 0; st < P; st++) {
        char lay[256];
        stage_layers(lay, sizeof lay, P, V, L, st);
        say("          stage %d: %s\n", st, lay);
    }
    say("          messages: %zu bytes %s(%d x %d x %d %s), posted in groups between computes; the "
        "lists passed the checker\n", p->e.msg_bytes, p->balance ? "at most " : "each ", tr->mb,
        (int)(p->e.msg_elems / p->e.tok_elems), tr->cfg.dim, dtype_name(tr->dtype));
    if (K > 1) {
        say("          each micro-batch's sequences cut into %d token slices, run in order (%s):", K,
            p->balance ? "equal FLOPs" : "equal length");
        for (int k = 0; k < K; k++) say(" [%d, %d)", p->e.slice_pos[k], p->e.slice_pos[k + 1]);
        say("; a slice's attention also reads the kept keys and values of the slices before it\n");
    }
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = &p->e;
    return runner_step;
}

void pipeline_report(train_t *tr, void *ctx) {
    pipeline_t *p = ctx;
    pipeline_summary(p, tr);
    runner_free(&p->e);
    if (tr->dp > 1) grad_sync_free(&p->gs);
    pipe_schedule_free(&p->s);
}
