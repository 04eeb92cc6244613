/* dataparallel.c: 03_ddp/dataparallel, data parallelism the way PyTorch's
 * nn.DataParallel does it: ONE process drives --replicas N devices, one
 * thread per replica, and device 0 does the bookkeeping. Beside 03_ddp/ddp
 * (N processes, each its own optimizer, gradients all-reduced) it shows what
 * the single process costs.
 *
 *   ./03_ddp/dataparallel --replicas 4 [--steps 200 --batch 16 ...]
 *
 * One step (the phases it times), as DataParallel's forward (replicate,
 * scatter, parallel_apply, gather) and the autograd of its gather and
 * replicate in backward:
 *   replicate  device 0's weights copied to every other replica,
 *              and the global batch scattered, b = batch / N
 *              sequences to each                                   serial
 *   forward    every replica its piece, in parallel                parallel
 *   gather     every replica's logits copied to device 0, the loss
 *              of the whole batch there, and its gradient dlogits
 *              = (softmax - onehot) / global tokens                serial
 *   scatter    dlogits cut into the replicas' pieces, each copied
 *              to its replica (gather's backward)                  serial
 *   backward   every replica, in parallel, from the dlogits it
 *              received                                            parallel
 *   reduce     every replica's gradients copied to device 0 and
 *              summed there, one after the other (replicate's
 *              backward)                                           serial
 * then the training loop clips and steps AdamW on device 0 only (DDP steps
 * it on every rank at once: the same time). The serial phases are device
 * 0's extra work; with N replicas the parallel phases shrink as 1/N and the
 * serial ones grow as N - 1 (Amdahl).
 *
 * Threads: replica 0 is the main thread on tr.model; the others each have
 * a thread, a device_t (on the CPU --threads OpenBLAS threads each, on GPUs
 * GPU r % gpus, its own streams) and a model of their own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "ops.h"
#include "perf.h"
#include "train.h"

/* One row per run (sweep_dataparallel.sh): means over the timed steps (the
 * trainer's: every step but the first), in ms; serial_ms = replicate +
 * gather + scatter + reduce; device0_mb: what device 0 sends and receives
 * per step. */
#define BENCH_HEADER "replicas,step_ms,forward_ms,backward_ms,replicate_ms,gather_ms,scatter_ms,reduce_ms,serial_ms," \
                     "optimizer_ms,tokens,tok_s,threads,device0_mb"

enum { REPLICATE, FORWARD, GATHER, SCATTER, BACKWARD, REDUCE, PHASES };
static const char *const phase_name[PHASES] = {"replicate", "forward", "gather", "scatter", "backward", "reduce"};

typedef enum { RUN_FORWARD, RUN_BACKWARD, RUN_QUIT } job_t;

typedef struct dp dp_t;
typedef struct {
    dp_t *dp;
    device_t dev;        /* replica 0: tr.dev */
    model_t own;         /* replicas 1..N-1 */
    model_t *m;          /* replica 0: tr.model */
    model_acts_t own_acts, *acts;   /* (b, seq); replica 0: tr.acts */
    void *dlogits;       /* (b seq, V) the loss gradient device 0 scattered here;
                            replica 0: its rows of dp->logits, computed in place */
    pthread_t thread;
} replica_t;

struct dp {
    train_t *tr;
    int n, b;                    /* replicas, sequences per replica */
    replica_t *rep;
    job_t job;
    pthread_barrier_t go, done;
    void *logits;                /* (n b seq, V) device 0: the gathered logits, then dlogits */
    int *targets;                /* (n b seq) device 0 */
    float *lse, *picked;         /* (n b seq) device 0, and their host copies */
    float *lse_host, *picked_host;
    float *stage;                /* (size) fp32 device 0: one replica's gradients */
    double t[PHASES], sum[PHASES];   /* this step's ms, and the sums over timed steps */
    const char *bench_csv;
};

static void run_job(replica_t *r, job_t job) {
    train_t *tr = r->dp->tr;
    if (job == RUN_FORWARD) {
        model_forward(r->m, r->acts);   /* the loss is device 0's, from the logits */
    } else {
        model_zero_grads(r->m);
        model_backward(r->m, r->acts, tr->loss_scale, r->dlogits);
    }
    dev_sync(&r->dev);
}

