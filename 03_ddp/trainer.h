/* trainer.h: 03_ddp/ddp, the data-parallel trainer: the shared training loop
 * (common/train.h) with gradient synchronisation by bucketed all-reduce
 * (common/grad_sync.h).
 *
 *   mpirun -np 2 ./03_ddp/ddp [--steps 200 --batch 16 ...]
 *
 * One step, on every rank (the runner, common/runner.h, with the one-stage
 * list and grad_sync's DDP strategy):
 *   for each of the --micro micro-batches of this rank's share of the batch:
 *       forward (loss summed over its tokens)
 *       backward, with dlogits scaled by 1 / global tokens; on the LAST
 *       micro-batch every finished layer's gradients join a bucket whose
 *       all-reduce starts at once, earlier ones only accumulate (no_sync)
 *   wait for the buckets still in flight (the exposed communication)
 * and then the loop clips by the global gradient norm and applies AdamW to
 * the fp32 master weights, identically on every rank. The weights start on
 * rank 0 and are broadcast; every rank checks their checksum before step 1
 * and again at the end.
 *
 * --local-steps H swaps the gradient all-reduce for local SGD
 * (common/local_sgd.h): no strategy in the runner, every rank steps with its
 * own gradient, and the weights are averaged every H steps (--outer-lr:
 * through DiLoCo's outer optimizer).
 *
 * The trainer in train_main's steps (common/train.h): ddp_defaults,
 * ddp_check, ddp_compose, ddp_report (trainer.c). */
#ifndef DDP_TRAINER_H
#define DDP_TRAINER_H

#include "grad_sync.h"
#include "local_sgd.h"
#include "runner.h"
#include "train.h"

/* One row per run (sweep_buckets.sh, sweep_scaling.sh): step_ms is the mean
 * of the timed steps, = compute_ms + exposed_comm_ms; tok_s = tokens /
 * step_ms; threads per rank. */
#define BENCH_HEADER "bucket_mb,overlap,ranks,buckets,grad_mb,step_ms,compute_ms,exposed_comm_ms,tokens,tok_s,threads"

/* The trainer's state: its flags, then what compose builds. */
typedef struct {
    int no_overlap, local_steps;
    double outer_lr, outer_momentum;
    const char *bench_csv;
    const char *compress, *error_feedback;   /* --compress SPEC: grad_compress_t instead of buckets */
    grad_sync_t gs;
    grad_compress_t gc;
    local_sgd_t lsgd;
    runner_t run;
} ddp_t;

void ddp_defaults(train_t *tr, void *ctx, int argc, char **argv);
void ddp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn ddp_compose(train_t *tr, void *ctx, void **step_ctx);
void ddp_report(train_t *tr, void *ctx);

#endif
