/* tp.c: the tensor-parallel seams over a communicator (see tp.h). */
#include "tp.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"

/* forward of f under sp: the ranks' row blocks, in rank order */
static void gather(void *ctx, const void *src, void *dst, size_t rows, int C, dtype_t t) {
    tp_t *tp = ctx;
    comm_allgather(tp->comm, src, dst, rows * (size_t)C, t);
}

/* g forward / f backward: the sum over the ranks; with sp only this rank's
 * block of rows of it */
static void reduce(void *ctx, void *src, void *dst, size_t rows, int C, dtype_t t) {
    tp_t *tp = ctx;
    if (src == dst) comm_allreduce(tp->comm, src, src, rows * (size_t)C, t, RED_SUM);
    else comm_reduce_scatter(tp->comm, src, dst, rows / (size_t)tp->comm->size * (size_t)C, t, RED_SUM);
}

/* Vocabulary-parallel cross-entropy: lse over the whole vocabulary from the
 * ranks' lse of their slices; the target logit from the one rank that has
 * it (the others contribute 0). */
static void vocab(void *ctx, float *lse, float *picked, int n) {
    tp_t *tp = ctx;
    const device_t *d = tp->comm->dev;
    size_t need = (size_t)tp->comm->size * (size_t)n;
    if (need > tp->lse_cap) {
        dev_free(d, tp->lse_parts);
        tp->lse_parts = dev_alloc_as(d, need * sizeof(float), MEM_COMM);
        tp->lse_cap = need;
    }
    comm_allgather(tp->comm, lse, tp->lse_parts, (size_t)n, DT_F32);
    op_lse_combine(d, tp->lse_parts, lse, tp->comm->size, n);
    comm_allreduce(tp->comm, picked, picked, (size_t)n, DT_F32, RED_SUM);
}

void tp_init(tp_t *t, comm_t *comm, model_t *m) {
    memset(t, 0, sizeof *t);
    t->comm = comm;
    t->seams = (model_tp_t){t, gather, reduce, vocab};
    m->tp = &t->seams;
    if (m->shard.tp != comm->size)
        die("tp_init: the model has tensor parallelism %d, the communicator %d ranks", m->shard.tp,
            comm->size);
    /* kv heads shared by r consecutive ranks: a communicator per group */
    int nt = model_tensors(&m->cfg, &m->shard, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(&m->cfg, &m->shard, ts, nt);
    int r = 1;
    for (int k = 0; k < nt; k++)
        if (!ts[k].is_norm && ts[k].tp_replicas > 1) r = ts[k].tp_replicas;
    free(ts);
    if (r > 1) {
        MPI_Comm g;
        MPI_CHECK(MPI_Comm_split(comm->mpi, comm->rank / r, comm->rank, &g));
        comm_init(&t->kv, g, comm->backend == COMM_NCCL ? "nccl" : "mpi", comm->dev);
        t->kv.name = "shared kv-head";
        MPI_Comm_free(&g);
        t->has_kv = 1;
    }
}

void tp_free(tp_t *t) {
    if (t->has_kv) comm_destroy(&t->kv);
    dev_free(t->comm->dev, t->lse_parts);
    memset(t, 0, sizeof *t);
}

void tp_reduce_replicated_grads(tp_t *t, model_t *m, const optim_t *opt) {
    int nt = model_tensors(&m->cfg, &m->shard, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(&m->cfg, &m->shard, ts, nt);
    for (int p = 0; p < opt->npieces; p++) {
        const optim_piece_t *pc = &opt->pieces[p];
        for (int k = 0; k < nt; k++) {
            if (!ts[k].tp_partial_grad) continue;
            size_t b = ts[k].offset, e = b + ts[k].rows * ts[k].cols;
            if (b < pc->flat) b = pc->flat;
            if (e > pc->flat + pc->count) e = pc->flat + pc->count;
            if (e <= b) continue;
            comm_t *c = ts[k].tp_replicas == m->shard.tp ? t->comm : &t->kv;
            float *g = pc->grad + (b - pc->flat);
            comm_allreduce(c, g, g, e - b, DT_F32, RED_SUM);
        }
    }
    free(ts);
}
