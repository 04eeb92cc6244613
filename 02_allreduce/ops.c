/* ops.c: the collectives, one table entry each: buffer shapes, the size that
 * bandwidths are computed from, the bus-bandwidth factor and the exact result.
 *
 * Sizes and factors follow nccl-tests (its doc/PERFORMANCE.md): "size" is the
 * whole vector an op works on (for all-gather the gathered result, for
 * reduce-scatter the input, for all-to-all one rank's full buffer), algbw =
 * size / time, and busbw = algbw x factor, where the factor makes busbw the
 * speed each rank's busiest link must reach, comparable with the hardware's
 * bandwidth whatever N is:
 *   all-reduce                                          2(N-1)/N
 *   reduce-scatter, all-gather, all-to-all               (N-1)/N
 *   scatter, gather: the root sends/receives (N-1)/N of the size
 *   broadcast, reduce                                          1 */
#include "bench.h"

static double f_allreduce(int n) { return 2.0 * (n - 1) / n; }
static double f_share(int n) { return (double)(n - 1) / n; }
static double f_one(int n) { (void)n; return 1.0; }

static size_t per_rank(size_t total, int n) {
    size_t c = total / (size_t)n;
    return c ? c : 1;
}

/* ---- shapes --------------------------------------------------------------- */

static void shape_vector(bench_case_t *c, size_t total) {   /* allreduce, broadcast, reduce */
    c->count = total ? total : 1;
    c->send_count = c->op == OP_BROADCAST ? 0 : c->count;
    c->recv_count = c->check_count = c->count;
    if (c->op == OP_REDUCE && c->rank != c->root) c->check_count = 0;
    c->bytes = c->count * dtype_size(c->dt);
}

static void shape_blocks(bench_case_t *c, size_t total) {   /* one block per rank */
    size_t n = per_rank(total, c->world), all = n * (size_t)c->world;
    c->count = n;
    switch (c->op) {
    case OP_REDUCE_SCATTER: c->send_count = all; c->recv_count = n; break;
    case OP_ALLGATHER: c->send_count = n; c->recv_count = all; break;
    case OP_SCATTER: c->send_count = all; c->recv_count = n; break;
    case OP_GATHER: c->send_count = n; c->recv_count = all; break;
    default: c->send_count = all; c->recv_count = all; break;   /* alltoall */
    }
    c->check_count = c->recv_count;
    if (c->op == OP_GATHER && c->rank != c->root) c->check_count = 0;
    c->bytes = all * dtype_size(c->dt);
}

/* ---- exact results -------------------------------------------------------- */

static float sum_over_ranks(const bench_case_t *c, size_t i) {
    float s = 0;   /* integers small enough that every partial sum is exact */
    for (int r = 0; r < c->world; r++) s += bench_input(c, r, i);
    return s;
}

static float exp_allreduce(const bench_case_t *c, size_t i) { return sum_over_ranks(c, i); }
static float exp_reduce_scatter(const bench_case_t *c, size_t i) {
    return sum_over_ranks(c, (size_t)c->rank * c->count + i);
}
static float exp_gathered(const bench_case_t *c, size_t i) {   /* allgather, gather */
    return bench_input(c, (int)(i / c->count), i % c->count);
}
static float exp_broadcast(const bench_case_t *c, size_t i) { return bench_input(c, c->root, i); }
static float exp_scatter(const bench_case_t *c, size_t i) {
    return bench_input(c, c->root, (size_t)c->rank * c->count + i);
}
static float exp_alltoall(const bench_case_t *c, size_t i) {
    return bench_input(c, (int)(i / c->count), (size_t)c->rank * c->count + i % c->count);
}

const op_t bench_ops[OPS] = {
    [OP_ALLREDUCE] = {"allreduce", "2(N-1)/N", f_allreduce, 1, 0, shape_vector, exp_allreduce},
    [OP_REDUCE_SCATTER] = {"reduce_scatter", "(N-1)/N", f_share, 1, 0, shape_blocks, exp_reduce_scatter},
    [OP_ALLGATHER] = {"allgather", "(N-1)/N", f_share, 0, 0, shape_blocks, exp_gathered},
    [OP_BROADCAST] = {"broadcast", "1", f_one, 0, 1, shape_vector, exp_broadcast},
    [OP_REDUCE] = {"reduce", "1", f_one, 1, 0, shape_vector, exp_allreduce},
    [OP_SCATTER] = {"scatter", "(N-1)/N", f_share, 0, 0, shape_blocks, exp_scatter},
    [OP_GATHER] = {"gather", "(N-1)/N", f_share, 0, 0, shape_blocks, exp_gathered},
    [OP_ALLTOALL] = {"alltoall", "(N-1)/N", f_share, 0, 0, shape_blocks, exp_alltoall},
};
