/* ring.c: ring algorithms — reduce-scatter, all-gather, all-reduce, and the
 * pipelined chain broadcast and reduce.
 *
 * Ring all-reduce (Patarasuk & Yuan 2009): cut the vector into N blocks.
 * Reduce-scatter: in each of N-1 steps every rank sends one block to its right
 * neighbour and adds the block arriving from its left one; afterwards rank r
 * holds the full sum of one block. All-gather: N-1 more steps pass the
 * finished blocks around. 2(N-1) steps in all, and each rank sends
 *     2 (N-1)/N X bytes                                   (X = count x size)
 * which no algorithm can beat: time ~ 2(N-1)/N X / B on links of bandwidth B.
 *
 * Each block goes in chunks of pc->chunk elements, a step's chunks posted at
 * once (the step pays one latency, not one a chunk, as NCCL's pipelined ring
 * does); a received chunk is added while it is still in cache, and the
 * scratch space is two chunks. */
#include <string.h>

#include "check.h"
#include "coll.h"

/* One step of the ring: send sn elements at src to the right neighbour while
 * receiving rn from the left one, in chunks. The sends are all ready, so they
 * are posted at once and follow one another on the link: the step pays one
 * latency, not one a chunk. Received chunks land in dst itself (mine NULL),
 * or, two chunks of scratch taking turns, are added to mine into dst, chunk
 * k while chunk k+1 arrives. A chunk of dst may be one just sent (the
 * reduce-scatter's scratch block): it is written only once its send ended. */
static void ring_step(p2p_comm_t *pc, const char *src, size_t sn, char *dst, const char *mine, size_t rn) {
    /* ASSIGNMENT 02-ring: the ring all-reduce (02_allreduce/README.md, "Assignment: the ring all-reduce") */
    /* STUB: (void)pc, (void)src, (void)sn, (void)dst, (void)mine, (void)rn; */
    /* STUB: not_implemented("ring step", "02_allreduce/README.md, Assignment: the ring all-reduce"); */
    int N = pc->size, r = pc->rank;
    int next = mod(r + 1, N), prev = mod(r - 1, N);
    size_t es = pc->es, ch = pc->chunk;
    size_t ns = (sn + ch - 1) / ch, nr = (rn + ch - 1) / ch, sent = 0;
    p2p_req_t *sq = p2p_requests(pc, ns + 2), *rq = sq + ns;
    char *tmp = mine ? p2p_scratch(pc, 0, 2 * ch * es) : NULL;
    for (size_t k = 0; k < ns; k++) p2p_isend(pc, src + k * ch * es, min_sz(ch, sn - k * ch), next, &sq[k]);
    for (size_t k = 0; k < nr && k < 2; k++)
        p2p_irecv(pc, mine ? tmp + k * ch * es : dst + k * ch * es, min_sz(ch, rn - k * ch), prev, &rq[k]);
    for (size_t k = 0; k < nr; k++) {
        size_t o = k * ch, n = min_sz(ch, rn - o);
        char *land = mine ? tmp + (k % 2) * ch * es : dst + o * es;
        p2p_wait(&rq[k % 2]);
        if (mine) {
            while (sent < ns && sent <= k) p2p_wait(&sq[sent++]);
            p2p_sum(pc, dst + o * es, mine + o * es, land, n);
        }
        if (k + 2 < nr)
            p2p_irecv(pc, mine ? land : dst + (o + 2 * ch) * es, min_sz(ch, rn - o - 2 * ch), prev, &rq[k % 2]);
    }
    while (sent < ns) p2p_wait(&sq[sent++]);
    /* END ASSIGNMENT 02-ring */
}

/* Reduce-scatter over the blocks of `layout`: in step s rank r sends block
 * (r + shift - s) and receives block (r + shift - s - 1), so it ends holding
 * the full sum of block (r + shift + 1) mod N (in the last step's dst).
 * part(b) is where the partial sum of block b is kept: for all-reduce the
 * output buffer itself (no extra copy), for reduce-scatter one block of
 * scratch reused every step. */
static void ring_reduce_scatter(p2p_comm_t *pc, const char *send, char *out_all, char *acc,
                                char *final_dst, size_t count, int shift) {
    /* ASSIGNMENT 02-ring: the ring all-reduce (02_allreduce/README.md, "Assignment: the ring all-reduce") */
    /* STUB: (void)pc, (void)send, (void)out_all, (void)acc, (void)final_dst, (void)count, (void)shift; */
    /* STUB: not_implemented("ring reduce-scatter", "02_allreduce/README.md, Assignment: the ring all-reduce"); */
    int N = pc->size, r = pc->rank;
    const size_t es = pc->es;
    for (int s = 0; s < N - 1; s++) {
        int sb = mod(r + shift - s, N), rb = mod(r + shift - s - 1, N);
        size_t so = block_off(count, N, sb), sn = block_len(count, N, sb);
        size_t ro = block_off(count, N, rb), rn = block_len(count, N, rb);
        /* what we send: our own input at step 0, our partial sum afterwards */
        const char *src = s == 0 ? send + so * es : (out_all ? out_all + so * es : acc);
        /* where the new partial sum goes */
        char *dst = out_all ? out_all + ro * es : (s == N - 2 ? final_dst : acc);
        ring_step(pc, src, sn, dst, send + ro * es, rn);
    }
    /* END ASSIGNMENT 02-ring */
}

/* All-gather over the blocks of `layout`, in place in buf: rank r starts with
 * block (r + shift) complete and in step s forwards block (r + shift - s). */
