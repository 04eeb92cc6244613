/* train.h: the training loop every trainer chapter shares.
 *
 * A chapter is its technique plus a step function; everything else is here:
 * the shared flags, the start-up header, the mesh and its communicators, the
 * model and one micro-batch's activations, the weights (initialised on the
 * data-parallel root and broadcast, or resumed), the step loop with its log
 * line and CSV row, clipping by the global gradient norm across whatever
 * shards the gradients, AdamW on this rank's part of the parameters, sharded
 * checkpoints, and the end summary. A chapter's program is a table for
 * train_main (train_chapter_t below), which makes these calls:
 *
 *     train_t tr;
 *     train_defaults(&tr);                       // then change any default
 *     train_init(&tr, &argc, &argv, &program);   // MPI, flags (shared + the chapter's)
 *     train_setup(&tr, tp, cp, pp);              // mesh, device, data, checks, header
 *     train_model(&tr, MODEL_PARAMS_AND_GRADS);  // the model for tr.shard
 *     ...the technique's set-up: hooks, seams...
 *     runner_init(&run, schedule, &tr, strategy, 0, 0);   // runner.h
 *     train_optimizer(&tr, NULL, 0, 0);          // this rank's part; weights loaded
 *     train_run(&tr, runner_step, &run);         // or a step function around it
 *     train_finish(&tr);
 *
 * The step function does one optimizer step's forward, backward and
 * communication: zero the gradients, run the micro-batches, synchronise the
 * gradients so that the optimizer's pieces hold the global batch's gradient
 * (of the MEAN loss: backward's scale is tr->loss_scale = 1 / global tokens),
 * and report what it measured in train_step_t. The runner (runner.h) is
 * that step for every chapter, with the chapter's schedule and gradient
 * synchronisation plugged in. The loop does the rest.
 *
 * Checkpoints are sets (ckpt.h): every rank whose optimizer part is its own
 * (part_unique) writes its pieces of the fp32 master weights and both Adam
 * moments with its shard's description; resuming rebuilds the full state
 * from every part and cuts this run's parts from it, so a run may resume on
 * another mesh (other rank counts, other degrees, another chapter).
 * A gradient compressor's state (tr->compressor: error-feedback residuals,
 * PowerSGD's Q) is each rank's own: every rank writes it to a file of the
 * set, and such a set resumes only with the same --compress, error
 * feedback and rank count, each rank reading its own file, so that the
 * resumed run continues bit for bit. */
#ifndef TRAIN_H
#define TRAIN_H

#include <stdio.h>

#include "args.h"
#include "ckpt.h"
#include "comm.h"
#include "compress.h"
#include "data.h"
#include "device.h"
#include "dist.h"
#include "grad_sync.h"
#include "model.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    common_args_t c;
    int steps, batch, micro, seq, dim, layers, heads, kv_heads, head_dim, ffn, vocab, warmup;
    double lr, clip, peak;
    const char *dtype, *data, *optim;
    const char *ckpt_dir;
    int ckpt_every, ckpt_keep, resume, crash_in_save, stall_in_save;
    const char *trace;
    const char *record;       /* --record: the action record (trace.h) of the steps after the first */
    int trace_steps;
    const char *save_final, *dump;
    double timeout_s;
    int node_size;               /* link model: world ranks per simulated node (0: off) */
    double inter_gbps, inter_us;
    size_t mem_limit;            /* bytes of counted memory per rank (0: no limit) */
    double bucket_mb;            /* DDP's gradient buckets, MiB (grad_sync.h) */
} train_opts_t;

/* What a step function measured (this rank). */
typedef struct {
    double loss;                 /* summed cross-entropy of the tokens this rank counts
                                    (model_counts_loss), 0 elsewhere */
    double fwd_s, bwd_s;         /* time in forward and in backward compute */
    double exposed_s;            /* communication time not hidden behind compute */
    double bubble_s;             /* pipeline: time idle, waiting on a neighbour (< 0: none) */
    double recompute_flops;      /* FLOPs spent recomputing activations */
} train_step_t;

typedef struct train train_t;
typedef void (*train_step_fn)(train_t *tr, void *ctx, long step, train_step_t *st);

/* Functions the loop calls at one point, in the order they were added
 * (train_hooks_add). */
enum { TRAIN_MAX_HOOKS = 4 };
typedef void (*train_hook_fn)(train_t *tr, void *ctx);
typedef struct {
    struct { train_hook_fn fn; void *ctx; } at[TRAIN_MAX_HOOKS];
    int n;
} train_hooks_t;
void train_hooks_add(train_hooks_t *h, train_hook_fn fn, void *ctx);

/* A shared flag a program does not offer, and why. */
typedef struct {
    const char *flag, *why;
} train_refusal_t;

typedef struct {
    const char *name;            /* "03_ddp": header and checkpoints */
    const char *prog;            /* "03_ddp/ddp": --help */
    const char *title;           /* "distributed data parallel" */
    const char *about;           /* --help text */
    const arg_t *flags;          /* the chapter's own flags */
    int nflags;
    /* Shared flags this program does not offer: left out of --help and
     * refused, with their reason, before anything else. */
    const train_refusal_t *refused;
    int nrefused;
} train_program_t;

