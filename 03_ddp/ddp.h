/* ddp.h: gradient averaging for data parallelism, in buckets that overlap
 * the backward pass.
 *
 * Every data-parallel rank holds the whole model and computes the gradient
 * of its own shard of the global batch. Gradients are linear in the loss, so
 *     grad(mean loss over the global batch) = sum over ranks of
 *         grad(sum of the rank's token losses) / global tokens
 * and an all-reduce (sum) of each rank's gradient, computed with the loss
 * scale 1/global_tokens (model_backward's dlogits_scale), leaves every rank
 * holding exactly the 1-rank gradient of the whole batch. Every rank then
 * applies the same optimizer step to the same weights.
 *
 * Bucketing and overlap (as PyTorch DDP, Li et al. 2020): backward produces
 * gradients from the last layer to the first, and model_backward reports each
 * contiguous range as soon as it is final. Ranges are gathered into buckets of
 * about `bucket_bytes` (on the wire); a full bucket's all-reduce starts at
 * once, while backward goes on computing earlier layers. After backward only
 * the buckets still in flight are waited for: that wait is the EXPOSED
 * communication time. With overlap off the same buckets are all-reduced after
 * backward, so both modes give bit-identical gradients and differ only in
 * time.
 *
 * A bucket is made of whole ranges: a range larger than the cap (a whole
 * layer, the embedding) is one bucket by itself. Buckets are formed in the
 * order the ranges arrive, so every rank forms the same buckets and launches
 * them in the same order, as collectives require.
 *
 * Gradient accumulation: call ddp_begin(g, sync) before each micro-batch's
 * backward; with sync = 0 the ready ranges are ignored (PyTorch's no_sync),
 * and only the last micro-batch (sync = 1) communicates.
 *
 * bf16 communication: with wire = DT_BF16 each bucket's fp32 gradients are
 * rounded to a bf16 buffer, all-reduced in bf16 (summed in fp32 and rounded
 * at each step of the reduction) and widened back: half the bytes, with a
 * relative error of about 2^-8 per rounding.
 *
 * On the CPU, MPI moves a non-blocking all-reduce only inside MPI calls, so
 * every grad-ready callback also progresses the buckets in flight. On a GPU
 * with NCCL the all-reduces run on the communication stream, ordered after
 * the backward kernels already queued (comm.h). */
#ifndef DDP_H
#define DDP_H

#include <stddef.h>

#include "comm.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t offset, count;   /* range of the flat gradient array */
    int state;              /* 0: formed, 1: in flight, 2: done */
    comm_req_t req;
    double t_launch;        /* for the trace */
} ddp_bucket_t;

typedef struct {
    comm_t *comm;           /* the data-parallel communicator */
    const device_t *dev;
    float *grads;           /* (n) fp32, device: the model's gradients */
    size_t n;
    dtype_t wire;           /* DT_F32 or DT_BF16 */
    void *wire_buf;         /* (n) bf16, device, when wire is bf16 */
    size_t cap;             /* bucket capacity, elements */
    int overlap;
    int sync;               /* this micro-batch communicates */
    size_t lo, hi;          /* ready range not yet in a bucket (empty: lo == hi) */
    ddp_bucket_t *buckets;
    int nbuckets, max_buckets;
    double exposed_s;       /* this step: communication time not hidden */
    /* Tracing: buckets in flight overlap one another, so each goes to the
     * first "comm" lane free at its launch; the host time the callbacks
     * spend on communication shows on the "compute" track. */
    int work_track, lanes, lane_track[4];
    double lane_end[4];
} ddp_t;

/* grads: the model's flat fp32 gradient array (n elements, device).
 * bucket_bytes: the cap in bytes of the wire dtype (PyTorch's bucket_cap_mb;
 * 25 MB by default). */
void ddp_init(ddp_t *g, comm_t *comm, float *grads, size_t n, dtype_t wire,
              size_t bucket_bytes, int overlap);
void ddp_free(ddp_t *g);

/* Before each micro-batch's backward: sync = 1 on the last micro-batch. */
void ddp_begin(ddp_t *g, int sync);
/* model_backward's grad_ready callback (ctx = the ddp_t). */
void ddp_grad_ready(void *ctx, size_t offset, size_t count);
/* After the last micro-batch's backward: launch what is left, wait for every
 * bucket. grads then hold the global batch's gradient on every rank. */
void ddp_finish(ddp_t *g);


#ifdef __cplusplus
}
#endif
#endif
