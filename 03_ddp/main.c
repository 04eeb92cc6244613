/* main.c: 03_ddp/ddp, the data-parallel trainer: the shared training loop
 * (common/train.h) with gradient synchronisation by bucketed all-reduce
 * (common/grad_sync.h).
 *
 *   mpirun -np 2 ./03_ddp/ddp [--steps 200 --batch 16 ...]
 *
 * One step, on every rank (ddp_step below):
 *   for each of the --micro micro-batches of this rank's share of the batch:
 *       forward (loss summed over its tokens)
 *       backward, with dlogits scaled by 1 / global tokens; on the LAST
 *       micro-batch every finished layer's gradients join a bucket whose
 *       all-reduce starts at once, earlier ones only accumulate (no_sync)
 *   wait for the buckets still in flight (the exposed communication)
 * and then the loop clips by the global gradient norm and applies AdamW to
 * the fp32 master weights, identically on every rank. The weights start on
 * rank 0 and are broadcast; every rank checks their checksum before step 1
 * and again at the end. */
#include <stdio.h>

#include "check.h"
#include "grad_sync.h"
#include "perf.h"
#include "train.h"

/* One row per run (sweep_buckets.sh, sweep_scaling.sh): step_ms is the mean
 * of the timed steps, = compute_ms + exposed_comm_ms; tok_s = tokens /
 * step_ms; threads per rank. */
#define BENCH_HEADER "bucket_mb,overlap,ranks,buckets,grad_mb,step_ms,compute_ms,exposed_comm_ms,tokens,tok_s,threads"

typedef struct {
    double bucket_mb;
    int no_overlap;
    const char *bench_csv;
    grad_sync_t gs;
} ddp_t;

static void ddp_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    ddp_t *ddp = ctx;
    model_t *m = &tr->model;
    model_zero_grads(m);
    for (int i = 0; i < tr->o.micro; i++) {
        train_batch(tr, step, i, &tr->acts);
        double t0 = now_s();
        st->loss += model_forward(m, &tr->acts);
        double t1 = now_s();
        grad_sync_begin(&ddp->gs, i == tr->o.micro - 1);   /* no_sync until the last */
        model_backward(m, &tr->acts, tr->loss_scale, NULL);
        st->fwd_s += t1 - t0;
        st->bwd_s += now_s() - t1;
    }
    st->bwd_s -= ddp->gs.exposed_s;   /* so far: the communication work inside backward */
    grad_sync_finish(&ddp->gs);
    st->exposed_s = ddp->gs.exposed_s;
}

int main(int argc, char **argv) {
    /* 1 MiB: the default model's 6.7 MB of fp32 gradients in 5 buckets, one
     * per layer (1.57 MB each; the head rides with the last layer, the
     * embedding comes alone), so the first all-reduce starts after one
     * layer's backward. PyTorch's 25 MB is sized for models with hundreds of
     * MB of gradients; here it would make one bucket, sent after backward. */
    ddp_t ddp = {.bucket_mb = 1};
    arg_t flags[] = {
        {"bucket-mb", ARG_DOUBLE, &ddp.bucket_mb, "gradient bucket size in MiB, as PyTorch's bucket_cap_mb", NULL, 1e-6, 1e6},
        {"no-overlap", ARG_FLAG, &ddp.no_overlap, "all-reduce the buckets after backward instead of during it", NULL, 0, 0},
        {"bench-csv", ARG_STRING, &ddp.bench_csv, "append one summary row (bucket size, overlap, mean times, tokens/s) to this CSV", NULL, 0, 0},
    };
    train_program_t prog = {
        "03_ddp", "03_ddp/ddp", "distributed data parallel",
        "Distributed data parallel training of the Llama-style model: bucketed\n"
        "gradient all-reduce overlapping the backward pass, gradient accumulation,\n"
        "checkpoints and resume.", flags, ARRAY_LEN(flags)};
    train_t tr;
    train_defaults(&tr);
    train_init(&tr, &argc, &argv, &prog);
    args_check_output(MPI_COMM_WORLD, "bench-csv", ddp.bench_csv, BENCH_HEADER);
    train_setup(&tr, 1, 1, 1);
    train_model(&tr, 1);
    grad_sync_init_allreduce(&ddp.gs, &tr.grad, &tr.model, tr.dtype,
                             (size_t)(ddp.bucket_mb * 1048576.0), !ddp.no_overlap);
    say("ddp:     %s gradients in buckets of %.4g MiB, %s; %.2f MB of gradients per step\n",
        dtype_name(tr.dtype), ddp.bucket_mb,
        ddp.no_overlap ? "all-reduced after backward (--no-overlap)" : "all-reduced during backward",
        tr.model.size * dtype_size(tr.dtype) / 1e6);
    train_optimizer(&tr, NULL, 0, 0);
    train_run(&tr, ddp_step, &ddp);

    if (ddp.bench_csv && tr.timed > 0) {
        double ms = tr.sum_ms / tr.timed, ex = tr.sum_exposed / tr.timed;
        csv_append_row(ddp.bench_csv, BENCH_HEADER, "%.6g,%s,%d,%d,%.4f,%.3f,%.3f,%.3f,%ld,%.1f,%d", ddp.bucket_mb,
                       ddp.no_overlap ? "off" : "on", tr.dp, ddp.gs.nbuckets,
                       tr.model.size * dtype_size(tr.dtype) / 1e6, ms, ms - ex, ex, tr.global_tokens,
                       tr.global_tokens / (ms / 1e3), tr.dev.threads);
    }
    say("ddp:     %d bucket%s per step%s\n", ddp.gs.nbuckets, ddp.gs.nbuckets == 1 ? "" : "s",
        tr.grad.size == 1 ? " (one rank: nothing to all-reduce)" : "");
    grad_sync_free(&ddp.gs);
    train_finish(&tr);
    return 0;
}
