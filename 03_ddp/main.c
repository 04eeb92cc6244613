/* main.c: 03_ddp/ddp, the data-parallel trainer.
 *
 *   mpirun -np 2 ./03_ddp/ddp [--steps 200 --batch 16 ...]
 *
 * One step, on every rank:
 *   for each of the --micro micro-batches of this rank's shard:
 *       forward (loss summed over its tokens)
 *       backward, with dlogits scaled by 1 / global tokens; on the LAST
 *       micro-batch every finished range of gradients joins a bucket whose
 *       all-reduce starts at once (ddp.c), earlier ones only accumulate
 *   wait for the buckets still in flight (the exposed communication)
 *   clip by the global gradient norm, AdamW on the fp32 master weights
 * The weights start on rank 0 and are broadcast; every rank checks their
 * checksum before step 1 and again at the end.
 *
 * Checkpoints (--ckpt-dir, --ckpt-every, --resume): rank 0 writes the fp32
 * master weights, both Adam moments, the step and the data position; the
 * data is a pure function of (seed, step), so resuming at step s continues
 * exactly as an uninterrupted run would, on any number of ranks that divides
 * the global batch. */
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "check.h"
#include "ckpt.h"
#include "comm.h"
#include "data.h"
#include "ddp.h"
#include "device.h"
#include "dist.h"
#include "model.h"
#include "ops.h"
#include "optim.h"
#include "perf.h"
#include "trace.h"

#define CSV_HEADER "step,loss,ms,tok_s,mfu,lr,grad_norm,exposed_comm_ms,compute_ms,ranks,unigram_entropy,entropy_rate"
#define BENCH_HEADER "bucket_mb,overlap,ranks,buckets,grad_mb,step_ms,compute_ms,exposed_comm_ms"
#define FINAL_MAGIC "DDPFINAL"

typedef struct {
    common_args_t c;
    int steps, batch, micro, seq, dim, layers, heads, kv_heads, ffn, vocab, warmup;
    double lr, clip, bucket_mb, peak;
    const char *dtype, *data;
    int no_overlap;
    const char *ckpt_dir;
    int ckpt_every, resume, crash_in_save;
    const char *trace;
    int trace_steps;
    const char *save_final, *dump, *bench_csv;
} opts_t;

/* ---- weights across ranks ------------------------------------------------ */

/* MPI counts are ints: broadcast big arrays in pieces. */
static void bcast_floats(float *p, size_t n, MPI_Comm c) {
    for (size_t i = 0; i < n; i += (1u << 28)) {
        size_t k = n - i < (1u << 28) ? n - i : (1u << 28);
        MPI_CHECK(MPI_Bcast(p + i, (int)k, MPI_FLOAT, 0, c));
    }
}

/* Every rank hashes its working weights; returns the hash after checking
 * that all ranks hold the same one. */
static uint64_t check_same_weights(model_t *m, float *host, MPI_Comm c, const char *when) {
    model_get_params(m, host);
    uint64_t h = hash_bytes(host, m->layout.total * sizeof(float), HASH_SEED), lo, hi;
    MPI_CHECK(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, c));
    MPI_CHECK(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, c));
    if (lo != hi) die("weights differ across data-parallel ranks %s (checksum %016" PRIx64 " here)", when, h);
    return h;
}

/* ---- checkpoints --------------------------------------------------------- */

/* What a checkpoint must match: everything that changes the numbers. The
 * rank count and --micro are free: they change only the order of sums. */
static void ckpt_describe(ckpt_t *ck, const opts_t *o, const model_config_t *cfg,
                          const data_t *data, size_t n, float *master, float *m, float *v) {
    memset(ck, 0, sizeof *ck);
    ckpt_config_str(ck, "program", "03_ddp");
    ckpt_config_int(ck, "vocab", cfg->vocab);
    ckpt_config_int(ck, "dim", cfg->dim);
    ckpt_config_int(ck, "layers", cfg->layers);
    ckpt_config_int(ck, "heads", cfg->heads);
    ckpt_config_int(ck, "kv_heads", cfg->kv_heads);
    ckpt_config_int(ck, "ffn", cfg->ffn);
    ckpt_config_int(ck, "seq", cfg->seq);
    ckpt_config_str(ck, "dtype", o->dtype);
    ckpt_config_int(ck, "batch", o->batch);
    ckpt_config_int(ck, "seed", o->c.seed);
    char h[32];
    snprintf(h, sizeof h, "%016" PRIx64, data->checksum);
    ckpt_config_str(ck, "data", h);
    ckpt_config_int(ck, "steps", o->steps);
    ckpt_config_int(ck, "warmup", o->warmup);
    ckpt_config_double(ck, "lr", o->lr);
    ckpt_config_double(ck, "clip", o->clip);
    ckpt_blob(ck, "master", master, n * sizeof(float));
    ckpt_blob(ck, "adam_m", m, n * sizeof(float));
    ckpt_blob(ck, "adam_v", v, n * sizeof(float));
}

