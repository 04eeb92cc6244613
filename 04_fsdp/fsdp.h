/* fsdp.h: ZeRO stages 1-3 and fully sharded data parallelism (Rajbhandari et
 * al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
 * Models"; Zhao et al. 2023, "PyTorch FSDP"), over any data-parallel
 * communicator, with an optional second one across which the shards are
 * replicated (hybrid sharding, chapter 05).
 *
 * N ranks share one copy of the training state. Every unit of the model
 * (model.h: the embedding, each layer, the head) is cut into N pieces of
 * ceil(count / N) elements, the last ones padded (grad_sync_pieces); rank r
 * owns piece r of every unit: its fp32 master weights, Adam moments and
 * gradient. Per rank, with P parameters, weights of w bytes (2 bf16, 4 fp32)
 * and this suite's fp32 gradients (Megatron's main_grad):
 *
 *   stage  keeps whole                  keeps 1/N        ZeRO paper (w = 2, bf16 gradients)
 *   DDP    weights, gradients, Adam     -                (w + 4 + 12) P     16 P
 *   1      weights, gradients           gradient, Adam   (w + 4) P + 16 P/N 4 P + 12 P/N
 *   2      weights                      gradient, Adam   w P + 16 P/N       2 P + 14 P/N
 *   3      -                            gradient, Adam   16 P/N             16 P/N
 *
 * plus the buffers of the units in flight (ZeRO-2/3: a few units' gradients;
 * ZeRO-3: a few units' gathered weights) and the activations. In ZeRO-3 the
 * fp32 master piece IS the weight shard, as in FSDP: it is cast to w bytes
 * and all-gathered whenever a unit's full weights are needed.
 *
 * One step (the runner's micro-batches, with fsdp_strategy at its points):
 *   ZeRO-1  backward accumulates into the whole (padded) gradient array; on
 *           a chunk's last backward each unit is reduce-scattered as backward
 *           finishes it (the first half of DDP's all-reduce), the optimizer
 *           updates this rank's pieces, and each unit's updated pieces are
 *           all-gathered into the working weights (the second half).
 *   ZeRO-2  a unit's gradient lives in a buffer from just before its backward
 *           until its reduce-scatter is done, on every micro-batch; the rest
 *           as ZeRO-1.
 *   ZeRO-3  no whole weights: before a unit's forward, backward or
 *           recomputation its pieces are all-gathered into a buffer (with
 *           --prefetch K the next K units' gathers already started), freed
 *           after its forward (--reshard-after-forward on) or kept until its
 *           backward (off), and freed after its backward. The unit run last
 *           in forward keeps its weights for its backward, which comes next
 *           (in a pipeline, after other micro-batches' forwards, perhaps).
 *           --reshard-after-backward off keeps every unit gathered from its
 *           first use to its chunk's last backward of the step (FSDP2's
 *           reshard_after_backward=False, with gradient accumulation or
 *           pipelines): one all-gather per step, the whole stage's weights
 *           held.
 *   Bytes each rank sends per step (nccl-tests' bus bytes; w: bytes per
 *   weight and per communicated gradient; m micro-batches):
 *     DDP     all-reduce 2 (N-1)/N P w
 *     1       reduce-scatter (N-1)/N P w + all-gather (N-1)/N P w   (= DDP)
 *     2       m x reduce-scatter (N-1)/N P w + all-gather (N-1)/N P w
 *     3       m x [all-gather 2 (N-1)/N P w (forward, backward) + reduce-scatter (N-1)/N P w]
 *             = 1.5 x DDP; with resharding off the backward gathers nothing (= DDP)
 *             kept gathered (--reshard-after-backward off): all-gather (N-1)/N P w once
 *   The same holds for a pipeline stage (P: its parameters): whatever the
 *   order of its forwards and backwards, each unit is gathered once per
 *   micro-batch for forward and, resharded, once for backward.
 *   (P here padded to N pieces per unit; fsdp_bytes_predict gives it exactly.)
 *
 * Hybrid sharding: with `replicate` (R ranks holding the same piece in other
 * groups) each unit's reduced piece is also all-reduced across the replicas
 * once the last micro-batch's reduce-scatter of it is done: 2 (R-1)/R (P/N) w
 * more per step, on the slow links when the groups are nodes.
 *
 * A group of one rank (N = 1) sends nothing: gradients accumulate straight
 * into the shard. --no-overlap completes every collective before going on.
 * The results do not depend on N, prefetch, resharding or overlap beyond the
 * order of floating-point sums (tests compare with 1 rank and with DDP). */
