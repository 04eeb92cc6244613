/* comm.c: the communicator (see comm.h), its MPI backend, the byte counts
 * and the link model.
 *
 * Every call is described once as a coll_t and handed to a backend: NCCL
 * (comm_nccl.cu) or MPI here. MPI works on host memory; when the buffers live
 * on a GPU (several ranks sharing one GPU, or --comm mpi) they are staged
 * through host buffers around the MPI call. */
#include "comm.h"

#include <limits.h>
#include <math.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check.h"
#include "comm_nccl.h"
#include "trace.h"
#include "dist.h"

const char *comm_backend_name(comm_backend b) { return b == COMM_NCCL ? "nccl" : "mpi"; }

const char *const coll_name[COLL_KINDS] = {
    "all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce", "all-to-all",
    "send", "receive", "send-receive", "barrier"};

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

/* ---- the link model ---------------------------------------------------------- */

static comm_link_t link_cfg;
/* When this rank's link to other nodes is next free for a collective: the
 * collectives that cross queue behind each other, as on one NIC. */
static double nic_free;

void comm_link_set(const comm_link_t *l) {
    link_cfg = *l;
    if (l->node_size > 0) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}
const comm_link_t *comm_link(void) { return &link_cfg; }

/* Seconds a message of `bytes` spends on a link between nodes. */
static double link_cost(double bytes) { return link_cfg.us * 1e-6 + bytes / (link_cfg.gbps * 1e9); }

static int crosses(const comm_t *cm, int a, int b) { return cm->node && cm->node[a] != cm->node[b]; }

/* Some pair (r, r + s mod N) in different groups: step s of a ring or of
 * pairwise exchange crosses a slow link. */
static int shift_crosses(const comm_t *cm, int s) {
    for (int r = 0; r < cm->size; r++)
        if (crosses(cm, r, (r + s) % cm->size)) return 1;
    return 0;
}

/* Some pair at distance 2^k inside the blocks of 2^(k+1) of a binomial tree. */
static int tree_round_crosses(const comm_t *cm, int k) {
    int d = 1 << k;
    for (int r = 0; r + d < cm->size; r += 2 * d)
        if (crosses(cm, r, r + d)) return 1;
    return 0;
}

/* Seconds the slow links add to a collective of X bytes (see comm.h). */
static double link_extra(const comm_t *cm, coll_kind k, double X) {
    int N = cm->size;
    if (!cm->node || N == 1) return 0.0;
    switch (k) {
    case COLL_ALLREDUCE:
        return shift_crosses(cm, 1) ? 2.0 * (N - 1) * link_cost(X / N) : 0.0;
    case COLL_REDUCE_SCATTER: case COLL_ALLGATHER:
        return shift_crosses(cm, 1) ? (N - 1) * link_cost(X / N) : 0.0;
    case COLL_ALLTOALL: {
        double t = 0;
        for (int s = 1; s < N; s++) if (shift_crosses(cm, s)) t += link_cost(X / N);
        return t;
    }
    case COLL_BROADCAST: case COLL_REDUCE: case COLL_BARRIER: {
        double t = 0;
        for (int k2 = 0; (1 << k2) < N; k2++)
            if (tree_round_crosses(cm, k2)) t += link_cost(k == COLL_BARRIER ? 0 : X);
        return t;
    }
    default:
        return 0.0;
    }
}

/* Sleep, then spin the last 100 us: a sleep overshoots by the kernel's timer
 * slack (50 us by default, made 1 us by comm_link_set). */
