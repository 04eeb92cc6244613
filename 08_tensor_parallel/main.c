/* main.c: 08_tensor_parallel/tp, the tensor-parallel trainer: the shared
 * training loop (common/train.h) on a model split over --tp ranks by the
 * seams of tp.c, with --sp for sequence parallelism and the remaining ranks
 * as data-parallel replicas (common/grad_sync.h).
 *
 *   mpirun -np 2 ./08_tensor_parallel/tp [--tp 2] [--sp] [--steps 200 ...]
 *
 * One step, on every rank (the runner of common/runner.h with DDP's
 * strategy, in tp_step below):
 *   for each micro-batch of this data-parallel rank's share of the batch:
 *       forward: every layer runs its column- and row-parallel products on
 *           this rank's slice; the seams all-reduce (or, with --sp,
 *           all-gather and reduce-scatter) the activations between them
 *       backward: the same seams in reverse; on the last micro-batch the
 *           finished layers' gradients go into data-parallel buckets
 *   wait for the buckets; sum the gradients of blocks the tp ranks share
 * and the loop clips by the global norm (each shard's parts counted once)
 * and applies AdamW to this rank's shard. At the end the program prints the
 * bytes each seam sent per layer beside the formulas of tp.h, and the
 * activation memory beside its formula. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "grad_sync.h"
#include "perf.h"
#include "runner.h"
#include "tp.h"
#include "train.h"

#define BENCH_HEADER "tp,sp,dp,node_size,inter_gbps,inter_us,step_ms,compute_ms,exposed_comm_ms," \
                     "tp_comm_ms,tp_mb_per_step,acts_mb"

typedef struct {
    int tp, sp;
    const char *bench_csv;
    tp_t t;
    grad_sync_t gs;
    runner_t run;
    tp_stats_t last;          /* the last step's accounting */
    double sum_tp_s;          /* tensor-parallel communication, steps after the first */
    int timed;
} tpp_t;

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

/* The bytes of the last step beside tp.h's formulas, per unit pass and in all
 * (kB to the byte, so a test can compare them exactly). */
static void report_bytes(const train_t *tr, const tpp_t *p) {
    const model_t *m = &tr->model;
    const tp_stats_t *s = &p->last;
    size_t rows = tr->acts.rows_full;
    if (p->tp == 1) {
        say("tp bytes: none (tensor parallelism 1: the model calls no seam)\n");
        return;
    }
    tp_bytes_t f = tp_bytes_formula(m, rows);
    double T = p->tp, X = (double)rows * m->cfg.dim * dtype_size(m->dtype);
    say("tp bytes: each rank's sends on the tensor-parallel communicator in step %d, per unit pass and "
        "micro-batch, in kB (X = %zu rows x %d x %zu bytes = %.3f kB, f = (T-1)/T = %.4g)\n",
        tr->o.steps, rows, m->cfg.dim, dtype_size(m->dtype), X / 1e3, (T - 1) / T);
    say("  %-10s %-9s %13s %13s   %s\n", "unit", "pass", "measured", "formula", "collectives");
    static const char *place[TP_PLACES] = {"embedding", "layer", "head"};
    static const char *pass[2] = {"forward", "backward"};
    /* [sp][place][pass] */
    static const char *what[2][TP_PLACES][2] = {
        {{"all-reduce 2f X", "-"}, {"2 all-reduces 4f X", "2 all-reduces 4f X"},
         {"all-gather lse + all-reduce picked (fp32 per token)", "all-reduce 2f X"}},
        {{"reduce-scatter f X", "all-gather f X"},
         {"2 all-gathers + 2 reduce-scatters 4f X", "4 all-gathers + 2 reduce-scatters 6f X"},
         {"all-gather f X + lse + picked", "all-gather + reduce-scatter 2f X"}}};
    double total = 0, ftotal = 0;
    for (int pl = 0; pl < TP_PLACES; pl++)
        for (int ps = 0; ps < 2; ps++) {
            long n = s->passes[pl][ps];
            total += s->bytes[pl][ps];
            ftotal += f.b[pl][ps] * n;
            say("  %-10s %-9s %13.3f %13.3f   %s\n", place[pl], pass[ps], n ? s->bytes[pl][ps] / n / 1e3 : 0,
                f.b[pl][ps] / 1e3, T > 1 ? what[p->sp][pl][ps] : "-");
        }
    double fg = tp_grad_bytes_formula(m);
    say("  %-10s %-9s %13.3f %13.3f   %s\n", "gradients", "per step", s->grad_bytes / 1e3, fg / 1e3,
        "all-reduces of norm gains (sp) and shared kv heads");
    say("  %-10s %-9s %13.3f %13.3f   %d layers x %d micro-batch%s\n", "step", "total",
        (total + s->grad_bytes) / 1e3, (ftotal + fg) / 1e3, m->n_layers, p->run.s->M,
        p->run.s->M == 1 ? "" : "es");
}

