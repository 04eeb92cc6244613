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
#include <stdio.h>

#include "check.h"
#include "fsdp.h"
#include "perf.h"
#include "runner.h"

#define BENCH_HEADER "zero,ranks,dtype,prefetch,reshard,overlap,micro,params,wbytes,step_ms,compute_ms," \
                     "exposed_ms,mem_mb,mem_pred_mb,params_mb,grads_mb,optim_mb,comm_mb,acts_mb,formula_mb," \
                     "paper_mb,sent_mb,sent_pred_mb"

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
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
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
    if (p->bench_csv && tr->timed > 0) {
        const size_t *pk = dev_mem()->peak;   /* every rank holds the same (tests/fsdp.tests) */
        fsdp_mem_t mp;
        fsdp_mem_predict(f, &mp);
        double ms_step = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
        csv_append_row(p->bench_csv, BENCH_HEADER, "%d,%d,%s,%d,%s,%s,%d,%zu,%zu,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,"
                       "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", p->fo.zero, f->N, dtype_name(tr->dtype), p->fo.prefetch,
                       p->fo.reshard, p->fo.no_overlap ? "off" : "on", tr->o.micro, model_param_count(&tr->cfg),
                       dtype_size(tr->dtype), ms_step, ms_step - ex, ex, mem / 1e6, mem_pred / 1e6,
                       pk[MEM_PARAMS] / 1e6, pk[MEM_GRADS] / 1e6, pk[MEM_OPTIM] / 1e6, pk[MEM_COMM] / 1e6,
                       pk[MEM_ACTS] / 1e6, mp.state / 1e6, mp.paper / 1e6, sent / 1e6, sent_pred / 1e6);
    }
    runner_free(&p->run);
    fsdp_free(f);
}

static arg_t flags[] = {
    FSDP_FLAGS(z.fo),
    {"bench-csv", ARG_STRING, &z.bench_csv, "append one summary row (memory, bytes, times) to this CSV", NULL, 0, 0},
};

static const train_chapter_t chapter = {
    {"04_fsdp", "04_fsdp/fsdp", "ZeRO and fully sharded data parallel",
     "Data-parallel training of the Llama-style model with the training state sharded\n"
     "over the ranks (ZeRO, Rajbhandari et al. 2020): stage 1 the optimizer state,\n"
     "2 also the gradients, 3 also the weights (FSDP, all-gathered unit by unit).\n"
     "Prints the memory per rank and the bytes sent per step beside their formulas.",
     flags, ARRAY_LEN(flags), NULL, 0},
    &z, NULL, check, compose, report};

int main(int argc, char **argv) { return train_main(argc, argv, &chapter); }
