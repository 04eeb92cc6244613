/* pipeline.h: 07_pipeline/pipeline, the pipeline-parallel trainer: the shared
 * training loop (common/train.h) with a schedule (schedule.h) run by the
 * runner (common/runner.h) on every stage, and the bubble measured, replayed and
 * set beside its formula.
 *
 *   mpirun -np 2 ./07_pipeline/pipeline --schedule 1f1b --micro 8
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule interleaved --dp 2 --micro 4
 *   ./07_pipeline/pipeline --show-schedule --schedule gpipe --stages 4 --micro 4
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule terapipe --slices 4 --micro 2
 *
 * The world is --stages x --dp ranks: stages are consecutive ranks (one
 * pipeline), --dp pipelines are data-parallel replicas whose gradients are
 * all-reduced after each stage's last backward (common/grad_sync). Every
 * rank builds every stage's action list and checks it (schedule.h) before
 * step 1. After the run: the measured bubble (idle / step, mean over stages)
 * beside the schedule's formula, the same lists replayed on a clock with the
 * times measured here (at this stage count, and at the --replay ones from
 * the layer times), the activations held per stage, the bytes sent.
 *
 * The trainer in train_main's steps (common/train.h): pipeline_defaults,
 * pipeline_check, pipeline_compose, pipeline_report (pipeline.c), with the
 * summary in summary.c and the measurements it reads in report.c. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include "grad_sync.h"
#include "report.h"
#include "runner.h"
#include "schedule.h"
#include "train.h"

#define BUBBLE_HEADER "schedule,stages,micro,virtual,source,bubble,formula,step_ms"
#define MEMORY_HEADER "schedule,stages,micro,virtual,stage,held,bound,held_mb"
#define GANTT_HEADER "source,schedule,stages,micro,virtual,stage,op,mb,chunk,start_ms,end_ms"

/* The trainer's state: its flags, then what compose builds. */
typedef struct {
    const char *schedule, *replay, *bubble_csv, *memory_csv, *gantt_csv;
    int stages, dp, virt, show, slices, balance;
    double replay_gbps, replay_us;
    pipe_kind_t kind;
    int V, K;                   /* chunks per stage, token slices per micro-batch */
    pipe_schedule_t s;
    runner_t e;
    grad_sync_t gs;
} pipeline_t;

void pipeline_defaults(train_t *tr, void *ctx, int argc, char **argv);   /* 8 micro-batches, 8 layers */
void pipeline_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp);
train_step_fn pipeline_compose(train_t *tr, void *ctx, void **step_ctx);
void pipeline_report(train_t *tr, void *ctx);
/* The summary after the run: measured against formula and replay (summary.c). */
void pipeline_summary(pipeline_t *p, train_t *tr);

#endif