static void report_acts(const train_t *tr, const tpp_t *p) {
    const model_t *m = &tr->model;
    tp_acts_t f = tp_acts_formula(m, tr->mb);
    say("acts:    one micro-batch's activations per rank %.6f MB (formula %.6f MB = outside the tp regions "
        "%.6f + inside %.6f + tokens %.6f)\n", tr->acts.bytes / 1e6, f.total / 1e6, f.outside / 1e6,
        f.inside / 1e6, f.other / 1e6);
    /* the same shard with sequence parallelism toggled, from the formula alone */
    model_t other = *m;
    other.shard.sp = !m->shard.sp;
    if (p->tp > 1 && ((size_t)tr->mb * m->T) % (size_t)p->tp == 0) {
        tp_acts_t g = tp_acts_formula(&other, tr->mb);
        say("acts:    %s %.6f MB (outside %.6f)\n",
            m->shard.sp ? "without --sp the formula gives" : "with --sp the formula gives", g.total / 1e6,
            g.outside / 1e6);
    }
    say("acts:    high-water of all activation buffers (with backward scratch) %.2f MB per rank\n",
        dev_mem()->peak[MEM_ACTS] / 1e6);
}

static tpp_t tpp;

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    tpp_t *p = ctx;
    (void)cp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    if (p->tp == 0) p->tp = tr->dist.world;
    if (p->sp && p->tp < 2) usage_error("--sp needs tensor parallelism (--tp 2 or more)");
    *tp = p->tp;
}

/* The model split by the seams, DDP over the replicas. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
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

static void report(train_t *tr, void *ctx) {
    tpp_t *p = ctx;
    report_bytes(tr, p);
    report_acts(tr, p);
    if (p->timed) say("tp time: %.2f ms per step in the seams (blocking: all of it exposed)\n", 1e3 * p->sum_tp_s / p->timed);
    if (p->bench_csv && tr->timed > 0) {
        double tp_ms = p->timed ? 1e3 * p->sum_tp_s / p->timed : 0;
        dist_allreduce(&tp_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        double sent = 0;
        for (int pl = 0; pl < TP_PLACES; pl++)
            for (int ps = 0; ps < 3; ps++) sent += p->last.bytes[pl][ps];
        sent += p->last.grad_bytes;
        double ms = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
        csv_append_row(p->bench_csv, BENCH_HEADER, "%d,%d,%d,%d,%.6g,%.6g,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f", p->tp,
                       p->sp, tr->dp, tr->o.node_size, tr->o.node_size ? tr->o.inter_gbps : 0,
                       tr->o.node_size ? tr->o.inter_us : 0, ms, ms - ex, ex, tp_ms, sent / 1e6, tr->acts.bytes / 1e6);
    }
    runner_free(&p->run);
    grad_sync_free(&p->gs);
    tp_free(&p->t);
}

static arg_t flags[] = {
    {"tp", ARG_INT, &tpp.tp, "tensor-parallel degree (0: every rank; the rest are data-parallel replicas)", NULL, 0, 1e6},
    {"sp", ARG_FLAG, &tpp.sp, "sequence parallelism: shard the residual stream and norms along the sequence", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &tpp.bench_csv, "append one summary row (degrees, link, mean times, bytes) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("08_tensor_parallel", "08_tensor_parallel/tp", "tensor parallelism",
           "Megatron-style tensor parallelism of the Llama-style model: heads, ffn and\n"
           "vocabulary split over --tp ranks, one all-reduce after each row-parallel\n"
           "product (the f and g operators), --sp for sequence parallelism; the other\n"
           "ranks are data-parallel replicas.",
           flags, &tpp, NULL, check, compose, report)
