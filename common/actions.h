/* actions.h: a schedule as data -- for every rank of a pipeline (a stage),
 * the ordered list of what it does in one optimizer step. The runner
 * (runner.h) executes any such list; chapter 07 builds the pipeline
 * schedules (naive, GPipe, 1F1B, interleaved) and checks them; the
 * one-stage list below is what every trainer without a pipeline runs.
 *
 *   FWD  mb c      forward of micro-batch mb through local chunk c
 *   BWD  mb c      backward of it
 *   RECV act|grad  post the receive of the input activation of (mb, c) from
 *                  the previous virtual stage, or of the output gradient
 *                  from the next one
 *   SEND act|grad  post the send of the output activation of (mb, c) to the
 *                  next virtual stage, or of the input gradient to the
 *                  previous one
 *   W    mb c      the weight-gradient half of the backward of (mb, c): a list
 *                  with W's splits every backward, BWD computing only the
 *                  input gradients (model_backward_input) and W the rest
 *                  (model_backward_weights), once, later
 *
 * P stages, M micro-batches per step, V model chunks per stage; virtual
 * stage vs = c P + s is chunk c of stage s.
 *
 * Token slices (TeraPipe, Li et al. 2021): with K = slices > 1 every
 * micro-batch's sequences are cut into K slices of seq / K tokens that
 * flow through the stages one after another; an action's mb is then the
 * UNIT u = micro-batch K + slice, and M counts units (micro-batches x K). */
#ifndef ACTIONS_H
#define ACTIONS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PA_FWD, PA_BWD, PA_SEND, PA_RECV, PA_W } pipe_op_t;
typedef enum { PM_ACT, PM_GRAD } pipe_msg_t;

typedef struct {
    int op;          /* pipe_op_t */
    int mb;          /* micro-batch */
    int chunk;       /* local chunk: of the compute; of a message, the chunk on THIS stage
                        that produced it (SEND) or will consume it (RECV) */
    int msg;         /* SEND, RECV: pipe_msg_t */
    int peer;        /* SEND, RECV: the stage at the other end */
    int with_next;   /* SEND: posted in one grouped call with the RECV that follows */
} pipe_action_t;

typedef struct {
    int kind;                /* 07_pipeline's pipe_kind_t; PIPE_ONE_STAGE for the list below */
    int P, M, V;
    int *n;                  /* (P) actions per stage */
    pipe_action_t **a;       /* (P) each stage's list */
    int slices;              /* K token slices per micro-batch (TeraPipe), 1 otherwise */
} pipe_schedule_t;

enum { PIPE_ONE_STAGE = -1 };

/* One stage, one chunk: forward and backward of each micro-batch in turn,
 * F0 B0 F1 B1 ... (gradient accumulation; what 1F1B is with P = 1). */
void pipe_schedule_one_stage(pipe_schedule_t *s, int M);
void pipe_schedule_free(pipe_schedule_t *s);

/* A message (SEND, RECV), not a compute (FWD, BWD, W). */
static inline int pipe_is_msg(int op) { return op == PA_SEND || op == PA_RECV; }

/* Virtual stage of (stage, chunk). */
static inline int pipe_vstage(const pipe_schedule_t *s, int stage, int chunk) { return chunk * s->P + stage; }

/* How one stage's actions depend on one another, read from its list: what
 * a runner needs beside the list itself. The backward of a micro-batch is
 * completed by its BWD, or by its W where the list splits the backward. */
typedef struct {
    int n;             /* actions in the stage's list */
    int split;         /* the list has W actions */
    int *in_action;    /* (n) FWD, BWD: index of the RECV of its input (activation, gradient), or -1 */
    int *act_send;     /* (n) the action completing a backward: index of the SEND of its forward's output, or -1 */
    int *sends_grad;   /* (n) BWD: its input gradient is sent (not on virtual stage 0) */
    int *last_bwd;     /* (n) the action completing the last backward of its chunk in the step: 1, and 2
                          for the first such of the step; 0 otherwise */
} pipe_links_t;

void pipe_links_make(const pipe_schedule_t *s, int stage, pipe_links_t *l);
void pipe_links_free(pipe_links_t *l);

#ifdef __cplusplus
}
#endif
#endif
