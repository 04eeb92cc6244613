/* report.c: 09_context_parallel/cp's end of run: every rank's attention
 * work and time (the causal balance) beside cp.h's formulas, the bytes per
 * layer, the memory, and the --bench-csv row (trainer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

/* Per rank: its attention work against the formula, and its mean times. */
static void report_cp(const train_t *tr, const cpp_t *p, cp_algo_t algo) {
    const model_t *m = &tr->model;
    const int W = tr->dist.world;
    const int cpu = tr->dev.kind == DEV_CPU;
    double mine[7] = {tr->mesh.coord[AXIS_CP], tr->dp_rank,
                      p->last.calls[0] ? p->last.pairs / p->last.calls[0] : 0,
                      cp_pairs_formula(m, algo, tr->mesh.coord[AXIS_CP], tr->mb),
                      p->timed ? 1e3 * p->sum.compute_s / p->timed : 0,
                      p->timed ? 1e3 * p->sum.compute_s_cpu / p->timed : 0,
                      p->timed ? 1e3 * p->sum.comm_s / p->timed : 0};
    double *all = xmalloc(sizeof mine * (size_t)W);
    dist_watch("the gather of every rank's attention work", MPI_COMM_WORLD);
    MPI_CHECK(MPI_Gather(mine, 7, MPI_DOUBLE, all, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    watch_end();
    double whole = (double)tr->mb * m->cfg.heads * m->cfg.seq * (m->cfg.seq + 1.0) / 2;
    say("attention per rank (one layer's forward, %d sequence%s): query-key pairs against cp.h's formula; "
        "ms per step in attention kernels%s and waiting on communication (mean of steps 2-%d)\n", tr->mb,
        tr->mb == 1 ? "" : "s", cpu ? " (wall clock, and the rank's CPU time)" : "", tr->o.steps);
    for (int w = 0; w < W && tr->dist.rank == 0; w++) {
        const double *a = all + 7 * w;
        if (a[1] != 0) continue;   /* the first data-parallel replica speaks for the others */
        char cpus[48] = "";
        if (cpu) snprintf(cpus, sizeof cpus, " (cpu %8.2f)", a[5]);
        say("  cp rank %d: %10.0f pairs (formula %10.0f, %5.1f%% of the causal triangle) | "
            "attention %8.2f ms%s | comm %7.2f ms\n", (int)a[0], a[2], a[3], 100 * a[2] / whole, a[4], cpus, a[6]);
    }
    free(all);
    double f[2];
    cp_bytes_formula(m, algo, tr->mb, f);
    say("cp bytes: per layer and micro-batch on the context-parallel communicator, each rank: forward %.3f kB "
        "(formula %.3f kB), backward %.3f kB (formula %.3f kB)\n",
        p->last.calls[0] ? p->last.bytes[0] / p->last.calls[0] / 1e3 : 0, f[0] / 1e3,
        p->last.calls[1] ? p->last.bytes[1] / p->last.calls[1] / 1e3 : 0, f[1] / 1e3);
    const mem_stats_t *mem = dev_mem();
    say("memory:  activations of one micro-batch %.6f MB per rank (%d of %d tokens of each sequence); "
        "communication buffers %.6f MB; all activation buffers at most %.2f MB\n", tr->acts.bytes / 1e6,
        m->T, m->cfg.seq, mem->peak[MEM_COMM] / 1e6, mem->peak[MEM_ACTS] / 1e6);
}

void cpp_report(train_t *tr, void *ctx) {
    cpp_t *p = ctx;
    cp_algo_t algo = cpp_algo(p);
    report_cp(tr, p, algo);
    if (p->bench_csv && tr->timed > 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double v[7] = {p->timed ? 1e3 * p->sum.compute_s / p->timed : 0, 0,
                       p->timed ? 1e3 * p->sum.compute_s_cpu / p->timed : 0, 0,
                       p->timed ? 1e3 * p->sum.comm_s / p->timed : 0, (double)dev_mem()->total_peak,
                       ru.ru_maxrss / 1024.0};
        v[1] = -v[0];   /* the minimum over ranks, by the same MAX */
        v[3] = -v[2];
        if (tr->dev.kind != DEV_CPU) v[2] = v[3] = 0;   /* host time of a GPU's launches: not the work */
        double sent = p->last.bytes[0] + p->last.bytes[1];
        dist_allreduce(v, 7, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        dist_allreduce(&sent, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        csv_append_row(p->bench_csv, BENCH_HEADER, "%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.6f,%.6f,%.6f,%.1f",
                       cp_algo_name[algo], p->cp, tr->dp, !p->no_balance, tr->cfg.seq, tr->o.batch,
                       tr->sum_ms / tr->timed, v[0], -v[1], v[2], -v[3], v[4], sent / 1e6, v[5] / 1048576.0,
                       tr->acts.bytes / 1048576.0, v[6]);
    }
    runner_free(&p->run);
    grad_sync_free(&p->gs);
    cp_free(&p->c);
}
