/* main.c: 03_ddp/ddp, the data-parallel trainer (trainer.h): its flags and
 * its table for the shared main (common/train.h).
 *
 *   mpirun -np 2 ./03_ddp/ddp [--steps 200 --batch 16 ...] */
#include "check.h"
#include "trainer.h"

static ddp_t ddp = {.outer_momentum = 0.9, .error_feedback = "on"};

static arg_t flags[] = {
    {"no-overlap", ARG_FLAG, &ddp.no_overlap, "all-reduce the buckets after backward instead of during it", NULL, 0, 0},
    {"local-steps", ARG_INT, &ddp.local_steps, "local SGD: each rank steps alone H steps, then the weights are averaged (0: DDP)", NULL, 0, 1e9},
    {"outer-lr", ARG_DOUBLE, &ddp.outer_lr, "local SGD: DiLoCo's outer Nesterov step on the averaged move, this lr (0: plain averaging; the paper: 0.7)", NULL, 0, 10},
    {"outer-momentum", ARG_DOUBLE, &ddp.outer_momentum, "local SGD: the outer step's Nesterov momentum (with --outer-lr)", NULL, 0, 0.999999},
    {"compress", ARG_STRING, &ddp.compress, "compress the gradients at the step's end: none|int8|sign|topk:F|powersgd:R "
     "(common/compress.h; none: the same exchange uncompressed)", NULL, 0, 0},
    {"error-feedback", ARG_CHOICE, &ddp.error_feedback, "with --compress: keep what compression dropped and send it "
     "next step", "on|off", 0, 0},
    {"bench-csv", ARG_STRING, &ddp.bench_csv, "append one summary row (bucket size, overlap, mean times, tokens/s) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("03_ddp", "03_ddp/ddp", "distributed data parallel",
           "Distributed data parallel training of the Llama-style model: bucketed\n"
           "gradient all-reduce overlapping the backward pass, gradient accumulation,\n"
           "checkpoints and resume.",
           flags, &ddp, ddp_defaults, ddp_check, ddp_compose, ddp_report)
