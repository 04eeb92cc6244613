/* main.c: 07_pipeline/pipeline, the pipeline-parallel trainer (pipeline.h):
 * its flags and its table for the shared main (common/train.h).
 *
 *   mpirun -np 2 ./07_pipeline/pipeline --schedule 1f1b --micro 8
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule interleaved --dp 2 --micro 4
 *   ./07_pipeline/pipeline --show-schedule --schedule gpipe --stages 4 --micro 4
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule terapipe --slices 4 --micro 2 */
#include "check.h"
#include "pipeline.h"

static pipeline_t pl = {.schedule = "1f1b", .replay = "4,8", .dp = 1};

static arg_t flags[] = {
    {"schedule", ARG_CHOICE, &pl.schedule, "pipeline schedule", "naive|gpipe|1f1b|interleaved|zbh1|terapipe", 0, 0},
    {"slices", ARG_INT, &pl.slices, "token slices per micro-batch for the terapipe schedule (0: 4 there, 1 elsewhere)", NULL, 0, 1e6},
    {"balance", ARG_FLAG, &pl.balance, "terapipe: slices of equal FLOPs (later slices shorter) instead of equal length", NULL, 0, 0},
    {"stages", ARG_INT, &pl.stages, "pipeline stages P (0: world / dp)", NULL, 0, 1e4},
    {"dp", ARG_INT, &pl.dp, "data-parallel replicas of the pipeline (world = stages x dp)", NULL, 1, 1e6},
    {"virtual", ARG_INT, &pl.virt, "model chunks per stage V for the interleaved schedule (0: 2 there, 1 elsewhere)", NULL, 0, 1e4},
    {"show-schedule", ARG_FLAG, &pl.show, "print the schedule as a grid, check it, and exit", NULL, 0, 0},
    {"replay", ARG_STRING, &pl.replay, "also replay the schedule at these stage counts from the measured layer times (none: no others)", NULL, 0, 0},
    {"replay-gbps", ARG_DOUBLE, &pl.replay_gbps, "replays: GB/s of the link between stages (0: messages free)", NULL, 0, 1e6},
    {"replay-us", ARG_DOUBLE, &pl.replay_us, "replays: latency per message, microseconds", NULL, 0, 1e7},
    {"bubble-csv", ARG_STRING, &pl.bubble_csv, "append the bubble (measured, replayed, formula) to this CSV", NULL, 0, 0},
    {"memory-csv", ARG_STRING, &pl.memory_csv, "append the activations held per stage to this CSV", NULL, 0, 0},
    {"gantt-csv", ARG_STRING, &pl.gantt_csv, "append the last step's timeline (measured and replayed) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("07_pipeline", "07_pipeline/pipeline", "pipeline parallelism",
           "Pipeline-parallel training of the Llama-style model: the layers cut into\n"
           "stages, micro-batches flowing through them under a schedule (naive, GPipe,\n"
           "1F1B, interleaved 1F1B, ZB-H1, TeraPipe's token slices), the bubble measured,\n"
           "replayed and set beside its formula; data-parallel replicas of the pipeline\n"
           "with --dp.",
           flags, &pl, pipeline_defaults, pipeline_check, pipeline_compose, pipeline_report)