struct train {
    train_opts_t o;
    const train_program_t *prog;
    dist_t dist;
    mesh_t mesh;
    device_t dev;
    comm_t axis[AXES];           /* one per mesh axis (rank = coordinate) */
    comm_t grad;                 /* context x data: the replicas whose gradients are summed */
    int dp, dp_rank;             /* data-parallel degree and this rank's index (data shard) */
    model_config_t cfg;
    dtype_t dtype;
    model_shard_t shard;         /* from the mesh; change before train_model (pipeline, sp) */
    model_t model;
    model_acts_t acts;           /* one micro-batch of tr->mb sequences, chunk 0 */
    model_recompute_t recompute; /* what micro-batch objects keep (set before train_model) */
    data_t data;
    int mb;                      /* sequences per micro-batch */
    long global_tokens;
    float loss_scale;            /* 1 / global_tokens */
    int *tokens, *targets;       /* (mb, seq) host buffers for train_batch */
    optim_t opt;
    int updates_per_step;        /* optimizer updates per step (train_lr), 1 unless set */
    int own_norm;                /* each rank clips by its own gradient's norm (local SGD: the
                                    ranks' gradients are never summed); the log shows rank 0's */
    int part_unique;             /* this rank's optimizer part is no copy of another's: it
                                    counts in the gradient norm and writes a checkpoint part.
                                    Default: rank 0 of tr->grad. */
    /* After each step's log line. When set, it saves the checkpoints itself
     * (ckpt_due: --ckpt-every or the last step asks for one), with
     * train_ckpt_begin/write/commit below; NULL: the loop saves them. */
    void (*after_step)(train_t *tr, void *ctx, long step, int ckpt_due);
    void *after_step_ctx;
    train_hooks_t after_update;  /* after each optimizer step (ZeRO's all-gather, local SGD's average) */
    train_hooks_t step_note;     /* rank 0: each appends to the step's log line, in order */
    /* Set before train_setup: --batch is each rank's own batch, not split
     * over the data-parallel ranks (03_ddp/fedavg: a client's local batch). */
    int batch_per_rank;
    /* When set, train_batch asks it for micro-batch `micro` of step into
     * tr->tokens and tr->targets instead of reading this rank's share of the
     * step's global batch (federated clients read their own shards). */
    void (*batch_fn)(train_t *tr, void *ctx, long step, int micro);
    void *batch_ctx;
    /* Set before train_optimizer when the gradients are compressed: its
     * state (compressor_state) is saved with every checkpoint and restored
     * on resume. */
    const compressor_t *compressor;
    int record_world;            /* MPI_COMM_WORLD's group in the action record */
    comm_t *comms[4];            /* communicators the chapter made itself: their bytes count too */
    int ncomms;
    long start;                  /* last step done before this run (resume) */
    double peak;                 /* FLOP/s per rank, 0 when unknown */
    double flops_token;          /* model FLOPs per token (forward + backward) */
    FILE *csv;
    int trace_track;             /* "compute" */
    double unit_t0;              /* trace of units */
    /* results, for train_finish and the chapters (train_record) */
    long *run_steps;
    double *run_losses, *run_norms;
    int nrun;
    double sum_ms, sum_exposed, sum_fwd, sum_bwd, sum_opt, sum_bubble;
    int timed;
    double sent_bytes;           /* every communicator's bytes, at the last step's end */
    double sum_recompute;        /* recomputed FLOPs of the timed steps, every rank's */
};

/* A trainer program, as a table: its text and flags (prog) and its
 * technique in three functions around the shared loop. Every trainer's
 * main() is `return train_main(argc, argv, &chapter);` (TRAIN_MAIN below
 * writes the table and main), which runs
 *
 *     train_defaults; defaults (NULL: the shared ones; it may read the command line);
 *     train_init (MPI, the shared flags and prog's);
 *     check      refusals of this program's flags and its own outputs, before
 *                any collective; sets the mesh degrees tp x cp x pp (1 unless set);
 *     train_setup (mesh, device, data, header);
 *     compose    model, seams, strategy, runner, optimizer: returns the step
 *                function and its context (*step_ctx);
 *     train_run; report (the summary and rows; frees what compose made);
 *     train_finish.
 *
 * ctx is the program's state, which its flags point into. */
