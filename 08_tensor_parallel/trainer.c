/* trainer.c: 08_tensor_parallel/tp's composition (trainer.h): the degrees
 * checked, the model split by the seams, DDP over the replicas, and the
 * step that counts the seams' time as exposed. */
#include <stdio.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

/* The runner's step (the seams' blocking time counts as exposed, not as
 * compute), then the blocks the tp ranks share. */
static void tp_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    tpp_t *p = ctx;
    tp_stats_reset(&p->t);
    runner_step(tr, &p->run, step, st);
    /* after the data-parallel sums are complete: they work on the same memory */
    double c0 = p->t.st.comm_s;
    tp_reduce_replicated_grads(&p->t, &tr->model, &tr->opt);
    st->exposed_s += p->t.st.comm_s - c0;
    p->last = p->t.st;
    if (step > tr->start + 1) {
        p->sum_tp_s += p->t.st.comm_s;
        p->timed++;
    }
}

void tpp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    tpp_t *p = ctx;
    (void)cp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    if (p->tp == 0) p->tp = tr->dist.world;
    if (p->sp && p->tp < 2) usage_error("--sp needs tensor parallelism (--tp 2 or more)");
    *tp = p->tp;
}

/* The model split by the seams, DDP over the replicas. */
train_step_fn tpp_compose(train_t *tr, void *ctx, void **step_ctx) {
    tpp_t *p = ctx;
    tr->shard.sp = p->sp;
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    model_t *m = &tr->model;
    tp_init(&p->t, &tr->axis[AXIS_TP], m);
    tp_count_bytes(&p->t, m);
    say("tp:      %d ranks: %d of %d heads, %d kv head%s (%s), ffn %d of %d, vocabulary %d of %d per rank; "
        "sequence parallelism %s\n", p->tp, m->H, tr->cfg.heads, m->KV, m->KV == 1 ? "" : "s",
        tr->cfg.kv_heads % p->tp == 0 ? "split" : "shared by the ranks whose query heads read it",
        m->F, tr->cfg.ffn, m->V, tr->cfg.vocab, p->sp ? "on" : "off");
    say("dp:      %d replica%s of each shard, gradients all-reduced in buckets of %.4g MiB\n", tr->dp,
        tr->dp == 1 ? "" : "s", tr->o.bucket_mb);
    runner_init(&p->run, NULL, tr, train_ddp(tr, &p->gs, 1), 0, 0);
    runner_add_seam(&p->run, &p->t.st.comm_s);
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = p;
    return tp_step;
}