static void sleep_until(double t) {
    double d = t - now_s() - 100e-6;
    if (d > 0) {
        struct timespec ts;
        ts.tv_sec = (time_t)d;
        ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
    }
    while (now_s() < t) {}
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
        cm->backend = own_gpu && link_cfg.node_size == 0 ? COMM_NCCL : COMM_MPI;
    }
    cm->world_rank = xmalloc(sizeof(int) * (size_t)cm->size);
    dist_world_ranks(cm->mpi, cm->world_rank);
    cm->record_id = record_group(cm->size, cm->world_rank);
    if (link_cfg.node_size > 0) {
        if (cm->backend == COMM_NCCL)
            usage_error("the link model (--node-size) runs on the MPI backend: use --comm mpi");
        /* each rank's simulated node, from its world rank */
        cm->node = xmalloc(sizeof(int) * (size_t)cm->size);
        for (int r = 0; r < cm->size; r++) cm->node[r] = cm->world_rank[r] / link_cfg.node_size;
        cm->link_free = xcalloc((size_t)cm->size, sizeof(double));
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
    free(cm->world_rank);
    free(cm->node);
    free(cm->link_free);
    MPI_Comm_free(&cm->mpi);
    memset(cm, 0, sizeof *cm);
}

double comm_sent_bytes(const comm_t *cm) {
    double s = 0;
    for (int k = 0; k < COLL_KINDS; k++) s += cm->sent[k];
    return s;
}

/* Bus bytes this rank sends for c (comm.h), and the whole vector X. */
static double bus_bytes(const comm_t *cm, const coll_t *c, double *X) {
    double es = (double)dtype_size(c->t), N = cm->size, n = (double)c->count * es;
    switch (c->kind) {
    case COLL_ALLREDUCE: *X = n; return N > 1 ? 2.0 * (N - 1) / N * n : 0;
    case COLL_REDUCE_SCATTER: case COLL_ALLGATHER: case COLL_ALLTOALL:
        *X = N * n; return (N - 1) * n;
    case COLL_BROADCAST: case COLL_REDUCE: *X = n; return N > 1 ? n : 0;
    case COLL_SEND: case COLL_SENDRECV: *X = n; return n;
    default: *X = 0; return 0;
    }
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
    case COLL_RECV: case COLL_BARRIER: return 0;
    default: return c->count;
    }
}
static size_t elems_out(const comm_t *cm, const coll_t *c) {
    switch (c->kind) {
    case COLL_ALLGATHER: case COLL_ALLTOALL: return c->count * (size_t)cm->size;
    case COLL_SEND: case COLL_BARRIER: return 0;
    case COLL_SENDRECV: return c->recvcount;
    default: return c->count;
    }
}

enum { TAG_DATA = 0, TAG_STAMP = 1 };

/* Link model, sender side: when the message to peer crosses groups, send the
 * time it arrives (after the messages already on that link), ahead of it.
 * *slot holds the stamp until rq completes. */
static void stamp_send(comm_t *cm, int peer, size_t bytes, double *slot, MPI_Request *rq) {
    *rq = MPI_REQUEST_NULL;
    if (!crosses(cm, cm->rank, peer)) return;
    double start = now_s();
    if (cm->link_free[peer] > start) start = cm->link_free[peer];
    cm->link_free[peer] = start + (double)bytes / (link_cfg.gbps * 1e9);
    *slot = start + link_cost((double)bytes);
    MPI_CHECK(MPI_Isend(slot, 1, MPI_DOUBLE, peer, TAG_STAMP, cm->mpi, rq));
}

/* Receiver side: the stamp of a crossing message, or 0. */
static void stamp_recv(comm_t *cm, int peer, double *arrival, MPI_Request *rq) {
    *arrival = 0.0;
    *rq = MPI_REQUEST_NULL;
    if (crosses(cm, cm->rank, peer))
        MPI_CHECK(MPI_Irecv(arrival, 1, MPI_DOUBLE, peer, TAG_STAMP, cm->mpi, rq));
}

/* Runs c on host buffers; req == NULL blocks. With the link model the point-
 * to-point kinds carry stamps, and req->arrival (or, blocking, the return)
 * waits for the modelled arrival. */
