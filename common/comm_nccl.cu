/* comm_nccl.cu: collectives through NCCL, one GPU per rank.
 *
 * The unique id travels from rank 0 by MPI_Bcast over the communicator's MPI
 * twin. Blocking operations go on the compute stream, so later kernels see
 * their result without a host wait. Non-blocking ones go on the
 * communication stream after an event recorded on the compute stream (they
 * see the gradients computed so far), and record `done`, which comm_wait
 * makes the compute stream wait on: communication overlaps the compute
 * queued in between. */
#include "cuda_common.cuh"

#include <nccl.h>

#include "comm_nccl.h"

static ncclDataType_t nccl_type(dtype_t t) { return t == DT_BF16 ? ncclBfloat16 : ncclFloat32; }
static ncclRedOp_t nccl_op(redop_t op) { return op == RED_MAX ? ncclMax : ncclSum; }

extern "C" void nccl_comm_init(comm_t *cm) {
    ncclUniqueId id;
    if (cm->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, cm->mpi));
    ncclComm_t nc;
    NCCL_CHECK(ncclCommInitRank(&nc, cm->size, id, cm->rank));
    cm->nccl = nc;
}

extern "C" void nccl_comm_destroy(comm_t *cm) {
    if (cm->nccl) NCCL_CHECK(ncclCommDestroy((ncclComm_t)cm->nccl));
    cm->nccl = NULL;
}

static void enqueue(comm_t *cm, const coll_t *c, cudaStream_t s) {
    ncclComm_t nc = (ncclComm_t)cm->nccl;
    ncclDataType_t ty = nccl_type(c->t);
    size_t es = dtype_size(c->t);
    switch (c->kind) {
    case COLL_ALLREDUCE:
        NCCL_CHECK(ncclAllReduce(c->send, c->recv, c->count, ty, nccl_op(c->op), nc, s));
        break;
    case COLL_REDUCE_SCATTER:
        NCCL_CHECK(ncclReduceScatter(c->send, c->recv, c->count, ty, nccl_op(c->op), nc, s));
        break;
    case COLL_ALLGATHER:
        NCCL_CHECK(ncclAllGather(c->send, c->recv, c->count, ty, nc, s));
        break;
    case COLL_BROADCAST:
        NCCL_CHECK(ncclBroadcast(c->send, c->recv, c->count, ty, c->peer, nc, s));
        break;
    case COLL_REDUCE:
        NCCL_CHECK(ncclReduce(c->send, c->recv, c->count, ty, nccl_op(c->op), c->peer, nc, s));
        break;
    case COLL_ALLTOALL:
        /* NCCL has no all-to-all call: one send and one receive per peer. */
        NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < cm->size; p++) {
            NCCL_CHECK(ncclSend((const char *)c->send + p * c->count * es, c->count, ty, p, nc, s));
            NCCL_CHECK(ncclRecv((char *)c->recv + p * c->count * es, c->count, ty, p, nc, s));
        }
        NCCL_CHECK(ncclGroupEnd());
        break;
    case COLL_SEND:
        NCCL_CHECK(ncclSend(c->send, c->count, ty, c->peer, nc, s));
        break;
    case COLL_RECV:
        NCCL_CHECK(ncclRecv(c->recv, c->count, ty, c->peer, nc, s));
        break;
    case COLL_SENDRECV:
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(c->send, c->count, ty, c->peer, nc, s));
        NCCL_CHECK(ncclRecv(c->recv, c->recvcount, ty, c->src, nc, s));
        NCCL_CHECK(ncclGroupEnd());
        break;
    default:
        die("comm: %s is not an NCCL operation", coll_name[c->kind]);
    }
}

extern "C" void nccl_run(comm_t *cm, const coll_t *c, comm_req_t *req) {
    cudaStream_t compute = (cudaStream_t)cm->dev->stream;
    if (!req) {
        enqueue(cm, c, compute);
        return;
    }
    cudaStream_t cs = (cudaStream_t)cm->dev->comm_stream;
    if (cm->grouping) {   /* ordered by the group's ready event; done comes at its end */
        if (cm->ngrouped == COMM_GROUP_MAX) die("comm: more than %d calls in one group", COMM_GROUP_MAX);
        enqueue(cm, c, cs);
        req->done = NULL;
        cm->grouped[cm->ngrouped++] = req;
        return;
    }
    cudaEvent_t ready, done;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, compute));
    CUDA_CHECK(cudaStreamWaitEvent(cs, ready, 0));
    enqueue(cm, c, cs);
    CUDA_CHECK(cudaEventRecord(done, cs));
    CUDA_CHECK(cudaEventDestroy(ready));   /* released once it completes */
    req->done = done;
}

extern "C" void nccl_group_begin(comm_t *cm) {
    cudaEvent_t ready;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, (cudaStream_t)cm->dev->stream));
    CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)cm->dev->comm_stream, ready, 0));
    CUDA_CHECK(cudaEventDestroy(ready));
    NCCL_CHECK(ncclGroupStart());
}

extern "C" void nccl_group_end(comm_t *cm) {
    NCCL_CHECK(ncclGroupEnd());
    for (int i = 0; i < cm->ngrouped; i++) {   /* each request its own event: nccl_wait frees it */
        cudaEvent_t done;
        CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventRecord(done, (cudaStream_t)cm->dev->comm_stream));
        ((comm_req_t *)cm->grouped[i])->done = done;
    }
}

extern "C" void nccl_wait(comm_t *cm, comm_req_t *req) {
    cudaEvent_t done = (cudaEvent_t)req->done;
    CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)cm->dev->stream, done, 0));
    CUDA_CHECK(cudaEventDestroy(done));
    req->done = NULL;
}

extern "C" int nccl_done(comm_req_t *req) {
    cudaError_t e = cudaEventQuery((cudaEvent_t)req->done);
    if (e == cudaErrorNotReady) return 0;
    CUDA_CHECK(e);
    return 1;
}
