/* coll.c: what the hand-written collectives share (see coll.h) — messages,
 * the local sum, scratch space — and the pairwise all-to-all. */
#include "coll.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dist.h"
#include "trace.h"

void p2p_init(p2p_comm_t *pc, MPI_Comm c, dtype_t dt, size_t chunk_bytes) {
    memset(pc, 0, sizeof *pc);
    MPI_CHECK(MPI_Comm_dup(c, &pc->mpi));
    MPI_CHECK(MPI_Comm_set_errhandler(pc->mpi, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(pc->mpi, &pc->rank));
    MPI_CHECK(MPI_Comm_size(pc->mpi, &pc->size));
    pc->dt = dt;
    pc->es = dtype_size(dt);
    pc->chunk = chunk_bytes / pc->es;
    if (pc->chunk == 0) pc->chunk = 1;
    int *w = xmalloc(sizeof(int) * (size_t)pc->size);
    dist_world_ranks(pc->mpi, w);
    pc->record_id = record_group(pc->size, w);
    free(w);
}

void p2p_destroy(p2p_comm_t *pc) {
    for (int i = 0; i < 3; i++) free(pc->scratch[i]);
    free(pc->req);
    if (pc->mpi != MPI_COMM_NULL) MPI_Comm_free(&pc->mpi);
    memset(pc, 0, sizeof *pc);
}

void *p2p_scratch(p2p_comm_t *pc, int i, size_t bytes) {
    if (pc->scratch_bytes[i] < bytes) {
        free(pc->scratch[i]);
        pc->scratch[i] = xmalloc(bytes);
        pc->scratch_bytes[i] = bytes;
    }
    return pc->scratch[i];
}

/* MPI counts are ints: longer messages go as several of at most PIECE bytes.
 * Both ends cut a message the same way, so the pieces match in order. */
#define PIECE ((size_t)1 << 30)

static int pieces(size_t bytes) { return (int)((bytes + PIECE - 1) / PIECE); }

void p2p_send(p2p_comm_t *pc, const void *buf, size_t n, int dst) {
    p2p_sendrecv(pc, buf, n, dst, NULL, 0, MPI_PROC_NULL);
}

void p2p_recv(p2p_comm_t *pc, void *buf, size_t n, int src) {
    p2p_sendrecv(pc, NULL, 0, MPI_PROC_NULL, buf, n, src);
}

void p2p_sendrecv(p2p_comm_t *pc, const void *sbuf, size_t sn, int dst,
                  void *rbuf, size_t rn, int src) {
    size_t sb = dst == MPI_PROC_NULL ? 0 : sn * pc->es;
    size_t rb = src == MPI_PROC_NULL ? 0 : rn * pc->es;
    int ps = pieces(sb), pr = pieces(rb);
    coll_kind kind = dst == MPI_PROC_NULL ? COLL_RECV : src == MPI_PROC_NULL ? COLL_SEND : COLL_SENDRECV;
    record_enter();   /* the action record (common/trace.h): the call, its CPU time not compute */
    record_call(pc->record_id, kind, 0, dst == MPI_PROC_NULL ? 0 : dst, src == MPI_PROC_NULL ? 0 : src, (double)sb);
    for (int k = 0; k < ps || k < pr; k++) {
        size_t so = (size_t)k * PIECE, ro = (size_t)k * PIECE;
        int slen = k < ps ? (int)min_sz(PIECE, sb - so) : 0;
        int rlen = k < pr ? (int)min_sz(PIECE, rb - ro) : 0;
        const char *s = k < ps ? (const char *)sbuf + so : NULL;
        char *r = k < pr ? (char *)rbuf + ro : NULL;
        int d = k < ps ? dst : MPI_PROC_NULL, f = k < pr ? src : MPI_PROC_NULL;
        if (d == MPI_PROC_NULL)
            MPI_CHECK(MPI_Recv(r, rlen, MPI_BYTE, f, 0, pc->mpi, MPI_STATUS_IGNORE));
        else if (f == MPI_PROC_NULL)
            MPI_CHECK(MPI_Send(s, slen, MPI_BYTE, d, 0, pc->mpi));
        else
            MPI_CHECK(MPI_Sendrecv(s, slen, MPI_BYTE, d, 0, r, rlen, MPI_BYTE, f, 0,
                                   pc->mpi, MPI_STATUS_IGNORE));
    }
    record_leave();
}

p2p_req_t *p2p_requests(p2p_comm_t *pc, size_t n) {
    if (pc->nreq < n) {
        free(pc->req);
        pc->req = xmalloc(sizeof(p2p_req_t) * n);
        pc->nreq = n;
    }
    return pc->req;
}

/* isend and irecv: one message, so at most one piece */
static void p2p_start(p2p_comm_t *pc, coll_kind kind, void *buf, size_t n, int peer, p2p_req_t *q) {
    size_t bytes = peer == MPI_PROC_NULL ? 0 : n * pc->es;
    if (bytes > PIECE) die("a non-blocking message of %zu bytes: at most %zu", bytes, PIECE);
    q->mpi = MPI_REQUEST_NULL;
    q->ref = -1;
    if (bytes == 0) return;
    record_enter();
    q->ref = record_call(pc->record_id, kind, 1, kind == COLL_SEND ? peer : 0, kind == COLL_RECV ? peer : 0,
                         kind == COLL_SEND ? (double)bytes : 0);
    if (kind == COLL_SEND) MPI_CHECK(MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 0, pc->mpi, &q->mpi));
    else MPI_CHECK(MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 0, pc->mpi, &q->mpi));
    record_leave();
}

