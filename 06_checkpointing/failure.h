/* failure.h: injected failures, and how often to checkpoint when things fail.
 *
 * Injection. A job is a sequence of attempts (06_checkpointing/supervise.sh
 * starts attempt 0, and after each failure the next one with --resume and
 * --attempt k). Attempt k fails in one of two ways:
 *   --fail-at-step S0,S1,...   the k-th listed step: one rank dies (SIGKILL)
 *                              at the end of that step, before its checkpoint;
 *                              attempts past the list run to the end;
 *   --fail-every-s M           failures as a Poisson process with a mean time
 *                              between failures of M seconds: attempt k's rank
 *                              dies after an exponentially distributed time,
 *                              counted from the attempt's start, wherever the
 *                              program is (in a step, in a collective, in the
 *                              middle of writing a checkpoint).
 * The victim (a random rank) and the time are drawn from --fail-seed and k,
 * the same on every rank and in every rerun, so a sweep can give each
 * checkpoint interval the same failures.
 *
 * The optimal interval. Saving a checkpoint stalls training for delta
 * seconds; failures arrive at rate 1/M; a restart costs R. Checkpointing
 * every tau seconds of work loses delta / tau to saving and, on average,
 * half an interval per failure. Young (1974) minimised the first-order waste
 *     delta / tau + tau / (2 M)        ->  tau_Young = sqrt(2 delta M)
 * and Daly (2006) derived, for exponential failures, the expected wall time
 * of W seconds of work,
 *     T(tau) = M e^(R/M) (e^((tau + delta)/M) - 1) W / tau,
 * whose minimum is near
 *     tau_Daly = sqrt(2 delta M) [1 + sqrt(delta / (2M)) / 3 + delta / (18 M)] - delta
 * (for delta < 2M; M otherwise). Goodput, the share of the wall clock that
 * does useful work, is W / T. */
#ifndef FAILURE_H
#define FAILURE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    long at_step;        /* this attempt fails at the end of this step (0: not by step) */
    double after_s;      /* this attempt fails this long after its start (0: not by time) */
    int victim;          /* the world rank that dies */
} failure_t;

/* This attempt's failure, from the flags (at_steps may be NULL, every_s 0).
 * Returns 0, or -1 with a one-line reason in err (a step list that is not
 * increasing positive whole numbers, a step past --steps). */
int failure_plan(failure_t *f, const char *at_steps, double every_s, int seed, int attempt, int world,
                 long steps, char *err, size_t len);
/* Arms the time failure on the victim: a thread that kills this process. */
void failure_arm(const failure_t *f, int rank);
/* The training is over (its last checkpoint complete): a time failure that
 * has not struck by now does not. */
void failure_disarm(void);
/* At the end of `step`: the victim of a step failure dies here. */
void failure_at_step(const failure_t *f, int rank, long step);

/* Young's and Daly's optimal intervals (seconds of work between checkpoints)
 * and Daly's expected goodput W / T(tau) with the restart cost R. */
double young_interval(double delta, double mtbf);
double daly_interval(double delta, double mtbf);
double daly_goodput(double tau, double delta, double restart, double mtbf);

#ifdef __cplusplus
}
#endif
#endif