#ifndef FSDP_H
#define FSDP_H

#include <stddef.h>

#include "comm.h"
#include "grad_sync.h"
#include "runner.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduce-scatters in flight at once with overlap (grad_sync's max_inflight),
 * which bounds the unit gradient buffers to this + 1 (FSDP's rate limit). */
enum { FSDP_RS_INFLIGHT = 2 };

typedef struct {
    int zero;                /* 0: DDP (the baseline), 1, 2, 3 */
    int prefetch;            /* ZeRO-3: units whose all-gather starts ahead of their turn */
    const char *reshard;     /* ZeRO-3: "on" frees a unit's weights after its forward */
    const char *reshard_backward;   /* ZeRO-3: "off" keeps them gathered across the step's micro-batches */
    int no_overlap;          /* complete each collective before going on */
} fsdp_opts_t;

#define FSDP_OPTS_DEFAULT {3, 1, "on", "on", 0}
/* The chapter flags, for a program's flag table. */
#define FSDP_FLAGS(o)                                                                               \
    {"zero", ARG_INT, &(o).zero, "ZeRO stage: 1 optimizer state, 2 + gradients, 3 + weights (FSDP); 0: plain DDP", NULL, 0, 3}, \
    {"prefetch", ARG_INT, &(o).prefetch, "ZeRO-3: units whose weights are all-gathered ahead of their turn", NULL, 0, 1e4}, \
    {"reshard-after-forward", ARG_CHOICE, &(o).reshard, "ZeRO-3: free a unit's gathered weights after its forward", "on|off", 0, 0}, \
    {"reshard-after-backward", ARG_CHOICE, &(o).reshard_backward, "ZeRO-3: free them after each backward (off: keep every unit gathered from its first use to its last backward of the step)", "on|off", 0, 0}, \
    {"no-overlap", ARG_FLAG, &(o).no_overlap, "complete every collective before computing on", NULL, 0, 0}

/* Bytes per rank, by mem_kind (device.h): what this configuration holds for
 * weights, gradients, optimizer state and communication buffers. */
typedef struct {
    double kind[MEM_KINDS];
    double state;            /* the ZeRO formula's terms alone (no buffers) */
    double paper;            /* the ZeRO paper's formula (mixed precision: 2 + 2 + 12) */
    double buffers;          /* units in flight and receive buffers */
} fsdp_mem_t;

/* Bytes per rank and step, by coll_kind, on the shard and replicate groups. */
typedef struct {
    double shard[COLL_KINDS], replicate[COLL_KINDS];
} fsdp_bytes_t;

typedef struct { int state, slot; comm_req_t req; double t0; } fsdp_gather_t;

/* What a ZeRO stage shards and when its gradients synchronise, derived once
 * from --zero (fsdp_policy); the code reads these, not the stage number. */
typedef struct {
    int shard_optim;         /* 1-3: master weights and Adam state in pieces; 0 (DDP): whole */
    int shard_grads;         /* 2-3: every backward reduce-scatters into the shard; 0-1: the
                                gradients accumulate whole and synchronise on the last micro-batch */
    int whole_grads;         /* 1: a whole gradient buffer, reduce-scattered once per step */
    int gather_weights;      /* 3: the model holds no weights; each unit's are all-gathered */
    int with_params;         /* train_model's MODEL_PARAMS_AND_GRADS, _PARAMS_ONLY or MODEL_NO_PARAMS */
} fsdp_policy_t;
fsdp_policy_t fsdp_policy(int zero);

typedef struct fsdp {
    fsdp_opts_t o;
    fsdp_policy_t z;         /* fsdp_policy(o.zero) */
    train_t *tr;
    model_t *m;
    const device_t *d;
    dtype_t wt;              /* working weights and communication */
    comm_t *shard, *rep;     /* rep: the replicas of this rank's pieces (hybrid), or NULL */
    int N, R;
    int micro;               /* backward passes per step: the M of the runner's schedule (set after runner_init) */
    int reshard;
    int keep_gathered;       /* --reshard-after-backward off */
    int stages;              /* pipeline stages of the mesh */
    int n_units;
    size_t *count, *per;     /* (n_units) elements of each unit, of each piece */
    size_t S, per_max;       /* shard length (sum of pieces), the largest piece */
    optim_piece_t *pieces;   /* (n_units) this rank's piece of each unit */
    float *gshard;           /* (S) fp32 gradient shard: the optimizer's gradients */
    float *gfull;            /* ZeRO-1 (N > 1): every unit's gradient, padded to N pieces */
    void *bounce;            /* ZeRO-1/2: all-gather of a unit that does not split evenly */
    grad_sync_t gs;
    /* buffers for units in flight, each N x per_max elements */
    void **wslot;            /* ZeRO-3 gathered weights */
    int *wslot_unit, nwslots;
    float **gslot;           /* ZeRO-2/3 gradients */
    int *gslot_unit, ngslots;
    fsdp_gather_t *g;        /* (n_units) ZeRO-3 gather of each unit */
    /* the execution order of one step's unit passes, recorded in step 1 */
    int *order, norder, cap_order, pos, recorded;
    /* hybrid sharding */
    comm_req_t *rep_req;     /* (n_units) */
    double *rep_t0;          /* (n_units) their launch times, for the trace */
    void *rep_wire;          /* bf16 copy of the shard for the all-reduce */
    int last_micro;
    /* measured in the current step */
    double exposed_s;        /* host time waiting on or driving communication */
    double sent0[2][COLL_KINDS];
    fsdp_bytes_t step_bytes; /* the last step's, by group and kind */
    int gather_track[4], rep_track;
    double lane_end[4];
} fsdp_t;

/* The model for tr (train_model, with the arrays the stage keeps), the
 * pieces, buffers and hooks, in three steps: the plan (the units and
 * their pieces, the refusals, the memory check), the allocation (the model,
 * the shard, the gradient and weight buffers, the gradient synchronisation)
 * and the hooks (the model's unit hooks, tr->after_update, tr->part_unique,
 * the step line's note). shard: the N ranks sharing the state; rep (may be NULL):
 * the ranks holding the same pieces in other groups. Refuses (usage_error)
 * a prefetch deeper than the layers and a --mem-limit below what any rank's
 * state needs (the ranks compare: call it on every rank of the world). Then
 * call train_optimizer(tr, f->pieces, n_units, f->S) (DDP:
 * train_optimizer(tr, NULL, 0, 0)) and run the steps with fsdp_strategy. */
void fsdp_init(fsdp_t *f, train_t *tr, comm_t *shard, comm_t *rep, const fsdp_opts_t *o);
void fsdp_free(fsdp_t *f);
/* The synchronisation as the runner's strategy (common/runner.h): call
 * runner_init(&r, schedule, tr, fsdp_strategy(f), ...); any schedule, the
 * one-stage list or a pipeline's. */
grad_strategy_t fsdp_strategy(fsdp_t *f);
/* A ZeRO data-parallel trainer's whole set-up (04_fsdp, 05_hsdp): fsdp_init,
 * the optimizer over this rank's pieces (--zero 0: the whole array), and the
 * one-stage runner with fsdp_strategy. Returns its step, runner_step on run. */
train_step_fn fsdp_compose(fsdp_t *f, runner_t *run, train_t *tr, comm_t *shard, comm_t *rep, const fsdp_opts_t *o);

/* What this configuration holds and sends, from its formulas. */
void fsdp_mem_predict(const fsdp_t *f, fsdp_mem_t *mem);
void fsdp_bytes_predict(const fsdp_t *f, fsdp_bytes_t *b);
/* After train_run: the memory high-water per kind (max over ranks) and the
 * last step's bytes per collective beside their formulas. Collective. The
 * totals come back (any pointer may be NULL): the measured high-water and
 * its prediction (state and buffers from the formulas, activations as
 * measured), the bytes sent in the last step and their formula. */
void fsdp_report(fsdp_t *f, double *mem_measured, double *mem_predicted, double *sent_measured,
                 double *sent_predicted);
const char *fsdp_stage_name(int zero);

#ifdef __cplusplus
}
#endif
#endif
