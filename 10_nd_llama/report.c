/* report.c: 10_nd_llama/train's end of run: the bytes each axis sent
 * (pipeline: against its formula), the time by cause, the --bench-csv row,
 * and under ZeRO every rank's bytes and state memory against 04_fsdp's
 * formulas; then what compose built is freed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "nd.h"
#include "perf.h"

/* The pipeline formula counts units (micro-batches x token slices) of one
 * message each: s.M, the schedule's. */
static void summary(train_t *tr, nd_t *p) {
    double last[NX];
    nd_axis_bytes(tr, last);
    for (int a = 0; a < NX; a++) last[a] -= p->sent_prev[a];   /* the last step, its update included */
    dist_allreduce(last, NX, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "the bytes sent");
    int W = tr->dist.world;
    say("sent:    step %d, mean per rank: tp %.6f + cp %.6f + pp %.6f + dp %.6f = %.6f MB\n", tr->o.steps,
        last[NX_TP] / W / 1e6, last[NX_CP] / W / 1e6, last[NX_PP] / W / 1e6, last[NX_DP] / W / 1e6,
        (last[NX_TP] + last[NX_CP] + last[NX_PP] + last[NX_DP]) / W / 1e6);
    if (p->pp > 1)
        say("sent:    pp formula 2 M (P V - 1) x %zu bytes per message / P ranks = %.6f MB per rank\n",
            p->run.msg_bytes, 2.0 * p->s.M * (p->pp * p->s.V - 1) * (double)p->run.msg_bytes / p->pp / 1e6);
    if (p->timed == 0 || tr->timed == 0) return;
    double ms = tr->sum_ms / tr->timed, f = tr->sum_fwd / tr->timed, b = tr->sum_bwd / tr->timed;
    double op = tr->sum_opt / tr->timed, ax[NX];
    for (int a = 0; a < NX; a++) ax[a] = 1e3 * p->sum_ax[a] / p->timed;
    double other = ms - f - b - ax[NX_TP] - ax[NX_CP] - ax[NX_DP] - ax[NX_PP] - op;
    say("cause:   compute %.2f (forward %.2f + backward %.2f) + tp %.2f + cp %.2f + dp %.2f + bubble %.2f + "
        "optimizer %.2f + other %.2f = %.2f ms per step (means of steps %ld-%d over ranks)\n", f + b, f, b,
        ax[NX_TP], ax[NX_CP], ax[NX_DP], ax[NX_PP], op, other, ms, tr->start + 2, tr->o.steps);
    say("cause:   shares compute %.1f%% | tp %.1f%% | cp %.1f%% | dp %.1f%% | bubble %.1f%% | optimizer %.1f%% | "
        "other %.1f%%\n", 100 * (f + b) / ms, 100 * ax[NX_TP] / ms, 100 * ax[NX_CP] / ms, 100 * ax[NX_DP] / ms,
        100 * ax[NX_PP] / ms, 100 * op / ms, 100 * other / ms);
    if (p->bench_csv) {
        double fl = tr->flops_token * tr->global_tokens / (ms / 1e3) / W;
        double hf = fl + tr->sum_recompute / tr->timed / (ms / 1e3) / W;
        char cfg[96];
        int n = snprintf(cfg, sizeof cfg, "tp%d cp%d pp%d dp%d", p->tp, p->cp, p->pp, tr->dp);
        if (p->fo.zero) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " zero%d", p->fo.zero);
        if (p->sp) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " sp");
        if (p->cp > 1 && p->algo == CP_ULYSSES) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " ulysses");
        if (p->pp > 1 && strcmp(p->schedule, "1f1b")) n += snprintf(cfg + n, sizeof cfg - (size_t)n, " %s", p->schedule);
        if (strcmp(p->policy.name, "none")) snprintf(cfg + n, sizeof cfg - (size_t)n, " rc %s", p->policy.name);
        csv_append_row(p->bench_csv, BENCH_HEADER,
                       "%s,%d,%d,%d,%d,%d,%d,%s,%s,%d,%d,%s,%s,%.3f,%.6g,%.6g,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f",
                       cfg, p->tp, p->cp, p->pp, tr->dp, p->fo.zero, p->sp, p->cp_algo,
                       p->schedule, p->s.M / p->K, p->s.V, p->policy.name,
                       dtype_name(tr->dtype), ms, tr->peak > 0 ? 100 * fl / tr->peak : NAN,
                       tr->peak > 0 ? 100 * hf / tr->peak : NAN, ax[NX_PP] / ms, ax[NX_TP], ax[NX_CP], ax[NX_PP],
                       ax[NX_DP], f + b, op, tr->global_tokens / (ms / 1e3));
    }
}

/* ZeRO on this mesh: every rank's bytes on the context x data group in the
 * last step (its update's gathers included) and its state's memory, each
 * against 04_fsdp's formulas for the rank's own units (the stages hold
 * different ones). Rank 0's figures, and the largest difference over ranks. */
static void zero_report(train_t *tr, nd_t *p) {
    const fsdp_t *f = &p->f;
    fsdp_bytes_t b;
    fsdp_mem_t pred;
    fsdp_bytes_predict(f, &b);
    fsdp_mem_predict(f, &pred);
    static const int kinds[3] = {MEM_PARAMS, MEM_GRADS, MEM_OPTIM};
    double x[8] = {0}, diff[2] = {0, 0};   /* sent, its formula, then (measured, formula) per kind */
    for (int k = 0; k < COLL_KINDS; k++) {
        x[0] += f->shard->sent[k] - f->sent0[0][k];
        x[1] += b.shard[k];
    }
    for (int i = 0; i < 3; i++) {
        x[2 + 2 * i] = (double)dev_mem()->peak[kinds[i]];
        x[3 + 2 * i] = pred.kind[kinds[i]];
        diff[1] = fmax(diff[1], fabs(x[2 + 2 * i] - x[3 + 2 * i]));
    }
    diff[0] = fabs(x[0] - x[1]);
    dist_allreduce(diff, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "the ZeRO report");
    say("zero:    %s, sent on the context x data group in step %d: %.6f MB per rank (rank 0; formula %.6f); "
        "largest difference over the ranks %.0f bytes\n", fsdp_stage_name(f->o.zero), tr->o.steps, x[0] / 1e6,
        x[1] / 1e6, diff[0]);
    say("zero:    state high-water (rank 0, MB): weights %.6f (formula %.6f), gradients %.6f (%.6f), optimizer "
        "%.6f (%.6f); largest difference over the ranks and kinds %.0f bytes\n", x[2] / 1e6, x[3] / 1e6,
        x[4] / 1e6, x[5] / 1e6, x[6] / 1e6, x[7] / 1e6, diff[1]);
}

/* The summaries, then everything compose made. */
void nd_report(train_t *tr, void *ctx) {
    nd_t *p = ctx;
    summary(tr, p);
    if (p->fo.zero) zero_report(tr, p);
    runner_free(&p->run);
    if (p->fo.zero) fsdp_free(&p->f);
    else if (tr->grad.size > 1) grad_sync_free(&p->gs);
    if (p->cp > 1) cp_free(&p->c);
    if (p->tp > 1) tp_free(&p->t);
    pipe_schedule_free(&p->s);
}
