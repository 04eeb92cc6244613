/* ps.c: the parameter server (star): every rank exchanges its data with one
 * root directly — the naive baseline.
 *
 * All-reduce = reduce to the root + broadcast from it. Each worker sends X
 * bytes and receives X bytes, but the root receives (N-1) X and sends (N-1) X:
 *     time ~ 2 (N-1) X / B
 * grows with N while the ring's 2 (N-1)/N X / B does not. The root's link is
 * the bottleneck; real parameter servers shard the parameters over several
 * servers for that reason. The same star gives the flat (linear) broadcast,
 * reduce, scatter and gather. */
#include <string.h>

#include "check.h"
#include "coll.h"

/* Root: for each chunk, receive every other rank's piece and add it. */
void reduce_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size, r = pc->rank;
    size_t es = pc->es, ch = pc->chunk;
    const char *s = (const char *)send;
    if (r != root) {
        for (size_t off = 0; off < count; off += ch)
            p2p_send(pc, s + off * es, min_sz(ch, count - off), root);
        return;
    }
    char *d = (char *)recv, *tmp = p2p_scratch(pc, 0, ch * es);
    if (N == 1) memcpy(d, s, count * es);
    for (size_t off = 0; off < count; off += ch) {
        size_t n = min_sz(ch, count - off);
        int first = 1;
        for (int p = 0; p < N; p++) {
            if (p == root) continue;
            p2p_recv(pc, tmp, n, p);
            /* the first addition reads our own input; no copy into recv */
            p2p_sum(pc, d + off * es, first ? s + off * es : d + off * es, tmp, n);
            first = 0;
        }
    }
}

/* Root sends the whole buffer to each rank in turn. */
void broadcast_ps(p2p_comm_t *pc, void *buf, size_t count, int root) {
    int N = pc->size;
    if (pc->rank != root) {
        p2p_recv(pc, buf, count, root);
        return;
    }
    for (int p = 0; p < N; p++)
        if (p != root) p2p_send(pc, buf, count, p);
}

void allreduce_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count) {
    reduce_ps(pc, send, recv, count, 0);
    broadcast_ps(pc, recv, count, 0);
}

void scatter_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size;
    size_t B = count * pc->es;
    if (pc->rank != root) {
        p2p_recv(pc, recv, count, root);
        return;
    }
    for (int p = 0; p < N; p++)
        if (p != root) p2p_send(pc, (const char *)send + (size_t)p * B, count, p);
    memcpy(recv, (const char *)send + (size_t)root * B, B);
}

void gather_ps(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size;
    size_t B = count * pc->es;
    if (pc->rank != root) {
        p2p_send(pc, send, count, root);
        return;
    }
    for (int p = 0; p < N; p++)
        if (p != root) p2p_recv(pc, (char *)recv + (size_t)p * B, count, p);
    memcpy((char *)recv + (size_t)root * B, send, B);
}
