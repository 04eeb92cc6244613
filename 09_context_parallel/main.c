/* main.c: 09_context_parallel/cp, the context-parallel trainer: the shared
 * training loop (common/train.h) on a model whose sequences are split over
 * --cp ranks, with ring attention or Ulysses (cp.c) as its attention core;
 * the remaining ranks are data-parallel replicas, and the gradients are
 * all-reduced over the context x data group, as Llama 3 does.
 *
 *   mpirun -np 2 ./09_context_parallel/cp [--cp 2] [--cp-algo ring|ulysses] [--no-balance]
 *
 * One step, on every rank (the runner of common/runner.h with DDP's
 * strategy, in cp_step below):
 *   for each micro-batch of this data-parallel rank's share of the batch:
 *       forward and backward of this rank's tokens of every sequence; the
 *           attention core brings the other ranks' keys and values (ring)
 *           or exchanges tokens for heads (Ulysses)
 *       on the last micro-batch, the finished layers' gradients go into
 *           buckets all-reduced over the context x data group
 *   wait for the buckets
 * At the end the program prints each rank's attention work and time (the
 * causal balance), the bytes per layer against cp.h's formulas, and the
 * memory per rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "cp.h"
#include "grad_sync.h"
#include "perf.h"
#include "runner.h"
#include "train.h"

#define BENCH_HEADER "algo,cp,dp,balance,seq,batch,step_ms,attn_ms_max,attn_ms_min,attn_cpu_ms_max," \
                     "attn_cpu_ms_min,attn_comm_ms,cp_mb_per_step,mem_peak_mb,acts_mb,rss_mb"

typedef struct {
    int cp, no_balance;
    const char *algo;
    const char *bench_csv;
    cp_t c;
    grad_sync_t gs;
    runner_t run;
    cp_stats_t last, sum;    /* the last step; the sum over the steps after the first */
    int timed;
} cpp_t;

/* The runner's step (the attention's blocking communication counts as
 * exposed, not as compute); each rank counts its own tokens' loss. */
static void cp_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    cpp_t *p = ctx;
    cp_stats_reset(&p->c);
    runner_step(tr, &p->run, step, st);
    p->last = p->c.st;
    if (step > tr->start + 1) {
        p->sum.compute_s += p->c.st.compute_s;
        p->sum.compute_s_cpu += p->c.st.compute_s_cpu;
        p->sum.comm_s += p->c.st.comm_s;
        p->timed++;
    }
}

static void layout_line(const model_t *m, const char *algo) {
    const int C = m->shard.cp;
    say("cp:      %s attention over %d rank%s; each holds %d token%s of every sequence, %s:", algo, C,
        C == 1 ? "" : "s", m->T, m->T == 1 ? "" : "s",
        m->nck == 2 ? "balanced (chunks i and 2C-1-i of 2C)" : "in order (chunk i of C)");
    for (int r = 0; r < C && r < 8; r++) {
        say(" %d:", r);
        for (int k = 0; k < m->nck; k++) {
            int p0 = model_cp_chunk_pos(m, r, k);
            say("%s[%d,%d)", k ? "+" : "", p0, p0 + m->Tc);
        }
    }
    say("%s\n", C > 8 ? " ..." : "");
}

