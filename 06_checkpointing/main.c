/* main.c: 06_checkpointing/ckpt, data-parallel training with activation
 * recomputation and failure recovery (trainer.h): its flags and its table
 * for the shared main (common/train.h).
 *
 *   mpirun -np 2 ./06_checkpointing/ckpt --layers 16 --recompute sqrt
 *   bash 06_checkpointing/supervise.sh --np 2 -- ./06_checkpointing/ckpt \
 *        --ckpt-dir /tmp/ck --ckpt-every 10 --fail-every-s 5 */
#include "check.h"
#include "trainer.h"

static ckpt_prog_t prog = {.recompute = "none", .fail_seed = -1};

static arg_t flags[] = {
    {"recompute", ARG_STRING, &prog.recompute, "activation recomputation: none, full, every:C, sqrt, block:K, selective", NULL, 0, 0},
    {"ckpt-async", ARG_FLAG, &prog.async, "write checkpoints in a background thread (the step waits only for the copy to host memory)", NULL, 0, 0},
    {"fail-at-step", ARG_STRING, &prog.fail_at, "inject failures: attempt k kills a random rank at the end of the k-th listed step (5,12,...)", NULL, 0, 0},
    {"fail-every-s", ARG_DOUBLE, &prog.fail_every_s, "inject failures: kill a random rank after an exponential time of this mean (seconds)", NULL, 0, 1e9},
    {"fail-seed", ARG_INT, &prog.fail_seed, "seed of the injected failures (-1: --seed)", NULL, -1, 2147483647.0},
    {"attempt", ARG_INT, &prog.attempt, "which attempt of the job this is (set by supervise.sh: picks its failure)", NULL, 0, 1e9},
    {"bench-csv", ARG_STRING, &prog.bench_csv, "append one summary row (policy, memory, times, MFU, HFU) to this CSV", NULL, 0, 0},
    {"goodput-model", ARG_STRING, &prog.goodput_model, "print Daly's goodput against the checkpoint interval for DELTA,MTBF,RESTART[,TAU] (s) and exit", NULL, 0, 0},
};

TRAIN_MAIN("06_checkpointing", "06_checkpointing/ckpt", "activation recomputation and failure recovery",
           "Data-parallel training of the Llama-style model with activation recomputation\n"
           "(memory for compute) and checkpoints that survive injected failures (time for\n"
           "safety): synchronous or asynchronous checkpoint sets, failure injection for\n"
           "06_checkpointing/supervise.sh, which restarts the job until it completes.",
           flags, &prog, NULL, ckpt_check, ckpt_compose, ckpt_report)
