/* trainer.h: 08_tensor_parallel/tp, the tensor-parallel trainer: the shared
 * training loop (common/train.h) on a model split over --tp ranks by the
 * seams of tp.c, with --sp for sequence parallelism and the remaining ranks
 * as data-parallel replicas (common/grad_sync.h).
 *
 *   mpirun -np 2 ./08_tensor_parallel/tp [--tp 2] [--sp] [--steps 200 ...]
 *
 * One step, on every rank (the runner of common/runner.h with DDP's
 * strategy, in tp_step, trainer.c):
 *   for each micro-batch of this data-parallel rank's share of the batch:
 *       forward: every layer runs its column- and row-parallel products on
 *           this rank's slice; the seams all-reduce (or, with --sp,
 *           all-gather and reduce-scatter) the activations between them
 *       backward: the same seams in reverse; on the last micro-batch the
 *           finished layers' gradients go into data-parallel buckets
 *   wait for the buckets; sum the gradients of blocks the tp ranks share
 * and the loop clips by the global norm (each shard's parts counted once)
 * and applies AdamW to this rank's shard. At the end the program prints the
 * bytes each seam sent per layer beside the formulas of tp.h, and the
 * activation memory beside its formula.
 *
 * The trainer in train_main's steps (common/train.h): tpp_check and
 * tpp_compose (trainer.c), tpp_report (report.c). */
#ifndef TP_TRAINER_H
#define TP_TRAINER_H

#include "grad_sync.h"
#include "runner.h"
#include "tp.h"
#include "train.h"

#define BENCH_HEADER "tp,sp,dp,node_size,inter_gbps,inter_us,step_ms,compute_ms,exposed_comm_ms," \
                     "tp_comm_ms,tp_mb_per_step,acts_mb"

/* The trainer's state: its flags, then what compose builds. */
typedef struct {
    int tp, sp;
    const char *bench_csv;
    tp_t t;
    grad_sync_t gs;
    runner_t run;
    tp_stats_t last;          /* the last step's accounting */
    double sum_tp_s;          /* tensor-parallel communication, steps after the first */
    int timed;
} tpp_t;

void tpp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn tpp_compose(train_t *tr, void *ctx, void **step_ctx);
void tpp_report(train_t *tr, void *ctx);

#endif
