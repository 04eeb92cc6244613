/* main.c: 05_hsdp/hsdp, hybrid sharded data parallel: FSDP (04_fsdp/fsdp.c)
 * inside groups of --shard K consecutive ranks, plain data parallelism
 * across the R = N / K groups.
 *
 *   mpirun -np 4 ./05_hsdp/hsdp --shard 2 [--node-size 2 --inter-gbps 1 --inter-us 20]
 *
 * The data-parallel axis is cut in two (common/dist.h mesh_dp_split): the
 * shard group (K ranks, one copy of the training state between them) and
 * the replicate group (the R ranks that hold the same pieces in the other
 * groups). Every unit's gradient is reduce-scattered inside the group and
 * its piece all-reduced across the groups; weights are gathered inside the
 * group only. K = N is FSDP, K = 1 is DDP with the optimizer step of one
 * rank's whole "shard".
 *
 * With the link model (--node-size G) groups of G ranks behave as nodes
 * behind slower links. The program counts the bytes that cross between
 * nodes and predicts the time the slow links add to a step from the
 * alpha-beta cost of every collective it issued (alpha + bytes / beta per
 * ring step that crosses, comm.h), to put beside the measured step. */
#include <stdio.h>

#include "check.h"
#include "04_fsdp/fsdp.h"
#include "perf.h"
#include "runner.h"

#define BENCH_HEADER "shard,replicas,ranks,node_size,inter_gbps,inter_us,zero,dtype,step_ms,exposed_ms," \
                     "cross_mb,cross_pred_mb,link_pred_ms,sent_mb,mem_mb"

/* Some rank of c sends to a ring neighbour on another simulated node. */
static int ring_crosses(const comm_t *c) {
    if (!c || !c->node) return 0;
    for (int r = 0; r < c->size; r++)
        if (c->node[r] != c->node[(r + 1) % c->size]) return 1;
    return 0;
}

/* This rank's ring successor in c is on another simulated node. */
static int next_is_remote(const comm_t *c) {
    return c->node && c->node[c->rank] != c->node[(c->rank + 1) % c->size];
}

/* Seconds the slow links add to one step, summed over the collectives it
 * issues: a ring over n ranks runs n - 1 steps (all-gather, reduce-scatter)
 * or 2 (n - 1) (all-reduce) of one piece each, and each step in which some
 * message crosses costs alpha + piece / beta (common/comm.h's model). */
static double link_seconds(const fsdp_t *f, const comm_link_t *l) {
    if (!l->node_size) return 0;
    double s = 0, w = (double)dtype_size(f->wt), a = l->us * 1e-6, b = l->gbps * 1e9;
    int N = f->N, R = f->R, z = f->o.zero, m = f->micro;
    for (int u = 0; u < f->n_units; u++) {
        double piece = (double)f->per[u] * w;
        if (N > 1 && ring_crosses(f->shard)) {
            int gathers = z <= 2 ? 1 : m * (1 + (f->reshard && u != f->n_units - 1));
            int scatters = z == 1 ? 1 : m;
            s += (gathers + scatters) * (N - 1) * (a + piece / b);
        }
        if (R > 1 && ring_crosses(f->rep)) s += 2.0 * (R - 1) * (a + piece / R / b);
    }
    return s;
}

typedef struct {
    fsdp_opts_t fo;
    int K;
    const char *bench_csv;
    comm_t shard, rep;
    fsdp_t f;
    runner_t run;
} hsdp_t;

static hsdp_t h = {.fo = FSDP_OPTS_DEFAULT};

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    hsdp_t *p = ctx;
    (void)tr, (void)tp, (void)cp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    if (p->fo.zero == 0) usage_error("hybrid sharding needs --zero 1, 2 or 3 (--shard 1 is DDP already)");
}

