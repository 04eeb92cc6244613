/* report.c: 08_tensor_parallel/tp's end of run: the bytes each seam sent
 * beside tp.h's formulas, the activation memory beside its formula, the
 * seams' time, and the --bench-csv row (trainer.h). */
#include <stdio.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

/* The bytes of the last step beside tp.h's formulas, per unit pass and in all
 * (kB to the byte, so a test can compare them exactly). */
static void report_bytes(const train_t *tr, const tpp_t *p) {
    const model_t *m = &tr->model;
    const tp_stats_t *s = &p->last;
    size_t rows = tr->acts.rows_full;
    if (p->tp == 1) {
        say("tp bytes: none (tensor parallelism 1: the model calls no seam)\n");
        return;
    }
    tp_bytes_t f = tp_bytes_formula(m, rows);
    double T = p->tp, X = (double)rows * m->cfg.dim * dtype_size(m->dtype);
    say("tp bytes: each rank's sends on the tensor-parallel communicator in step %d, per unit pass and "
        "micro-batch, in kB (X = %zu rows x %d x %zu bytes = %.3f kB, f = (T-1)/T = %.4g)\n",
        tr->o.steps, rows, m->cfg.dim, dtype_size(m->dtype), X / 1e3, (T - 1) / T);
    say("  %-10s %-9s %13s %13s   %s\n", "unit", "pass", "measured", "formula", "collectives");
    static const char *place[TP_PLACES] = {"embedding", "layer", "head"};
    static const char *pass[2] = {"forward", "backward"};
    /* [sp][place][pass] */
    static const char *what[2][TP_PLACES][2] = {
        {{"all-reduce 2f X", "-"}, {"2 all-reduces 4f X", "2 all-reduces 4f X"},
         {"all-gather lse + all-reduce picked (fp32 per token)", "all-reduce 2f X"}},
        {{"reduce-scatter f X", "all-gather f X"},
         {"2 all-gathers + 2 reduce-scatters 4f X", "4 all-gathers + 2 reduce-scatters 6f X"},
         {"all-gather f X + lse + picked", "all-gather + reduce-scatter 2f X"}}};
    double total = 0, ftotal = 0;
    for (int pl = 0; pl < TP_PLACES; pl++)
        for (int ps = 0; ps < 2; ps++) {
            long n = s->passes[pl][ps];
            total += s->bytes[pl][ps];
            ftotal += f.b[pl][ps] * n;
            say("  %-10s %-9s %13.3f %13.3f   %s\n", place[pl], pass[ps], n ? s->bytes[pl][ps] / n / 1e3 : 0,
                f.b[pl][ps] / 1e3, T > 1 ? what[p->sp][pl][ps] : "-");
        }
    double fg = tp_grad_bytes_formula(m);
    say("  %-10s %-9s %13.3f %13.3f   %s\n", "gradients", "per step", s->grad_bytes / 1e3, fg / 1e3,
        "all-reduces of norm gains (sp) and shared kv heads");
    say("  %-10s %-9s %13.3f %13.3f   %d layers x %d micro-batch%s\n", "step", "total",
        (total + s->grad_bytes) / 1e3, (ftotal + fg) / 1e3, m->n_layers, p->run.s->M,
        p->run.s->M == 1 ? "" : "es");
}

static void report_acts(const train_t *tr, const tpp_t *p) {
    const model_t *m = &tr->model;
    tp_acts_t f = tp_acts_formula(m, tr->mb);
    say("acts:    one micro-batch's activations per rank %.6f MB (formula %.6f MB = outside the tp regions "
        "%.6f + inside %.6f + tokens %.6f)\n", tr->acts.bytes / 1e6, f.total / 1e6, f.outside / 1e6,
        f.inside / 1e6, f.other / 1e6);
    /* the same shard with sequence parallelism toggled, from the formula alone */
    model_t other = *m;
    other.shard.sp = !m->shard.sp;
    if (p->tp > 1 && ((size_t)tr->mb * m->T) % (size_t)p->tp == 0) {
        tp_acts_t g = tp_acts_formula(&other, tr->mb);
        say("acts:    %s %.6f MB (outside %.6f)\n",
            m->shard.sp ? "without --sp the formula gives" : "with --sp the formula gives", g.total / 1e6,
            g.outside / 1e6);
    }
    say("acts:    high-water of all activation buffers (with backward scratch) %.2f MB per rank\n",
        dev_mem()->peak[MEM_ACTS] / 1e6);
}

void tpp_report(train_t *tr, void *ctx) {
    tpp_t *p = ctx;
    report_bytes(tr, p);
    report_acts(tr, p);
    if (p->timed) say("tp time: %.2f ms per step in the seams (blocking: all of it exposed)\n", 1e3 * p->sum_tp_s / p->timed);
    if (p->bench_csv && tr->timed > 0) {
        double tp_ms = p->timed ? 1e3 * p->sum_tp_s / p->timed : 0;
        dist_allreduce(&tp_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the benchmark row");
        double sent = 0;
        for (int pl = 0; pl < TP_PLACES; pl++)
            for (int ps = 0; ps < 3; ps++) sent += p->last.bytes[pl][ps];
        sent += p->last.grad_bytes;
        double ms = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
        csv_append_row(p->bench_csv, BENCH_HEADER, "%d,%d,%d,%d,%.6g,%.6g,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f", p->tp,
                       p->sp, tr->dp, tr->o.node_size, tr->o.node_size ? tr->o.inter_gbps : 0,
                       tr->o.node_size ? tr->o.inter_us : 0, ms, ms - ex, ex, tp_ms, sent / 1e6, tr->acts.bytes / 1e6);
    }
    runner_free(&p->run);
    grad_sync_free(&p->gs);
    tp_free(&p->t);
}