void p2p_isend(p2p_comm_t *pc, const void *buf, size_t n, int dst, p2p_req_t *q) {
    p2p_start(pc, COLL_SEND, (void *)buf, n, dst, q);
}

void p2p_irecv(p2p_comm_t *pc, void *buf, size_t n, int src, p2p_req_t *q) {
    p2p_start(pc, COLL_RECV, buf, n, src, q);
}

void p2p_wait(p2p_req_t *q) {
    if (q->mpi == MPI_REQUEST_NULL) return;
    record_enter();
    record_wait(q->ref);
    MPI_CHECK(MPI_Wait(&q->mpi, MPI_STATUS_IGNORE));
    record_leave();
}

/* The only arithmetic in this chapter. bf16 is summed in fp32 and rounded
 * once, which is what NCCL and our MPI bf16 op do too, so results agree. */
void p2p_sum(const p2p_comm_t *pc, void *dst, const void *a, const void *b, size_t n) {
    if (pc->dt == DT_F32) {
        float *d = (float *)dst;
        const float *x = (const float *)a, *y = (const float *)b;
        for (size_t i = 0; i < n; i++) d[i] = x[i] + y[i];
    } else {
        bf16_t *d = (bf16_t *)dst;
        const bf16_t *x = (const bf16_t *)a, *y = (const bf16_t *)b;
        for (size_t i = 0; i < n; i++) d[i] = f32_to_bf16(bf16_to_f32(x[i]) + bf16_to_f32(y[i]));
    }
}

/* All-to-all, pairwise exchange: N-1 rounds; in round s every rank sends one
 * block to rank+s and receives one from rank-s, so each round is a
 * permutation and no rank is ever the target of two senders at once. */
void alltoall_pairwise(p2p_comm_t *pc, const void *send, void *recv, size_t count) {
    int N = pc->size, r = pc->rank;
    size_t B = count * pc->es;
    const char *s = (const char *)send;
    char *d = (char *)recv;
    memcpy(d + (size_t)r * B, s + (size_t)r * B, B);
    for (int step = 1; step < N; step++) {
        int to = mod(r + step, N), from = mod(r - step, N);
        p2p_sendrecv(pc, s + (size_t)to * B, count, to, d + (size_t)from * B, count, from);
    }
}
