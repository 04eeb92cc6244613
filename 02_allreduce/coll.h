/* coll.h: collectives written by hand over MPI point-to-point messages.
 *
 * These are the textbook algorithms behind every collective library, small
 * enough to read in one sitting. They work on host memory, sum only, and take
 * counts in elements of the communicator's dtype (fp32, or bf16 summed in fp32
 * and rounded back, as NCCL does). Every rank count works, 1 and odd ones too.
 *
 *   ps        parameter server / star: every rank talks to the root directly.
 *             All-reduce = reduce to the root + broadcast from it; the root's
 *             link carries 2(N-1) X bytes, everyone else's only 2X.
 *   tree      binomial tree: log2(N) rounds; all-reduce = reduce + broadcast.
 *   rd        recursive doubling all-reduce: log2(N) rounds of pairwise
 *             exchange of the whole vector (latency-optimal, 2x the bytes).
 *   ring      N-1 steps around a ring of neighbours. All-reduce =
 *             reduce-scatter + all-gather: 2(N-1) steps, each rank sends
 *             2(N-1)/N X bytes, the bandwidth-optimal amount (Patarasuk & Yuan
 *             2009). Broadcast and reduce as a pipelined chain.
 *   pairwise  all-to-all in N-1 rounds: in round s send to rank+s, receive
 *             from rank-s.
 *
 * Long messages are cut into chunks of `chunk` bytes: a tree or a chain then
 * works as a pipeline (the next hop forwards chunk j while chunk j+1 arrives),
 * and the ring posts a step's chunks at once, so they follow one another on
 * the link (one latency a step, not one a chunk), and adds each received
 * chunk while it is still in cache. */
#ifndef COLL_H
#define COLL_H

#include <mpi.h>
#include <stddef.h>

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    MPI_Comm mpi;         /* a private duplicate: our messages meet no others */
    int rank, size;
    dtype_t dt;
    size_t es;            /* bytes per element */
    size_t chunk;         /* elements per pipelined message */
    void *scratch[3];     /* grown on demand: [0] received chunks, [1] partial sum, [2] whole blocks */
    size_t scratch_bytes[3];
    struct p2p_req *req;  /* grown on demand: the requests of a pipelined step */
    size_t nreq;
    int record_id;        /* its group in the action record (common/trace.h) */
} p2p_comm_t;

void p2p_init(p2p_comm_t *pc, MPI_Comm c, dtype_t dt, size_t chunk_bytes);
void p2p_destroy(p2p_comm_t *pc);

/* All-reduce: recv = sum over ranks of send (count elements; send may equal recv). */
void allreduce_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count);
void allreduce_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count);
void allreduce_rd(p2p_comm_t *pc, const void *send, void *recv, size_t count);
void allreduce_ring(p2p_comm_t *pc, const void *send, void *recv, size_t count);

/* Reduce-scatter: send holds size * recvcount elements; rank r gets the sum of block r. */
void reduce_scatter_ring(p2p_comm_t *pc, const void *send, void *recv, size_t recvcount);
/* All-gather: recv gets size * sendcount elements, block r from rank r. */
void allgather_ring(p2p_comm_t *pc, const void *send, void *recv, size_t sendcount);

/* Broadcast root's buf (count elements) to every rank. */
void broadcast_ps(p2p_comm_t *pc, void *buf, size_t count, int root);
void broadcast_tree(p2p_comm_t *pc, void *buf, size_t count, int root);
void broadcast_ring(p2p_comm_t *pc, void *buf, size_t count, int root);

/* Reduce: root's recv = sum over ranks of send; recv is untouched elsewhere. */
void reduce_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);
void reduce_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);
void reduce_ring(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);

/* Scatter: root's send holds size * count elements; rank r gets block r.
 * Gather: the reverse, into root's recv. */
void scatter_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);
void scatter_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);
void gather_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);
void gather_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root);

/* All-to-all: block j of send (count elements) goes to rank j, and block j of
 * recv comes from rank j. */
void alltoall_pairwise(p2p_comm_t *pc, const void *send, void *recv, size_t count);

/* ---- shared by the algorithm files ---------------------------------------- */

/* Messages of n elements; a peer of MPI_PROC_NULL (or n == 0 on both sides
 * of a sendrecv) makes that half a no-op. Messages over 1 GiB go in pieces. */
void p2p_send(p2p_comm_t *pc, const void *buf, size_t n, int dst);
void p2p_recv(p2p_comm_t *pc, void *buf, size_t n, int src);
void p2p_sendrecv(p2p_comm_t *pc, const void *sbuf, size_t sn, int dst,
                  void *rbuf, size_t rn, int src);
/* Non-blocking messages of at most one chunk (1 GiB), each completed by
 * p2p_wait; a peer of MPI_PROC_NULL or n == 0 is a no-op. */
typedef struct p2p_req {
    MPI_Request mpi;
    int ref;              /* its call in the action record, for the wait */
} p2p_req_t;
void p2p_isend(p2p_comm_t *pc, const void *buf, size_t n, int dst, p2p_req_t *q);
void p2p_irecv(p2p_comm_t *pc, void *buf, size_t n, int src, p2p_req_t *q);
void p2p_wait(p2p_req_t *q);
/* At least n requests, grown on demand (each pipelined step reuses them). */
p2p_req_t *p2p_requests(p2p_comm_t *pc, size_t n);
/* dst[i] = a[i] + b[i] for n elements (dst may be a). */
void p2p_sum(const p2p_comm_t *pc, void *dst, const void *a, const void *b, size_t n);
/* Scratch buffer slot i of at least bytes bytes. */
void *p2p_scratch(p2p_comm_t *pc, int i, size_t bytes);

/* Block b of count elements cut into n near-equal blocks: [off, off + len). */
static inline size_t block_off(size_t count, int n, int b) { return count * (size_t)b / (size_t)n; }
static inline size_t block_len(size_t count, int n, int b) {
    return block_off(count, n, b + 1) - block_off(count, n, b);
}
static inline int mod(int a, int n) { return ((a % n) + n) % n; }
static inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

#ifdef __cplusplus
}
#endif
#endif
