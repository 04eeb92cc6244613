/* bench.c: 04_fsdp/fsdp's --bench-csv row (bench.h). */
#include "bench.h"

#include "check.h"
#include "perf.h"

void fsdp_bench_row(const char *csv, const train_t *tr, const fsdp_t *f, const fsdp_opts_t *fo,
                    double mem, double mem_pred, double sent, double sent_pred) {
    if (!csv || tr->timed == 0) return;
    const size_t *pk = dev_mem()->peak;   /* every rank holds the same (tests/fsdp.tests) */
    fsdp_mem_t mp;
    fsdp_mem_predict(f, &mp);
    double ms_step = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
    csv_append_row(csv, FSDP_BENCH_HEADER, "%d,%d,%s,%d,%s,%s,%d,%zu,%zu,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,"
                   "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f", fo->zero, f->N, dtype_name(tr->dtype), fo->prefetch,
                   fo->reshard, fo->no_overlap ? "off" : "on", f->micro, model_param_count(&tr->cfg),
                   dtype_size(tr->dtype), ms_step, ms_step - ex, ex, mem / 1e6, mem_pred / 1e6,
                   pk[MEM_PARAMS] / 1e6, pk[MEM_GRADS] / 1e6, pk[MEM_OPTIM] / 1e6, pk[MEM_COMM] / 1e6,
                   pk[MEM_ACTS] / 1e6, mp.state / 1e6, mp.paper / 1e6, sent / 1e6, sent_pred / 1e6);
}