/* The shard and replicate groups (mesh_dp_split), then ZeRO over them. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    hsdp_t *p = ctx;
    int K = p->K;
    if (K == 0) K = p->K = tr->o.node_size > 0 && tr->dp % tr->o.node_size == 0 ? tr->o.node_size : tr->dp;
    if (K > tr->dp) usage_error("--shard %d is more than the %d data-parallel ranks", K, tr->dp);
    MPI_Comm sc, rc;
    mesh_dp_split(&tr->mesh, K, &sc, &rc);   /* refuses a K that does not divide them */
    comm_init(&p->shard, sc, K > 1 ? tr->o.c.comm : "mpi", &tr->dev);
    comm_init(&p->rep, rc, tr->dp / K > 1 ? tr->o.c.comm : "mpi", &tr->dev);
    MPI_Comm_free(&sc);
    MPI_Comm_free(&rc);
    p->shard.name = "shard group";
    p->rep.name = "replicas";
    tr->comms[tr->ncomms++] = &p->shard;
    tr->comms[tr->ncomms++] = &p->rep;
    say("hsdp:    %d data-parallel ranks = %d group%s of %d (shard) x %d replica%s%s\n", tr->dp, tr->dp / K,
        tr->dp / K == 1 ? "" : "s", K, tr->dp / K, tr->dp / K == 1 ? "" : "s",
        tr->o.node_size ? (K <= tr->o.node_size && tr->o.node_size % K == 0 ? "; each group inside one node"
                                                                            : "; groups span nodes") : "");
    *step_ctx = &p->run;
    return fsdp_compose(&p->f, &p->run, tr, &p->shard, &p->rep, &p->fo);
}

/* Bytes to the other nodes and the time the slow links add, measured and
 * from the formulas, then the row. */
static void report(train_t *tr, void *ctx) {
    hsdp_t *p = ctx;
    fsdp_t *f = &p->f;
    double mem, sent;
    fsdp_report(f, &mem, NULL, &sent, NULL);
    /* bytes this rank sent to a ring neighbour on another node, measured and from the formulas */
    fsdp_bytes_t b;
    fsdp_bytes_predict(f, &b);
    double cross[2] = {0, 0};
    for (int k = 0; k < COLL_KINDS; k++) {
        cross[0] += next_is_remote(&p->shard) * f->step_bytes.shard[k] + next_is_remote(&p->rep) * f->step_bytes.replicate[k];
        cross[1] += next_is_remote(&p->shard) * b.shard[k] + next_is_remote(&p->rep) * b.replicate[k];
    }
    dist_allreduce(cross, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "the bytes between groups");
    cross[0] /= tr->dist.world;
    cross[1] /= tr->dist.world;
    double link_ms = link_seconds(f, comm_link()) * 1e3;
    double step_ms = tr->timed ? tr->sum_ms / tr->timed : 0, ex = tr->timed ? tr->sum_exposed / tr->timed : 0;
    if (tr->o.node_size)
        say("link:    per step, %.3f MB per rank crossed between nodes (formula %.3f); the slow links add "
            "%.2f ms by alpha-beta (%g us + bytes / %g GB/s per ring step that crosses)\n", cross[0] / 1e6,
            cross[1] / 1e6, link_ms, tr->o.inter_us, tr->o.inter_gbps);
    if (tr->timed > 0)
        csv_append_row(p->bench_csv, BENCH_HEADER, "%d,%d,%d,%d,%g,%g,%d,%s,%.3f,%.3f,%.4f,%.4f,%.3f,%.4f,%.4f", p->K,
                       tr->dp / p->K, tr->dist.world, tr->o.node_size, tr->o.node_size ? tr->o.inter_gbps : 0,
                       tr->o.node_size ? tr->o.inter_us : 0, p->fo.zero, dtype_name(tr->dtype), step_ms, ex,
                       cross[0] / 1e6, cross[1] / 1e6, link_ms, sent / 1e6, mem / 1e6);
    runner_free(&p->run);
    fsdp_free(f);
    comm_destroy(&p->shard);
    comm_destroy(&p->rep);
}

static arg_t flags[] = {
    {"shard", ARG_INT, &h.K, "ranks per shard group (FSDP inside, replicas across); 0: --node-size, or all", NULL, 0, 1e6},
    FSDP_FLAGS(h.fo),
    {"bench-csv", ARG_STRING, &h.bench_csv, "append one summary row (step time, bytes between nodes, prediction) to this CSV", NULL, 0, 0},
};

static const train_chapter_t chapter = {
    {"05_hsdp", "05_hsdp/hsdp", "hybrid sharded data parallel",
     "Hybrid sharding of the Llama-style model: the training state sharded (ZeRO-1/2/3)\n"
     "inside groups of --shard K ranks, the groups replicated, each unit's gradient piece\n"
     "all-reduced across them. With the link model (--node-size, --inter-gbps,\n"
     "--inter-us) it counts the bytes between nodes and predicts their time.",
     flags, ARRAY_LEN(flags), NULL, 0},
    &h, NULL, check, compose, report};

int main(int argc, char **argv) { return train_main(argc, argv, &chapter); }
