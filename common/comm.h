/* comm.h: collectives and point-to-point messages on a communicator, with an
 * MPI and an NCCL backend, a byte count per rank, and a link model.
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
 * compute stream, and comm_wait() makes the compute stream wait for them.
 *
 * Bytes sent. Every call adds to cm->sent[kind] the bytes this rank puts on
 * the wire under the bandwidth-optimal algorithm, nccl-tests' "bus bytes"
 * (X = the whole vector in bytes, N ranks): all-reduce 2(N-1)/N X;
 * reduce-scatter, all-gather and all-to-all (N-1)/N X; broadcast and reduce
 * X; a send its message. Trainers print them per step against the formulas
 * of their chapter.
 *
 * The link model (comm_link_set, before comm_init) makes groups of
 * `node_size` consecutive world ranks behave as separate nodes behind slower
 * links: a message between two groups costs `us` microseconds plus its bytes
 * at `gbps` GB/s on top of its real cost, on every call of the MPI backend:
 *   - point-to-point: the sender stamps each crossing message with the time
 *     it would arrive (one message after another on the same link, as a NIC
 *     serialises them) and the receiver's call completes no earlier than
 *     that; the sender is not held up, as with a real NIC;
 *   - collectives: the library's own algorithm is unknown, so each call
 *     completes no earlier than its launch plus the cost of the ring (or, for
 *     broadcast, reduce and barrier, the binomial tree) that the
 *     bandwidth-optimal algorithm would run over the communicator's ranks in
 *     order, counting alpha + bytes/beta for every step in which some message
 *     crosses between groups; collectives that cross queue behind each other
 *     on the rank's link (one NIC per rank), whatever their communicator, so
 *     several in flight at once take the sum of their costs.
 * Messages inside a group go at the machine's own speed. The model is for one
 * machine: it relies on every rank reading the same monotonic clock.
 *
 * Every call, and every wait for a non-blocking one, is an event of the
 * action record when recording is on (trace.h: record_*); the CPU time spent
 * inside the calls is not counted as compute. */
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

typedef enum {
    COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
    COLL_REDUCE, COLL_ALLTOALL, COLL_SEND, COLL_RECV, COLL_SENDRECV, COLL_BARRIER,
    COLL_KINDS
} coll_kind;
extern const char *const coll_name[COLL_KINDS];   /* "all-reduce", ... */

/* The link model: node_size 0 leaves it off. */
typedef struct {
    int node_size;        /* world ranks per simulated node */
    double gbps;          /* GB/s (1e9 bytes/s) between nodes */
    double us;            /* latency between nodes, microseconds */
} comm_link_t;
/* Applies to communicators created afterwards (every rank, same values). */
void comm_link_set(const comm_link_t *l);
const comm_link_t *comm_link(void);

enum { COMM_GROUP_MAX = 8 };

typedef struct {
    comm_backend backend;
    MPI_Comm mpi;          /* always valid: NCCL communicators keep one too */
    int rank, size;
    const char *name;      /* "dp", "tp", ... for messages (may stay NULL) */
    int *world_rank;       /* (size) each rank's rank in MPI_COMM_WORLD (the watchdog's peers) */
    const device_t *dev;
    void *nccl;            /* ncclComm_t */
    void *stage[2];        /* host staging for MPI on device buffers */
    size_t stage_bytes[2];
    int *node;             /* (size) simulated node of each rank (link model), or NULL */
    double *link_free;     /* (size) when this rank's link to each peer is next free */
    double sent[COLL_KINDS];   /* bytes this rank sent, by kind (see above) */
    int grouping;          /* between comm_group_begin and comm_group_end */
    int ngrouped;
    void *grouped[COMM_GROUP_MAX];   /* the group's requests (comm_req_t *), NCCL */
    int record_id;         /* its group in the action record (trace.h) */
} comm_t;

typedef struct {
    int active;
    coll_kind kind;
    int peer, src;         /* point-to-point: the ranks it sends to and receives from */
    MPI_Request mpi[3];    /* a sendrecv needs two; a stamped receive one more */
    double arrival;        /* link model: completes no earlier (now_s clock) */
    double stamp;          /* link model: a pending send's stamp */
    void *done;            /* cudaEvent_t recorded on the comm stream (NCCL) */
    /* MPI on device buffers: host copies, and where the result goes */
    void *host_in, *host_out, *dev_dst;
    size_t bytes;
    int record;            /* its event in the action record, or -1 */
} comm_req_t;

const char *comm_backend_name(comm_backend b);
/* want: "auto", "mpi" or "nccl". Collective over c. The comm_t keeps a
 * duplicate of c, so the caller may free c. */
void comm_init(comm_t *cm, MPI_Comm c, const char *want, const device_t *dev);
void comm_destroy(comm_t *cm);
/* Total of cm->sent over every kind. */
double comm_sent_bytes(const comm_t *cm);

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
/* Point-to-point without waiting: pipeline activations, ring attention.
 * Messages between two ranks arrive in the order they were sent. */
void comm_isend(comm_t *cm, const void *buf, size_t count, dtype_t t, int peer, comm_req_t *req);
void comm_irecv(comm_t *cm, void *buf, size_t count, dtype_t t, int peer, comm_req_t *req);
void comm_isendrecv(comm_t *cm, const void *send, size_t sendcount, int dst,
                    void *recv, size_t recvcount, int src, dtype_t t, comm_req_t *req);
/* Up to COMM_GROUP_MAX comm_isend / comm_irecv / comm_isendrecv posted as
 * one group (pipeline schedules: a stage's sends and receives between two
 * computes). On NCCL a send holds its stream until the peer posts the
 * receive, so two ranks that each send before they receive wait on each
 * other forever unless both calls are one grouped call (ncclGroupStart/End);
 * each request then completes with the whole group. On MPI, whose
 * non-blocking calls never wait on one another, the group changes nothing. */
void comm_group_begin(comm_t *cm);
void comm_group_end(comm_t *cm);
/* Let MPI move data while the caller computes; returns 1 when req is done. */
int comm_progress(comm_t *cm, comm_req_t *req);
/* Between two polls of a request: sleep 20 us, short against a forward
 * (milliseconds) and long enough that a waiting rank leaves its core to the
 * ranks that compute, instead of spinning. */
void comm_nap(void);
void comm_wait(comm_t *cm, comm_req_t *req);
/* Tell the watchdog (check.h) that this rank waits for req (what NULL: its
 * kind), naming the ranks it depends on: a message's peers, or every rank of
 * cm for a collective. End the wait with watch_end(). Blocking calls and
 * comm_wait do this themselves; for loops that poll comm_progress. */
void comm_watch(const comm_t *cm, const comm_req_t *req, const char *what);

#ifdef __cplusplus
}
#endif
#endif
