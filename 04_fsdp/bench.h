/* bench.h: 04_fsdp/fsdp's --bench-csv row: the stage's options, the step's
 * time, every kind of memory's high-water mark beside the formulas, the
 * bytes sent beside theirs. */
#ifndef FSDP_BENCH_H
#define FSDP_BENCH_H

#include "fsdp.h"
#include "train.h"

#define FSDP_BENCH_HEADER "zero,ranks,dtype,prefetch,reshard,overlap,micro,params,wbytes,step_ms,compute_ms," \
                          "exposed_ms,mem_mb,mem_pred_mb,params_mb,grads_mb,optim_mb,comm_mb,acts_mb,formula_mb," \
                          "paper_mb,sent_mb,sent_pred_mb"

/* Appends the row to csv (NULL: nothing) after a run of timed steps, with
 * fsdp_report's figures. */
void fsdp_bench_row(const char *csv, const train_t *tr, const fsdp_t *f, const fsdp_opts_t *fo,
                    double mem, double mem_pred, double sent, double sent_pred);

#endif