static void *replica_thread(void *arg) {
    replica_t *r = arg;
    dp_t *dp = r->dp;
    dev_bind(&r->dev);
    for (;;) {
        pthread_barrier_wait(&dp->go);
        if (dp->job == RUN_QUIT) break;
        run_job(r, dp->job);
        pthread_barrier_wait(&dp->done);
    }
    ops_cpu_thread_end();
    return NULL;
}

/* Every replica runs job at once; returns when the slowest is done. */
static double parallel(dp_t *dp, job_t job) {
    double t0 = now_s();
    dp->job = job;
    pthread_barrier_wait(&dp->go);
    run_job(&dp->rep[0], job);
    pthread_barrier_wait(&dp->done);
    return (now_s() - t0) * 1e3;
}

static void dp_init(dp_t *dp, train_t *tr, int n) {
    dp->tr = tr;
    dp->n = n;
    dp->b = tr->o.batch / n;
    dp->rep = xcalloc((size_t)n, sizeof(replica_t));
    const device_t *d0 = &tr->dev;
    for (int i = 0; i < n; i++) {
        replica_t *r = &dp->rep[i];
        r->dp = dp;
        if (i == 0) {
            r->dev = tr->dev;
            r->m = &tr->model;
            r->acts = &tr->acts;
        } else {
            device_init(&r->dev, d0->kind == DEV_CUDA ? "cuda" : "cpu", i, n, d0->threads);
            dev_bind(&r->dev);
            model_init(&r->own, &tr->cfg, &tr->shard, dp->b, tr->dtype, &r->dev, MODEL_PARAMS_AND_GRADS);
            r->m = &r->own;
            r->acts = &r->own_acts;
            model_acts_init(r->m, r->acts, 0, dp->b, tr->recompute);
            r->dlogits = dev_alloc_as(&r->dev, (size_t)dp->b * tr->o.seq * tr->cfg.vocab * dtype_size(tr->dtype),
                                      MEM_ACTS);
        }
    }
    dev_bind(d0);
    size_t rows = (size_t)tr->o.batch * tr->o.seq, V = (size_t)tr->cfg.vocab;
    dp->logits = dev_alloc_as(d0, rows * V * dtype_size(tr->dtype), MEM_ACTS);
    dp->rep[0].dlogits = dp->logits;
    dp->targets = dev_alloc_as(d0, rows * sizeof(int), MEM_ACTS);
    dp->lse = dev_alloc_as(d0, rows * sizeof(float), MEM_ACTS);
    dp->picked = dev_alloc_as(d0, rows * sizeof(float), MEM_ACTS);
    dp->lse_host = xmalloc(rows * sizeof(float));
    dp->picked_host = xmalloc(rows * sizeof(float));
    dp->stage = n > 1 ? dev_alloc_as(d0, tr->model.size * sizeof(float), MEM_COMM) : NULL;
    pthread_barrier_init(&dp->go, NULL, (unsigned)n);
    pthread_barrier_init(&dp->done, NULL, (unsigned)n);
    for (int i = 1; i < n; i++)
        if (pthread_create(&dp->rep[i].thread, NULL, replica_thread, &dp->rep[i]))
            die("dataparallel: cannot start the thread of replica %d", i);
}

static void dp_free(dp_t *dp) {
    dp->job = RUN_QUIT;
    pthread_barrier_wait(&dp->go);
    for (int i = 1; i < dp->n; i++) pthread_join(dp->rep[i].thread, NULL);
    pthread_barrier_destroy(&dp->go);
    pthread_barrier_destroy(&dp->done);
    const device_t *d0 = &dp->tr->dev;
    for (int i = 1; i < dp->n; i++) {
        replica_t *r = &dp->rep[i];
        dev_bind(&r->dev);
        dev_free(&r->dev, r->dlogits);
        model_acts_free(r->m, r->acts);
        model_free(&r->own);
        device_finalize(&r->dev);
    }
    dev_bind(d0);
    dev_free(d0, dp->logits);
    dev_free(d0, dp->targets);
    dev_free(d0, dp->lse);
    dev_free(d0, dp->picked);
    dev_free(d0, dp->stage);
    free(dp->lse_host);
    free(dp->picked_host);
    free(dp->rep);
}

/* Device 0's serial work: every phase but forward and backward. */
static double serial_ms(const double *t) { return t[REPLICATE] + t[GATHER] + t[SCATTER] + t[REDUCE]; }