typedef struct {
    train_program_t prog;
    void *ctx;
    void (*defaults)(train_t *tr, void *ctx, int argc, char **argv);
    void (*check)(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
    train_step_fn (*compose)(train_t *tr, void *ctx, void **step_ctx);
    void (*report)(train_t *tr, void *ctx);
} train_chapter_t;
int train_main(int argc, char **argv, const train_chapter_t *ch);
/* The end of every trainer's source: its table (train_program_t's name,
 * prog, title and about, its flags array; train_chapter_t's ctx and steps)
 * and its main(). */
#define TRAIN_MAIN(name, prog, title, about, flags, ctx, defaults, check, compose, report)                 \
    static const train_chapter_t chapter = {{name, prog, title, about, flags, ARRAY_LEN(flags), NULL, 0}, \
                                            ctx, defaults, check, compose, report};                        \
    int main(int argc, char **argv) { return train_main(argc, argv, &chapter); }

/* Shared defaults (a small model that trains in about a minute on a CPU). */
void train_defaults(train_t *tr);
/* MPI start-up, flags (shared + prog's), their validation. */
void train_init(train_t *tr, int *argc, char ***argv, const train_program_t *prog);
/* The mesh tp x cp x pp x dp (dp: the rest of the world), the device, the
 * communicators, the data, the output checks, the checkpoint lock, and the
 * start-up header. tr->shard gets tp and cp from the mesh and all layers. */
void train_setup(train_t *tr, int tp, int cp, int pp);
/* The model for tr->shard (with_params: model.h's MODEL_PARAMS_AND_GRADS,
 * MODEL_PARAMS_ONLY or MODEL_NO_PARAMS, where hooks bring the units'
 * weights), and tr->acts. */
void train_model(train_t *tr, int with_params);
/* The optimizer over this rank's part (pieces NULL: the whole flat array,
 * gradients in model.grads, working weights in model.params), then the
 * weights: resumed from the newest readable checkpoint set (--resume) or
 * initialised on the data-parallel root and broadcast; into the master
 * pieces, their working copies, and model.params when the model has them. */
void train_optimizer(train_t *tr, const optim_piece_t *pieces, int npieces, size_t n);
/* DDP over tr->grad: the model's gradients all-reduced in buckets of
 * --bucket-mb (overlapping backward, or after it), as the runner's strategy. */
grad_strategy_t train_ddp(train_t *tr, grad_sync_t *g, int overlap);
/* Host tokens and targets of micro-batch `micro` of step's global batch, for
 * this rank's data-parallel share, into a (model_set_batch). */
void train_batch(train_t *tr, long step, int micro, model_acts_t *a);
void train_run(train_t *tr, train_step_fn step, void *ctx);
/* One optimizer update, the tail of every step (train_run's, a federated
 * client's local step, a parameter server's update): the gradients clipped
 * by their norm sqrt(sumsq) to --clip, the learning rate of update `update`
 * of the schedule (train_lr), the optimizer step, the after_update hooks,
 * and the device synchronised. Returns the learning rate; *norm (may be
 * NULL) gets the norm. */
float train_update(train_t *tr, long update, double sumsq, double *norm);
/* The learning rate of update `update` (1-based): warm-up over --warmup
 * steps, then cosine down to a tenth of --lr at --steps (lr_at); a run of
 * updates_per_step updates per step stretches both by that factor. */
float train_lr(const train_t *tr, long update);
/* One entry of the run's results (--save-final's losses and norms): at
 * most --steps x updates_per_step. */
void train_record(train_t *tr, long step, double loss, double norm);
/* Summary, --save-final, and everything freed; MPI finalised. */
void train_finish(train_t *tr);

/* A checkpoint set in three phases, so that the file writing can go on
 * while training continues (06_checkpointing's asynchronous checkpoints):
 *   begin   collective: room on disk, the set's .tmp directory, and this
 *           rank's part of the state copied to host memory (the snapshot);
 *           the state may change as soon as it returns;
 *   write   this rank's part file;
 *   commit  rank 0 (nothing elsewhere), once every rank's write has
 *           returned: meta.ckpt and the rename that makes the set
 *           complete, then pruning.
 * Write and commit use no MPI, so any thread may run them. The loop's own
 * save is begin, write, a barrier, commit. A train_ckpt_t starts zeroed and
 * keeps its host buffers from one save to the next (train_ckpt_free). */
typedef struct {
    long step;
    double t0;                   /* when begin started */
    double bytes;                /* the whole set on disk */
    int has_part;                /* this rank writes a part (tr->part_unique) */
    int parts;                   /* how many ranks do */
    ckpt_t part;                 /* its description; blobs point into host */
    char tmp[4200];              /* the set's directory while it is written */
    char path[4400];             /* the part file in it */
    float *host;                 /* master, adam m, adam v: 3 x n floats */
    int64_t *pieces;
    size_t n, npieces;           /* what host and pieces were allocated for */
    int compressed;              /* how many ranks write a compressor state file */
    ckpt_t zpart;                /* this rank's compressor state (tr->compressor), if any */
    char zpath[4400];
    float *zhost;
} train_ckpt_t;
void train_ckpt_begin(train_t *tr, long step, train_ckpt_t *s);
void train_ckpt_write(train_t *tr, train_ckpt_t *s);
void train_ckpt_commit(train_t *tr, train_ckpt_t *s);
void train_ckpt_free(train_ckpt_t *s);

/* The full model's fp32 master weights on every rank (host, model_param_count
 * elements; free() it): every part placed and summed over the world. */
float *train_full_master(train_t *tr);

/* "12.3k" style numbers for log lines. */
const char *train_si(char *buf, size_t len, double x);

#ifdef __cplusplus
}
#endif
#endif
