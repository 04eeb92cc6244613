/* schedule.h: pipeline schedules as data, a checker every schedule must
 * pass, and a replay of the schedule on a discrete-event clock.
 *
 * P stages, M micro-batches per step, V model chunks per stage. Virtual
 * stage vs = c P + s is chunk c of stage s: the model's layers in order run
 * through virtual stages 0, 1, ..., P V - 1 (V = 1: stage s holds one run of
 * L / P layers; V > 1: the interleaved schedule, Narayanan et al. 2021).
 *
 * A schedule is, for every stage, the ordered list of its actions (FWD,
 * BWD, SEND, RECV: common/actions.h).
 *
 * Only the ORDER of the compute actions differs between schedules
 * (pipe_schedule_build); one lowering adds the messages: a RECV right before
 * the compute that needs it, a SEND right after the compute that produced it,
 * and a SEND followed at once by a RECV is posted as one grouped call
 * (with_next: comm_isendrecv, NCCL's ncclGroupStart/End), which is what keeps
 * 1F1B's steady state free of deadlock when every send waits for its
 * receive (see pipe_schedule_check).
 *
 * The runner (common/runner.h) runs any list on the model; pipe_replay runs the
 * same lists on a clock with given action times. */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include <stddef.h>
#include <stdio.h>

#include "actions.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PIPE_NAIVE, PIPE_GPIPE, PIPE_1F1B, PIPE_INTERLEAVED, PIPE_ZBH1, PIPE_TERAPIPE, PIPE_KINDS } pipe_kind_t;
extern const char *const pipe_kind_name[PIPE_KINDS];   /* "naive", "gpipe", "1f1b", "interleaved", "zbh1",
                                                          "terapipe" */

/* The kind named `name`, or -1. */
int pipe_kind_parse(const char *name);
/* 0 when (kind, P, M, V) can be built, else -1 with the reason in why:
 * P, M >= 1; V = 1 except for the interleaved schedule, which needs P >= 2,
 * V >= 2 and M a multiple of P (its micro-batches go round in groups of P). */
int pipe_schedule_valid(pipe_kind_t kind, int P, int M, int V, char *why, size_t len);
/* Build the lists (dies on parameters pipe_schedule_valid refuses). */
void pipe_schedule_build(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V);
/* TeraPipe (Li et al. 2021): M micro-batches, each cut into K token slices,
 * as GPipe orders them: every forward in unit order u = mb K + k (slice k
 * after the slices before it, whose keys and values it attends to), then
 * every backward, within a micro-batch the LAST slice first (slice k's
 * backward adds into the key and value gradients of the slices before it).
 * The schedule's M is M K units. */
void pipe_schedule_terapipe(pipe_schedule_t *s, int P, int M, int K);
/* Either of the two: TeraPipe's K slices for kind PIPE_TERAPIPE, else
 * pipe_schedule_build (K then 1). */
void pipe_schedule_make(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V, int K);
/* Slice boundaries of equal cost: the token at position t costs a + b (t + 1)
 * (a: its matmuls, b: its attention per key it sees; the causal square makes
 * later tokens dearer), and slice k = [pos[k], pos[k + 1]) gets the tokens
 * whose cost sums closest to its share k / K of the whole, at least one each
 * (TeraPipe chooses them by dynamic programming over measured times; this is
 * its cost model in closed form). pos has K + 1 entries, pos[K] = T >= K. */
void pipe_slices_balanced(int T, int K, double a, double b, int *pos);
/* The same compute order lowered without grouping any SEND with the next
 * RECV (for the tests: 1F1B then deadlocks when sends wait for receives). */
void pipe_schedule_ungroup(pipe_schedule_t *s);

/* The checker: 0 when every property holds, else -1 with the first violation
 * in err. Any new schedule must pass it.
 *  1. every stage computes FWD and BWD once for each of its (mb, chunk), the
 *     forward first;
 *  2. every compute that needs an input (FWD of a virtual stage > 0, BWD of
 *     one < P V - 1) is preceded by the RECV of exactly that message, every
 *     produced output is followed by its SEND, to the right neighbour;
 *  3. sends match receives: between each ordered pair of stages the k-th
 *     SEND is the message the k-th RECV expects (one tag, FIFO order, as MPI
 *     and NCCL match them);
 *  4. no deadlock, in two models of the network: (a) MPI: posting never
 *     blocks, a compute waits for its message; (b) one stream per rank, as
 *     NCCL runs them: each rank's sends and receives complete in the order
 *     posted, a send only together with its receive (a grouped SEND+RECV
 *     completes when both have found their partner), and a message group
 *     starts only after the computes posted before it;
 *  5. with token slices, on every stage slice k of a micro-batch runs its
 *     forward after those of slices < k and its backward before theirs;
 *  6. the activations in flight (forwards whose backward has not run, in
 *     chunk micro-batches) never exceed pipe_inflight_bound on any stage;
 *  7. in a list with W's (a split backward): every (mb, chunk) has exactly
 *     one W, after its BWD (so before the step's end). */
