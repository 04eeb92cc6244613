/* main.c: 10_nd_llama/train, the 4D-parallel trainer (nd.h): its flags and
 * its table for the shared main (common/train.h).
 *
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 1 --pp 2 --dp 2 --micro 4
 *   mpirun -np 8 ./10_nd_llama/train --tp 2 --cp 2 --pp 2 --sp --cp-algo ulysses
 *   mpirun -np 4 ./10_nd_llama/train --pp 2 --dp 2 --schedule zbh1
 *   mpirun -np 4 ./10_nd_llama/train --preset llama3-405b --tp 2 --pp 2 --dry-run */
#include "check.h"
#include "nd.h"

static nd_t nd = {.tp = 1, .cp = 1, .pp = 1, .schedule = "1f1b", .cp_algo = "ring", .recompute = "none",
                  .fo = FSDP_OPTS_DEFAULT};

static arg_t flags[] = {
    {"tp", ARG_INT, &nd.tp, "tensor-parallel degree (mesh axis 0, fastest)", NULL, 1, 1e6},
    {"cp", ARG_INT, &nd.cp, "context-parallel degree (axis 1)", NULL, 1, 1e6},
    {"pp", ARG_INT, &nd.pp, "pipeline stages (axis 2)", NULL, 1, 1e6},
    {"dp", ARG_INT, &nd.dp, "data-parallel degree (axis 3; 0: the rest of the world)", NULL, 0, 1e6},
    {"sp", ARG_FLAG, &nd.sp, "sequence parallelism inside the tensor-parallel group", NULL, 0, 0},
    {"cp-algo", ARG_CHOICE, &nd.cp_algo, "context-parallel attention", "ring|ulysses", 0, 0},
    {"no-balance", ARG_FLAG, &nd.no_balance, "context parallelism: one chunk per rank in order (causal work unbalanced)", NULL, 0, 0},
    {"schedule", ARG_CHOICE, &nd.schedule, "pipeline schedule", "naive|gpipe|1f1b|interleaved|zbh1|terapipe", 0, 0},
    {"slices", ARG_INT, &nd.slices, "token slices per micro-batch for the terapipe schedule (0: 4 there, 1 elsewhere)", NULL, 0, 1e6},
    {"virtual", ARG_INT, &nd.virt, "model chunks per stage for the interleaved schedule (0: 2 there, 1 elsewhere)", NULL, 0, 1e4},
    {"recompute", ARG_STRING, &nd.recompute, "activation recomputation: none, full, every:C, sqrt, selective, block:K", NULL, 0, 0},
    FSDP_FLAGS(nd.fo),
    {"preset", ARG_CHOICE, &nd.preset, "a named model (sets the shape flags; later flags still apply)", PRESET_CHOICES, 0, 0},
    {"dry-run", ARG_FLAG, &nd.dry_run, "build the mesh and the shards, print per-rank memory and FLOPs, allocate no model, exit", NULL, 0, 0},
    {"bench-csv", ARG_STRING, &nd.bench_csv, "append one summary row (configuration, MFU, HFU, time by cause) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("10_nd_llama", "10_nd_llama/train", "4D parallelism (tp x cp x pp x dp)",
           "The Llama-style model on a [tp, cp, pp, dp] mesh: tensor parallelism (and\n"
           "sequence parallelism) inside each layer, context parallelism inside attention,\n"
           "pipeline stages under a schedule, and data parallelism (DDP or ZeRO-1/2/3) over\n"
           "the context x data group -- chapters 04-09's modules composed. Prints the\n"
           "exposed communication of each axis per step and the time by cause at the end.",
           flags, &nd, nd_defaults, nd_check, nd_compose, nd_report)
