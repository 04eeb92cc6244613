/* comm.c: the communicator (see comm.h) and its MPI backend.
 *
 * Every call is described once as a coll_t and handed to a backend: NCCL
 * (comm_nccl.cu) or MPI here. MPI works on host memory; when the buffers live
 * on a GPU (several ranks sharing one GPU, or --comm mpi) they are staged
 * through host buffers around the MPI call. */
#include "comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "comm_nccl.h"

const char *comm_backend_name(comm_backend b) { return b == COMM_NCCL ? "nccl" : "mpi"; }

/* ---- reductions on the host ------------------------------------------------ */

void reduce_host(void *inout, const void *in, size_t n, dtype_t t, redop_t op) {
    if (t == DT_F32) {
        float *a = (float *)inout;
        const float *b = (const float *)in;
        if (op == RED_SUM) for (size_t i = 0; i < n; i++) a[i] += b[i];
        else for (size_t i = 0; i < n; i++) a[i] = a[i] > b[i] ? a[i] : b[i];
    } else {
        bf16_t *a = (bf16_t *)inout;
        const bf16_t *b = (const bf16_t *)in;
        for (size_t i = 0; i < n; i++) {
            float x = bf16_to_f32(a[i]), y = bf16_to_f32(b[i]);
            a[i] = f32_to_bf16(op == RED_SUM ? x + y : (x > y ? x : y));
        }
    }
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    reduce_host(inout, in, (size_t)*len, DT_BF16, RED_SUM);
}
static void bf16_max_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    reduce_host(inout, in, (size_t)*len, DT_BF16, RED_MAX);
}

MPI_Datatype comm_mpi_type(dtype_t t) { return t == DT_BF16 ? MPI_UINT16_T : MPI_FLOAT; }

MPI_Op comm_mpi_op(dtype_t t, redop_t op) {
    static MPI_Op bf16_ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
    if (t == DT_F32) return op == RED_SUM ? MPI_SUM : MPI_MAX;
    if (bf16_ops[op] == MPI_OP_NULL)
        MPI_CHECK(MPI_Op_create(op == RED_SUM ? bf16_sum_fn : bf16_max_fn, 1, &bf16_ops[op]));
    return bf16_ops[op];
}

/* ---- set-up ----------------------------------------------------------------- */

void comm_init(comm_t *cm, MPI_Comm c, const char *want, const device_t *dev) {
    memset(cm, 0, sizeof *cm);
    MPI_CHECK(MPI_Comm_dup(c, &cm->mpi));
    MPI_CHECK(MPI_Comm_set_errhandler(cm->mpi, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(cm->mpi, &cm->rank));
    MPI_CHECK(MPI_Comm_size(cm->mpi, &cm->size));
    cm->dev = dev;

    /* NCCL needs every rank on its own GPU: compare (host, gpu) pairs. */
    int own_gpu = 0;
    if (dev->kind == DEV_CUDA) {
        char me[96], *all = xmalloc(96 * (size_t)cm->size);
        memset(me, 0, sizeof me);
        gethostname(me, 64);
        snprintf(me + 64, 32, "%d", dev->gpu);
        MPI_CHECK(MPI_Allgather(me, 96, MPI_CHAR, all, 96, MPI_CHAR, cm->mpi));
        own_gpu = 1;
        for (int r = 0; r < cm->size; r++)
            if (r != cm->rank && memcmp(all + 96 * r, me, 96) == 0) own_gpu = 0;
        free(all);
        int every = 0;
        MPI_CHECK(MPI_Allreduce(&own_gpu, &every, 1, MPI_INT, MPI_MIN, cm->mpi));
        own_gpu = every;
    }
    if (strcmp(want, "nccl") == 0) {
        if (dev->kind != DEV_CUDA) usage_error("--comm nccl needs GPU buffers (--device cuda)");
        if (!own_gpu) usage_error("--comm nccl needs one GPU per rank; ranks share a GPU here (use --comm mpi)");
        cm->backend = COMM_NCCL;
    } else if (strcmp(want, "mpi") == 0) {
        cm->backend = COMM_MPI;
    } else {
        cm->backend = own_gpu ? COMM_NCCL : COMM_MPI;
    }
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) nccl_comm_init(cm);
#endif
}

void comm_destroy(comm_t *cm) {
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) nccl_comm_destroy(cm);
#endif
    for (int i = 0; i < 2; i++) free(cm->stage[i]);
    MPI_Comm_free(&cm->mpi);
    memset(cm, 0, sizeof *cm);
}

