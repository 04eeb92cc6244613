/* comm_nccl.h: the NCCL backend of comm.h, implemented in comm_nccl.cu.
 * Only comm.c calls these. */
#ifndef COMM_NCCL_H
#define COMM_NCCL_H

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One operation, as comm.c describes it to a backend. count is the per-rank
 * element count of comm.h's call (recvcount for reduce-scatter, sendcount for
 * all-gather, per-peer count for all-to-all); peer is the root, the peer of a
 * send or receive, or the destination of a sendrecv (src its source). */
typedef struct {
    coll_kind kind;
    const void *send;
    void *recv;
    size_t count, recvcount;
    dtype_t t;
    redop_t op;
    int peer, src;
} coll_t;

void nccl_comm_init(comm_t *cm);
void nccl_comm_destroy(comm_t *cm);
/* req == NULL: on the compute stream. Otherwise on the communication stream,
 * after the compute stream's queued work; req->done marks the end. */
void nccl_run(comm_t *cm, const coll_t *c, comm_req_t *req);
/* A group of non-blocking calls (comm_group_begin / end): one ready event
 * before, one ncclGroupStart/End around them, their done events after. */
void nccl_group_begin(comm_t *cm);
void nccl_group_end(comm_t *cm);
/* The compute stream waits for req (no host synchronisation). */
void nccl_wait(comm_t *cm, comm_req_t *req);
int nccl_done(comm_req_t *req);

#ifdef __cplusplus
}
#endif
#endif