int pipe_schedule_check(const pipe_schedule_t *s, char *err, size_t len);

/* The most chunk micro-batches whose activations stage holds at once under
 * this list (forwards done, backwards not; with W's: W not, since W reads
 * the inputs of the linears). */
int pipe_inflight_max(const pipe_schedule_t *s, int stage);
/* The most chunk micro-batches whose B has run and W not yet (0 without W's):
 * each keeps its linears' output gradients (model_dout_bytes). */
int pipe_deferred_max(const pipe_schedule_t *s, int stage);
/* What the schedule promises for that (in chunk micro-batches; TeraPipe: units):
 *   naive 1 | GPipe, TeraPipe M | 1F1B min(M, P - stage) | ZB-H1 min(M, P): stage s
 *   lets s W's wait, so every stage holds up to P, 1F1B's peak (its stage 0) |
 *   interleaved min(V M, 2 (P - stage - 1) + (V - 1) P + 1)   (Megatron's warm-up + 1) */
int pipe_inflight_bound(pipe_kind_t kind, int P, int M, int V, int stage);

/* The bubble's share of the step when every stage's forward and backward
 * take the same time and messages are free:
 *   naive (P - 1) / P                            one micro-batch at a time
 *   GPipe, 1F1B (P - 1) / (M + P - 1)            Huang et al. 2019; Narayanan et al. 2019
 *   interleaved (P - 1) / (V M + P - 1)          Narayanan et al. 2021
 *   ZB-H1 (P - 1) / (3 M + P - 1)                Qi et al. 2023, with T_F = T_B = T_W:
 *       the bubble (P - 1)(T_F + T_B - T_W) against 1F1B's (P - 1)(T_F + T_B + T_W)
 *       (1F1B's backward is B + W), a step of M (T_F + T_B + T_W) + that.
 *   TeraPipe (P - 1) / (M K + P - 1)             Li et al. 2021, equal slices (M here: units) */
double pipe_bubble_formula(pipe_kind_t kind, int P, int M, int V);

/* ---- the replay ----------------------------------------------------------------------
 * The suite's replay engine (common/replay.h) on the lists: every stage is a
 * rank, SEND and RECV its non-blocking messages. Every stage runs its list in
 * order on one clock. A SEND or RECV takes no
 * time; a message posted at t arrives at t + msg_s; a compute starts when the
 * stage is free and its input has arrived, and takes fwd[] or bwd[] of its
 * (stage, chunk). The step is the time from 0 to the last action's end; a
 * stage's idle time is the step minus its compute, so the wait for the
 * pipeline to drain counts as bubble as the wait to fill it does. */
typedef struct {
    const double *fwd, *bwd;     /* (P V) seconds, index stage * V + chunk; bwd: a BWD's (B's
                                    alone where the list has W's) */
    double msg_s;                /* from a send's post to the message's arrival */
    const double *w;             /* (P V) a W's seconds (NULL in a list without W's) */
} pipe_costs_t;

typedef struct {
    int P;
    double step;                 /* makespan */
    double *busy, *idle;         /* (P) */
    double bubble;               /* mean over stages of idle / step */
    double **t0, **t1;           /* (P)(n[stage]) each action's start and end */
} pipe_replay_t;

/* 0, or -1 when the lists cannot finish (a deadlock: err says which action of
 * which stage waits for a message never sent). r is filled either way. */
int pipe_replay(const pipe_schedule_t *s, const pipe_costs_t *c, pipe_replay_t *r, char *err,
                size_t len);
void pipe_replay_free(pipe_replay_t *r);

/* The lecture's picture: time runs right in slots of one chunk pass (every
 * forward and backward one slot, messages free), one row per stage, "F3"
 * forward and "B3" backward of micro-batch 3 ("F3b": chunk b), "W3" its
 * weight-gradient half where the list splits the backward, "." idle; then
 * the busy share, the bubble beside its formula and the activations held. */
void pipe_schedule_print(const pipe_schedule_t *s, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
