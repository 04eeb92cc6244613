/* algos.c: every algorithm the benchmark can run, one line each, with its
 * alpha-beta cost.
 *
 * "lib" is the library's own collective through comm_* (MPI, or NCCL on
 * GPUs); everything else is hand-written in ps.c, tree.c, rd.c, ring.c and
 * coll.c. NCCL has no scatter or gather, so "lib" for those two is MPI's
 * and runs only on host memory with the MPI backend. */
#include <limits.h>
#include <math.h>

#include "bench.h"
#include "check.h"

#define P2P(name, call)                                                        \
    static void name(bench_ctx_t *x, const bench_case_t *c, const void *s, void *r) { \
        (void)s; (void)r; call;                                                \
    }

P2P(ar_ps, allreduce_ps(&x->p2p, s, r, c->count))
P2P(ar_tree, allreduce_tree(&x->p2p, s, r, c->count))
P2P(ar_rd, allreduce_rd(&x->p2p, s, r, c->count))
P2P(ar_ring, allreduce_ring(&x->p2p, s, r, c->count))
P2P(rs_ring, reduce_scatter_ring(&x->p2p, s, r, c->count))
P2P(ag_ring, allgather_ring(&x->p2p, s, r, c->count))
P2P(bc_ps, broadcast_ps(&x->p2p, r, c->count, c->root))
P2P(bc_tree, broadcast_tree(&x->p2p, r, c->count, c->root))
P2P(bc_ring, broadcast_ring(&x->p2p, r, c->count, c->root))
P2P(re_ps, reduce_ps(&x->p2p, s, r, c->count, c->root))
P2P(re_tree, reduce_tree(&x->p2p, s, r, c->count, c->root))
P2P(re_ring, reduce_ring(&x->p2p, s, r, c->count, c->root))
P2P(sc_ps, scatter_ps(&x->p2p, s, r, c->count, c->root))
P2P(sc_tree, scatter_tree(&x->p2p, s, r, c->count, c->root))
P2P(ga_ps, gather_ps(&x->p2p, s, r, c->count, c->root))
P2P(ga_tree, gather_tree(&x->p2p, s, r, c->count, c->root))
P2P(a2a_pairwise, alltoall_pairwise(&x->p2p, s, r, c->count))

P2P(ar_lib, comm_allreduce(x->lib, s, r, c->count, c->dt, RED_SUM))
P2P(rs_lib, comm_reduce_scatter(x->lib, s, r, c->count, c->dt, RED_SUM))
P2P(ag_lib, comm_allgather(x->lib, s, r, c->count, c->dt))
P2P(bc_lib, comm_broadcast(x->lib, r, c->count, c->dt, c->root))
P2P(re_lib, comm_reduce(x->lib, s, r, c->count, c->dt, RED_SUM, c->root))
P2P(a2a_lib, comm_alltoall(x->lib, s, r, c->count, c->dt))

static int mpi_count(size_t n) {
    if (n > INT_MAX) die("scatter/gather of %zu elements per rank exceeds MPI's int count", n);
    return (int)n;
}
P2P(sc_lib, MPI_CHECK(MPI_Scatter(s, mpi_count(c->count), comm_mpi_type(c->dt), r,
                                  mpi_count(c->count), comm_mpi_type(c->dt), c->root, x->lib->mpi)))
P2P(ga_lib, MPI_CHECK(MPI_Gather(s, mpi_count(c->count), comm_mpi_type(c->dt), r,
                                 mpi_count(c->count), comm_mpi_type(c->dt), c->root, x->lib->mpi)))

/* ---- alpha-beta costs ----------------------------------------------------------
 * Time of one call on the busiest rank, for X = c->bytes (the size column)
 * on N ranks, each message costing alpha + bytes x beta (bench.h). The
 * hand-written algorithms send long messages in chunks, and every chunk that
 * waits for the one before pays alpha: msgs(b) is the number of messages a
 * transfer of b bytes takes (the ring's chunks of a step go out together and
 * pay one). For X up to one chunk these are the textbook formulas (Thakur et
 * al. 2005):
 *   ps     2(N-1) (alpha + X beta)       the root receives and sends N-1 vectors
 *   tree   2 L (alpha + X beta)          L = ceil(log2 N) rounds up, L down
 *   rd     log2 N (alpha + X beta)       (+2 steps when N is not a power of two)
 *   ring   2(N-1) alpha + 2(N-1)/N X beta
 * The reduction arithmetic (a gamma term per byte added) is left out, and
 * every rank is assumed to have its own core and link. */