/* ---- the MPI backend ------------------------------------------------------- */

static int icount(size_t n) {
    if (n > INT_MAX) die("message of %zu elements is beyond MPI's int counts", n);
    return (int)n;
}

/* Elements read from send and written to recv by c on this rank. */
static size_t elems_in(const comm_t *cm, const coll_t *c) {
    switch (c->kind) {
    case COLL_REDUCE_SCATTER: case COLL_ALLTOALL: return c->count * (size_t)cm->size;
    case COLL_RECV: return 0;
    default: return c->count;
    }
}
static size_t elems_out(const comm_t *cm, const coll_t *c) {
    switch (c->kind) {
    case COLL_ALLGATHER: case COLL_ALLTOALL: return c->count * (size_t)cm->size;
    case COLL_SEND: return 0;
    case COLL_SENDRECV: return c->recvcount;
    default: return c->count;
    }
}

/* Runs c on host buffers; rq == NULL blocks. */
static void mpi_start(comm_t *cm, const coll_t *c, const void *send, void *recv, MPI_Request *rq) {
    MPI_Datatype ty = comm_mpi_type(c->t);
    MPI_Comm w = cm->mpi;
    size_t es = dtype_size(c->t);
    int n = icount(c->count);
    switch (c->kind) {
    case COLL_ALLREDUCE: {
        const void *s = send == recv ? MPI_IN_PLACE : send;
        MPI_Op op = comm_mpi_op(c->t, c->op);
        if (rq) MPI_CHECK(MPI_Iallreduce(s, recv, n, ty, op, w, rq));
        else MPI_CHECK(MPI_Allreduce(s, recv, n, ty, op, w));
        break;
    }
    case COLL_REDUCE_SCATTER: {
        MPI_Op op = comm_mpi_op(c->t, c->op);
        if (rq) MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, n, ty, op, w, rq));
        else MPI_CHECK(MPI_Reduce_scatter_block(send, recv, n, ty, op, w));
        break;
    }
    case COLL_ALLGATHER: {
        const void *s = (const char *)send == (char *)recv + (size_t)cm->rank * c->count * es
                            ? MPI_IN_PLACE : send;
        if (rq) MPI_CHECK(MPI_Iallgather(s, n, ty, recv, n, ty, w, rq));
        else MPI_CHECK(MPI_Allgather(s, n, ty, recv, n, ty, w));
        break;
    }
    case COLL_BROADCAST:
        if (recv != send && cm->rank == c->peer) memcpy(recv, send, c->count * es);
        MPI_CHECK(MPI_Bcast(recv, n, ty, c->peer, w));
        break;
    case COLL_REDUCE: {
        const void *s = (send == recv && cm->rank == c->peer) ? MPI_IN_PLACE : send;
        MPI_CHECK(MPI_Reduce(s, recv, n, ty, comm_mpi_op(c->t, c->op), c->peer, w));
        break;
    }
    case COLL_ALLTOALL:
        MPI_CHECK(MPI_Alltoall(send, n, ty, recv, n, ty, w));
        break;
    case COLL_SEND:
        MPI_CHECK(MPI_Send(send, n, ty, c->peer, 0, w));
        break;
    case COLL_RECV:
        MPI_CHECK(MPI_Recv(recv, n, ty, c->peer, 0, w, MPI_STATUS_IGNORE));
        break;
    case COLL_SENDRECV:
        MPI_CHECK(MPI_Sendrecv(send, n, ty, c->peer, 0, recv, icount(c->recvcount), ty, c->src, 0,
                               w, MPI_STATUS_IGNORE));
        break;
    }
}

static void *stage(comm_t *cm, int i, size_t bytes) {
    if (cm->stage_bytes[i] < bytes) {
        free(cm->stage[i]);
        cm->stage[i] = xmalloc(bytes);
        cm->stage_bytes[i] = bytes;
    }
    return cm->stage[i];
}

static void run(comm_t *cm, const coll_t *c, comm_req_t *req) {
    if (req) memset(req, 0, sizeof *req);
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) {
        nccl_run(cm, c, req);
        if (req) req->active = 1;
        return;
    }
