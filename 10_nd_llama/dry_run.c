/* dry_run.c: 10_nd_llama/train --dry-run: the mesh and the shards built,
 * every rank's memory (weights, gradients, optimizer state by ZeRO stage;
 * activations by the schedule's promise) and FLOPs printed, no model
 * allocated. */
#include <stdlib.h>

#include "check.h"
#include "cost.h"
#include "nd.h"
#include "perf.h"

/* This rank's state and one step's FLOPs, from the shard's shapes alone. */
void nd_dry_run(train_t *tr, nd_t *p) {
    const model_config_t *c = &tr->cfg;
    const model_shard_t *s = &tr->shard;
    int P = p->pp, V = s->chunks, U = p->s.M, M = U / p->K, stage = tr->mesh.coord[AXIS_PP];
    int N = tr->grad.size, z = p->fo.zero, es = (int)dtype_size(tr->dtype);
    double n = (double)model_shard_size(c, s);
    double w = z == 3 ? es * n / N : es * n;
    double g = z >= 2 ? 4 * n / N : 4 * n;
    double opt = z >= 1 ? 12 * n / N : 12 * n;   /* fp32 master + Adam m, v */
    par_t par = {.tp = p->tp, .cp = p->cp, .pp = P, .dp = tr->dp, .vpp = V, .sp = p->sp, .zero = z,
                 .mbs = tr->mb, .dtype_bytes = es,
                 .recompute = p->policy.keep.selective ? RECOMPUTE_SELECTIVE : p->policy.keep.every ? RECOMPUTE_FULL : RECOMPUTE_NONE};
    double tokens = (double)tr->mb * c->seq / p->cp / p->K;   /* of one unit: a micro-batch, or a slice of one */
    /* units in flight at the peak: the schedule's promise (07_pipeline) */
    int held = pipe_inflight_bound(p->kind, P, U, V, stage);
    double layer_acts = cost_acts_per_layer(c, &par, tokens);
    int kept = p->policy.keep.every ? (s->per_chunk + p->policy.keep.every - 1) / p->policy.keep.every : s->per_chunk;
    double acts = p->policy.keep.every ? held * (kept * tokens * c->dim * es / (p->sp ? p->tp : 1) + layer_acts * p->policy.keep.every)
                                  : held * V * s->per_chunk * layer_acts;
    double flops = tr->flops_token * (double)tr->global_tokens / tr->dist.world;
    double mine[7] = {n, w, g, opt, acts, w + g + opt + acts, flops};
    double *all = tr->dist.rank == 0 ? xmalloc(sizeof mine * (size_t)tr->dist.world) : NULL;
    dist_watch("the gather of every rank's memory", MPI_COMM_WORLD);
    MPI_CHECK(MPI_Gather(mine, 7, MPI_DOUBLE, all, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    watch_end();
    say("dry run: %s, zero %d, %d micro-batch%s of %d sequence%s per step and replica; per rank "
        "(no model allocated):\n", p->schedule, z, M, M == 1 ? "" : "es", tr->mb, tr->mb == 1 ? "" : "s");
    say("  %5s %3s %3s %3s %3s %14s %10s %10s %10s %10s %10s %10s\n", "rank", "tp", "cp", "pp", "dp", "params",
        "weights_GB", "grads_GB", "optim_GB", "acts_GB", "total_GB", "TFLOP");
    for (int r = 0; r < tr->dist.world && all; r++) {
        const double *a = all + 7 * r;
        int tpi = r % p->tp, cpi = r / p->tp % p->cp, ppi = r / (p->tp * p->cp) % P, dpi = r / (p->tp * p->cp * P);
        say("  %5d %3d %3d %3d %3d %14.0f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", r, tpi, cpi, ppi, dpi,
            a[0], a[1] / 1e9, a[2] / 1e9, a[3] / 1e9, a[4] / 1e9, a[5] / 1e9, a[6] / 1e12);
    }
    say("dry run: weights %d bytes, gradients 4, optimizer 12 per parameter (ZeRO-%d over the %d rank%s of "
        "the context x data group); activations: cost.h's bytes per layer x the stage's layers x the "
        "micro-batches its schedule holds at the peak (1F1B: min(M, P - stage)); TFLOP: the model FLOPs of "
        "one step / %d ranks\n", es, z, N, N == 1 ? "" : "s", tr->dist.world);
    free(all);
}
