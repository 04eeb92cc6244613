/* main.c: 05_hsdp/hsdp, hybrid sharded data parallel (hsdp.h): FSDP
 * (04_fsdp/fsdp.c) inside groups of --shard K consecutive ranks, plain data
 * parallelism across the R = N / K groups.
 *
 *   mpirun -np 4 ./05_hsdp/hsdp --shard 2 [--node-size 2 --inter-gbps 1 --inter-us 20] */
#include "check.h"
#include "hsdp.h"
#include "perf.h"

#define BENCH_HEADER "shard,replicas,ranks,node_size,inter_gbps,inter_us,zero,dtype,step_ms,exposed_ms," \
                     "cross_mb,cross_pred_mb,link_pred_ms,sent_mb,mem_mb"

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
    hsdp_groups(tr, p);
    *step_ctx = &p->run;
    return fsdp_compose(&p->f, &p->run, tr, &p->shard, &p->rep, &p->fo);
}

/* Bytes between nodes and the slow links' time (hsdp.c), then the row. */
static void report(train_t *tr, void *ctx) {
    hsdp_t *p = ctx;
    double mem, sent;
    fsdp_report(&p->f, &mem, NULL, &sent, NULL);
    double cross[2], link_ms;
    hsdp_link_report(tr, p, cross, &link_ms);
    double step_ms = tr->timed ? tr->sum_ms / tr->timed : 0, ex = tr->timed ? tr->sum_exposed / tr->timed : 0;
    if (tr->timed > 0)
        csv_append_row(p->bench_csv, BENCH_HEADER, "%d,%d,%d,%d,%g,%g,%d,%s,%.3f,%.3f,%.4f,%.4f,%.3f,%.4f,%.4f", p->K,
                       tr->dp / p->K, tr->dist.world, tr->o.node_size, tr->o.node_size ? tr->o.inter_gbps : 0,
                       tr->o.node_size ? tr->o.inter_us : 0, p->fo.zero, dtype_name(tr->dtype), step_ms, ex,
                       cross[0] / 1e6, cross[1] / 1e6, link_ms, sent / 1e6, mem / 1e6);
    runner_free(&p->run);
    fsdp_free(&p->f);
    comm_destroy(&p->shard);
    comm_destroy(&p->rep);
}

static arg_t flags[] = {
    {"shard", ARG_INT, &h.K, "ranks per shard group (FSDP inside, replicas across); 0: --node-size, or all", NULL, 0, 1e6},
    FSDP_FLAGS(h.fo),
    {"bench-csv", ARG_STRING, &h.bench_csv, "append one summary row (step time, bytes between nodes, prediction) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("05_hsdp", "05_hsdp/hsdp", "hybrid sharded data parallel",
           "Hybrid sharding of the Llama-style model: the training state sharded (ZeRO-1/2/3)\n"
           "inside groups of --shard K ranks, the groups replicated, each unit's gradient piece\n"
           "all-reduced across them. With the link model (--node-size, --inter-gbps,\n"
           "--inter-us) it counts the bytes between nodes and predicts their time.",
           flags, &h, NULL, check, compose, report)