#endif
    MPI_Request *rq = req ? &req->mpi : NULL;
    if (req) req->active = 1;
    if (cm->dev->kind == DEV_CPU) {
        mpi_start(cm, c, c->send, c->recv, rq);
        return;
    }
    /* Device buffers through the host. Non-blocking calls own their staging
     * buffers until comm_wait; blocking ones reuse the communicator's. */
    size_t es = dtype_size(c->t), in = elems_in(cm, c) * es, out = elems_out(cm, c) * es;
    void *hin, *hout;
    if (req) {
        hin = xmalloc(in);
        hout = xmalloc(out);
        req->host_in = hin;
    } else {
        hin = stage(cm, 0, in);
        hout = stage(cm, 1, out);
    }
    if (in) dev_to_host(cm->dev, hin, c->send, in);
    if (c->kind == COLL_BROADCAST) hout = hin;
    mpi_start(cm, c, hin, hout, rq);
    if (req) {
        req->dev_dst = c->recv;
        req->host_out = hout;
        req->bytes = out;
    } else if (out && !(c->kind == COLL_REDUCE && cm->rank != c->peer)) {
        dev_from_host(cm->dev, c->recv, hout, out);
    }
}

int comm_progress(comm_t *cm, comm_req_t *req) {
    if (!req->active) return 1;
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) return nccl_done(req);
#endif
    (void)cm;
    int flag = 0;
    MPI_CHECK(MPI_Test(&req->mpi, &flag, MPI_STATUS_IGNORE));
    if (flag) req->mpi = MPI_REQUEST_NULL;
    return flag;
}

void comm_wait(comm_t *cm, comm_req_t *req) {
    if (!req->active) return;
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) {
        nccl_wait(cm, req);
        req->active = 0;
        return;
    }
#endif
    MPI_CHECK(MPI_Wait(&req->mpi, MPI_STATUS_IGNORE));
    if (req->dev_dst) dev_from_host(cm->dev, req->dev_dst, req->host_out, req->bytes);
    free(req->host_in);
    free(req->host_out);
    memset(req, 0, sizeof *req);
}

/* ---- the calls --------------------------------------------------------------- */

void comm_allreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op) {
    coll_t c = {COLL_ALLREDUCE, send, recv, count, 0, t, op, 0, 0};
    run(cm, &c, NULL);
}
void comm_reduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op) {
    coll_t c = {COLL_REDUCE_SCATTER, send, recv, recvcount, 0, t, op, 0, 0};
    run(cm, &c, NULL);
}
void comm_allgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t) {
    coll_t c = {COLL_ALLGATHER, send, recv, sendcount, 0, t, RED_SUM, 0, 0};
    run(cm, &c, NULL);
}
void comm_broadcast(comm_t *cm, void *buf, size_t count, dtype_t t, int root) {
    coll_t c = {COLL_BROADCAST, buf, buf, count, 0, t, RED_SUM, root, 0};
    run(cm, &c, NULL);
}
void comm_reduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, int root) {
    coll_t c = {COLL_REDUCE, send, recv, count, 0, t, op, root, 0};
    run(cm, &c, NULL);
}
void comm_alltoall(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t) {
    coll_t c = {COLL_ALLTOALL, send, recv, count, 0, t, RED_SUM, 0, 0};
    run(cm, &c, NULL);
}
void comm_send(comm_t *cm, const void *buf, size_t count, dtype_t t, int peer) {
    coll_t c = {COLL_SEND, buf, NULL, count, 0, t, RED_SUM, peer, 0};
    run(cm, &c, NULL);
}
void comm_recv(comm_t *cm, void *buf, size_t count, dtype_t t, int peer) {
    coll_t c = {COLL_RECV, NULL, buf, count, 0, t, RED_SUM, peer, 0};
    run(cm, &c, NULL);
}
void comm_sendrecv(comm_t *cm, const void *send, size_t sendcount, int dst,
                   void *recv, size_t recvcount, int src, dtype_t t) {
    coll_t c = {COLL_SENDRECV, send, recv, sendcount, recvcount, t, RED_SUM, dst, src};
    run(cm, &c, NULL);
}
void comm_barrier(comm_t *cm) { MPI_CHECK(MPI_Barrier(cm->mpi)); }

void comm_iallreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, comm_req_t *req) {
    coll_t c = {COLL_ALLREDUCE, send, recv, count, 0, t, op, 0, 0};
    run(cm, &c, req);
}
void comm_ireduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op, comm_req_t *req) {
    coll_t c = {COLL_REDUCE_SCATTER, send, recv, recvcount, 0, t, op, 0, 0};
    run(cm, &c, req);
}
void comm_iallgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t, comm_req_t *req) {
    coll_t c = {COLL_ALLGATHER, send, recv, sendcount, 0, t, RED_SUM, 0, 0};
    run(cm, &c, req);
}
