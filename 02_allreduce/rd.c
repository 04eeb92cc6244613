/* rd.c: recursive-doubling all-reduce (Thakur, Rabenseifner & Gropp 2005).
 *
 * In round k every rank swaps its whole partial sum with the rank whose
 * number differs in bit k and adds what it gets: after log2 N rounds every
 * rank has the full sum. Fewest rounds of any all-reduce (best for short
 * messages), but each rank sends log2(N) X bytes instead of the ring's
 * 2(N-1)/N X, so it loses on long ones.
 *
 * N not a power of two: with p the largest power of two below N and
 * rem = N - p, the first 2 rem ranks pair up (0,1), (2,3), ...; each even one
 * hands its vector to its odd partner and sits out. The p remaining ranks
 * double recursively, then each odd rank hands the result back: two extra
 * steps. Both partners of a swap compute a + b in the same order of operands
 * (IEEE addition is commutative), so every rank ends with identical bits. */
#include <string.h>

#include "check.h"
#include "coll.h"

void allreduce_rd(p2p_comm_t *pc, const void *send, void *recv, size_t count) {
    int N = pc->size, r = pc->rank;
    size_t es = pc->es, ch = pc->chunk;
    const char *s = (const char *)send;
    char *d = (char *)recv;
    if (N == 1) {
        if (send != recv) memcpy(d, s, count * es);
        return;
    }
    int p = 1;
    while (p * 2 <= N) p *= 2;
    int rem = N - p;
    char *tmp = p2p_scratch(pc, 0, ch * es);
    int have = 0;   /* recv holds our partial sum (else our input is it) */

    int newr;       /* rank among the p doubling ranks, -1 when sitting out */
    if (r < 2 * rem) {
        if (r % 2 == 0) {   /* in chunks, as the partner adds them */
            for (size_t off = 0; off < count; off += ch)
                p2p_send(pc, s + off * es, min_sz(ch, count - off), r + 1);
            newr = -1;
        } else {
            for (size_t off = 0; off < count; off += ch) {
                size_t n = min_sz(ch, count - off);
                p2p_recv(pc, tmp, n, r - 1);
                p2p_sum(pc, d + off * es, s + off * es, tmp, n);
            }
            have = 1;
            newr = r / 2;
        }
    } else {
        newr = r - rem;
    }

    if (newr >= 0) {
        for (int mask = 1; mask < p; mask <<= 1) {
            int pn = newr ^ mask;
            int partner = pn < rem ? pn * 2 + 1 : pn + rem;
            const char *mine = have ? d : s;
            /* chunk by chunk: swap, then add while the chunk is in cache */
            for (size_t off = 0; off < count; off += ch) {
                size_t n = min_sz(ch, count - off);
                p2p_sendrecv(pc, mine + off * es, n, partner, tmp, n, partner);
                p2p_sum(pc, d + off * es, mine + off * es, tmp, n);
            }
            have = 1;
        }
    }

    if (r < 2 * rem) {
        if (r % 2 == 1) p2p_send(pc, d, count, r - 1);
        else p2p_recv(pc, d, count, r + 1);
    }
}
