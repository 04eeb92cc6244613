/* tree.c: binomial-tree algorithms — broadcast, reduce, scatter, gather, and
 * all-reduce as reduce + broadcast (as in MPICH; Thakur, Rabenseifner & Gropp
 * 2005).
 *
 * Ranks are renumbered relative to the root (vr = rank - root mod N). In
 * round k (k = 0, 1, ...) of a broadcast, every rank that has the data sends
 * it 2^k ranks further, so ceil(log2 N) rounds reach everyone; reduce runs the
 * same tree upwards. Rank vr's parent is vr minus its lowest set bit and its
 * children are vr + 2^j for 2^j below that bit:
 *
 *     N = 8:   0 -> 4, 2, 1     4 -> 6, 5     2 -> 3     6 -> 7
 *
 * log2 N steps beat the ring's N-1 for short messages (latency), but every
 * round moves the whole vector, so a long message costs ~ log2(N) X / B
 * unpipelined. Cutting it into chunks turns the tree into a pipeline. */
#include <string.h>

#include "check.h"
#include "coll.h"

/* Lowest set bit of vr (vr > 0); for the root, the first power of two >= N. */
static int subtree_mask(int vr, int N) {
    int mask = 1;
    if (vr == 0) {
        while (mask < N) mask <<= 1;
        return mask;
    }
    while (!(vr & mask)) mask <<= 1;
    return mask;
}

void broadcast_tree(p2p_comm_t *pc, void *buf, size_t count, int root) {
    int N = pc->size, vr = mod(pc->rank - root, N);
    int mask = subtree_mask(vr, N);
    size_t es = pc->es, ch = pc->chunk;
    for (size_t off = 0; off < count; off += ch) {
        char *b = (char *)buf + off * es;
        size_t n = min_sz(ch, count - off);
        if (vr != 0) p2p_recv(pc, b, n, mod(vr - mask + root, N));
        /* farthest child first: it heads the biggest subtree */
        for (int m = mask >> 1; m > 0; m >>= 1)
            if (vr + m < N) p2p_send(pc, b, n, mod(vr + m + root, N));
    }
}

void reduce_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size, vr = mod(pc->rank - root, N);
    int mask = subtree_mask(vr, N);
    size_t es = pc->es, ch = pc->chunk;
    char *tmp = p2p_scratch(pc, 0, ch * es);
    char *acc = vr == 0 ? NULL : p2p_scratch(pc, 1, ch * es);
    for (size_t off = 0; off < count; off += ch) {
        const char *mine = (const char *)send + off * es;
        char *sum = vr == 0 ? (char *)recv + off * es : acc;
        size_t n = min_sz(ch, count - off);
        int have = 0;   /* sum holds something: until then our input is the sum */
        /* nearest child first: its subtree (a leaf) finishes first */
        for (int m = 1; m < mask; m <<= 1) {
            if (vr + m >= N) break;
            p2p_recv(pc, tmp, n, mod(vr + m + root, N));
            p2p_sum(pc, sum, have ? sum : mine, tmp, n);
            have = 1;
        }
        if (vr != 0) p2p_send(pc, have ? sum : mine, n, mod(vr - mask + root, N));
        else if (!have) memcpy(sum, mine, n * es);   /* N == 1 */
    }
}

void allreduce_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count) {
    reduce_tree(pc, send, recv, count, 0);
    broadcast_tree(pc, recv, count, 0);
}

/* Binomial scatter: the root hands each child the blocks of that child's
 * whole subtree, which it splits further. Blocks travel in relative order, so
 * a root other than 0 first rotates its buffer (one copy, as MPICH does). */
void scatter_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size, r = pc->rank, vr = mod(r - root, N);
    int mask = subtree_mask(vr, N);
    size_t B = count * pc->es;
    const char *buf;   /* our subtree's blocks, ours first */
    if (vr == 0) {
        const char *s = (const char *)send;
        if (root == 0) {
            buf = s;
        } else {
            char *rot = p2p_scratch(pc, 2, (size_t)N * B);
            memcpy(rot, s + (size_t)root * B, (size_t)(N - root) * B);
            memcpy(rot + (size_t)(N - root) * B, s, (size_t)root * B);
            buf = rot;
        }
    } else {
        int nblk = mask < N - vr ? mask : N - vr;
        char *in = nblk == 1 ? (char *)recv : p2p_scratch(pc, 2, (size_t)nblk * B);
        p2p_recv(pc, in, (size_t)nblk * count, mod(vr - mask + root, N));
        buf = in;
    }
    for (int m = mask >> 1; m > 0; m >>= 1) {
        if (vr + m >= N) continue;
        int nblk = m < N - vr - m ? m : N - vr - m;
        p2p_send(pc, buf + (size_t)m * B, (size_t)nblk * count, mod(vr + m + root, N));
    }
    if (buf != (const char *)recv) memcpy(recv, buf, B);
}

/* Binomial gather: the scatter run backwards. */
void gather_tree(p2p_comm_t *pc, const void *send, void *recv, size_t count, int root) {
    int N = pc->size, r = pc->rank, vr = mod(r - root, N);
    int mask = subtree_mask(vr, N);
    size_t B = count * pc->es;
    int nblk = vr == 0 ? N : (mask < N - vr ? mask : N - vr);
    if (nblk == 1) {   /* a leaf */
        if (vr == 0) memcpy(recv, send, B);
        else p2p_send(pc, send, count, mod(vr - mask + root, N));
        return;
    }
    char *buf = vr == 0 && root == 0 ? (char *)recv : p2p_scratch(pc, 2, (size_t)nblk * B);
    memcpy(buf, send, B);
    for (int m = 1; m < mask && vr + m < N; m <<= 1) {
        int cb = m < N - vr - m ? m : N - vr - m;
        p2p_recv(pc, buf + (size_t)m * B, (size_t)cb * count, mod(vr + m + root, N));
    }
    if (vr != 0) {
        p2p_send(pc, buf, (size_t)nblk * count, mod(vr - mask + root, N));
    } else if (root != 0) {   /* relative block i belongs to rank i + root */
        char *d = (char *)recv;
        memcpy(d + (size_t)root * B, buf, (size_t)(N - root) * B);
        memcpy(d, buf + (size_t)(N - root) * B, (size_t)root * B);
    }
}