/* ---- the final-state file (--save-final), read by 03_ddp/compare.c --------
 * "DDPFINAL", u32 version 1, u32 steps run, u64 parameters, then per step run
 * {i64 step, f64 loss}, then the fp32 master weights. */
static void save_final(const char *path, const long *steps, const double *losses, int nrun,
                       const float *master, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write %s", path);
    uint32_t version = 1, k = (uint32_t)nrun;
    uint64_t np = n;
    fwrite(FINAL_MAGIC, 1, 8, f);
    fwrite(&version, 4, 1, f);
    fwrite(&k, 4, 1, f);
    fwrite(&np, 8, 1, f);
    for (int i = 0; i < nrun; i++) {
        int64_t s = steps[i];
        fwrite(&s, 8, 1, f);
        fwrite(&losses[i], 8, 1, f);
    }
    fwrite(master, sizeof(float), n, f);
    if (fclose(f) != 0) die("writing %s failed", path);
}

/* ---- tracing of the backward pass ---------------------------------------- */

typedef struct {
    ddp_t *ddp;
    const model_layout_t *lay;
    int track;
    double t_prev;
} bwd_ctx_t;

/* Records the compute span that just produced this range, then hands the
 * range to DDP. */
static void on_grad_ready(void *ctx, size_t off, size_t count) {
    bwd_ctx_t *b = ctx;
    if (trace_on()) {
        char name[TRACE_NAME];
        if (b->lay->has_head && off == b->lay->final_norm) snprintf(name, sizeof name, "bwd head");
        else if (b->lay->has_embedding && off == b->lay->embedding) snprintf(name, sizeof name, "bwd embedding");
        else snprintf(name, sizeof name, "bwd layer %d",
                      b->lay->first + (int)((off - b->lay->layers_begin) / b->lay->layer_size));
        trace_span(b->track, name, b->t_prev, now_s());
    }
    ddp_grad_ready(b->ddp, off, count);
    b->t_prev = now_s();
}

static const char *si(char *buf, size_t len, double x) {
    if (x >= 1e6) snprintf(buf, len, "%.2fM", x / 1e6);
    else if (x >= 1e3) snprintf(buf, len, "%.1fk", x / 1e3);
    else snprintf(buf, len, "%.0f", x);
    return buf;
}

