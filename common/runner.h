/* runner.h: the one loop that runs micro-batches, for every trainer. It
 * executes this rank's action list (actions.h) on the model: the one-stage
 * list F0 B0 F1 B1 ... of a trainer without a pipeline (DDP, ZeRO, tensor and
 * context parallelism, recomputation), or a stage's list of any pipeline
 * schedule of chapter 07, with activations and gradients moving between
 * stages by non-blocking sends and receives.
 *
 *   runner_init(&r, NULL, &tr, strategy, 0, 0);    // NULL: the one-stage list
 *   train_run(&tr, runner_step, &r);                // or a step function that calls it
 *
 * What a chapter plugs in:
 *   the schedule   which micro-batch runs through which chunk when, and the
 *                  messages between stages;
 *   the strategy   the gradient synchronisation over the data-parallel
 *                  ranks (grad_sync.h: DDP's buckets; 04_fsdp: ZeRO-1/2/3 and
 *                  hybrid sharding), called at the points the schedule
 *                  defines: the step's start, before and after every
 *                  backward (with "is this its chunk's last backward of the
 *                  step"), the step's end;
 *   seam counters  seconds of blocking communication inside the units
 *                  (tensor- and context-parallel seams: runner_add_seam), so
 *                  that compute time leaves them out;
 *   unit hooks     on the model itself (ZeRO-3's weight gathering, the
 *                  recomputation meter, the seams).
 *
 * Per action:
 *   RECV  post the receive: an activation lands straight in the input of a
 *         micro-batch object (model_acts_t, a->resid[0]) taken from this
 *         chunk's pool; a gradient in a message buffer
 *   FWD   wait for the input (idle time), then model_forward; the head's
 *         chunk counts the loss
 *   BWD   wait for the output gradient (idle), model_backward with it; the
 *         input gradient is copied to a message buffer for its SEND, and the
 *         micro-batch object goes back to the pool once its activation has
 *         been sent. In a list with W's, BWD is model_backward_input only
 *   W     model_backward_weights: the rest of the backward; the object goes
 *         back to the pool here, and the strategy's backward_begin/_end (with
 *         "last") wrap the Ws instead of the BWDs, since a unit's gradients
 *         are complete only after its W
 *   SEND  post the send of the chunk's output, or of that input gradient
 * Messages between two computes are posted as one group (comm_group_begin),
 * so a schedule that passes the checker cannot deadlock on NCCL either.
 * Micro-batch objects follow tr->recompute; chunk 0's pool starts with
 * tr->acts when train_model built it (one stage: the only object used).
 * With token slices (TeraPipe, s->slices = K > 1) an object holds one slice
 * of seq / K tokens (model_acts_init_slice), pooled per slice, and points at
 * its micro-batch's objects of the earlier slices (still held: their
 * backward comes later), whose keys and values its attention reads; every
 * message is one slice's.
 *
 * Waiting sleeps: a rank that waits for a neighbour polls its request every
 * 20 us and sleeps in between (nanosleep), instead of spinning inside MPI,
 * so on a machine with fewer cores than ranks a waiting rank gives its core
 * to the ranks that compute, and the idle time measured is real idle time.
 * On the CPU, MPI moves a message only inside MPI calls, so a unit hook also
 * progresses the messages in flight after every layer.
 *
 * What it measures, per step: busy time (forward and backward compute, less
 * the strategy's exposed communication and the seams' time inside them),
 * idle time (waiting for a message, for a send to complete, and at the end
 * for the whole pipeline to drain: a barrier over the stages, polled the same
 * way), the step's span; each action's start and end; the activations held
 * at the peak; with `time_units`, each layer's forward and backward time
 * (for replays at other stage counts). On a GPU, `sync` makes the host wait
 * for the device after each action (and unit) so that host clocks time the
 * device's work; without it the runner only queues work. */
#ifndef RUNNER_H
#define RUNNER_H

#include <mpi.h>

#include "comm.h"
#include "grad_sync.h"
#include "model.h"
#include "actions.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { RUNNER_SEAMS = 4 };

