/* grad_sync.h: gradient synchronisation across data-parallel replicas, in
 * buckets launched as soon as the backward pass makes them ready.
 *
 * Every data-parallel rank computes the gradient of its own share of the
 * global batch. Gradients are linear in the loss, so
 *     grad(mean loss over the global batch) = sum over ranks of
 *         grad(sum of the rank's token losses) / global tokens
 * and summing the ranks' gradients, each computed with the loss scale
 * 1/global_tokens (model_backward's scale), gives every rank exactly the
 * 1-rank gradient of the whole batch. Two ways to sum:
 *
 *   GS_ALLREDUCE (DDP): every rank gets the whole sum. Ranges of the
 *     model's flat gradient array are gathered into buckets of about
 *     `bucket_bytes` on the wire, in the order backward finishes them (last
 *     layer first), and a full bucket's all-reduce starts at once while
 *     backward goes on (Li et al. 2020, PyTorch DDP). A range larger than the
 *     cap is a bucket by itself; ranges are never mixed when not adjacent, so
 *     every rank forms the same buckets in the same order.
 *   GS_REDUCE_SCATTER (ZeRO-1/2/3, FSDP): each unit's gradient (model.h:
 *     the embedding, a layer, the head), padded to size x piece elements,
 *     is reduce-scattered as soon as it is ready; rank r receives piece r of
 *     the sum and ADDS it into its shard (grad_sync_pieces gives the layout),
 *     then `release` tells the owner of the unit's gradient buffer that it
 *     may free it (at points that are the same on every rank, whatever the
 *     timing: once `max_inflight` later units have launched, or at finish;
 *     release may start collectives on another communicator, which NCCL
 *     needs issued in the same order everywhere). One bucket per unit: the shard layout is per unit. At
 *     most `max_inflight` reduce-scatters are in flight at once (0: every
 *     unit's): launching one more first completes the oldest. That bounds
 *     both the receive buffers held here and the unit gradient buffers the
 *     caller must keep alive (FSDP's rate limit).
 *
 * Overlap off launches the same buckets after backward, in the same order:
 * the results are bit-identical, only the timing differs. What is still in
 * flight after backward is waited for in grad_sync_finish: that wait is the
 * EXPOSED communication time (exposed_s).
 *
 * Gradient accumulation: grad_sync_begin(g, sync) before each micro-batch's
 * backward; with sync = 0 the ready ranges are ignored (PyTorch's no_sync)
 * and only the last micro-batch (sync = 1) communicates. In reduce-scatter
 * mode the unit gradients must then stay alive and accumulate until the
 * synchronised micro-batch (ZeRO-1 keeps them whole); ZeRO-2/3 instead
 * synchronise every micro-batch, each adding its sums into the shard.
 *
 * bf16 communication: with wire = DT_BF16 each bucket's fp32 gradients are
 * rounded to bf16, summed in bf16 (fp32 arithmetic, rounded at each step)
 * and widened back: half the bytes, about 2^-8 relative error per rounding.
 * A communicator of one rank has nothing to communicate: nothing is cast or
 * sent, and the gradients stay exactly as backward left them.
 *
 * On the CPU, MPI moves a non-blocking collective only inside MPI calls, so
 * every ready callback also progresses the buckets in flight. On a GPU with
 * NCCL they run on the communication stream, ordered after the backward
 * kernels already queued (comm.h). */
#ifndef GRAD_SYNC_H
#define GRAD_SYNC_H

#include <stddef.h>

#include "comm.h"
#include "compress.h"
#include "model.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GS_ALLREDUCE, GS_REDUCE_SCATTER } grad_sync_mode;

/* A bucket's life, in this order: formed (a new bucket is zeroed), in
 * flight, done (its sum in place), released (reduce-scatter: handed to
 * the release callback). */
typedef enum { BUCKET_FORMED = 0, BUCKET_IN_FLIGHT, BUCKET_DONE, BUCKET_RELEASED } grad_bucket_state;

typedef struct {
    size_t offset, count;   /* all-reduce: range of the flat gradient array; reduce-scatter:
                               the unit's piece (count per rank) */
    int unit;               /* reduce-scatter: the unit */
    int slot;               /* reduce-scatter: its receive slot */
    grad_bucket_state state;
    comm_req_t req;
    double t_launch;        /* for the trace */
} grad_bucket_t;

