/* trainer.h: 09_context_parallel/cp, the context-parallel trainer: the shared
 * training loop (common/train.h) on a model whose sequences are split over
 * --cp ranks, with ring attention or Ulysses (cp.c) as its attention core;
 * the remaining ranks are data-parallel replicas, and the gradients are
 * all-reduced over the context x data group, as Llama 3 does.
 *
 *   mpirun -np 2 ./09_context_parallel/cp [--cp 2] [--cp-algo ring|ulysses] [--no-balance]
 *
 * One step, on every rank (the runner of common/runner.h with DDP's
 * strategy, in cp_step, trainer.c):
 *   for each micro-batch of this data-parallel rank's share of the batch:
 *       forward and backward of this rank's tokens of every sequence; the
 *           attention core brings the other ranks' keys and values (ring)
 *           or exchanges tokens for heads (Ulysses)
 *       on the last micro-batch, the finished layers' gradients go into
 *           buckets all-reduced over the context x data group
 *   wait for the buckets
 * At the end the program prints each rank's attention work and time (the
 * causal balance), the bytes per layer against cp.h's formulas, and the
 * memory per rank.
 *
 * The trainer in train_main's steps (common/train.h): cpp_check and
 * cpp_compose (trainer.c), cpp_report (report.c). */
#ifndef CP_TRAINER_H
#define CP_TRAINER_H

#include "cp.h"
#include "grad_sync.h"
#include "runner.h"
#include "train.h"

#define BENCH_HEADER "algo,cp,dp,balance,seq,batch,step_ms,attn_ms_max,attn_ms_min,attn_cpu_ms_max," \
                     "attn_cpu_ms_min,attn_comm_ms,cp_mb_per_step,mem_peak_mb,acts_mb,rss_mb"

/* The trainer's state: its flags, then what compose builds. */
typedef struct {
    int cp, no_balance;
    const char *algo;
    const char *bench_csv;
    cp_t c;
    grad_sync_t gs;
    runner_t run;
    cp_stats_t last, sum;    /* the last step; the sum over the steps after the first */
    int timed;
} cpp_t;

void cpp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn cpp_compose(train_t *tr, void *ctx, void **step_ctx);
void cpp_report(train_t *tr, void *ctx);
/* --cp-algo as cp.h's kind. */
cp_algo_t cpp_algo(const cpp_t *p);

#endif