static void mpi_start(comm_t *cm, const coll_t *c, const void *send, void *recv, comm_req_t *req) {
    MPI_Datatype ty = comm_mpi_type(c->t);
    MPI_Comm w = cm->mpi;
    size_t es = dtype_size(c->t);
    int n = icount(c->count);
    MPI_Request *rq = req ? req->mpi : NULL, stamp_rq[2];
    double arrival = 0.0, stamp = 0.0;
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
    case COLL_BARRIER:
        MPI_CHECK(MPI_Barrier(w));
        break;
    case COLL_SEND:
        /* a pending send keeps its stamp in the request (it has no arrival) */
        stamp_send(cm, c->peer, c->count * es, rq ? &req->stamp : &stamp, &stamp_rq[0]);
        if (rq) {
            MPI_CHECK(MPI_Isend(send, n, ty, c->peer, TAG_DATA, w, &rq[0]));
            rq[1] = stamp_rq[0];
        } else {
            MPI_CHECK(MPI_Send(send, n, ty, c->peer, TAG_DATA, w));
            MPI_CHECK(MPI_Wait(&stamp_rq[0], MPI_STATUS_IGNORE));
        }
        break;
    case COLL_RECV:
        if (rq) {
            stamp_recv(cm, c->peer, &req->arrival, &rq[1]);
            MPI_CHECK(MPI_Irecv(recv, n, ty, c->peer, TAG_DATA, w, &rq[0]));
        } else {
            stamp_recv(cm, c->peer, &arrival, &stamp_rq[0]);
            MPI_CHECK(MPI_Recv(recv, n, ty, c->peer, TAG_DATA, w, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Wait(&stamp_rq[0], MPI_STATUS_IGNORE));
        }
        break;
    case COLL_SENDRECV:
        if (rq) {
            stamp_send(cm, c->peer, c->count * es, &stamp, &stamp_rq[0]);
            stamp_recv(cm, c->src, &req->arrival, &rq[2]);
            MPI_CHECK(MPI_Irecv(recv, icount(c->recvcount), ty, c->src, TAG_DATA, w, &rq[0]));
            MPI_CHECK(MPI_Isend(send, n, ty, c->peer, TAG_DATA, w, &rq[1]));
            /* a tiny message goes eagerly: this returns at once */
            MPI_CHECK(MPI_Wait(&stamp_rq[0], MPI_STATUS_IGNORE));
        } else {
            stamp_send(cm, c->peer, c->count * es, &stamp, &stamp_rq[0]);
            stamp_recv(cm, c->src, &arrival, &stamp_rq[1]);
            MPI_CHECK(MPI_Sendrecv(send, n, ty, c->peer, TAG_DATA, recv, icount(c->recvcount), ty,
                                   c->src, TAG_DATA, w, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Waitall(2, stamp_rq, MPI_STATUSES_IGNORE));
        }
        break;
    default:
        die("comm: unknown operation %d", (int)c->kind);
    }
    if (!rq) sleep_until(arrival);
}

static void *stage(comm_t *cm, int i, size_t bytes) {
    if (cm->stage_bytes[i] < bytes) {
        free(cm->stage[i]);
        cm->stage[i] = xmalloc(bytes);
        cm->stage_bytes[i] = bytes;
    }
    return cm->stage[i];
}

/* The watchdog's view of a wait: a message waits on its peers, a
 * collective on every rank of the communicator. */
static void watch_op(const comm_t *cm, coll_kind k, int peer, int src, const char *what) {
    if (k == COLL_SEND || k == COLL_RECV || k == COLL_SENDRECV) {
        int p[2] = {cm->world_rank[peer], k == COLL_SENDRECV ? cm->world_rank[src] : -1};
        watch_begin(what, cm->name, p, k == COLL_SENDRECV ? 2 : 1);
    } else {
        watch_begin(what, cm->name, cm->world_rank, cm->size);
    }
}

void comm_watch(const comm_t *cm, const comm_req_t *req, const char *what) {
    watch_op(cm, req->kind, req->peer, req->src, what ? what : coll_name[req->kind]);
}

static void run_call(comm_t *cm, const coll_t *c, comm_req_t *req) {
    double X = 0, t0 = now_s();
    if (cm->grouping && (!req || (c->kind != COLL_SEND && c->kind != COLL_RECV && c->kind != COLL_SENDRECV)))
        die("comm: only non-blocking sends and receives may be posted in a group, not a %s%s",
            req ? "" : "blocking ", coll_name[c->kind]);
    cm->sent[c->kind] += bus_bytes(cm, c, &X);
    int src = c->kind == COLL_RECV ? c->peer : c->src;   /* a receive names its source as its peer */
    double extra = link_extra(cm, c->kind, X), done = 0.0;
    if (extra > 0) {   /* after the crossing collectives already on the link */
        done = (nic_free > t0 ? nic_free : t0) + extra;
        nic_free = done;
    }
    if (req) {
        memset(req, 0, sizeof *req);
        for (int i = 0; i < 3; i++) req->mpi[i] = MPI_REQUEST_NULL;
        req->active = 1;
        req->kind = c->kind;
        req->peer = c->peer;
        req->src = c->src;
        req->arrival = done;
        req->record = record_call(cm->record_id, c->kind, 1, c->peer, src, X);
    } else {
        record_call(cm->record_id, c->kind, 0, c->peer, src, X);
        watch_op(cm, c->kind, c->peer, c->src, coll_name[c->kind]);
    }
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL && c->kind != COLL_BARRIER) {   /* NCCL has no barrier */
        nccl_run(cm, c, req);
        if (!req) watch_end();
        return;
    }
#endif
    if (cm->dev->kind == DEV_CPU || c->kind == COLL_BARRIER) {
        mpi_start(cm, c, c->send, c->recv, req);
    } else {
        /* Device buffers through the host. Non-blocking calls own their
         * staging buffers until comm_wait; blocking ones reuse the
         * communicator's. */
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
        mpi_start(cm, c, hin, hout, req);
        if (req) {
            req->dev_dst = c->recv;
            req->host_out = hout;
            req->bytes = out;
        } else if (out && !(c->kind == COLL_REDUCE && cm->rank != c->peer)) {
            dev_from_host(cm->dev, c->recv, hout, out);
        }
    }
    if (!req) {
        sleep_until(done);
        watch_end();
    }
}