static double L2(int n) { int l = 0; while ((1 << l) < n) l++; return l; }   /* ceil(log2 n) */
static double msgs(double bytes, size_t chunk) {
    double m = ceil(bytes / (double)chunk);
    return m < 1 ? 1 : m;
}
#define COST(name, expr)                                                       \
    static double name(const bench_case_t *c, ab_fit_t l, size_t chunk) {       \
        const double N = c->world, X = (double)c->bytes, a = l.alpha_us, b = l.beta_us_per_byte; \
        (void)N;                                                               \
        (void)chunk; (void)a; (void)b;                                         \
        if (c->world == 1) return NAN;   /* no messages */                    \
        return expr;                                                           \
    }
/* reduce (chunked) up the star, then the whole sum back down it */
COST(m_ar_ps, (N - 1) * (msgs(X, chunk) * a + X * b) + (N - 1) * (a + X * b))
COST(m_ar_tree, 2 * L2(c->world) * (msgs(X, chunk) * a + X * b))
/* log2 p rounds of swaps; N = p + rem folds rem pairs first (chunked) and
 * hands the result back at the end (one message) */
static double rd_cost(const bench_case_t *c, ab_fit_t l, size_t chunk) {
    int p = 1;
    while (p * 2 <= c->world) p *= 2;
    const double X = (double)c->bytes, a = l.alpha_us, b = l.beta_us_per_byte;
    if (c->world == 1) return NAN;
    double t = L2(p) * (msgs(X, chunk) * a + X * b);
    if (p < c->world) t += (msgs(X, chunk) * a + X * b) + (a + X * b);
    return t;
}
/* the ring posts a step's chunks at once: one alpha a step */
COST(m_ar_ring, 2 * (N - 1) * (a + X / N * b))
COST(m_ring_blocks, (N - 1) * (a + X / N * b))   /* rs, ag, pairwise a2a */
COST(m_bc_ps, (N - 1) * (a + X * b))
COST(m_re_ps, (N - 1) * (msgs(X, chunk) * a + X * b))
COST(m_tree, L2(c->world) * (msgs(X, chunk) * a + X * b))   /* broadcast, reduce */
/* a chain pipelined by chunks: C chunks reach the last of N ranks after
 * C + N - 2 steps of one chunk each */
COST(m_chain, (msgs(X, chunk) + N - 2) * (a + X / msgs(X, chunk) * b))
COST(m_sc_ps, (N - 1) * (a + X / N * b))                 /* scatter, gather: N-1 blocks */
COST(m_sc_tree, L2(c->world) * a + (N - 1) / N * X * b)  /* L messages, (N-1)/N X bytes */

const algo_t bench_algos[] = {
    {OP_ALLREDUCE, "ps", ar_ps, 0, 0, m_ar_ps},
    {OP_ALLREDUCE, "tree", ar_tree, 0, 0, m_ar_tree},
    {OP_ALLREDUCE, "rd", ar_rd, 0, 0, rd_cost},
    {OP_ALLREDUCE, "ring", ar_ring, 0, 0, m_ar_ring},
    {OP_ALLREDUCE, "lib", ar_lib, 1, 0, NULL},
    {OP_REDUCE_SCATTER, "ring", rs_ring, 0, 0, m_ring_blocks},
    {OP_REDUCE_SCATTER, "lib", rs_lib, 1, 0, NULL},
    {OP_ALLGATHER, "ring", ag_ring, 0, 0, m_ring_blocks},
    {OP_ALLGATHER, "lib", ag_lib, 1, 0, NULL},
    {OP_BROADCAST, "ps", bc_ps, 0, 0, m_bc_ps},
    {OP_BROADCAST, "tree", bc_tree, 0, 0, m_tree},
    {OP_BROADCAST, "ring", bc_ring, 0, 0, m_chain},
    {OP_BROADCAST, "lib", bc_lib, 1, 0, NULL},
    {OP_REDUCE, "ps", re_ps, 0, 0, m_re_ps},
    {OP_REDUCE, "tree", re_tree, 0, 0, m_tree},
    {OP_REDUCE, "ring", re_ring, 0, 0, m_chain},
    {OP_REDUCE, "lib", re_lib, 1, 0, NULL},
    {OP_SCATTER, "ps", sc_ps, 0, 0, m_sc_ps},
    {OP_SCATTER, "tree", sc_tree, 0, 0, m_sc_tree},
    {OP_SCATTER, "lib", sc_lib, 1, 1, NULL},
    {OP_GATHER, "ps", ga_ps, 0, 0, m_sc_ps},
    {OP_GATHER, "tree", ga_tree, 0, 0, m_sc_tree},
    {OP_GATHER, "lib", ga_lib, 1, 1, NULL},
    {OP_ALLTOALL, "pairwise", a2a_pairwise, 0, 0, m_ring_blocks},
    {OP_ALLTOALL, "lib", a2a_lib, 1, 0, NULL},
};
const int bench_nalgos = (int)(sizeof bench_algos / sizeof bench_algos[0]);
