/* hsdp.c: hybrid sharding's groups, and the bytes and link time between
 * nodes that they cause (hsdp.h). */
#include <stdio.h>

#include "check.h"
#include "hsdp.h"

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

void hsdp_groups(train_t *tr, hsdp_t *p) {
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
}

void hsdp_link_report(train_t *tr, const hsdp_t *p, double cross[2], double *link_ms) {
    const fsdp_t *f = &p->f;
    /* bytes this rank sent to a ring neighbour on another node, measured and from the formulas */
    fsdp_bytes_t b;
    fsdp_bytes_predict(f, &b);
    cross[0] = cross[1] = 0;
    for (int k = 0; k < COLL_KINDS; k++) {
        cross[0] += next_is_remote(&p->shard) * f->step_bytes.shard[k] + next_is_remote(&p->rep) * f->step_bytes.replicate[k];
        cross[1] += next_is_remote(&p->shard) * b.shard[k] + next_is_remote(&p->rep) * b.replicate[k];
    }
    dist_allreduce(cross, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "the bytes between groups");
    cross[0] /= tr->dist.world;
    cross[1] /= tr->dist.world;
    *link_ms = link_seconds(f, comm_link()) * 1e3;
    if (tr->o.node_size)
        say("link:    per step, %.3f MB per rank crossed between nodes (formula %.3f); the slow links add "
            "%.2f ms by alpha-beta (%g us + bytes / %g GB/s per ring step that crosses)\n", cross[0] / 1e6,
            cross[1] / 1e6, *link_ms, tr->o.inter_us, tr->o.inter_gbps);
}
