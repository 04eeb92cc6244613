/* report.c: 06_checkpointing/ckpt's end of run: the activation memory, the
 * recomputed work and its time, each beside recompute.h's model, and the
 * --bench-csv row (trainer.h). */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "perf.h"
#include "trainer.h"

void ckpt_report_recompute(train_t *tr, ckpt_prog_t *p) {
    model_t *m = &tr->model;
    const recompute_meter_t *mt = &p->meter;
    recompute_cost_t c;
    recompute_cost(m, tr->mb, &p->policy, &c);
    double peak = (double)dev_mem()->peak[MEM_ACTS], bytes = (double)tr->acts.bytes;
    dist_allreduce(&peak, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "memory totals");
    int L = m->shard.per_chunk;
    say("recompute: %s | activations of a micro-batch %.4f MB (model %.4f MB = %.0f layer inputs x %.1f kB "
        "+ %.0f layer%s x %.1f kB + %.1f kB tokens and head) | high-water with backward scratch %.4f MB "
        "(model %.4f MB)\n", p->policy.name, bytes / 1e6, c.bytes / 1e6, c.inputs, c.input / 1e3,
        c.kept_layers, c.kept_layers == 1 ? "" : "s", (c.layer - c.input) / 1e3, c.head / 1e3, peak / 1e6,
        (c.bytes + c.scratch) / 1e6);
    long runs = (long)tr->nrun * p->run.s->M;   /* backward passes this run */
    if (runs == 0) return;
    double rec_l = (double)mt->rec_layers / runs, rec_a = (double)mt->attn_rec / runs;
    double model_flops = tr->flops_token * tr->global_tokens;
    double extra = recompute_meter_flops(m, &(recompute_meter_t){0}, mt, (double)tr->acts.rows_full) /
                   tr->nrun * tr->dist.world;
    say("recompute: per micro-batch %.0f layer forward%s (model %d) and %.0f attention core%s (model %d) "
        "recomputed = %.4g GFLOP per step, +%.1f%% of the model's %.4g GFLOP\n", rec_l, rec_l == 1 ? "" : "s",
        c.layers_recomputed, rec_a, rec_a == 1 ? "" : "s", c.attn_recomputed, extra / 1e9,
        100 * extra / model_flops, model_flops / 1e9);
    double per_layer = mt->fwd_layers ? mt->fwd_s / mt->fwd_layers : 0;
    double per_attn = mt->attn_fwd ? mt->attn_fwd_s / mt->attn_fwd : 0;
    double steps = tr->nrun;
    say("recompute: time per step %.2f ms recomputing (model %.2f ms = the forward's %.3f ms per layer and "
        "%.3f ms per attention core, times the counts) of %.2f ms in the forward pass's %d layers\n",
        (mt->rec_s + mt->attn_rec_s) / steps * 1e3,
        (mt->rec_layers * per_layer + mt->attn_rec * per_attn) / steps * 1e3, per_layer * 1e3,
        per_attn * 1e3, mt->fwd_s / steps * 1e3, L);

    if (p->bench_csv && tr->timed > 0) {
        double ms = tr->sum_ms / tr->timed, world = tr->dist.world;
        double mfu = tr->peak > 0 ? model_flops / (ms / 1e3) / (world * tr->peak) : NAN;
        double hfu = tr->peak > 0 ? (model_flops + tr->sum_recompute / tr->timed) / (ms / 1e3) / (world * tr->peak) : NAN;
        csv_append_row(p->bench_csv, BENCH_HEADER, "%s,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.0f,"
                       "%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.6g,%.6g", p->recompute, p->policy.keep.every, p->policy.keep.block,
                       p->policy.keep.selective, L, tr->dist.world, bytes / 1e6, c.bytes / 1e6, peak / 1e6,
                       (c.bytes + c.scratch) / 1e6, c.input / 1e6, c.layer / 1e6, c.head / 1e6, c.scratch / 1e6, rec_l,
                       rec_a, 100 * extra / model_flops, ms, tr->sum_fwd / tr->timed, tr->sum_bwd / tr->timed,
                       (mt->rec_s + mt->attn_rec_s) / steps * 1e3,
                       (mt->rec_layers * per_layer + mt->attn_rec * per_attn) / steps * 1e3, 100 * mfu, 100 * hfu);
    }
}