/* Per rank: its attention work against the formula, and its mean times. */
static void report_cp(const train_t *tr, const cpp_t *p, cp_algo_t algo) {
    const model_t *m = &tr->model;
    const int W = tr->dist.world;
    const int cpu = tr->dev.kind == DEV_CPU;
    double mine[7] = {tr->mesh.coord[AXIS_CP], tr->dp_rank,
                      p->last.calls[0] ? p->last.pairs / p->last.calls[0] : 0,
                      cp_pairs_formula(m, algo, tr->mesh.coord[AXIS_CP], tr->mb),
                      p->timed ? 1e3 * p->sum.compute_s / p->timed : 0,
                      p->timed ? 1e3 * p->sum.compute_s_cpu / p->timed : 0,
                      p->timed ? 1e3 * p->sum.comm_s / p->timed : 0};
    double *all = xmalloc(sizeof mine * (size_t)W);
    dist_watch("the gather of every rank's attention work", MPI_COMM_WORLD);
    MPI_CHECK(MPI_Gather(mine, 7, MPI_DOUBLE, all, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    watch_end();
    double whole = (double)tr->mb * m->cfg.heads * m->cfg.seq * (m->cfg.seq + 1.0) / 2;
    say("attention per rank (one layer's forward, %d sequence%s): query-key pairs against cp.h's formula; "
        "ms per step in attention kernels%s and waiting on communication (mean of steps 2-%d)\n", tr->mb,
        tr->mb == 1 ? "" : "s", cpu ? " (wall clock, and the rank's CPU time)" : "", tr->o.steps);
    for (int w = 0; w < W && tr->dist.rank == 0; w++) {
        const double *a = all + 7 * w;
        if (a[1] != 0) continue;   /* the first data-parallel replica speaks for the others */
        char cpus[48] = "";
        if (cpu) snprintf(cpus, sizeof cpus, " (cpu %8.2f)", a[5]);
        say("  cp rank %d: %10.0f pairs (formula %10.0f, %5.1f%% of the causal triangle) | "
            "attention %8.2f ms%s | comm %7.2f ms\n", (int)a[0], a[2], a[3], 100 * a[2] / whole, a[4], cpus, a[6]);
    }
    free(all);
    double f[2];
    cp_bytes_formula(m, algo, tr->mb, f);
    say("cp bytes: per layer and micro-batch on the context-parallel communicator, each rank: forward %.3f kB "
        "(formula %.3f kB), backward %.3f kB (formula %.3f kB)\n",
        p->last.calls[0] ? p->last.bytes[0] / p->last.calls[0] / 1e3 : 0, f[0] / 1e3,
        p->last.calls[1] ? p->last.bytes[1] / p->last.calls[1] / 1e3 : 0, f[1] / 1e3);
    const mem_stats_t *mem = dev_mem();
    say("memory:  activations of one micro-batch %.6f MB per rank (%d of %d tokens of each sequence); "
        "communication buffers %.6f MB; all activation buffers at most %.2f MB\n", tr->acts.bytes / 1e6,
        m->T, m->cfg.seq, mem->peak[MEM_COMM] / 1e6, mem->peak[MEM_ACTS] / 1e6);
}

static cp_algo_t algo_of(const cpp_t *p) { return strcmp(p->algo, "ulysses") == 0 ? CP_ULYSSES : CP_RING; }

static cpp_t cpp = {.cp = 0, .algo = "ring"};

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    cpp_t *p = ctx;
    (void)tp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    if (p->cp == 0) p->cp = tr->dist.world;
    *cp = p->cp;
}

/* Each sequence cut over the cp ranks, attention across them, DDP over the
 * context x data group. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    cpp_t *p = ctx;
    cp_algo_t algo = algo_of(p);
    tr->shard.cp_balance = !p->no_balance;
    cp_check(&tr->cfg, &tr->shard, algo);
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    model_t *m = &tr->model;
    cp_init(&p->c, &tr->axis[AXIS_CP], m, algo);
    layout_line(m, cp_algo_name[algo]);
    if (algo == CP_ULYSSES)
        say("cp:      Ulysses: each rank attends %d of %d query heads (%d kv head%s%s) over all %d tokens\n",
            p->c.Hc, m->H, p->c.KVc, p->c.KVc == 1 ? "" : "s",
            m->KV % p->cp ? ", each shared by the ranks whose query heads read it" : "", tr->cfg.seq);
    say("dp:      gradients all-reduced over the %d rank%s of the context x data group (cp %d x dp %d)\n",
        tr->grad.size, tr->grad.size == 1 ? "" : "s", p->cp, tr->dp);
    runner_init(&p->run, NULL, tr, train_ddp(tr, &p->gs, 1), 0, 0);
    runner_add_seam(&p->run, &p->c.st.comm_s);
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = p;
    return cp_step;
}

static void report(train_t *tr, void *ctx) {
    cpp_t *p = ctx;
    cp_algo_t algo = algo_of(p);
    report_cp(tr, p, algo);
    if (p->bench_csv && tr->timed > 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double v[7] = {p->timed ? 1e3 * p->sum.compute_s / p->timed : 0, 0,
                       p->timed ? 1e3 * p->sum.compute_s_cpu / p->timed : 0, 0,
                       p->timed ? 1e3 * p->sum.comm_s / p->timed : 0, (double)dev_mem()->total_peak,
                       ru.ru_maxrss / 1024.0};
        v[1] = -v[0];   /* the minimum over ranks, by the same MAX */
        v[3] = -v[2];
        if (tr->dev.kind != DEV_CPU) v[2] = v[3] = 0;   /* host time of a GPU's launches: not the work */
        double sent = p->last.bytes[0] + p->last.bytes[1];
        dist_allreduce(v, 7, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        dist_allreduce(&sent, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        csv_append_row(p->bench_csv, BENCH_HEADER, "%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.6f,%.6f,%.6f,%.1f",
                       cp_algo_name[algo], p->cp, tr->dp, !p->no_balance, tr->cfg.seq, tr->o.batch,
                       tr->sum_ms / tr->timed, v[0], -v[1], v[2], -v[3], v[4], sent / 1e6, v[5] / 1048576.0,
                       tr->acts.bytes / 1048576.0, v[6]);
    }
    runner_free(&p->run);
    grad_sync_free(&p->gs);
    cp_free(&p->c);
}

static arg_t flags[] = {
    {"cp", ARG_INT, &cpp.cp, "context-parallel degree (0: every rank; the rest are data-parallel replicas)", NULL, 0, 1e6},
    {"cp-algo", ARG_CHOICE, &cpp.algo, "attention across the ranks' tokens", "ring|ulysses", 0, 0},
    {"no-balance", ARG_FLAG, &cpp.no_balance, "one chunk per rank in order (causal work unbalanced) instead of chunks i and 2C-1-i", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &cpp.bench_csv, "append one summary row (algorithm, degrees, sequence, attention time, memory) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("09_context_parallel", "09_context_parallel/cp", "context parallelism",
           "Context parallelism of the Llama-style model: every sequence split over --cp\n"
           "ranks, attention across them by ring attention (key/value blocks passed\n"
           "around a ring, merged by online softmax) or Ulysses (all-to-all from\n"
           "sequence to heads and back); causal load balance with two chunks per rank.\n"
           "The other ranks are data-parallel replicas.",
           flags, &cpp, NULL, check, compose, report)
