/* bench.h: the benchmark harness of chapter 02, in the spirit of nccl-tests.
 *
 * A collective is an op_t: a few hooks saying how big its buffers are, how
 * many bytes count as its "size", its bus-bandwidth factor, its inputs and
 * the exact result each rank must hold. An algorithm is an algo_t: which op
 * it implements, its name and the call. The harness (main.c) sweeps sizes,
 * checks every element, times the calls and fits an alpha-beta model; adding
 * a collective or an algorithm is adding one table entry. */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"
#include "comm.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    OP_ALLREDUCE, OP_REDUCE_SCATTER, OP_ALLGATHER, OP_BROADCAST,
    OP_REDUCE, OP_SCATTER, OP_GATHER, OP_ALLTOALL, OPS
} op_id;

/* One measurement point: an op at one size on one rank. */
typedef struct {
    op_id op;
    int rank, world, root;
    dtype_t dt;
    uint32_t seed;
    size_t count;       /* the call's count argument (per rank or per block) */
    size_t send_count;  /* elements in this rank's send buffer */
    size_t recv_count;  /* elements in this rank's receive buffer */
    size_t check_count; /* elements of recv that have a defined result here */
    size_t bytes;       /* the "size" column: as nccl-tests counts it */
    uint32_t k;         /* inputs are integers 1..k */
} bench_case_t;

typedef struct {
    const char *name;
    const char *factor_text;            /* "2(N-1)/N" */
    double (*busbw_factor)(int world);
    int reduces;                        /* sums over ranks */
    int in_place;                       /* one buffer (broadcast): recv is also the input */
    /* total: the elements asked for (size / element size); sets count,
     * send_count, recv_count, check_count and bytes */
    void (*shape)(bench_case_t *c, size_t total);
    /* the exact value of element i of recv on c->rank */
    float (*expected)(const bench_case_t *c, size_t i);
} op_t;

extern const op_t bench_ops[OPS];

/* alpha (us) and beta (us per byte) of a link or a fitted curve. */
typedef struct { double alpha_us, beta_us_per_byte; int ok; } ab_fit_t;

/* What an algorithm runs on. */
typedef struct {
    p2p_comm_t p2p;     /* hand-written algorithms: host memory */
    comm_t *lib;        /* the library's: device buffers */
} bench_ctx_t;

typedef struct {
    op_id op;
    const char *name;   /* ps, tree, rd, ring, pairwise, lib */
    void (*run)(bench_ctx_t *x, const bench_case_t *c, const void *send, void *recv);
    int lib;            /* the library's: runs on device buffers through comm_* */
    int mpi_host;       /* needs the MPI backend on host memory (no NCCL version) */
    /* The alpha-beta model (Hockney 1994; Thakur, Rabenseifner & Gropp
     * 2005): a message of m bytes takes alpha + m beta on a link (measured by
     * bench_pingpong). The predicted time of one call, us, for c->bytes on
     * c->world ranks with messages cut in chunks of chunk_bytes: the sum over
     * the steps that follow one another on the busiest rank. NULL: no model
     * (the library's algorithm is its own choice). */
    double (*model)(const bench_case_t *c, ab_fit_t link, size_t chunk_bytes);
} algo_t;

extern const algo_t bench_algos[];
extern const int bench_nalgos;

/* Set up the case for an op at a requested total element count. */
void bench_case_init(bench_case_t *c, op_id op, size_t total, int rank, int world,
                     int root, dtype_t dt, uint32_t seed);
/* The integer-valued input pattern: element i of rank r's send buffer. */
float bench_input(const bench_case_t *c, int r, size_t i);
/* Fill this rank's send buffer (host) and poison recv with -1, a value no
 * result can take, so an element never written counts as wrong. For an
 * in-place op the root's recv gets the input. */
void bench_fill(const bench_case_t *c, void *send, void *recv);
/* Elements of recv (host) that differ from the exact result on this rank. */
size_t bench_check(const bench_case_t *c, const void *recv);
/* 0 when an exact check is possible (bf16 sums stay <= 256). */
int bench_check_possible(const bench_case_t *c);

/* Alpha-beta fit: time = alpha + bytes x beta, by least squares of the
 * relative error (so the small sizes, which set alpha, count as much as the
 * big ones, which set beta). Both stay >= 0; ok = 0 with fewer than two
 * sizes. */
ab_fit_t ab_fit(const double *bytes, const double *time_us, int n);
static inline double ab_predict(ab_fit_t f, double bytes) {
    return f.alpha_us + f.beta_us_per_byte * bytes;
}

/* The link's alpha and beta: one-way times of messages from 4 B to 4 MiB
 * between ranks 0 and 1 (half the fastest of `reps` round trips each),
 * fitted as above; every rank gets the result. One rank: no link (ok = 0). */
ab_fit_t bench_pingpong(p2p_comm_t *pc, int reps);

/* Median of n values (n >= 1; the array is sorted in place). */
double median(double *v, int n);

/* ---- a hang becomes an error ---------------------------------------------------
 * The program starts check.h's watchdog (--timeout); bench_doing names the
 * step now running (it formats text: outside timed loops) and watch_tick()
 * counts a finished call inside them. When no call finishes for the timeout
 * the watchdog prints "error (rank R): no progress for S s in <the step>"
 * and ends the job. */
void bench_doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
#endif
