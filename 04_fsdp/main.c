/* main.c: 04_fsdp/fsdp, the ZeRO trainer: the shared training loop
 * (common/train.h) with the weights, gradients and optimizer state sharded
 * over the data-parallel ranks by fsdp.c.
 *
 *   mpirun -np 4 ./04_fsdp/fsdp --zero 3 [--prefetch 1 --reshard-after-forward on ...]
 *
 * --zero 0 is plain DDP on the same code path (the baseline the stages are
 * measured against). At the end the program prints each kind of memory's
 * high-water mark beside the stage's formula and the bytes each rank sent
 * in the last step beside theirs; --bench-csv appends them as one row. */
#include "bench.h"
#include "check.h"
#include "fsdp.h"
#include "runner.h"

typedef struct {
    fsdp_opts_t fo;
    const char *bench_csv;
    fsdp_t f;
    runner_t run;
} zero_prog_t;

static zero_prog_t z = {.fo = FSDP_OPTS_DEFAULT};

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    zero_prog_t *p = ctx;
    (void)tr, (void)tp, (void)cp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, FSDP_BENCH_HEADER);
}

static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    zero_prog_t *p = ctx;
    *step_ctx = &p->run;
    return fsdp_compose(&p->f, &p->run, tr, &tr->grad, NULL, &p->fo);
}

static void report(train_t *tr, void *ctx) {
    zero_prog_t *p = ctx;
    fsdp_t *f = &p->f;
    double mem, mem_pred, sent, sent_pred;
    fsdp_report(f, &mem, &mem_pred, &sent, &sent_pred);
    fsdp_bench_row(p->bench_csv, tr, f, &p->fo, mem, mem_pred, sent, sent_pred);
    runner_free(&p->run);
    fsdp_free(f);
}

static arg_t flags[] = {
    FSDP_FLAGS(z.fo),
    {"bench-csv", ARG_STRING, &z.bench_csv, "append one summary row (memory, bytes, times) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("04_fsdp", "04_fsdp/fsdp", "ZeRO and fully sharded data parallel",
           "Data-parallel training of the Llama-style model with the training state sharded\n"
           "over the ranks (ZeRO, Rajbhandari et al. 2020): stage 1 the optimizer state,\n"
           "2 also the gradients, 3 also the weights (FSDP, all-gathered unit by unit).\n"
           "Prints the memory per rank and the bytes sent per step beside their formulas.",
           flags, &z, NULL, check, compose, report)
