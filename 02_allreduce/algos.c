/* algos.c: every algorithm the benchmark can run, one line each.
 *
 * "lib" is the library's own collective through comm_* (MPI, or NCCL on
 * GPUs); everything else is hand-written in ps.c, tree.c, rd.c, ring.c and
 * coll.c. NCCL has no scatter or gather, so "lib" for those two is MPI's
 * and runs only on host memory with the MPI backend. */
#include <limits.h>

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

const algo_t bench_algos[] = {
    {OP_ALLREDUCE, "ps", ar_ps, 0, 0},
    {OP_ALLREDUCE, "tree", ar_tree, 0, 0},
    {OP_ALLREDUCE, "rd", ar_rd, 0, 0},
    {OP_ALLREDUCE, "ring", ar_ring, 0, 0},
    {OP_ALLREDUCE, "lib", ar_lib, 1, 0},
    {OP_REDUCE_SCATTER, "ring", rs_ring, 0, 0},
    {OP_REDUCE_SCATTER, "lib", rs_lib, 1, 0},
    {OP_ALLGATHER, "ring", ag_ring, 0, 0},
    {OP_ALLGATHER, "lib", ag_lib, 1, 0},
    {OP_BROADCAST, "ps", bc_ps, 0, 0},
    {OP_BROADCAST, "tree", bc_tree, 0, 0},
    {OP_BROADCAST, "ring", bc_ring, 0, 0},
    {OP_BROADCAST, "lib", bc_lib, 1, 0},
    {OP_REDUCE, "ps", re_ps, 0, 0},
    {OP_REDUCE, "tree", re_tree, 0, 0},
    {OP_REDUCE, "ring", re_ring, 0, 0},
    {OP_REDUCE, "lib", re_lib, 1, 0},
    {OP_SCATTER, "ps", sc_ps, 0, 0},
    {OP_SCATTER, "tree", sc_tree, 0, 0},
    {OP_SCATTER, "lib", sc_lib, 1, 1},
    {OP_GATHER, "ps", ga_ps, 0, 0},
    {OP_GATHER, "tree", ga_tree, 0, 0},
    {OP_GATHER, "lib", ga_lib, 1, 1},
    {OP_ALLTOALL, "pairwise", a2a_pairwise, 0, 0},
    {OP_ALLTOALL, "lib", a2a_lib, 1, 0},
};
const int bench_nalgos = (int)(sizeof bench_algos / sizeof bench_algos[0]);
