/* saver.h: checkpoints written synchronously or in the background, with
 * what each costs the training loop.
 *
 * A checkpoint set is saved in three phases (common/train.h): begin (every
 * rank copies its part of the state to host memory: the snapshot), write
 * (each part file), commit (rank 0: meta.ckpt and the rename that makes the
 * set complete). Synchronously the loop waits for all three. Asynchronously
 * (as PyTorch's distributed checkpoint async_save and Megatron's async
 * checkpointing do) the loop waits only for the snapshot; a writer thread on
 * each rank writes its part while the next steps run, and rank 0's writer
 * then waits until every part file is in the set's directory (a part file
 * appears, by rename, only once it is complete on disk: the file system is
 * the message, as it is between the nodes of a cluster writing to shared
 * storage) and commits. No MPI outside the main thread, and none per step.
 * One save at a time: a checkpoint due while the previous one is still
 * being written waits for it. The last step's checkpoint is written
 * synchronously, so it is complete when the run ends.
 *
 * A failure before the commit loses the set in flight (its .tmp directory is
 * never renamed), and a restart resumes from the newest complete one: the
 * checkpoint interval of an asynchronous save is effectively a little longer.
 *
 * What it measures (rank 0, printed by saver_finish): the time the loop was
 * stalled per checkpoint (snapshot, waits for the previous save, and for a
 * synchronous save the writing), how long writing took and how long after
 * the snapshot the set was complete, and the mean step time while a write
 * was in flight against the other steps (a background write shares the
 * machine). */
#ifndef SAVER_H
#define SAVER_H

#include <pthread.h>

#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int async;
    train_ckpt_t set;           /* the set being saved */
    int pending;                /* a background save is in flight */
    pthread_t writer;
    int thread;                 /* this rank started a writer thread for it */
    train_t *tr;                /* for the writer thread */
    int done;                   /* set by the writer thread when its work is over (atomic) */
    /* measurements (rank 0's are printed) */
    int saved, saved_sync;      /* all, and those written synchronously */
    double stall_s, stall_sync_s, latency_s, write_s, snapshot_s;
    double busy_s, idle_s;      /* step time with and without a save in flight */
    int busy_n, idle_n;
    double last_end;            /* end of the previous step's hook (0: none yet) */
    double write_t0, write_t1, commit_t1;   /* set by the writer */
} saver_t;

void saver_init(saver_t *s, int async);
/* train_t.after_step's work: save when due; commit a finished background write. */
void saver_step(saver_t *s, train_t *tr, long step, int due);
/* Summary line (rank 0) and buffers freed. Nothing is in flight by then. */
void saver_finish(saver_t *s, train_t *tr);

#ifdef __cplusplus
}
#endif
#endif