typedef struct {
    const pipe_schedule_t *s;
    pipe_schedule_t one_stage;  /* s when runner_init got none */
    int stage;                 /* this rank's stage: its rank in comm */
    model_t *m;
    comm_t *comm;              /* the pipeline communicator (stage neighbours: rank +- 1) */
    grad_strategy_t gs;        /* data-parallel gradient synchronisation (ctx NULL: none) */
    const double *seam[RUNNER_SEAMS];   /* seconds of blocking communication inside units */
    int nseams;
    const device_t *dev;
    model_recompute_t keep;    /* what the micro-batch objects keep */
    model_acts_t *borrowed;    /* tr->acts in chunk 0's pool (not freed here), or NULL */
    int sync, time_units;
    size_t msg_elems, msg_bytes;   /* one activation or gradient message */
    pipe_links_t links;        /* the list's bookkeeping: what each action waits on and lets go */
    /* per step */
    comm_req_t *req;           /* (n) */
    void **send_buf;           /* (n) SEND of a gradient: its buffer */
    model_acts_t **acts;       /* (M V) micro-batch objects in flight, [mb V + c] */
    void **grad_in, **grad_out;    /* (M V) received output gradients, input gradients to send */
    /* pools */
    model_acts_t **pool;       /* (V M) free micro-batch objects, per chunk M slots */
    int *pool_free, *made;     /* (V) */
    void **bufs;               /* free message buffers */
    int nbufs, bufs_made;
    int *pending;              /* SENDs of gradients not yet complete (action indices) */
    int npending;
    int last_post;             /* the latest request posted this step, or -1 */
    /* measurements */
    double t_zero;             /* the step's start (now_s) */
    double *t0, *t1;           /* (n) this step's actions, seconds from t_zero */
    int held, held_peak;       /* chunk micro-batches held now, at the peak */
    double held_bytes, held_bytes_peak;
    double busy, idle, span, sent;   /* this step */
    double sync_s;             /* this step: the strategy's exposed communication */
    int steps, timed;          /* steps run, steps in the sums (all but the first) */
    double sum_busy, sum_idle, sum_span, sum_sent;
    double *sum_fwd, *sum_bwd;     /* (V) per chunk */
    double *unit_s[2];         /* (n_units) forward, backward (recomputation included) */
    double unit_t;
    int track;                 /* trace track */
    double *sum_w;             /* (V) per chunk */
    /* token slices (s->slices = K > 1) */
    double held_kv, held_kv_peak;  /* bytes of keys and values (model_acts_t kv_bytes) held */
    double *slice_s[2];        /* (K) forward, backward seconds per slice, summed over the timed steps */
    int *slice_pos;            /* (K + 1) slice k holds the tokens [slice_pos[k], slice_pos[k + 1]) */
    size_t tok_elems;          /* elements of a message per token position */
} runner_t;

/* Set up the runner of tr->model for this rank's stage of schedule s (the
 * stage is its rank in tr->axis[AXIS_PP], which has s->P ranks; NULL: the
 * one-stage list of tr->o.micro micro-batches); gs.ctx may be NULL (nothing
 * to synchronise: (grad_strategy_t){0}). Adds a unit hook to the model. */
void runner_init(runner_t *e, const pipe_schedule_t *s, train_t *tr, grad_strategy_t gs, int sync,
                 int time_units);
/* Token slices of other lengths than seq / K (before the first step): slice
 * k holds the tokens [pos[k], pos[k + 1]), pos[0] = 0, pos[K] = seq. */
void runner_slices(runner_t *e, const int *pos);
/* Blocking communication inside the units: *seconds grows by its time. */
void runner_add_seam(runner_t *e, const double *seconds);
/* One optimizer step's forward and backward passes: zeroes the gradients
 * (and the strategy's step_begin), runs the list, waits for the sends, ends
 * the strategy's synchronisation, waits for the pipeline to drain. Fills st:
 * loss (the head's chunk, where model_counts_loss), fwd_s, bwd_s (compute
 * only), exposed_s (the strategy's and the seams'), bubble_s (idle time of a
 * pipeline of several stages; -1 for one stage). */
void runner_step(train_t *tr, void *runner, long step, train_step_t *st);   /* a train_step_fn */
void runner_free(runner_t *e);

#ifdef __cplusplus
}
#endif
#endif