/* One call, its CPU time kept out of the record's compute. */
static void run(comm_t *cm, const coll_t *c, comm_req_t *req) {
    record_enter();
    run_call(cm, c, req);
    record_leave();
}

void comm_group_begin(comm_t *cm) {
    if (cm->grouping) die("comm: comm_group_begin inside a group");
    cm->grouping = 1;
    cm->ngrouped = 0;
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) nccl_group_begin(cm);
#endif
}

void comm_group_end(comm_t *cm) {
    if (!cm->grouping) die("comm: comm_group_end without comm_group_begin");
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) nccl_group_end(cm);
#endif
    cm->grouping = 0;
    cm->ngrouped = 0;
}

void comm_nap(void) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

int comm_progress(comm_t *cm, comm_req_t *req) {
    if (!req->active) return 1;
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) return nccl_done(req);
#endif
    (void)cm;
    int flag = 0;
    record_enter();
    MPI_CHECK(MPI_Testall(3, req->mpi, &flag, MPI_STATUSES_IGNORE));
    record_leave();
    return flag && now_s() >= req->arrival;
}

static void wait_call(comm_t *cm, comm_req_t *req) {
    comm_watch(cm, req, NULL);
#ifdef USE_CUDA
    if (cm->backend == COMM_NCCL) {
        nccl_wait(cm, req);
        req->active = 0;
        watch_end();
        return;
    }
#endif
    MPI_CHECK(MPI_Waitall(3, req->mpi, MPI_STATUSES_IGNORE));
    sleep_until(req->arrival);
    if (req->dev_dst) dev_from_host(cm->dev, req->dev_dst, req->host_out, req->bytes);
    free(req->host_in);
    free(req->host_out);
    memset(req, 0, sizeof *req);
    watch_end();
}