static void ring_allgather(p2p_comm_t *pc, char *buf, size_t count, int shift) {
    /* ASSIGNMENT 02-ring: the ring all-reduce (02_allreduce/README.md, "Assignment: the ring all-reduce") */
    /* STUB: (void)pc, (void)buf, (void)count, (void)shift; */
    /* STUB: not_implemented("ring all-gather", "02_allreduce/README.md, Assignment: the ring all-reduce"); */
    int N = pc->size, r = pc->rank;
    const size_t es = pc->es;
    for (int s = 0; s < N - 1; s++) {
        int sb = mod(r + shift - s, N), rb = mod(r + shift - s - 1, N);
        size_t so = block_off(count, N, sb), sn = block_len(count, N, sb);
        size_t ro = block_off(count, N, rb), rn = block_len(count, N, rb);
        ring_step(pc, buf + so * es, sn, buf + ro * es, NULL, rn);
    }
    /* END ASSIGNMENT 02-ring */
}

void allreduce_ring(p2p_comm_t *pc, const void *send, void *recv, size_t count) {
    if (pc->size == 1) {
        if (send != recv) memcpy(recv, send, count * pc->es);
        return;
    }
    /* After the reduce-scatter rank r owns block r+1, which the all-gather
     * (shift 1) sends first. Blocks may be empty when count < N. Every block
     * of recv is written before it is read: block b is first received (and
     * summed with our own input) in the reduce-scatter, or for block r,
     * which we only send there, received in the all-gather. */
    ring_reduce_scatter(pc, send, recv, NULL, NULL, count, 0);
    ring_allgather(pc, recv, count, 1);
}

void reduce_scatter_ring(p2p_comm_t *pc, const void *send, void *recv, size_t recvcount) {
    int N = pc->size;
    if (N == 1) {
        memcpy(recv, send, recvcount * pc->es);
        return;
    }
    /* shift -1: rank r finishes with block r, as reduce-scatter demands; the
     * partial sums in between live in one block of scratch. */
    char *acc = p2p_scratch(pc, 1, recvcount * pc->es);
    ring_reduce_scatter(pc, send, NULL, acc, recv, recvcount * (size_t)N, -1);
}

void allgather_ring(p2p_comm_t *pc, const void *send, void *recv, size_t sendcount) {
    int N = pc->size, r = pc->rank;
    size_t B = sendcount * pc->es;
    memcpy((char *)recv + (size_t)r * B, send, B);
    ring_allgather(pc, recv, sendcount * (size_t)N, 0);
}

/* Chain broadcast: root -> root+1 -> ... -> root-1, pipelined by chunks. In
 * step j a rank forwards chunk j-1 while receiving chunk j, so with C chunks
 * the last rank is done after C + N - 2 steps: time ~ X/B + (N-2) x chunk/B,
 * nearly independent of N for long messages. */
void broadcast_ring(p2p_comm_t *pc, void *buf, size_t count, int root) {
    int N = pc->size, vr = mod(pc->rank - root, N);
    int next = vr < N - 1 ? mod(pc->rank + 1, N) : MPI_PROC_NULL;
    int prev = vr > 0 ? mod(pc->rank - 1, N) : MPI_PROC_NULL;
    size_t es = pc->es, ch = pc->chunk, nch = (count + ch - 1) / ch;
    char *b = (char *)buf;
    for (size_t j = 0; j <= nch; j++) {
        size_t so = j >= 1 ? (j - 1) * ch : 0, ro = j < nch ? j * ch : 0;
        size_t sn = j >= 1 ? min_sz(ch, count - so) : 0;
        size_t rn = j < nch ? min_sz(ch, count - ro) : 0;
        p2p_sendrecv(pc, b + so * es, sn, next, b + ro * es, rn, prev);
    }
}

/* Chain reduce towards the root: root+N-1 -> ... -> root+1 -> root. Each rank
 * adds its own chunk to the partial sum from behind and passes it on, one
 * chunk of lag per hop, like the chain broadcast run backwards. */
void reduce_ring(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size, vr = mod(pc->rank - root, N);
    size_t es = pc->es, ch = pc->chunk, nch = (count + ch - 1) / ch;
    if (N == 1) {
        memcpy(recv, send, count * es);
        return;
    }
    int to = vr > 0 ? mod(pc->rank - 1, N) : MPI_PROC_NULL;        /* towards the root */
    int from = vr < N - 1 ? mod(pc->rank + 1, N) : MPI_PROC_NULL;  /* away from it */
    const char *s = (const char *)send;
    char *tmp = p2p_scratch(pc, 0, ch * es);
    char *acc = p2p_scratch(pc, 1, ch * es);
    for (size_t j = 0; j <= nch; j++) {
        size_t so = j >= 1 ? (j - 1) * ch : 0, ro = j < nch ? j * ch : 0;
        size_t sn = j >= 1 ? min_sz(ch, count - so) : 0;
        size_t rn = j < nch ? min_sz(ch, count - ro) : 0;
        /* the last rank of the chain has nothing to add: it sends its input */
        const char *out = from == MPI_PROC_NULL ? s + so * es : acc;
        p2p_sendrecv(pc, out, sn, to, tmp, rn, from);
        if (from != MPI_PROC_NULL && rn) {
            char *dst = vr == 0 ? (char *)recv + ro * es : acc;
            p2p_sum(pc, dst, s + ro * es, tmp, rn);
        }
    }
}