typedef struct grad_sync {
    grad_sync_mode mode;
    comm_t *comm;           /* the data-parallel communicator (any group) */
    const device_t *dev;
    model_t *model;
    size_t n;               /* all-reduce: elements of the flat gradient array */
    dtype_t wire;           /* DT_F32 or DT_BF16 */
    void *wire_buf;         /* bf16 wire copy */
    float *recv;            /* reduce-scatter: this rank's piece of a unit, before it is added */
    size_t slot;            /* reduce-scatter: elements per slot in recv (the largest piece) */
    int nslots;             /* reduce-scatter: slots, = the reduce-scatters in flight at most */
    int *slot_busy;         /* (nslots) the bucket using each slot, or -1 */
    size_t cap;             /* bucket capacity, elements */
    int overlap;
    int sync;               /* this micro-batch communicates */
    size_t lo, hi;          /* ready range not yet in a bucket (empty: lo == hi) */
    grad_bucket_t *buckets;
    int nbuckets, max_buckets;
    /* reduce-scatter */
    float *shard;           /* this rank's gradient shard (device), grad_sync_pieces' layout */
    optim_piece_t *pieces;  /* (model->n_units) the unit's piece in the shard */
    void (*release)(void *ctx, int unit);   /* a unit's gradient buffer is no longer read */
    void *release_ctx;
    double exposed_s;       /* this step: communication time not hidden behind backward */
    double exposed_total;   /* the same since init (never reset) */
    /* Tracing: buckets in flight overlap one another, so each goes to the
     * first "comm" lane free at its launch; the host time the callbacks
     * spend on communication shows on the "compute" track. */
    int work_track, lanes, lane_track[4];
    double lane_end[4];
} grad_sync_t;

/* All-reduce mode over the model's own flat gradient array (model->grads).
 * bucket_bytes: the cap in bytes of the wire dtype (PyTorch's bucket_cap_mb;
 * 25 MB by default). Adds an after-backward hook to the model. */
void grad_sync_init_allreduce(grad_sync_t *g, comm_t *comm, model_t *m, dtype_t wire,
                              size_t bucket_bytes, int overlap);
/* Reduce-scatter mode: the unit gradients are model->unit_g[u], each
 * comm->size * ceil(count / size) elements (padded with zeros); rank r adds
 * piece r into shard + pieces[u].off. At most max_inflight (0: no limit)
 * reduce-scatters in flight. release (may be NULL) is called once a unit's
 * reduce-scatter has completed. Adds an after-backward hook. */
void grad_sync_init_reduce_scatter(grad_sync_t *g, comm_t *comm, model_t *m, dtype_t wire,
                                   float *shard, const optim_piece_t *pieces, int overlap,
                                   int max_inflight, void (*release)(void *ctx, int unit),
                                   void *release_ctx);
void grad_sync_free(grad_sync_t *g);

/* The sharded layout: unit u's elements cut into `size` pieces of
 * ceil(count / size) (the last ones padded); rank r's piece of every unit,
 * one after the other. Fills pieces[n_units] (grad and work left NULL) and
 * returns the shard length. */
size_t grad_sync_pieces(const model_t *m, int size, int rank, optim_piece_t *pieces);

/* Before each micro-batch's backward: sync = 1 on the last micro-batch. */
void grad_sync_begin(grad_sync_t *g, int sync);
/* After the last micro-batch's backward: launch what is left, wait for every
 * bucket (nothing when the micro-batch did not synchronise). Reduce-scatter
 * mode may also call it after any unit's backward, to complete that unit's
 * reduce-scatter before going on (no overlap, one unit buffer at a time). */
void grad_sync_finish(grad_sync_t *g);
/* Another backward pass of the same step communicates too: as
 * grad_sync_begin(g, 1), but the buckets formed so far stay (a pipeline
 * stage with several chunks: each chunk's last micro-batch synchronises its
 * own units, the first with grad_sync_begin(g, 1), the others with this). */
void grad_sync_continue(grad_sync_t *g);

/* A data-parallel synchronisation as the runner (runner.h) calls it, at the
 * points its schedule defines. Any member but ctx and exposed may be NULL. */
typedef struct {
    void *ctx;
    void (*step_begin)(void *ctx);              /* the step's start (model grads zeroed) */
    /* around each backward action; last = 0, or 1 when it is the last
     * backward of its chunk in the step, 2 for the first such of the step */
    void (*backward_begin)(void *ctx, int last);
    void (*backward_end)(void *ctx, int last);
    void (*step_end)(void *ctx);                /* after the list: nothing left in flight */
    double (*exposed)(void *ctx);               /* seconds of exposed communication, growing */
} grad_strategy_t;

/* DDP (all-reduce mode): no_sync until a chunk's last backward, whose ready
 * buckets go out during it; the rest at the step's end. */
grad_strategy_t grad_sync_strategy(grad_sync_t *g);

/* DDP with compressed gradients (compress.h): backward only accumulates;
 * at the step's end the whole flat gradient is compressed (with error
 * feedback when ef; PowerSGD per weight matrix of the model's tensor list), all-reduced at once and written back, all on
 * the gradient's device (any comm backend). No buckets, no overlap: the
 * whole synchronisation is exposed. */
typedef struct {
    compressor_t z;
    comm_t *comm;
    model_t *model;
    double exposed_total;   /* seconds since init */
} grad_compress_t;

void grad_compress_init(grad_compress_t *c, comm_t *comm, model_t *m, const compress_spec_t *spec, int ef);
void grad_compress_free(grad_compress_t *c);
grad_strategy_t grad_compress_strategy(grad_compress_t *c);

#ifdef __cplusplus
}
#endif
#endif
