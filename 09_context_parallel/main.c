/* main.c: 09_context_parallel/cp, the context-parallel trainer (trainer.h):
 * its flags and its table for the shared main (common/train.h).
 *
 *   mpirun -np 2 ./09_context_parallel/cp [--cp 2] [--cp-algo ring|ulysses] [--no-balance] */
#include "check.h"
#include "trainer.h"

static cpp_t cpp = {.cp = 0, .algo = "ring"};

static arg_t flags[] = {
    {"cp", ARG_INT, &cpp.cp, "context-parallel degree (0: every rank; the rest are data-parallel replicas)", NULL, 0, 1e6},
    {"cp-algo", ARG_CHOICE, &cpp.algo, "attention across the ranks' tokens", "ring|ulysses", 0, 0},
    {"no-balance", ARG_FLAG, &cpp.no_balance, "one chunk per rank in order (causal work unbalanced) instead of chunks i and 2C-1-i", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &cpp.bench_csv, "append one summary row (algorithm, degrees, sequence, attention time, memory) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("09_context_parallel", "09_context_parallel/cp", "context parallelism",
           "Context parallelism of the Llama-style model: every sequence split over --cp\n"
           "ranks, attention across them by ring attention (key/value blocks passed\n"
           "around a ring, merged by online softmax) or Ulysses (all-to-all from\n"
           "sequence to heads and back); causal load balance with two chunks per rank.\n"
           "The other ranks are data-parallel replicas.",
           flags, &cpp, NULL, cpp_check, cpp_compose, cpp_report)
