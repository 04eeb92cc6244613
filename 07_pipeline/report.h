/* report.h: what chapter 07 reports of a pipeline run: every stage's
 * measurements from the runner (common/runner.h), gathered over the world,
 * and the replay's per-stage costs built from the measured layer times. */
#ifndef PIPELINE_REPORT_H
#define PIPELINE_REPORT_H

#include <mpi.h>

#include "runner.h"

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
    double *w;                     /* (P V) seconds per W action (0 without W's); bwd is then B's */
    double *dout_bytes;            /* (P) bytes one micro-batch object keeps from B for W (0 without) */
    int K;                         /* token slices per micro-batch */
    double *held_kv;               /* (P) bytes of keys and values held at the peak */
    double *slice_fwd, *slice_bwd; /* (P K) seconds per forward, backward of each slice */
} runner_report_t;

void runner_report(const runner_t *e, MPI_Comm world, int replicas, int replica,
                      runner_report_t *r);
void runner_report_free(runner_report_t *r);

/* Replay costs for P stages x V chunks of the same model built from the
 * measured times: L / (P V) layers of the mean measured layer time, plus the
 * embedding on virtual stage 0 and the head on the last; fwd and bwd must
 * hold P V entries. Needs L % (P V) == 0. */
void pipe_costs_from_layers(const runner_report_t *r, int P, int V, double *fwd, double *bwd);

#endif