/* Device 0's serial phases, timed by the host clock after a sync. */
static double since(const device_t *d, double t0) {
    dev_sync(d);
    return (now_s() - t0) * 1e3;
}

static void dp_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    dp_t *dp = ctx;
    const device_t *d0 = &tr->dev;
    int seq = tr->o.seq, V = tr->cfg.vocab;
    size_t rows = (size_t)dp->b * seq, bytes = tr->model.size * dtype_size(tr->dtype);

    /* replicate the weights from device 0, scatter the batch */
    double t0 = now_s();
    for (int i = 1; i < dp->n; i++) dev_copy(d0, dp->rep[i].m->params, tr->model.params, bytes);
    dev_sync(d0);
    data_batch(&tr->data, step - 1, tr->o.batch, 0, tr->o.batch, tr->tokens, tr->targets);
    for (int i = 0; i < dp->n; i++) {
        dev_bind(&dp->rep[i].dev);
        model_set_batch(dp->rep[i].m, dp->rep[i].acts, tr->tokens + i * rows, tr->targets + i * rows);
    }
    dev_bind(d0);
    dp->t[REPLICATE] = since(d0, t0);

    dp->t[FORWARD] = parallel(dp, RUN_FORWARD);

    /* gather the logits on device 0; the loss of the whole batch there, and
     * its gradient, in place of the logits */
    t0 = now_s();
    size_t lbytes = rows * (size_t)V * dtype_size(tr->dtype), all = rows * (size_t)dp->n;
    for (int i = 0; i < dp->n; i++)
        dev_copy(d0, (char *)dp->logits + i * lbytes, dp->rep[i].acts->logits, lbytes);
    dev_from_host(d0, dp->targets, tr->targets, all * sizeof(int));
    op_xent_forward(d0, tr->dtype, dp->logits, dp->targets, dp->picked, dp->lse, (int)all, V, 0);
    dev_to_host(d0, dp->lse_host, dp->lse, all * sizeof(float));
    dev_to_host(d0, dp->picked_host, dp->picked, all * sizeof(float));
    double loss = 0;
    for (size_t k = 0; k < all; k++)
        if (tr->targets[k] >= 0) loss += (double)dp->lse_host[k] - dp->picked_host[k];
    st->loss = loss;
    op_xent_backward(d0, tr->dtype, dp->logits, dp->targets, dp->lse, dp->logits, tr->loss_scale, (int)all, V, 0);
    dp->t[GATHER] = since(d0, t0);

    /* scatter dlogits: replica i's rows to replica i (replica 0's stay) */
    t0 = now_s();
    for (int i = 1; i < dp->n; i++) dev_copy(d0, dp->rep[i].dlogits, (char *)dp->logits + i * lbytes, lbytes);
    dp->t[SCATTER] = since(d0, t0);

    dp->t[BACKWARD] = parallel(dp, RUN_BACKWARD);

    /* reduce: device 0 adds every other replica's gradients to its own */
    t0 = now_s();
    size_t gbytes = tr->model.size * sizeof(float);
    for (int i = 1; i < dp->n; i++) {
        dev_copy(d0, dp->stage, dp->rep[i].m->grads, gbytes);
        op_add(d0, DT_F32, tr->model.grads, dp->stage, tr->model.grads, tr->model.size);
    }
    dp->t[REDUCE] = since(d0, t0);

    st->fwd_s = dp->t[FORWARD] / 1e3;
    st->bwd_s = dp->t[BACKWARD] / 1e3;
    st->exposed_s = serial_ms(dp->t) / 1e3;
    if (step > tr->start + 1)
        for (int p = 0; p < PHASES; p++) dp->sum[p] += dp->t[p];
}

/* After the step's log line: device 0's serial work this step. */
static void dp_note(train_t *tr, void *ctx) {
    (void)tr;
    dp_t *dp = ctx;
    say(" | device 0 serial %.1f ms", serial_ms(dp->t));
}

typedef struct {
    dp_t dp;
    int replicas;
    double device0_mb;        /* device 0's bytes per step */
} dp_prog_t;

static dp_prog_t prog = {.replicas = 2};

