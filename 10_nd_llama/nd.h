/* nd.h: 10_nd_llama/train's technique, the 4D-parallel trainer: the shared training
 * loop (common/train.h) on a model split over a [tp, cp, pp, dp] mesh by the
 * modules of chapters 04-09, linked as they are:
 *
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 1 --pp 2 --dp 2 --micro 4
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 2 --pp 2 --sp --cp-algo ulysses
 *   mpirun -np 4 ./10_nd_llama/train --preset llama3-405b --tp 2 --pp 2 --dry-run
 *
 * The techniques wrap the model from the inside out, as Megatron does:
 *   1. tensor parallelism (08_tensor_parallel/tp.c) builds the model's tp
 *      seams: its all-reduces (or, with --sp, all-gathers and
 *      reduce-scatters) run on the tensor-parallel communicator, inside
 *      every layer;
 *   2. context parallelism (09_context_parallel/cp.c) swaps the attention
 *      core: ring attention's key/value blocks or Ulysses's all-to-alls run
 *      on the context-parallel communicator, inside every attention;
 *   3. the recomputation policy (06_checkpointing/recompute.c) decides what
 *      each micro-batch object keeps;
 *   4. the runner (common/runner.c) runs the schedule's actions (chapter
 *      07's; --pp 1: the 1F1B list of one stage) on this stage's layers,
 *      sending activations and gradients to the neighbouring stages on the
 *      pipeline communicator;
 *   5. the gradients are summed over the context x data group (tr.grad), by
 *      the strategy the runner calls at the schedule's points:
 *      context-parallel ranks hold the same weights and each computed the
 *      gradient of its own tokens, exactly as data-parallel ranks did of
 *      their own sequences. --zero 0 all-reduces them in buckets as each
 *      stage's last backward finishes (common/grad_sync.c); --zero 1|2|3
 *      shards the optimizer state, gradients and weights over that group
 *      (04_fsdp/fsdp.c), on any mesh: ZeRO-1 reduce-scatters after each
 *      chunk's last backward, ZeRO-2 and 3 after every backward, and
 *      ZeRO-3 gathers each unit's weights before it runs (kept across the
 *      stage's micro-batches with --reshard-after-backward off);
 *   6. blocks the tp ranks share but of which each computed a part (norm
 *      gains under --sp, kv heads shared by several ranks) are summed over
 *      the tensor-parallel communicator (tp_reduce_replicated_grads).
 * The loop then clips by the global norm over the unique shards and applies
 * AdamW to this rank's part.
 *
 * Per step the log line says the exposed communication of each axis (tp and
 * cp: the seams block, so all of their time; dp: what was left after
 * backward; pp: the bubble); at the end the time by cause and the bytes each
 * axis sent. --dry-run builds the mesh and the shards, prints per-rank
 * memory and FLOPs, and allocates no model.
 *
 * The trainer in train_main's four steps (common/train.h): nd_defaults
 * (preset.c), nd_check and nd_compose (nd.c, which registers the step note),
 * nd_report (report.c). */
#ifndef ND_H
#define ND_H

#include "09_context_parallel/cp.h"
#include "04_fsdp/fsdp.h"
#include "grad_sync.h"
#include "06_checkpointing/recompute.h"
#include "runner.h"
#include "07_pipeline/schedule.h"
#include "08_tensor_parallel/tp.h"
#include "train.h"

#define BENCH_HEADER "config,tp,cp,pp,dp,zero,sp,cp_algo,schedule,micro,virtual,recompute,dtype,step_ms," \
                     "mfu,hfu,bubble,tp_ms,cp_ms,pp_ms,dp_ms,compute_ms,optimizer_ms,tok_s"
#define PRESET_CHOICES "llama3-405b|nd-tiny|nd-small"

enum { NX_TP, NX_CP, NX_PP, NX_DP, NX };   /* the causes, in mesh order (pp: the bubble) */

/* The trainer's state: its flags (first), then what compose builds. */
typedef struct {
    int tp, cp, pp, dp, virt, slices, sp, no_balance, dry_run;
    const char *schedule, *cp_algo, *recompute, *preset, *bench_csv;
    fsdp_opts_t fo;
    pipe_kind_t kind;
    int V;                   /* chunks per stage */
    int K;                   /* token slices per micro-batch (TeraPipe) */
    cp_algo_t algo;
    recompute_t policy;
    tp_t t;
    cp_t c;
    pipe_schedule_t s;       /* its M: micro-batches x K, the units the runner runs */
    runner_t run;
    grad_sync_t gs;
    fsdp_t f;
    recompute_meter_t meter;
    int metered;
    double step_ax[NX];      /* this step's exposed time per cause, mean over ranks (s) */
    double sum_ax[NX];       /* over the timed steps */
    int timed;
    double sent_prev[NX];    /* bytes per axis at the start of the current step */
} nd_t;

/* train_chapter_t's steps; ctx is the nd_t. */
void nd_defaults(train_t *tr, void *ctx, int argc, char **argv);   /* DDP, 4 micro-batches, --preset */
void nd_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn nd_compose(train_t *tr, void *ctx, void **step_ctx);
/* The step line's per-axis times (a step_note hook, after ZeRO's). */
void nd_step_note(train_t *tr, void *ctx);
void nd_report(train_t *tr, void *ctx);

/* Bytes every axis's communicators have sent on this rank (dp: the data axis and tr->grad). */
void nd_axis_bytes(const train_t *tr, double out[NX]);
/* --dry-run: per-rank memory and FLOPs from the shard's shapes (after the schedule). */
void nd_dry_run(train_t *tr, nd_t *p);

#endif
