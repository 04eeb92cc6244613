/* executor.h: one executor for every pipeline schedule (schedule.h): it runs
 * this rank's action list on the model, with the activations and gradients
 * moving between stages by non-blocking sends and receives.
 *
 *   pipe_exec_init(&e, &schedule, &tr.model, &tr.axis[AXIS_PP], &gs, ...);
 *   ... in the step function:  pipe_exec_step(&e, &tr, step, st);
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
 *         been sent
 *   SEND  post the send of the chunk's output, or of that input gradient
 * Messages between two computes are posted as one group (comm_group_begin),
 * so a schedule that passes the checker cannot deadlock on NCCL either.
 *
 * Waiting sleeps: a rank that waits for a neighbour polls its request every
 * 20 us and sleeps in between (nanosleep), instead of spinning inside MPI,
 * so on a machine with fewer cores than ranks a waiting rank gives its core
 * to the ranks that compute, and the idle time measured is real idle time.
 * On the CPU, MPI moves a message only inside MPI calls, so a unit hook also
 * progresses the messages in flight after every layer.
 *
 * What it measures, per step: busy time (forward and backward compute),
 * idle time (waiting for a message, for a send to complete, and at the end
 * for the whole pipeline to drain: a barrier over the stages, polled the same
 * way), the step's span; each action's start and end; the activations held
 * at the peak; with `time_units`, each layer's forward and backward time
 * (for replays at other stage counts). On a GPU, `sync` makes the host wait
 * for the device after each action (and unit) so that host clocks time the
 * device's work; without it the executor only queues work. */
#ifndef EXECUTOR_H
#define EXECUTOR_H

#include <mpi.h>

#include "comm.h"
#include "grad_sync.h"
#include "model.h"
#include "schedule.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const pipe_schedule_t *s;
    int stage;                 /* this rank's stage: its rank in comm */
    model_t *m;
    comm_t *comm;              /* the pipeline communicator (stage neighbours: rank +- 1) */
    grad_sync_t *gs;           /* data-parallel gradient sync, or NULL */
    const device_t *dev;
    int recompute_every, selective;
    int sync, time_units;
    size_t msg_elems, msg_bytes;   /* one activation or gradient message */
    int n;                     /* actions in this stage's list */
    /* the schedule's bookkeeping, from the list */
    int *in_action;            /* (n) compute: index of its input's RECV, or -1 */
    int *act_send;             /* (n) BWD: index of the SEND of its forward's output, or -1 */
    int *sends_grad;           /* (n) BWD: its input gradient is sent */
    int *sync_mode;            /* (n) BWD: 0 no_sync, 1 first synchronised, 2 later ones */
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
    int steps, timed;          /* steps run, steps in the sums (all but the first) */
    double sum_busy, sum_idle, sum_span, sum_sent;
    double *sum_fwd, *sum_bwd;     /* (V) per chunk */
    double *unit_s[2];         /* (n_units) forward, backward (recomputation included) */
    double unit_t;
    int track;                 /* trace track */
} pipe_exec_t;

/* Set up the executor for `stage` of schedule s (comm->rank must be the
 * stage, comm->size s->P). Adds a unit hook to m. */
void pipe_exec_init(pipe_exec_t *e, const pipe_schedule_t *s, model_t *m, comm_t *comm,
                    grad_sync_t *gs, int recompute_every, int selective, int sync, int time_units);
/* One optimizer step's forward and backward passes: zeroes the gradients,
 * runs the list, waits for the sends, synchronises the data-parallel
 * gradients, waits for the pipeline to drain. Fills st (loss on the last
 * stage, fwd_s, bwd_s, bubble_s = idle, exposed_s). */
void pipe_exec_step(pipe_exec_t *e, train_t *tr, long step, train_step_t *st);
void pipe_exec_free(pipe_exec_t *e);

/* Every stage's measurements, means over the steps after the first and over
 * the data-parallel replicas, on every rank (collective over world). */
typedef struct {
    int P, V, L, steps;
    double *busy, *idle, *span;    /* (P) seconds per step */
    double *fwd, *bwd;             /* (P V) seconds per action, index stage V + chunk */
    double *layer_fwd, *layer_bwd; /* (L) seconds per micro-batch through each layer */
    double emb_fwd, emb_bwd, head_fwd, head_bwd;
    int *held;                     /* (P) chunk micro-batches held at the peak */
    double *held_bytes;            /* (P) their bytes */
    int *bufs;                     /* (P) message buffers made */
    double sent;                   /* bytes per step sent between stages, all stages of one replica */
    double **t0, **t1;             /* (P)(n) the last step's actions (replica 0), from its start */
} pipe_report_t;

void pipe_exec_report(const pipe_exec_t *e, MPI_Comm world, int replicas, int replica,
                      pipe_report_t *r);
void pipe_report_free(pipe_report_t *r);

/* Replay costs for P stages x V chunks of the same model built from the
 * measured times: L / (P V) layers of the mean measured layer time, plus the
 * embedding on virtual stage 0 and the head on the last; fwd and bwd must
 * hold P V entries. Needs L % (P V) == 0. */
void pipe_costs_from_layers(const pipe_report_t *r, int P, int V, double *fwd, double *bwd);

#ifdef __cplusplus
}
#endif
#endif