static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    dp_prog_t *p = ctx;
    (void)tp, (void)cp, (void)pp;
    if (tr->dist.world > 1) usage_error("dataparallel is one process driving --replicas devices: run it without mpirun -np %d", tr->dist.world);
    if (tr->o.record)
        usage_error("--record replays ranks, one process each: dataparallel's replicas are threads of one process");
    if (tr->o.micro != 1) usage_error("dataparallel takes --micro 1 (it has no gradient accumulation), not %d", tr->o.micro);
    if (tr->o.batch % p->replicas)
        usage_error("--batch %d does not split into %d replicas", tr->o.batch, p->replicas);
    if (tr->o.c.threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        tr->o.c.threads = cores / p->replicas > 1 ? (int)(cores / p->replicas) : 1;
    }
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->dp.bench_csv, BENCH_HEADER);
}

/* One model per replica, driven by this process's threads. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    dp_prog_t *p = ctx;
    dp_t *dp = &p->dp;
    int replicas = p->replicas;
    tr->mb = tr->o.batch / replicas;   /* replica 0's share: tr->model holds one replica */
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    dp_init(dp, tr, replicas);
    tr->peak *= replicas;   /* MFU against every replica's threads, as DDP's N ranks */
    csv_set_threads(replicas * tr->dev.threads);   /* one rank: every replica's threads */
    /* device 0's bytes per step: weights out, logits in, dlogits out, gradients in */
    double w_mb = (replicas - 1) * tr->model.size * dtype_size(tr->dtype) / 1e6;
    double l_mb = (replicas - 1) * (double)dp->b * tr->o.seq * tr->cfg.vocab * dtype_size(tr->dtype) / 1e6;
    double g_mb = (replicas - 1) * tr->model.size * 4.0 / 1e6;
    p->device0_mb = w_mb + 2 * l_mb + g_mb;
    say("dataparallel: %d replica%s x %d sequences, %d thread%s each; device 0 moves %.2f MB of weights, "
        "%.2f MB of logits, %.2f MB of logit gradients and %.2f MB of gradients per step (%.2f MB); MFU against "
        "%d x the peak above\n", replicas, replicas == 1 ? "" : "s", dp->b, tr->dev.threads,
        tr->dev.threads == 1 ? "" : "s", w_mb, l_mb, l_mb, g_mb, p->device0_mb, replicas);
    train_hooks_add(&tr->step_note, dp_note, dp);
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = dp;
    return dp_step;
}

static void report(train_t *tr, void *ctx) {
    dp_prog_t *p = ctx;
    dp_t *dp = &p->dp;
    if (tr->timed > 0) {
        double k = 1.0 / tr->timed, ms = tr->sum_ms * k, opt = tr->sum_opt * k;
        double serial = serial_ms(dp->sum) * k;
        say("dataparallel: per step %.2f ms:", ms);
        for (int ph = 0; ph < PHASES; ph++) say(" %s %.2f", phase_name[ph], dp->sum[ph] * k);
        say(", optimizer %.2f; device 0 serial %.2f ms = %.1f%% of the step\n", opt, serial, 100 * serial / ms);
        if (dp->bench_csv)
            csv_append_row(dp->bench_csv, BENCH_HEADER, "%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%ld,%.1f,%d,%.4f",
                           p->replicas, ms, dp->sum[FORWARD] * k, dp->sum[BACKWARD] * k, dp->sum[REPLICATE] * k,
                           dp->sum[GATHER] * k, dp->sum[SCATTER] * k, dp->sum[REDUCE] * k, serial, opt,
                           tr->global_tokens, tr->global_tokens / (ms / 1e3), tr->dev.threads, p->device0_mb);
    }
    dp_free(dp);
}

static arg_t flags[] = {
    {"replicas", ARG_INT, &prog.replicas, "replicas (threads; on GPUs GPU r % gpus each) that one process drives", NULL, 1, 64},
    {"bench-csv", ARG_STRING, &prog.dp.bench_csv, "append one summary row (mean time of each phase) to this CSV", NULL, 0, 0},
};

TRAIN_MAIN("03_ddp", "03_ddp/dataparallel", "single-process data parallel (PyTorch's DataParallel)",
           "Data parallelism in one process, as PyTorch's nn.DataParallel: each step\n"
           "device 0 copies the weights to every replica, scatters the batch, gathers\n"
           "the logits, computes the loss and scatters its gradient back, and sums the\n"
           "replicas' gradients before stepping the optimizer alone. --threads is per replica (0: cores / replicas).",
           flags, &prog, NULL, check, compose, report)
