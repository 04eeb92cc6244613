/* main.c: 08_tensor_parallel/tp, the tensor-parallel trainer (trainer.h):
 * its flags and its table for the shared main (common/train.h).
 *
 *   mpirun -np 2 ./08_tensor_parallel/tp [--tp 2] [--sp] [--steps 200 ...] */
#include "check.h"
#include "trainer.h"

static tpp_t tpp;

static arg_t flags[] = {
    {"tp", ARG_INT, &tpp.tp, "tensor-parallel degree (0: every rank; the rest are data-parallel replicas)", NULL, 0, 1e6},
    {"sp", ARG_FLAG, &tpp.sp, "sequence parallelism: shard the residual stream and norms along the sequence", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &tpp.bench_csv, "append one summary row (degrees, link, mean times, bytes) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("08_tensor_parallel", "08_tensor_parallel/tp", "tensor parallelism",
           "Megatron-style tensor parallelism of the Llama-style model: heads, ffn and\n"
           "vocabulary split over --tp ranks, one all-reduce after each row-parallel\n"
           "product (the f and g operators), --sp for sequence parallelism; the other\n"
           "ranks are data-parallel replicas.",
           flags, &tpp, NULL, tpp_check, tpp_compose, tpp_report)
