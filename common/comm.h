/* comm.h: collectives on a communicator, with an MPI and an NCCL backend.
 *
 * Buffers are device buffers of the communicator's device (host memory on
 * the CPU). Backend "nccl" needs every rank of the communicator on its own
 * GPU; "mpi" works everywhere and stages device buffers through the host.
 * "auto" picks NCCL when it can. All counts are in elements.
 *
 * Blocking calls are complete when they return (MPI) or ordered on the
 * compute stream (NCCL: later work on that stream sees the result, the host
 * does not wait). Non-blocking calls start the operation and return; call
 * comm_progress() now and then (MPI needs it to move data while the caller
 * computes) and comm_wait() before touching the buffers. On NCCL they run on
 * the communication stream, ordered after the work already queued on the
 * compute stream, and comm_wait() makes the compute stream wait for them. */
#ifndef COMM_H
#define COMM_H

#include <mpi.h>
#include <stddef.h>

#include "device.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { COMM_MPI = 0, COMM_NCCL = 1 } comm_backend;
typedef enum { RED_SUM = 0, RED_MAX = 1 } redop_t;

typedef struct {
    comm_backend backend;
    MPI_Comm mpi;          /* always valid: NCCL communicators keep one too */
    int rank, size;
    const device_t *dev;
    void *nccl;            /* ncclComm_t */
    void *stage[2];        /* host staging for MPI on device buffers */
    size_t stage_bytes[2];
} comm_t;

typedef struct {
    int active;
    MPI_Request mpi;
    void *done;            /* cudaEvent_t recorded on the comm stream (NCCL) */
    /* MPI on device buffers: host copies, and where the result goes */
    void *host_in, *host_out, *dev_dst;
    size_t bytes;
} comm_req_t;

const char *comm_backend_name(comm_backend b);
/* want: "auto", "mpi" or "nccl". Collective over c. The comm_t keeps a
 * duplicate of c, so the caller may free c. */
void comm_init(comm_t *cm, MPI_Comm c, const char *want, const device_t *dev);
void comm_destroy(comm_t *cm);

/* MPI datatype and op for a dtype (bf16 sums in fp32 and rounds). */
MPI_Datatype comm_mpi_type(dtype_t t);
MPI_Op comm_mpi_op(dtype_t t, redop_t op);
/* inout[i] = inout[i] (op) in[i] on host memory, in fp32 arithmetic. */
void reduce_host(void *inout, const void *in, size_t count, dtype_t t, redop_t op);

void comm_allreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op);
/* send holds size * recvcount elements; rank r keeps block r of the result. */
void comm_reduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op);
/* recv gets size * sendcount elements, block r from rank r. */
void comm_allgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t);
void comm_broadcast(comm_t *cm, void *buf, size_t count, dtype_t t, int root);
void comm_reduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, int root);
/* count elements to and from each peer: send and recv hold size * count. */
void comm_alltoall(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t);
void comm_send(comm_t *cm, const void *buf, size_t count, dtype_t t, int peer);
void comm_recv(comm_t *cm, void *buf, size_t count, dtype_t t, int peer);
/* Send to dst and receive from src at once (rings and pipelines). */
void comm_sendrecv(comm_t *cm, const void *send, size_t sendcount, int dst,
                   void *recv, size_t recvcount, int src, dtype_t t);
void comm_barrier(comm_t *cm);

void comm_iallreduce(comm_t *cm, const void *send, void *recv, size_t count, dtype_t t, redop_t op, comm_req_t *req);
void comm_ireduce_scatter(comm_t *cm, const void *send, void *recv, size_t recvcount, dtype_t t, redop_t op, comm_req_t *req);
void comm_iallgather(comm_t *cm, const void *send, void *recv, size_t sendcount, dtype_t t, comm_req_t *req);
/* Let MPI move data while the caller computes; returns 1 when req is done. */
int comm_progress(comm_t *cm, comm_req_t *req);
void comm_wait(comm_t *cm, comm_req_t *req);

#ifdef __cplusplus
}
#endif
#endif
