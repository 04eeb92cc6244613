/* trainer.h: 06_checkpointing/ckpt, data-parallel training (common/train.h,
 * common/grad_sync.h) with the two trades of this chapter:
 *
 *   memory for compute   --recompute none|full|every:C|sqrt|block:K|selective
 *                        keeps fewer activations and recomputes them in
 *                        backward (recompute.h); the program reports the
 *                        activation memory, the recomputed FLOPs (HFU beside
 *                        MFU) and the time they took, each beside its model;
 *   time for safety      --ckpt-dir/--ckpt-every checkpoints, written in the
 *                        background with --ckpt-async (saver.h), and injected
 *                        failures (--fail-at-step, --fail-every-s: failure.h)
 *                        that 06_checkpointing/supervise.sh recovers from.
 *
 *   mpirun -np 2 ./06_checkpointing/ckpt --layers 16 --recompute sqrt
 *   bash 06_checkpointing/supervise.sh --np 2 -- ./06_checkpointing/ckpt \
 *        --ckpt-dir /tmp/ck --ckpt-every 10 --fail-every-s 5
 *
 * The step is data parallelism as in chapter 03 (the runner of
 * common/runner.h with DDP's strategy): micro-batches through forward and
 * backward (where the recomputation happens, inside model_backward),
 * gradients all-reduced in buckets during the last micro-batch's backward.
 *
 * The trainer in train_main's steps (common/train.h): ckpt_check,
 * ckpt_compose (which registers the hook that injects failures and saves
 * checkpoints after each step) and ckpt_report (trainer.c). */
#ifndef CKPT_TRAINER_H
#define CKPT_TRAINER_H

#include "failure.h"
#include "grad_sync.h"
#include "recompute.h"
#include "runner.h"
#include "saver.h"
#include "train.h"

#define BENCH_HEADER "policy,every,block,selective,layers,ranks,acts_mb,acts_model_mb,acts_peak_mb," \
                     "acts_peak_model_mb,input_mb,layer_mb,head_mb,scratch_mb,layers_recomputed," \
                     "attn_recomputed,extra_flops_pct,step_ms,fwd_ms,bwd_ms,recompute_ms,recompute_model_ms,mfu,hfu"

/* The trainer's state: its flags, then what compose builds. */
typedef struct {
    const char *recompute, *fail_at, *bench_csv, *goodput_model;
    double fail_every_s;
    int async, fail_seed, attempt;
    recompute_t policy;
    recompute_meter_t meter;
    grad_sync_t gs;
    runner_t run;
    saver_t saver;
    failure_t failure;
} ckpt_prog_t;

void ckpt_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn ckpt_compose(train_t *tr, void *ctx, void **step_ctx);
void ckpt_report(train_t *tr, void *ctx);
/* Activation memory, recomputed work and its time, each beside the model;
 * the --bench-csv row (report.c). */
void ckpt_report_recompute(train_t *tr, ckpt_prog_t *p);
/* --goodput-model DELTA,MTBF,RESTART[,TAU]: Daly's goodput against the
 * interval (a grid around Young's), or at the interval TAU alone (goodput.c). */
void ckpt_goodput_model(const char *s);

#endif