int main(int argc, char **argv) {
    dist_t dist;
    dist_init(&argc, &argv, &dist);
    opts_t o = {
        .c = COMMON_ARGS_DEFAULT,
        .steps = 300, .batch = 16, .micro = 1, .seq = 128, .dim = 192, .layers = 4, .heads = 6,
        .kv_heads = 2, .ffn = 0, .vocab = 256, .warmup = -1,
        .lr = 3e-3, .clip = 1.0, .bucket_mb = 25, .dtype = "fp32", .trace_steps = 3,
    };
    arg_t flags[] = {
        COMMON_ARGS(o.c),
        {"steps", ARG_INT, &o.steps, "optimizer steps", NULL, 1, 1e9},
        {"batch", ARG_INT, &o.batch, "global batch in sequences, split over the data-parallel ranks", NULL, 1, 1e9},
        {"micro", ARG_INT, &o.micro, "micro-batches per step on each rank (gradient accumulation)", NULL, 1, 1e6},
        {"seq", ARG_INT, &o.seq, "tokens per sequence", NULL, 2, 1e6},
        {"dim", ARG_INT, &o.dim, "model dimension", NULL, 2, 1e6},
        {"layers", ARG_INT, &o.layers, "transformer blocks", NULL, 1, 1e4},
        {"heads", ARG_INT, &o.heads, "attention heads (must divide --dim)", NULL, 1, 1e4},
        {"kv-heads", ARG_INT, &o.kv_heads, "key/value heads (must divide --heads)", NULL, 1, 1e4},
        {"ffn", ARG_INT, &o.ffn, "MLP hidden size (0: Llama's 8 dim/3 rounded up to 64)", NULL, 0, 1e7},
        {"vocab", ARG_INT, &o.vocab, "vocabulary size (>= 256 with --data)", NULL, 8, 1e7},
        {"lr", ARG_DOUBLE, &o.lr, "peak learning rate (cosine down to lr/10)", NULL, 0, 10},
        {"warmup", ARG_INT, &o.warmup, "warm-up steps (-1: steps/10)", NULL, -1, 1e9},
        {"clip", ARG_DOUBLE, &o.clip, "clip the global gradient norm to this (0: off)", NULL, 0, 1e9},
        {"dtype", ARG_CHOICE, &o.dtype, "weights, activations and communicated gradients", "fp32|bf16", 0, 0},
        {"data", ARG_STRING, &o.data, "train on this text file, byte-level (default: the synthetic corpus)", NULL, 0, 0},
        {"bucket-mb", ARG_DOUBLE, &o.bucket_mb, "gradient bucket size in MiB, as PyTorch's bucket_cap_mb", NULL, 1e-6, 1e6},
        {"no-overlap", ARG_FLAG, &o.no_overlap, "all-reduce the buckets after backward instead of during it", NULL, 0, 0},
        {"ckpt-dir", ARG_STRING, &o.ckpt_dir, "directory for checkpoints", NULL, 0, 0},
        {"ckpt-every", ARG_INT, &o.ckpt_every, "save a checkpoint every N steps and at the end (0: only at the end)", NULL, 0, 1e9},
        {"resume", ARG_FLAG, &o.resume, "continue from the newest checkpoint in --ckpt-dir (step 0 if none)", NULL, 0, 0},
        {"trace", ARG_STRING, &o.trace, "write a Chrome trace (Perfetto) of a few steps to this JSON file", NULL, 0, 0},
        {"trace-steps", ARG_INT, &o.trace_steps, "steps to trace, from the second one", NULL, 1, 1e6},
        {"save-final", ARG_STRING, &o.save_final, "write the losses and final weights to this file (for 03_ddp/compare)", NULL, 0, 0},
        {"dump", ARG_STRING, &o.dump, "write the gradient dump of step 1 (format in common/MODEL.md)", NULL, 0, 0},
        {"bench-csv", ARG_STRING, &o.bench_csv, "append one summary row (bucket size, overlap, mean times) to this CSV", NULL, 0, 0},
        {"peak", ARG_DOUBLE, &o.peak, "peak TFLOP/s per rank for MFU (default: measured CPU peak / GPU table)", NULL, 0, 1e6},
        {"crash-in-save", ARG_INT, &o.crash_in_save, "testing: die (SIGKILL) half-way through writing the checkpoint of this step", NULL, 0, 1e9},
    };
    args_parse(argc, argv, "03_ddp/ddp",
               "Distributed data parallel training of the Llama-style model: bucketed\n"
               "gradient all-reduce overlapping the backward pass, gradient accumulation,\n"
               "checkpoints and resume.", flags, ARRAY_LEN(flags));

    /* ---- configuration ---- */
    mesh_t mesh;
    mesh_init(&mesh, &dist, 1, 1, 1, dist.world);
    int dp = mesh.size[AXIS_DP], rank = mesh.coord[AXIS_DP];
    model_config_t cfg = {.vocab = o.vocab, .dim = o.dim, .layers = o.layers, .heads = o.heads,
                          .kv_heads = o.kv_heads, .ffn = o.ffn ? o.ffn : model_default_ffn(o.dim),
                          .seq = o.seq};
    o.ffn = cfg.ffn;
    model_config_check(&cfg);
    if (o.batch % (dp * o.micro) != 0)
        usage_error("--batch %d must be divisible by ranks (%d) x --micro (%d)", o.batch, dp, o.micro);
    if (o.resume && !o.ckpt_dir) usage_error("--resume needs --ckpt-dir");
    if (o.ckpt_every && !o.ckpt_dir) usage_error("--ckpt-every needs --ckpt-dir");
    if (o.warmup < 0) o.warmup = o.steps / 10;
    dtype_t dt = strcmp(o.dtype, "bf16") == 0 ? DT_BF16 : DT_F32;
    int mb = o.batch / dp / o.micro;                 /* sequences per micro-batch */
    long global_tokens = (long)o.batch * o.seq;

    device_t dev;
    device_init(&dev, o.c.device, dist.local_rank, dist.local_world, o.c.threads);
    comm_t cm;
    comm_init(&cm, mesh.axis[AXIS_DP], o.c.comm, &dev);
    data_t data;
    data_init(&data, o.data, o.vocab, o.seq, (uint64_t)o.c.seed);

    model_t model;
    model_init(&model, &cfg, 0, cfg.layers, mb, dt, &dev);
    size_t n = model.layout.total;
    float *master = xmalloc(n * sizeof(float));
    float *adam_m = xcalloc(n, sizeof(float)), *adam_v = xcalloc(n, sizeof(float));
    float *scratch = xmalloc(n * sizeof(float));

    /* ---- header ---- */
    size_t n_matmul = 0;
    {
        double hd = (double)cfg.dim / cfg.heads;
        n_matmul = (size_t)(cfg.layers * (cfg.dim * hd * (cfg.heads + 2.0 * cfg.kv_heads) +
                                          hd * cfg.heads * cfg.dim + 3.0 * cfg.dim * cfg.ffn) +
                            (double)cfg.dim * cfg.vocab);
    }
    double flops_tok = model_flops_per_token(&cfg);
    precision_t prec = (dev.kind == DEV_CUDA && dt == DT_BF16) ? PREC_BF16 : PREC_FP32;
    double peak = perf_peak(&dev, prec, o.peak);   /* per rank */
    say("03_ddp: distributed data parallel\n");
    if (dev.kind == DEV_CPU)
        say("device:  cpu (%s), %d thread%s per rank | comm %s | world %d | mesh tp 1 x cp 1 x pp 1 x dp %d\n",
            dev.name, dev.threads, dev.threads == 1 ? "" : "s", comm_backend_name(cm.backend), dist.world, dp);
    else
        say("device:  cuda %d (%s) | comm %s | world %d | mesh tp 1 x cp 1 x pp 1 x dp %d\n",
            dev.gpu, dev.name, comm_backend_name(cm.backend), dist.world, dp);
    say("model:   dim %d, %d layers, %d heads (%d kv), ffn %d, vocab %d, seq %d | %.3fM params "
        "(%.3fM in matmuls) | %s\n", cfg.dim, cfg.layers, cfg.heads, cfg.kv_heads, cfg.ffn, cfg.vocab,
        cfg.seq, n / 1e6, n_matmul / 1e6, dtype_name(dt));
    say("batch:   %d sequences = %ld tokens per step = %d rank%s x %d micro-batch%s x %d sequences\n",
        o.batch, global_tokens, dp, dp == 1 ? "" : "s", o.micro, o.micro == 1 ? "" : "es", mb);
    say("ddp:     %s gradients in buckets of %.4g MiB, %s; %.2f MB of gradients per step\n",
        dt == DT_BF16 ? "bf16" : "fp32", o.bucket_mb,
        o.no_overlap ? "all-reduced after backward (--no-overlap)" : "all-reduced during backward",
        n * dtype_size(dt) / 1e6);
    say("optim:   AdamW lr %.3g (warm-up %d, cosine to %.3g at step %d), clip %.3g, %d steps\n",
        o.lr, o.warmup, o.lr / 10, o.steps, o.clip, o.steps);
    say("data:    %s\n", data.desc);
    if (dev.kind == DEV_CPU) {
        /* The measured peak uses the widest FMAs the CPU has; AVX2 kernels
         * (forced by OPENBLAS_CORETYPE, or an OpenBLAS older than the CPU)
         * reach half of it on an AVX-512 CPU. */
        const char *core = openblas_get_corename();
        const char *forced = getenv("OPENBLAS_CORETYPE");
        int avx2 = strcasecmp(core, "Haswell") == 0 || strcasecmp(core, "Zen") == 0;
        say("blas:    OpenBLAS %s kernels%s%s%s\n", core,
            avx2 && __builtin_cpu_supports("avx512f")
                ? " (AVX2 on an AVX-512 CPU: at most half the peak; OPENBLAS_CORETYPE=SkylakeX selects AVX-512 kernels)" : "",
            forced ? ", set by OPENBLAS_CORETYPE=" : "", forced ? forced : "");
        if (o.peak <= 0) say("peak:    %s per rank\n", perf_cpu_peak(dev.threads)->formula);
    }
    say("MFU:     6 N_matmul + 12 L C T = %.4g MFLOP per token (matmuls, forward + backward) "
        "/ (%d x peak)\n", flops_tok / 1e6, dp);

    /* ---- weights: a checkpoint, or rank 0's initialisation ---- */
    ckpt_t ck;
    ckpt_describe(&ck, &o, &cfg, &data, n, master, adam_m, adam_v);
    long start = 0;
    int resumed = 0;
    if (o.resume) {
        char path[4200] = "", err[800] = "";
        int status = 0;   /* 1: loaded, 0: none, -1: refused */
        long s = 0;
        if (rank == 0) {
            if (ckpt_latest(o.ckpt_dir, path, sizeof path, &s) == 0) {
                status = ckpt_load(&ck, path, err, sizeof err) == 0 ? 1 : -1;
                if (status == 1) {
                    start = (long)ckpt_get_state(&ck, "step");
                    if (ckpt_get_state(&ck, "data_pos") != (uint64_t)start * (uint64_t)o.batch) {
                        status = -1;
                        snprintf(err, sizeof err, "checkpoint %.600s is inconsistent: data position does not match its step", path);
                    }
                }
            }
        }
        MPI_CHECK(MPI_Bcast(&status, 1, MPI_INT, 0, cm.mpi));
        MPI_CHECK(MPI_Bcast(err, sizeof err, MPI_CHAR, 0, cm.mpi));
        if (status < 0) usage_error("%s", err);
        if (status == 0) {
            say("resume:  no checkpoint in %s yet: starting from step 0\n", o.ckpt_dir);
        } else {
            MPI_CHECK(MPI_Bcast(&start, 1, MPI_LONG, 0, cm.mpi));
            if (rank == 0) {
                uint64_t w = ckpt_get_state(&ck, "world");
                say("resume:  %s: step %ld (written by %" PRIu64 " rank%s), continuing at step %ld\n",
                    path, start, w, w == 1 ? "" : "s", start + 1);
            }
            bcast_floats(master, n, cm.mpi);
            bcast_floats(adam_m, n, cm.mpi);
            bcast_floats(adam_v, n, cm.mpi);
            resumed = 1;
        }
    }
    if (!resumed) {
        if (rank == 0) model_init_params(master, &cfg, (uint64_t)o.c.seed);
        bcast_floats(master, n, cm.mpi);
    }
    model_load_params(&model, master);
    uint64_t wsum = check_same_weights(&model, scratch, cm.mpi, "after the broadcast");
    say("weights: %s on rank 0, broadcast; checksum %016" PRIx64 " identical on %d rank%s\n",
        resumed ? "loaded" : "initialised", wsum, dp, dp == 1 ? "" : "s");

    optim_t opt;
    optim_init(&opt, master, n, &dev);
    optim_no_decay_norms(&opt, &model.layout, &cfg, 0);
    if (resumed) {
        dev_from_host(&dev, opt.m, adam_m, n * sizeof(float));
        dev_from_host(&dev, opt.v, adam_v, n * sizeof(float));
    }

    int compute = trace_track("compute");   /* tracks in this order: compute, comm */
    ddp_t ddp;
    ddp_init(&ddp, &cm, model.grads, n, dt, (size_t)(o.bucket_mb * 1048576.0), !o.no_overlap);
    trace_init(MPI_COMM_WORLD, o.trace, 0);
    bwd_ctx_t bctx = {&ddp, &model.layout, compute, 0};

    FILE *csv = (o.c.csv && dist.rank == 0) ? csv_open(o.c.csv, CSV_HEADER) : NULL;
    int *inputs = xmalloc(sizeof(int) * (size_t)mb * o.seq);
    int *targets = xmalloc(sizeof(int) * (size_t)mb * o.seq);
    long *run_steps = xmalloc(sizeof(long) * (size_t)(o.steps + 1));
    double *run_losses = xmalloc(sizeof(double) * (size_t)(o.steps + 1));
    int nrun = 0;
    /* Where the time goes, summed over the timed steps (this rank's view):
     * forward, backward (less the communication work done inside its
     * callbacks), exposed communication, optimizer (norm, clip, AdamW). */
    double sum_ms = 0, sum_exposed = 0, sum_fwd = 0, sum_bwd = 0, sum_opt = 0, sum_mine = 0;
    int timed = 0;
    say("\n");

    /* ---- training ---- */
    for (long step = start + 1; step <= o.steps; step++) {
        trace_pause(!(step >= start + 2 && step < start + 2 + o.trace_steps));
        double t0 = now_s();
        model_zero_grads(&model);
        double loss_local = 0, fwd_s = 0, bwd_s = 0;
        for (int m = 0; m < o.micro; m++) {
            double ta = now_s();
            int first = data_shard_first(o.batch, dp, rank, o.micro, m);
            data_batch(&data, step - 1, o.batch, first, mb, inputs, targets);
            double tb = now_s();
            trace_span(compute, "data", ta, tb);
            loss_local += model_forward(&model, inputs, targets, mb);
            double tc = now_s();
            fwd_s += tc - tb;
            char name[TRACE_NAME];
            snprintf(name, sizeof name, "fwd micro %d", m);
            trace_span(compute, name, tb, tc);
            ddp_begin(&ddp, m == o.micro - 1);
            bctx.t_prev = tc;
            model_backward(&model, (float)(1.0 / global_tokens), on_grad_ready, &bctx);
            bwd_s += now_s() - tc;
        }
        bwd_s -= ddp.exposed_s;   /* so far: the communication work inside backward */
        double tw = now_s();
        ddp_finish(&ddp);
        trace_span(compute, "wait for buckets", tw, now_s());

        /* Global loss (for the log; every rank gets the same value) and the
         * exposed communication averaged over ranks. */
        double red[2] = {loss_local, ddp.exposed_s}, tot[2];
        MPI_CHECK(MPI_Allreduce(red, tot, 2, MPI_DOUBLE, MPI_SUM, cm.mpi));
        double loss = tot[0] / global_tokens, exposed_ms = tot[1] / dp * 1e3;

        if (step == 1 && o.dump) {
            if (rank == 0) {
                int *all_in = xmalloc(sizeof(int) * (size_t)o.batch * o.seq);
                int *all_tg = xmalloc(sizeof(int) * (size_t)o.batch * o.seq);
                float *g = xmalloc(n * sizeof(float));
                data_batch(&data, 0, o.batch, 0, o.batch, all_in, all_tg);
                model_get_params(&model, scratch);
                dev_to_host(&dev, g, model.grads, n * sizeof(float));
                model_dump_write(o.dump, &cfg, scratch, all_in, all_tg, o.batch, loss, g);
                say("dump:    step 1 (parameters, tokens, loss %.6f, gradients) written to %s\n", loss, o.dump);
                free(all_in);
                free(all_tg);
                free(g);
            }
        }

        double to = now_s();
        double norm = 0;
        float scale = clip_factor(op_sumsq(&dev, DT_F32, model.grads, n), (float)o.clip, &norm);
        float lr = lr_at((int)step, o.warmup, o.steps, (float)o.lr, (float)(o.lr / 10));
        optim_step(&opt, model.grads, model.params, dt, lr, scale, (int)step);
        dev_sync(&dev);
        double t1 = now_s();
        trace_span(compute, "optimizer", to, t1);

        double ms = (t1 - t0) * 1e3;
        double tok_s = global_tokens / (t1 - t0);
        double flops_s = flops_tok * global_tokens / (t1 - t0) / dp;   /* per rank */
        char ub[48], tb1[32];
        say("step %5ld/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %s tok/s | MFU %s | comm %.2f ms exposed\n",
            step, o.steps, loss, lr, norm, ms, si(tb1, sizeof tb1, tok_s),
            perf_util_str(ub, sizeof ub, flops_s, peak), exposed_ms);
        if (csv) {
            fprintf(csv, "%ld,%.6f,%.3f,%.1f,", step, loss, ms, tok_s);
            if (peak > 0) fprintf(csv, "%.3f,", 100.0 * flops_s / peak); else fprintf(csv, "nan,");
            fprintf(csv, "%.6g,%.6g,%.3f,%.3f,%d,%.4f,%.4f\n", lr, norm, exposed_ms, ms - exposed_ms, dp,
                    data.unigram_entropy, data.entropy_rate);
            fflush(csv);
        }
        run_steps[nrun] = step;
        run_losses[nrun++] = loss;
        if (step > start + 1) {   /* the first step pays for warming up */
            sum_ms += ms;
            sum_exposed += exposed_ms;
            sum_fwd += fwd_s * 1e3;
            sum_bwd += bwd_s * 1e3;
            sum_opt += (t1 - to) * 1e3;
            sum_mine += ddp.exposed_s * 1e3;
            timed++;
        }

        if (o.ckpt_dir && ((o.ckpt_every && step % o.ckpt_every == 0) || step == o.steps)) {
            if (rank == 0) {
                dev_to_host(&dev, master, opt.master, n * sizeof(float));
                dev_to_host(&dev, adam_m, opt.m, n * sizeof(float));
                dev_to_host(&dev, adam_v, opt.v, n * sizeof(float));
                ckpt_state_u64(&ck, "step", (uint64_t)step);
                ckpt_state_u64(&ck, "data_pos", (uint64_t)step * (uint64_t)o.batch);
                ckpt_state_u64(&ck, "data_seed", (uint64_t)o.c.seed);
                ckpt_state_u64(&ck, "world", (uint64_t)dp);
                ckpt_make_dir(o.ckpt_dir);
                char path[4200];
                ckpt_step_path(path, sizeof path, o.ckpt_dir, step);
                if (o.crash_in_save == step)
                    ckpt_crash_after_bytes = CKPT_HEADER_BYTES + n * sizeof(float) * 3 / 2;
                double ts = now_s();
                ckpt_save(&ck, path);
                ckpt_prune(o.ckpt_dir, 2);
                say("ckpt:    %s (%.1f MB, %.0f ms)\n", path, (CKPT_HEADER_BYTES + 3.0 * n * 4) / 1e6,
                    (now_s() - ts) * 1e3);
            }
        }
    }
    trace_pause(0);
    trace_write();

    /* ---- the end ---- */
    wsum = check_same_weights(&model, scratch, cm.mpi, "at the end");
    if (timed > 0) {
        double ms = sum_ms / timed, ex = sum_exposed / timed;
        double flops_s = flops_tok * global_tokens / (ms / 1e3) / dp;
        char ub[48], tb1[32];
        say("\nmean of steps %ld-%d: %.1f ms/step (%.1f compute + %.2f exposed comm) | %s tok/s | MFU %s\n",
            start + 2, o.steps, ms, ms - ex, ex, si(tb1, sizeof tb1, global_tokens / (ms / 1e3)),
            perf_util_str(ub, sizeof ub, flops_s, peak));
        double f = sum_fwd / timed, b = sum_bwd / timed, op = sum_opt / timed, mine = sum_mine / timed;
        say("time:    forward %.1f + backward %.1f + exposed comm %.2f + optimizer %.1f + other %.1f ms "
            "(rank 0)\n", f, b, mine, op, ms - f - b - mine - op);
        if (o.bench_csv && dist.rank == 0) {
            FILE *b = csv_open(o.bench_csv, BENCH_HEADER);
            fprintf(b, "%.6g,%s,%d,%d,%.4f,%.3f,%.3f,%.3f\n", o.bucket_mb, o.no_overlap ? "off" : "on",
                    dp, ddp.nbuckets, n * dtype_size(dt) / 1e6, ms, ms - ex, ex);
            fclose(b);
        }
    }
    say("weights: checksum %016" PRIx64 " identical on %d rank%s after step %d (%d bucket%s per step)\n",
        wsum, dp, dp == 1 ? "" : "s", o.steps, ddp.nbuckets, ddp.nbuckets == 1 ? "" : "s");
    if (o.save_final && rank == 0) {
        dev_to_host(&dev, master, opt.master, n * sizeof(float));
        save_final(o.save_final, run_steps, run_losses, nrun, master, n);
    }

    if (csv) fclose(csv);
    free(inputs);
    free(targets);
    free(run_steps);
    free(run_losses);
    free(master);
    free(adam_m);
    free(adam_v);
    free(scratch);
    ddp_free(&ddp);
    optim_free(&opt);
    model_free(&model);
    data_free(&data);
    comm_destroy(&cm);
    device_finalize(&dev);
    mesh_destroy(&mesh);
    dist_finalize();
    return 0;
}