void comm_wait(comm_t *cm, comm_req_t *req) {
    if (!req->active) return;
    record_enter();
    record_wait(req->record);
    wait_call(cm, req);
    record_leave();
}

/* ---- the calls --------------------------------------------------------------- */

#define CALL(kind, send, recv, count, recvcount, t, op, peer, src, req)                    \
    do {                                                                                  \
        coll_t c_ = {kind, send, recv, count, recvcount, t, op, peer, src};               \
        run(cm, &c_, req);                                                                \
    } while (0)

void comm_allreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op) {
    CALL(COLL_ALLREDUCE, send, recv, count, 0, t, op, 0, 0, NULL);
}
void comm_reduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op) {
    CALL(COLL_REDUCE_SCATTER, send, recv, recvcount, 0, t, op, 0, 0, NULL);
}
void comm_allgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t) {
    CALL(COLL_ALLGATHER, send, recv, sendcount, 0, t, RED_SUM, 0, 0, NULL);
}
void comm_broadcast(comm_t *cm, void *buf, size_t count, dtype_t t, int root) {
    CALL(COLL_BROADCAST, buf, buf, count, 0, t, RED_SUM, root, 0, NULL);
}
void comm_reduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, int root) {
    CALL(COLL_REDUCE, send, recv, count, 0, t, op, root, 0, NULL);
}
void comm_alltoall(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t) {
    CALL(COLL_ALLTOALL, send, recv, count, 0, t, RED_SUM, 0, 0, NULL);
}
void comm_send(comm_t *cm, const void *buf, size_t count, dtype_t t, int peer) {
    CALL(COLL_SEND, buf, NULL, count, 0, t, RED_SUM, peer, 0, NULL);
}
void comm_recv(comm_t *cm, void *buf, size_t count, dtype_t t, int peer) {
    CALL(COLL_RECV, NULL, buf, count, 0, t, RED_SUM, peer, 0, NULL);
}
void comm_sendrecv(comm_t *cm, const void *send, size_t sendcount, int dst,
                   void *recv, size_t recvcount, int src, dtype_t t) {
    CALL(COLL_SENDRECV, send, recv, sendcount, recvcount, t, RED_SUM, dst, src, NULL);
}
void comm_barrier(comm_t *cm) { CALL(COLL_BARRIER, NULL, NULL, 0, 0, DT_F32, RED_SUM, 0, 0, NULL); }

void comm_iallreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, comm_req_t *req) {
    CALL(COLL_ALLREDUCE, send, recv, count, 0, t, op, 0, 0, req);
}
void comm_ireduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op, comm_req_t *req) {
    CALL(COLL_REDUCE_SCATTER, send, recv, recvcount, 0, t, op, 0, 0, req);
}
void comm_iallgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t, comm_req_t *req) {
    CALL(COLL_ALLGATHER, send, recv, sendcount, 0, t, RED_SUM, 0, 0, req);
}
void comm_isend(comm_t *cm, const void *buf, size_t count, dtype_t t, int peer, comm_req_t *req) {
    CALL(COLL_SEND, buf, NULL, count, 0, t, RED_SUM, peer, 0, req);
}
void comm_irecv(comm_t *cm, void *buf, size_t count, dtype_t t, int peer, comm_req_t *req) {
    CALL(COLL_RECV, NULL, buf, count, 0, t, RED_SUM, peer, 0, req);
}
void comm_isendrecv(comm_t *cm, const void *send, size_t sendcount, int dst,
                    void *recv, size_t recvcount, int src, dtype_t t, comm_req_t *req) {
    CALL(COLL_SENDRECV, send, recv, sendcount, recvcount, t, RED_SUM, dst, src, req);
}
