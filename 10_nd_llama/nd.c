/* nd.c: 10_nd_llama/train's composition (nd.h): the mesh and the schedule
 * checked, this rank's shard, the model wrapped by the modules of chapters
 * 04-09 from the inside out, the runner over it, and the step that splits
 * its time by axis. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "nd.h"

void nd_axis_bytes(const train_t *tr, double out[NX]) {
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
    nd_axis_bytes(tr, p->sent_prev);   /* a step's bytes run to the next step's start (ZeRO gathers after the update) */
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

void nd_step_note(train_t *tr, void *ctx) {
    (void)tr;
    const nd_t *p = ctx;
    printf(" | tp %.2f cp %.2f dp %.2f ms", 1e3 * p->step_ax[NX_TP], 1e3 * p->step_ax[NX_CP],
           1e3 * p->step_ax[NX_DP]);
}

/* What the runner cannot run on this mesh (common/runner.c, model.c), refused
 * with its reason: TeraPipe's slice attends to the earlier slices' keys and
 * values kept on its own rank, and ZB-H1's W reads every activation after
 * B, so neither recomputes; sequence parallelism refills what W reads, and
 * ZeRO-2/3's gradient buffer of a unit lives for one backward pass (04_fsdp's
 * hooks), not for a B and a later W. */
static void check_schedule_mesh(const nd_t *p) {
    int recomputes = strcmp(p->policy.name, "none") != 0;
    if (p->kind == PIPE_TERAPIPE) {
        if (p->tp > 1 || p->cp > 1)
            usage_error("the terapipe schedule needs --tp 1 and --cp 1: a token slice's attention reads the "
                        "keys and values of the slices before it on its own rank");
        if (recomputes) usage_error("the terapipe schedule keeps every slice's activations: it takes no --recompute");
    }
    if (p->kind == PIPE_ZBH1) {
        if (recomputes) usage_error("the zbh1 schedule's W reads every activation after B: it takes no --recompute");
        if (p->sp) usage_error("the zbh1 schedule's W reads activations that --sp refills: it takes no --sp");
        if (p->fo.zero >= 2)
            usage_error("the zbh1 schedule's W writes a unit's weight gradients after its B, but ZeRO-%d lends and "
                        "reduce-scatters a unit's gradient buffer around one backward pass: use --zero 0 or 1",
                        p->fo.zero);
    }
}

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
    p->K = p->slices ? p->slices : p->kind == PIPE_TERAPIPE ? 4 : 1;
    if (p->K > 1 && p->kind != PIPE_TERAPIPE) usage_error("%d token slices need the terapipe schedule", p->K);
    if (tr->cfg.seq % p->K)
        usage_error("%d token slices do not cut the sequence of %d tokens evenly", p->K, tr->cfg.seq);
    if (L % (p->pp * p->V))
        usage_error("%d layers do not cut into %d stage%s x %d chunk%s of equal size", L, p->pp,
                    p->pp == 1 ? "" : "s", p->V, p->V == 1 ? "" : "s");
    if (recompute_parse(p->recompute, L / (p->pp * p->V), &p->policy, why, sizeof why)) usage_error("%s", why);
    check_schedule_mesh(p);
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
    pipe_schedule_make(&p->s, p->kind, p->pp, tr->o.micro, p->V, p->K);
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
    if (p->fo.zero) p->f.micro = p->s.M;   /* ZeRO acts at each of the schedule's units (TeraPipe: slices) */
    if (p->tp > 1) runner_add_seam(&p->run, &p->t.st.comm_s);
    if (p->cp > 1) runner_add_seam(&p->run, &p->c.st.comm_s);
}

/* The header: the mesh and what each axis holds on this rank (rank 0's). */
static void print_mesh(const train_t *tr, const nd_t *p) {
    const model_t *m = &tr->model;
    int L = tr->cfg.layers, V = p->V, M = p->s.M / p->K;
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
    if (p->K > 1) say("pp:      each micro-batch cut into %d token slices of %d tokens\n", p->K, tr->cfg.seq / p->K);
    say("dp:      %d rank%s in the context x data group (cp %d x dp %d): %s; recompute %s\n", tr->grad.size,
        tr->grad.size == 1 ? "" : "s", p->cp, tr->dp,
        p->fo.zero ? fsdp_stage_name(p->fo.zero) : tr->grad.size > 1 ? "gradients all-reduced in buckets after "
        "each stage's last backward" : "nothing to sum", p->policy.name);
}

void nd_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    nd_t *p = ctx;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    check_mesh(tr, p);
    *tp = p->tp;
    *cp = p->cp;
    *pp = p->pp;
}

train_step_fn nd_compose(train_t *tr, void *ctx, void **step_ctx) {
    nd_t *p = ctx;
    shard(tr, p);
    if (p->dry_run) {
        nd_dry_run(tr, p);
        pipe_schedule_free(&p->s);
        usage_exit_ok();
    }
    wrap(tr, p);
    print_mesh(tr, p);
    if (p->fo.zero) train_optimizer(tr, p->f.pieces, p->f.n_units, p->f.S);
    else train_optimizer(tr, NULL, 0, 0);
    train_hooks_add(&tr->step_note, nd_step_note, p);   /* after the notes of the strategies it wraps */
    *step_ctx = p;
    return nd_step;
}
