/* train.c: the shared training loop (see train.h): flags, header, weights,
 * the step loop, clipping, AdamW, checkpoint sets, the summary. */
#include "train.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ckpt.h"
#include "ops.h"
#include "outfile.h"
#include "perf.h"
#include "trace.h"

#define CSV_HEADER "step,loss,ms,tok_s,mfu,hfu,lr,grad_norm,exposed_comm_ms,compute_ms,bubble," \
                   "mem_peak_mb,sent_mb,ranks,unigram_entropy,entropy_rate"
#define FINAL_MAGIC "DDPFINAL"
#define FINAL_VERSION 2
enum { MAX_FLAGS = 96 };

const char *train_si(char *buf, size_t len, double x) {
    if (x >= 1e6) snprintf(buf, len, "%.2fM", x / 1e6);
    else if (x >= 1e3) snprintf(buf, len, "%.1fk", x / 1e3);
    else snprintf(buf, len, "%.0f", x);
    return buf;
}

/* ---- MPI on host scalars, watched ------------------------------------------------ */
/* MPI counts are ints: big arrays go in pieces. */
static void bcast_floats(float *p, size_t n, int root, MPI_Comm c) {
    dist_watch("broadcast of the weights", c);
    for (size_t i = 0; i < n; i += (1u << 28)) {
        size_t k = n - i < (1u << 28) ? n - i : (1u << 28);
        MPI_CHECK(MPI_Bcast(p + i, (int)k, MPI_FLOAT, root, c));
    }
    watch_end();
}

static void sum_floats(float *p, size_t n, MPI_Comm c) {
    dist_watch("sum of the full weights", c);
    for (size_t i = 0; i < n; i += (1u << 28)) {
        size_t k = n - i < (1u << 28) ? n - i : (1u << 28);
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p + i, (int)k, MPI_FLOAT, MPI_SUM, c));
    }
    watch_end();
}

/* ---- flags ------------------------------------------------------------------------ */
void train_defaults(train_t *tr) {
    memset(tr, 0, sizeof *tr);
    tr->updates_per_step = 1;
    train_opts_t *o = &tr->o;
    o->c = (common_args_t)COMMON_ARGS_DEFAULT;
    o->steps = 300;
    o->batch = 16;
    o->micro = 1;
    o->seq = 128;
    o->dim = 192;
    o->layers = 4;
    o->heads = 6;
    o->kv_heads = 2;
    o->vocab = 256;
    o->warmup = -1;
    o->lr = 3e-3;
    o->clip = 1.0;
    o->dtype = "fp32";
    o->optim = "adamw";
    o->trace_steps = 3;
    o->ckpt_keep = 2;
    o->timeout_s = 300;
    o->inter_gbps = 10;
    o->inter_us = 20;
    o->bucket_mb = 25;
}

static const train_refusal_t *refusal(const train_program_t *prog, const char *flag) {
    for (int i = 0; i < prog->nrefused; i++)
        if (strcmp(prog->refused[i].flag, flag) == 0) return &prog->refused[i];
    return NULL;
}

void train_init(train_t *tr, int *argc, char ***argv, const train_program_t *prog) {
    train_opts_t *o = &tr->o;
    tr->prog = prog;
    dist_init(argc, argv, &tr->dist);
    arg_t shared[] = {
        COMMON_ARGS(o->c),
        {"steps", ARG_INT, &o->steps, "optimizer steps", NULL, 1, 1e9},
        {"batch", ARG_INT, &o->batch, "global batch in sequences, split over the data-parallel ranks", NULL, 1, 1e9},
        {"micro", ARG_INT, &o->micro, "micro-batches per step on each data-parallel rank (gradient accumulation)", NULL, 1, 1e6},
        {"seq", ARG_INT, &o->seq, "tokens per sequence", NULL, 2, 1e7},
        {"dim", ARG_INT, &o->dim, "model dimension", NULL, 2, 1e6},
        {"layers", ARG_INT, &o->layers, "transformer blocks", NULL, 1, 1e4},
        {"heads", ARG_INT, &o->heads, "attention heads", NULL, 1, 1e4},
        {"kv-heads", ARG_INT, &o->kv_heads, "key/value heads (must divide --heads)", NULL, 1, 1e4},
        {"head-dim", ARG_INT, &o->head_dim, "dimension of one head (0: dim / heads)", NULL, 0, 1e5},
        {"ffn", ARG_INT, &o->ffn, "MLP hidden size (0: Llama's 8 dim/3 rounded up to 64)", NULL, 0, 1e7},
        {"vocab", ARG_INT, &o->vocab, "vocabulary size (>= 256 with --data)", NULL, 8, 1e7},
        {"lr", ARG_DOUBLE, &o->lr, "peak learning rate (cosine down to lr/10)", NULL, 0, 10},
        {"warmup", ARG_INT, &o->warmup, "warm-up steps (-1: steps/10)", NULL, -1, 1e9},
        {"optim", ARG_CHOICE, &o->optim, "optimizer: AdamW, or plain SGD (no momentum, no weight decay)", "adamw|sgd", 0, 0},
        {"clip", ARG_DOUBLE, &o->clip, "clip the global gradient norm to this (0: off)", NULL, 0, 1e9},
        {"dtype", ARG_CHOICE, &o->dtype, "weights, activations and communicated gradients", "fp32|bf16", 0, 0},
        {"bucket-mb", ARG_DOUBLE, &o->bucket_mb, "data-parallel gradient bucket size in MiB (DDP's all-reduce, as PyTorch's bucket_cap_mb)", NULL, 1e-6, 1e6},
        {"data", ARG_STRING, &o->data, "train on this text file, byte-level (default: the synthetic corpus)", NULL, 0, 0},
        {"ckpt-dir", ARG_STRING, &o->ckpt_dir, "directory for checkpoint sets (one directory per step)", NULL, 0, 0},
        {"ckpt-every", ARG_INT, &o->ckpt_every, "save a checkpoint every N steps and at the end (0: only at the end)", NULL, 0, 1e9},
        {"ckpt-keep", ARG_INT, &o->ckpt_keep, "checkpoints kept in --ckpt-dir (the newest)", NULL, 1, 1e6},
        {"resume", ARG_FLAG, &o->resume, "continue from the newest readable checkpoint in --ckpt-dir (step 0 if none)", NULL, 0, 0},
        {"trace", ARG_STRING, &o->trace, "write a Chrome trace (Perfetto) of a few steps to this JSON file", NULL, 0, 0},
        {"record", ARG_STRING, &o->record, "record every rank's actions (compute in CPU time, each communication call) of the steps after the first, for replay/replay (CPU, --threads 1)", NULL, 0, 0},
        {"trace-steps", ARG_INT, &o->trace_steps, "steps to trace, from the second one", NULL, 1, 1e6},
        {"save-final", ARG_STRING, &o->save_final, "write the losses and final weights to this file (for tests/compare)", NULL, 0, 0},
        {"dump", ARG_STRING, &o->dump, "write the gradient dump of step 1 (format in common/MODEL.md)", NULL, 0, 0},
        {"peak", ARG_DOUBLE, &o->peak, "peak TFLOP/s per rank for MFU (default: measured CPU peak / GPU table)", NULL, 0, 1e6},
        {"timeout-s", ARG_DOUBLE, &o->timeout_s, "end the job when a rank waits this long on its peers (0: never)", NULL, 0, 1e7},
        {"node-size", ARG_INT, &o->node_size, "link model: ranks per simulated node (0: off; see common/comm.h)", NULL, 0, 1e6},
        {"inter-gbps", ARG_DOUBLE, &o->inter_gbps, "link model: GB/s between simulated nodes", NULL, 1e-6, 1e6},
        {"inter-us", ARG_DOUBLE, &o->inter_us, "link model: latency between simulated nodes, microseconds", NULL, 0, 1e7},
        {"mem-limit", ARG_BYTES, &o->mem_limit, "refuse to count more than this much device memory per rank (0: no limit)", NULL, 0, 0},
        {"crash-in-save", ARG_INT, &o->crash_in_save, "testing: die (SIGKILL) half-way through writing the checkpoint of this step", NULL, 0, 1e9},
        {"stall-in-save", ARG_INT, &o->stall_in_save, "testing: the last rank stops before writing its part of the checkpoint of this step, until the job ends", NULL, 0, 1e9},
    };
    int n = 0;
    if (ARRAY_LEN(shared) + prog->nflags > MAX_FLAGS) die("too many flags");
    arg_t all[MAX_FLAGS];
    for (int i = 0; i < (int)ARRAY_LEN(shared); i++)
        if (!refusal(prog, shared[i].name)) all[n++] = shared[i];
    for (int i = 0; i < prog->nflags; i++) all[n++] = prog->flags[i];
    for (int i = 1; i < *argc; i++) {
        const char *s = (*argv)[i];
        if (strncmp(s, "--", 2) != 0) continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(s + 2, "="), s + 2);
        const train_refusal_t *r = refusal(prog, name);
        if (r) usage_error("%s takes no --%s: %s", prog->prog, name, r->why);
    }
    args_parse(*argc, *argv, prog->prog, prog->about, all, n);

    if (o->resume && !o->ckpt_dir) usage_error("--resume needs --ckpt-dir");
    if (o->ckpt_every && !o->ckpt_dir) usage_error("--ckpt-every needs --ckpt-dir");
    if (o->warmup < 0) o->warmup = o->steps / 10;
    tr->cfg = (model_config_t){.vocab = o->vocab, .dim = o->dim, .layers = o->layers, .heads = o->heads,
                               .kv_heads = o->kv_heads, .head_dim = o->head_dim,
                               .ffn = o->ffn ? o->ffn : model_default_ffn(o->dim), .seq = o->seq};
    o->ffn = tr->cfg.ffn;
    model_config_check(&tr->cfg);
    tr->dtype = dtype_parse(o->dtype);
}

/* ---- set-up -------------------------------------------------------------------------- */
static void header(train_t *tr, precision_t prec) {
    const train_opts_t *o = &tr->o;
    const model_config_t *c = &tr->cfg;
    const device_t *d = &tr->dev;
    const mesh_t *m = &tr->mesh;
    const char *backend = "mpi";
    for (int a = 0; a < AXES; a++)
        if (m->size[a] > 1) backend = comm_backend_name(tr->axis[a].backend);
    char mesh[96];
    snprintf(mesh, sizeof mesh, "world %d | mesh tp %d x cp %d x pp %d x dp %d", tr->dist.world,
             m->size[AXIS_TP], m->size[AXIS_CP], m->size[AXIS_PP], m->size[AXIS_DP]);
    say("%s: %s\n", tr->prog->name, tr->prog->title);
    if (d->kind == DEV_CPU)
        say("device:  cpu (%s), %d thread%s per rank | comm %s | %s\n", d->name, d->threads,
            d->threads == 1 ? "" : "s", backend, mesh);
    else
        say("device:  cuda %d (%s) | comm %s | %s\n", d->gpu, d->name, backend, mesh);
    double attn = 12.0 * c->layers * (double)c->heads * c->head_dim * c->seq;
    size_t np = model_param_count(c);
    say("model:   dim %d, %d layers, %d heads (%d kv, head dim %d), ffn %d, vocab %d, seq %d | "
        "%.3fM params (%.3fM in matmuls) | %s\n", c->dim, c->layers, c->heads, c->kv_heads,
        c->head_dim, c->ffn, c->vocab, c->seq, np / 1e6, (tr->flops_token - attn) / 6 / 1e6,
        dtype_name(tr->dtype));
    say("batch:   %d sequences = %ld tokens per step = %d data-parallel rank%s x %d micro-batch%s x %d "
        "sequences\n", o->batch, tr->global_tokens, tr->dp, tr->dp == 1 ? "" : "s", o->micro,
        o->micro == 1 ? "" : "es", tr->mb);
    say("optim:   %s lr %.3g (warm-up %d, cosine to %.3g at step %d), clip %.3g, %d steps\n",
        strcmp(o->optim, "sgd") ? "AdamW" : "SGD", o->lr, o->warmup, o->lr / 10, o->steps, o->clip, o->steps);
    say("data:    %s\n", tr->data.desc);
    if (d->kind == DEV_CPU) {
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
    }
    char pk[640];
    say("peak:    %s\n", perf_peak_desc(pk, sizeof pk, d, prec, o->peak));
    say("MFU:     6 N_matmul + 12 L H hd T = %.4g MFLOP per token (matmuls, forward + backward) "
        "/ (%d x peak)\n", tr->flops_token / 1e6, tr->dist.world);
    if (o->mem_limit)
        say("memory:  limit %zu bytes (%.2f MB) of counted device memory per rank (--mem-limit)\n",
            o->mem_limit, o->mem_limit / 1e6);
    if (o->node_size)
        say("link:    simulated nodes of %d ranks; between them %.3g GB/s and %.3g us per message "
            "(common/comm.h)\n", o->node_size, o->inter_gbps, o->inter_us);
}

void train_setup(train_t *tr, int tp, int cp, int pp) {
    train_opts_t *o = &tr->o;
    int world = tr->dist.world;
    if (tp < 1 || cp < 1 || pp < 1 || world % (tp * cp * pp))
        usage_error("tp %d x cp %d x pp %d = %d ranks does not divide the world of %d", tp, cp, pp,
                    tp * cp * pp, world);
    int dp = world / (tp * cp * pp);
    /* The data first, before any collective: a file too small for one
     * step's batch is refused here, on every rank, not where the first
     * stage first reads it. */
    data_init(&tr->data, o->data, o->vocab, o->seq, (uint64_t)o->c.seed);
    if (!tr->data.synthetic && tr->data.nchunks < (size_t)o->batch)
        usage_error("data file %s has %zu samples of --seq %d + 1 bytes, fewer than --batch %d", o->data,
                    tr->data.nchunks, o->seq, o->batch);
    if (o->node_size) {
        comm_link_t l = {o->node_size, o->inter_gbps, o->inter_us};
        comm_link_set(&l);
    }
    watchdog_start(o->timeout_s, "--timeout-s");
    mesh_init(&tr->mesh, &tr->dist, tp, cp, pp, dp);
    tr->dp = dp;
    tr->dp_rank = tr->mesh.coord[AXIS_DP];
    int split = tr->batch_per_rank ? 1 : dp;   /* ranks that share one batch */
    if (o->batch % (split * o->micro))
        usage_error("--batch %d must be divisible by data-parallel ranks (%d) x --micro (%d)", o->batch,
                    split, o->micro);
    device_init(&tr->dev, o->c.device, tr->dist.local_rank, tr->dist.local_world, o->c.threads);
    if (o->record && (tr->dev.kind != DEV_CPU || tr->dev.threads > 1))
        usage_error("--record times compute in the calling thread's CPU time: it needs --device cpu and --threads 1");
    dev_mem_limit(o->mem_limit);
    static const char *names[AXES] = {"tensor-parallel", "context-parallel", "pipeline", "data-parallel"};
    /* A one-rank communicator needs no NCCL: auto takes MPI there, but an
     * explicit --comm nccl is honoured (and refused without a GPU), so that
     * one rank and many agree. */
    int nccl = strcmp(o->c.comm, "nccl") == 0;
    for (int a = 0; a < AXES; a++) {
        comm_init(&tr->axis[a], tr->mesh.axis[a], tr->mesh.size[a] > 1 || nccl ? o->c.comm : "mpi", &tr->dev);
        tr->axis[a].name = names[a];
    }
    MPI_Comm g = mesh_group(&tr->mesh, 1u << AXIS_CP | 1u << AXIS_DP);
    int gsize;
    MPI_Comm_size(g, &gsize);
    comm_init(&tr->grad, g, gsize > 1 || nccl ? o->c.comm : "mpi", &tr->dev);
    tr->grad.name = cp > 1 ? "context x data-parallel" : "data-parallel";
    MPI_Comm_free(&g);
    tr->part_unique = tr->grad.rank == 0;

    tr->mb = o->batch / split / o->micro;
    tr->global_tokens = (long)o->batch * o->seq;
    tr->loss_scale = (float)(1.0 / (double)tr->global_tokens);
    tr->tokens = xmalloc(sizeof(int) * (size_t)tr->mb * o->seq);
    tr->targets = xmalloc(sizeof(int) * (size_t)tr->mb * o->seq);
    tr->shard = model_shard_full(&tr->cfg);
    model_shard_stage(&tr->shard, &tr->cfg, pp, tr->mesh.coord[AXIS_PP], 1);
    tr->shard.tp = tp;
    tr->shard.tp_rank = tr->mesh.coord[AXIS_TP];
    tr->shard.cp = cp;
    tr->shard.cp_rank = tr->mesh.coord[AXIS_CP];
    tr->shard.cp_balance = 1;

    /* Every output checked before any work, so no result is lost at the end. */
    args_check_output(MPI_COMM_WORLD, "csv", o->c.csv, CSV_HEADER);
    args_check_output(MPI_COMM_WORLD, "save-final", o->save_final, NULL);
    args_check_output(MPI_COMM_WORLD, "trace", o->trace, NULL);
    args_check_output(MPI_COMM_WORLD, "record", o->record, NULL);
    args_check_output(MPI_COMM_WORLD, "dump", o->dump, NULL);
    if (o->ckpt_dir) {
        char err[700] = "";
        if (tr->dist.rank == 0 && ckpt_make_dir(o->ckpt_dir, err, sizeof err) == 0) {
            char who[200], holder[300];
            snprintf(who, sizeof who, "%s (pid %d on %s, %d rank%s)\n", tr->prog->prog, (int)getpid(),
                     tr->dist.host, world, world == 1 ? "" : "s");
            if (ckpt_lock(o->ckpt_dir, who, holder, sizeof holder) != 0)
                snprintf(err, sizeof err, "checkpoint directory %s is in use by %s: two runs would "
                         "replace each other's checkpoints", o->ckpt_dir, holder);
        }
        MPI_CHECK(MPI_Bcast(err, sizeof err, MPI_CHAR, 0, MPI_COMM_WORLD));
        if (*err) usage_error("%s", err);
    }

    precision_t prec = (tr->dev.kind == DEV_CUDA && tr->dtype == DT_BF16) ? PREC_BF16 : PREC_FP32;
    tr->peak = perf_peak(&tr->dev, prec, o->peak);
    tr->flops_token = model_flops_per_token(&tr->cfg);
    header(tr, prec);
    tr->trace_track = trace_track("compute");   /* tracks in this order: compute, comm */
    trace_init(MPI_COMM_WORLD, o->trace, 0);
    record_init(MPI_COMM_WORLD, o->record);
    int *everyone = xmalloc(sizeof(int) * (size_t)tr->dist.world);
    for (int r = 0; r < tr->dist.world; r++) everyone[r] = r;
    tr->record_world = record_group(tr->dist.world, everyone);   /* the step totals' all-reduce */
    free(everyone);
    if (o->c.csv && tr->dist.rank == 0) tr->csv = csv_open(o->c.csv, CSV_HEADER);
}

/* The trace of every unit's forward, backward and recomputation. */
static void trace_before(void *ctx, model_t *m, int unit, model_pass_t pass) {
    (void)m; (void)unit; (void)pass;
    ((train_t *)ctx)->unit_t0 = now_s();
}

static void trace_after(void *ctx, model_t *m, int unit, model_pass_t pass) {
    train_t *tr = ctx;
    if (!trace_on()) return;
    static const char *verb[3] = {"fwd", "bwd", "recompute"};
    char name[TRACE_NAME];
    int l = m->units[unit].layer;
    if (l < 0) snprintf(name, sizeof name, "%s embedding", verb[pass]);
    else if (l == m->cfg.layers) snprintf(name, sizeof name, "%s head", verb[pass]);
    else snprintf(name, sizeof name, "%s layer %d", verb[pass], l);
    trace_span(tr->trace_track, name, tr->unit_t0, now_s());
}

void train_model(train_t *tr, int with_params) {
    model_init(&tr->model, &tr->cfg, &tr->shard, tr->mb, tr->dtype, &tr->dev, with_params);
    model_add_hook(&tr->model, trace_before, trace_after, tr);
    if (tr->mesh.size[AXIS_PP] > 1) return;   /* pipelines keep their own micro-batches */
    model_acts_init(&tr->model, &tr->acts, 0, tr->mb, tr->recompute);
}

grad_strategy_t train_ddp(train_t *tr, grad_sync_t *g, int overlap) {
    grad_sync_init_allreduce(g, &tr->grad, &tr->model, tr->dtype, (size_t)(tr->o.bucket_mb * 1048576.0), overlap);
    return grad_sync_strategy(g);
}

void train_batch(train_t *tr, long step, int micro, model_acts_t *a) {
    if (tr->batch_fn) {
        tr->batch_fn(tr, tr->batch_ctx, step, micro);
    } else {
        int first = data_shard_first(tr->o.batch, tr->dp, tr->dp_rank, tr->o.micro, micro);
        data_batch(&tr->data, step - 1, tr->o.batch, first, tr->mb, tr->tokens, tr->targets);
    }
    model_set_batch(&tr->model, a, tr->tokens, tr->targets);
}

/* ---- checkpoints ------------------------------------------------------------------- */
/* What a checkpoint must match: everything that changes the numbers. The
 * mesh, the chapter and --micro are free: they change only the order of
 * sums. */
static void describe(const train_t *tr, ckpt_t *ck) {
    const train_opts_t *o = &tr->o;
    const model_config_t *c = &tr->cfg;
    memset(ck, 0, sizeof *ck);
    ckpt_config_str(ck, "kind", "trainer state");
    ckpt_config_int(ck, "vocab", c->vocab);
    ckpt_config_int(ck, "dim", c->dim);
    ckpt_config_int(ck, "layers", c->layers);
    ckpt_config_int(ck, "heads", c->heads);
    ckpt_config_int(ck, "kv_heads", c->kv_heads);
    ckpt_config_int(ck, "head_dim", c->head_dim);
    ckpt_config_int(ck, "ffn", c->ffn);
    ckpt_config_int(ck, "seq", c->seq);
    ckpt_config_str(ck, "dtype", o->dtype);
    ckpt_config_int(ck, "batch", o->batch);
    ckpt_config_int(ck, "seed", o->c.seed);
    char h[32];
    snprintf(h, sizeof h, "%016" PRIx64, tr->data.checksum);
    ckpt_config_str(ck, "data", h);
    ckpt_config_int(ck, "steps", o->steps);
    ckpt_config_int(ck, "warmup", o->warmup);
    ckpt_config_double(ck, "lr", o->lr);
    ckpt_config_double(ck, "clip", o->clip);
}

static const char *const shard_field[10] = {"first", "per_chunk", "chunks", "chunk_stride", "tp",
                                             "tp_rank", "sp", "cp", "cp_rank", "cp_balance"};

/* This rank's compressor state (train.h): its device arrays, and how many
 * floats they hold together. */
static int compressor_arrays(const train_t *tr, float *buf[2], size_t len[2], const char *name[2], size_t *total) {
    int k = tr->compressor ? compressor_state(tr->compressor, buf, len, name) : 0;
    *total = 0;
    for (int i = 0; i < k; i++) *total += len[i];
    return k;
}

/* A compressor state file: the model's description, and the compressor,
 * its error feedback and the ranks, which a resume must match. */
static void describe_compressor(const train_t *tr, ckpt_t *ck, long step) {
    char name[32];
    describe(tr, ck);
    ckpt_config_str(ck, "compress", compress_name(&tr->compressor->spec, name));
    ckpt_config_int(ck, "error_feedback", tr->compressor->ef);
    ckpt_config_int(ck, "ranks", tr->dist.world);
    ckpt_state_u64(ck, "step", (uint64_t)step);
}

static void compressor_path(char *out, size_t len, const char *set, int rank) {
    snprintf(out, len, "%s/compress_%05d.ckpt", set, rank);
}

/* A state value, 0 when the checkpoint has none (sets written before it). */
static uint64_t state_or_zero(const ckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->nstate; i++)
        if (strcmp(ck->state[i].name, name) == 0) return ckpt_get_state(ck, name);
    return 0;
}

void train_ckpt_begin(train_t *tr, long step, train_ckpt_t *s) {
    const train_opts_t *o = &tr->o;
    const optim_t *opt = &tr->opt;
    s->t0 = now_s();
    s->step = step;
    char set[4200];
    ckpt_set_path(s->tmp, sizeof s->tmp, o->ckpt_dir, step, 1);
    ckpt_set_path(set, sizeof set, o->ckpt_dir, step, 0);
    size_t n = opt->n;
    double part_bytes = tr->part_unique ? CKPT_HEADER_BYTES + 3.0 * n * 4 + 24.0 * opt->npieces + 256 : 0;
    float *zbuf[2];
    size_t zlen[2], ztotal;
    const char *zname[2];
    int zk = compressor_arrays(tr, zbuf, zlen, zname, &ztotal);
    if (zk) part_bytes += CKPT_HEADER_BYTES + 4.0 * ztotal + 128;
    double sums[3] = {part_bytes, tr->part_unique, zk > 0};
    dist_allreduce(sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "checkpoint size");
    double total = sums[0] + CKPT_HEADER_BYTES;
    s->bytes = total;
    s->parts = (int)sums[1];
    s->compressed = (int)sums[2];
    if (tr->dist.rank == 0) {
        /* Saves that never finished (a crash) give their space back. On a
         * short disk one older checkpoint may go first, but never the newest
         * complete one: until this set is complete, it is the only way back.
         * If there is still no room, the save is refused. */
        ckpt_remove_tmp(o->ckpt_dir);
        long long room = ckpt_free_bytes(o->ckpt_dir);
        double need = total + 4096.0 * (s->parts + s->compressed + 3);   /* each file's last block, the directory */
        if (room >= 0 && room < need && o->ckpt_keep > 1) {
            ckpt_remove_after(o->ckpt_dir, step - 1);   /* this step's own older save too: the commit replaces it */
            ckpt_prune(o->ckpt_dir, o->ckpt_keep - 1);
            long long before = room;
            room = ckpt_free_bytes(o->ckpt_dir);
            if (room > before)
                say("ckpt:    %.2f MB free, %.2f MB needed: removed the oldest checkpoint first (%.2f MB free now)\n",
                    before / 1e6, need / 1e6, room / 1e6);
        }
        if (room >= 0 && room < need)
            die("not enough space in %s for the checkpoint of step %ld: it needs %.1f MB, %.1f MB are free "
                "(%.1f MB missing); the newest complete checkpoint stays until a new one is complete",
                o->ckpt_dir, step, need / 1e6, room / 1e6, (need - room) / 1e6);
        if (mkdir(s->tmp, 0755) != 0) die("cannot create %s: %s", s->tmp, strerror(errno));
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (zk) {   /* this rank's own: every rank that has one writes it */
        free(s->zhost);
        s->zhost = xmalloc(ztotal * sizeof(float));
        describe_compressor(tr, &s->zpart, step);
        for (int k = 0, off = 0; k < zk; off += (int)zlen[k], k++) {
            dev_to_host(&tr->dev, s->zhost + off, zbuf[k], zlen[k] * sizeof(float));
            ckpt_blob(&s->zpart, zname[k], s->zhost + off, zlen[k] * sizeof(float));
        }
        compressor_path(s->zpath, sizeof s->zpath, s->tmp, tr->dist.rank);
    }
    s->has_part = tr->part_unique;
    if (!s->has_part) return;
    if (s->n != n || s->npieces != (size_t)opt->npieces) {
        free(s->host);
        free(s->pieces);
        s->host = xmalloc(3 * n * sizeof(float) + 1);
        s->pieces = xmalloc(sizeof(int64_t) * 3 * (size_t)(opt->npieces ? opt->npieces : 1));
        s->n = n;
        s->npieces = (size_t)opt->npieces;
    }
    float *master = s->host, *m = s->host + n, *v = s->host + 2 * n;
    dev_to_host(&tr->dev, master, opt->master, n * sizeof(float));
    dev_to_host(&tr->dev, m, opt->m, n * sizeof(float));
    dev_to_host(&tr->dev, v, opt->v, n * sizeof(float));
    for (int p = 0; p < opt->npieces; p++) {
        s->pieces[3 * p] = (int64_t)opt->pieces[p].off;
        s->pieces[3 * p + 1] = (int64_t)opt->pieces[p].flat;
        s->pieces[3 * p + 2] = (int64_t)opt->pieces[p].count;
    }
    ckpt_t *ck = &s->part;
    describe(tr, ck);
    ckpt_state_u64(ck, "step", (uint64_t)step);
    ckpt_state_u64(ck, "n", n);
    ckpt_state_u64(ck, "npieces", (uint64_t)opt->npieces);
    const int *sf = &tr->shard.first;
    for (int i = 0; i < 10; i++) ckpt_state_u64(ck, shard_field[i], (uint64_t)sf[i]);
    ckpt_blob(ck, "master", master, n * sizeof(float));
    ckpt_blob(ck, "adam_m", m, n * sizeof(float));
    ckpt_blob(ck, "adam_v", v, n * sizeof(float));
    ckpt_blob(ck, "pieces", s->pieces, sizeof(int64_t) * 3 * (size_t)opt->npieces);
    ckpt_part_path(s->path, sizeof s->path, s->tmp, tr->dist.rank);
}

void train_ckpt_write(train_t *tr, train_ckpt_t *s) {
    int stall = tr->o.stall_in_save == s->step && tr->dist.rank == tr->dist.world - 1;
    if (stall && (tr->dist.world == 1 || !s->has_part))
        die("--stall-in-save: rank %d writes no part of the checkpoint to stall in (a part of its own: "
            "ZeRO, tensor or pipeline parallelism, on 2 ranks or more)", tr->dist.rank);
    if (s->zhost) ckpt_save(&s->zpart, s->zpath);
    if (!s->has_part) return;
    if (tr->o.crash_in_save == s->step && tr->dist.rank == 0)
        ckpt_crash_after_bytes = CKPT_HEADER_BYTES + s->n * sizeof(float) * 3 / 2;
    if (stall) {
        /* a slow disk on one rank: the set must not be named complete without this part */
        printf("ckpt:    rank %d (pid %ld) stalls before writing its part of step %ld (--stall-in-save)\n",
               tr->dist.rank, (long)getpid(), s->step);
        fflush(stdout);
        for (;;) sleep(60);
    }
    ckpt_save(&s->part, s->path);
}

void train_ckpt_commit(train_t *tr, train_ckpt_t *s) {
    const train_opts_t *o = &tr->o;
    char set[4200], path[4400];
    ckpt_set_path(set, sizeof set, o->ckpt_dir, s->step, 0);
    int parts = s->parts;
    if (tr->dist.rank == 0) {
        ckpt_t ck;
        describe(tr, &ck);
        ckpt_state_u64(&ck, "step", (uint64_t)s->step);
        ckpt_state_u64(&ck, "data_pos", (uint64_t)s->step * (uint64_t)o->batch);
        ckpt_state_u64(&ck, "data_seed", (uint64_t)o->c.seed);
        ckpt_state_u64(&ck, "parts", (uint64_t)parts);
        ckpt_state_u64(&ck, "compressed", (uint64_t)s->compressed);
        for (int a = 0; a < AXES; a++) ckpt_state_u64(&ck, axis_name[a], (uint64_t)tr->mesh.size[a]);
        ckpt_part_path(path, sizeof path, s->tmp, -1);
        ckpt_save(&ck, path);
        ckpt_commit_set(s->tmp, set);
        ckpt_remove_after(o->ckpt_dir, s->step);
        ckpt_prune(o->ckpt_dir, o->ckpt_keep);
        char z[48] = "";
        if (s->compressed) snprintf(z, sizeof z, " + %d compressor state%s", s->compressed, s->compressed == 1 ? "" : "s");
        say("ckpt:    %s (%d part%s%s, %.1f MB, %.0f ms)\n", set, parts, parts == 1 ? "" : "s", z,
            s->bytes / 1e6, (now_s() - s->t0) * 1e3);
    }
}

void train_ckpt_free(train_ckpt_t *s) {
    free(s->zhost);
    free(s->host);
    free(s->pieces);
    memset(s, 0, sizeof *s);
}

static void save_checkpoint(train_t *tr, long step) {
    train_ckpt_t s = {0};
    train_ckpt_begin(tr, step, &s);
    train_ckpt_write(tr, &s);
    watch_begin("checkpoint parts", "world", NULL, WATCH_WORLD);   /* every part on disk before the set is complete */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    watch_end();
    train_ckpt_commit(tr, &s);
    train_ckpt_free(&s);
}

/* Set `step`'s header (part -1): its step and data position match its name,
 * and its compressor state matches this run's `compressed` ranks; *parts:
 * how many parts it has. Returns CKPT_OK or an error code with the reason in
 * err. */
static int load_head(train_t *tr, long step, const char *set, int compressed, int *parts, char *err, size_t len) {
    char path[4400];
    ckpt_t ck;
    describe(tr, &ck);
    ckpt_part_path(path, sizeof path, set, -1);
    int rc = ckpt_load(&ck, path, err, len);
    if (rc != CKPT_OK) return rc;
    if ((long)ckpt_get_state(&ck, "step") != step ||
        ckpt_get_state(&ck, "data_pos") != (uint64_t)step * (uint64_t)tr->o.batch) {
        snprintf(err, len, "checkpoint %.600s is inconsistent: its step or data position does not match its name", set);
        return CKPT_DAMAGED;
    }
    int had = (int)state_or_zero(&ck, "compressed");
    if (had != compressed) {
        snprintf(err, len, "checkpoint %.600s holds the gradient compressor state of %d rank%s, this run keeps "
                 "it on %d: a compressed run resumes only with the same --compress, --error-feedback and number "
                 "of ranks", set, had, had == 1 ? "" : "s", compressed);
        return CKPT_MISMATCH;
    }
    *parts = (int)ckpt_get_state(&ck, "parts");
    return CKPT_OK;
}

/* One part at `path`: its shard's pieces of the master weights and Adam
 * moments placed into full[], and 1 into cover where they land (*ones: a
 * buffer of ones, grown as needed). Returns CKPT_OK or an error code. */
static int load_part(train_t *tr, const char *path, float *full[3], float *cover, float **ones, char *err, size_t len) {
    const model_config_t *c = &tr->cfg;
    size_t N = model_param_count(c);
    ckpt_t ck;
    describe(tr, &ck);   /* first the state alone: how big the part is */
    int rc = ckpt_load(&ck, path, err, len);
    if (rc != CKPT_OK) return rc;
    model_shard_t ps;
    int *sf = &ps.first;
    for (int i = 0; i < 10; i++) sf[i] = (int)ckpt_get_state(&ck, shard_field[i]);
    size_t n = ckpt_get_state(&ck, "n"), np = ckpt_get_state(&ck, "npieces");
    int sane = ps.tp >= 1 && ps.tp_rank < ps.tp && c->heads % ps.tp == 0 && c->ffn % ps.tp == 0 &&
               c->vocab % ps.tp == 0 && ps.cp >= 1 && ps.per_chunk >= 1 && ps.chunks >= 1 &&
               model_shard_layer(&ps, ps.per_chunk * ps.chunks - 1) < c->layers && n <= 4 * N + 1024;
    if (!sane) {
        snprintf(err, len, "checkpoint part %.600s describes an impossible shard", path);
        return CKPT_DAMAGED;
    }
    float *blob[3];
    int64_t *pieces = xmalloc(sizeof(int64_t) * 3 * (np ? np : 1));
    static const char *bn[3] = {"master", "adam_m", "adam_v"};
    for (int k = 0; k < 3; k++) {
        blob[k] = xmalloc(n * sizeof(float));
        ckpt_blob(&ck, bn[k], blob[k], n * sizeof(float));
    }
    ckpt_blob(&ck, "pieces", pieces, sizeof(int64_t) * 3 * np);
    rc = ckpt_load(&ck, path, err, len);
    size_t size = model_shard_size(c, &ps);
    for (size_t p = 0; p < np && rc == CKPT_OK; p++) {
        size_t off = (size_t)pieces[3 * p], flat = (size_t)pieces[3 * p + 1], cnt = (size_t)pieces[3 * p + 2];
        if (off + cnt > n || flat + cnt > size) {
            snprintf(err, len, "checkpoint part %.600s has a piece outside its shard", path);
            rc = CKPT_DAMAGED;
            break;
        }
        for (int k = 0; k < 3; k++) model_shard_place(c, &ps, flat, cnt, blob[k] + off, full[k], 0);
        *ones = realloc(*ones, (cnt ? cnt : 1) * sizeof(float));
        for (size_t i = 0; i < cnt; i++) (*ones)[i] = 1.0f;
        model_shard_place(c, &ps, flat, cnt, *ones, cover, 0);
    }
    for (int k = 0; k < 3; k++) free(blob[k]);
    free(pieces);
    return rc;
}

/* This rank's compressor state of set `step` into zhost, when this run
 * keeps one. Returns CKPT_OK or an error code. */
static int load_compressor(train_t *tr, long step, const char *set, float *zhost, char *err, size_t len) {
    float *zbuf[2];
    size_t zlen[2], ztotal;
    const char *zname[2];
    int zk = compressor_arrays(tr, zbuf, zlen, zname, &ztotal);
    if (!zk) return CKPT_OK;
    char path[4400];
    ckpt_t ck;
    describe_compressor(tr, &ck, step);
    for (int k = 0, off = 0; k < zk; off += (int)zlen[k], k++)
        ckpt_blob(&ck, zname[k], zhost + off, zlen[k] * sizeof(float));
    compressor_path(path, sizeof path, set, tr->dist.rank);
    int rc = ckpt_load(&ck, path, err, len);
    if (rc == CKPT_OK && (long)ckpt_get_state(&ck, "step") != step) {
        snprintf(err, len, "checkpoint %.600s is inconsistent: its step does not match its set", path);
        rc = CKPT_DAMAGED;
    }
    return rc;
}

/* Read checkpoint set `step` and rebuild the full master weights and Adam
 * moments from its parts (host arrays of the full model), and this rank's
 * compressor state into zhost (compressor_arrays' floats, in order; NULL:
 * none) when `compressed` ranks of this run keep one. Returns CKPT_OK or an
 * error code with the reason in err. */
static int load_set(train_t *tr, long step, float *full[3], float *zhost, int compressed, char *err, size_t len) {
    char set[4200], path[4400];
    ckpt_set_path(set, sizeof set, tr->o.ckpt_dir, step, 0);
    int parts = 0, found = 0, rc = load_head(tr, step, set, compressed, &parts, err, len);
    if (rc != CKPT_OK) return rc;
    size_t N = model_param_count(&tr->cfg);
    float *cover = xcalloc(N, sizeof(float)), *ones = NULL;
    for (int k = 0; k < 3; k++) memset(full[k], 0, N * sizeof(float));
    DIR *dir = opendir(set);
    struct dirent *e;
    while (dir && rc == CKPT_OK && (e = readdir(dir)) != NULL) {
        int r, used = 0;
        if (sscanf(e->d_name, "part_%5d.ckpt%n", &r, &used) != 1 || e->d_name[used] != 0) continue;
        ckpt_part_path(path, sizeof path, set, r);
        found++;
        rc = load_part(tr, path, full, cover, &ones, err, len);
    }
    if (dir) closedir(dir);
    if (rc == CKPT_OK && found != parts) {
        snprintf(err, len, "checkpoint %.600s has %d of its %d parts", set, found, parts);
        rc = CKPT_DAMAGED;
    }
    if (rc == CKPT_OK)
        for (size_t i = 0; i < N; i++)
            if (cover[i] == 0.0f) {
                snprintf(err, len, "checkpoint %.600s does not cover every parameter (element %zu)", set, i);
                rc = CKPT_DAMAGED;
                break;
            }
    free(cover);
    free(ones);
    if (rc == CKPT_OK) rc = load_compressor(tr, step, set, zhost, err, len);
    return rc;
}

/* --resume: the newest readable set, falling back past damaged ones. Returns
 * the step (0: none) with full[] filled. */
static long resume(train_t *tr, float *full[3], float *zhost) {
    const train_opts_t *o = &tr->o;
    long steps[256];
    int n = 0;
    if (tr->dist.rank == 0) n = ckpt_list(o->ckpt_dir, steps, 256);
    MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Bcast(steps, n, MPI_LONG, 0, MPI_COMM_WORLD));
    if (n == 0) {   /* nothing complete: only a directory with nothing at all is a fresh start */
        long tmp[1] = {0};
        int info[2] = {0, 0};
        if (tr->dist.rank == 0) {
            info[0] = ckpt_is_set(o->ckpt_dir);
            info[1] = ckpt_list_tmp(o->ckpt_dir, tmp, 1);
        }
        MPI_CHECK(MPI_Bcast(info, 2, MPI_INT, 0, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Bcast(tmp, 1, MPI_LONG, 0, MPI_COMM_WORLD));
        if (info[0])
            usage_error("--resume: %s is one checkpoint set, not a checkpoint directory: give --ckpt-dir the "
                        "directory that holds the step_N sets", o->ckpt_dir);
        if (info[1])
            usage_error("--resume: %s holds no complete checkpoint, only incomplete ones (step_%08ld.tmp: a save "
                        "that never finished); there is nothing to resume from: run without --resume to start "
                        "over", o->ckpt_dir, tmp[0]);
        say("resume:  no checkpoint in %s yet: starting from step 0\n", o->ckpt_dir);
        return 0;
    }
    int compressed = zhost != NULL;
    dist_allreduce(&compressed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, "checkpoint check");
    char err[800], first_err[800] = "";
    for (int i = 0; i < n; i++) {
        err[0] = 0;
        int rc = load_set(tr, steps[i], full, zhost, compressed, err, sizeof err);
        /* Every rank read the same files; the worst result decides, and the
         * first rank that failed says why. */
        int worst = rc, who = rc != CKPT_OK ? tr->dist.rank : tr->dist.world;
        dist_allreduce(&worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, "checkpoint check");
        dist_allreduce(&who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, "checkpoint check");
        if (worst == CKPT_OK) {
            if (*first_err) say("resume:  the newer checkpoints are damaged (%s); using step %ld\n",
                                first_err, steps[i]);
            /* Out of the way of this run's own saves of those steps, and
             * kept for a look: step_N.damaged. */
            for (int j = 0; j < i && tr->dist.rank == 0; j++) {
                char aside[4300];
                if (ckpt_set_aside(o->ckpt_dir, steps[j], aside, sizeof aside) == 0)
                    say("resume:  moved the damaged set of step %ld aside: %s\n", steps[j], aside);
                else
                    die("cannot move the damaged checkpoint of step %ld aside: %s", steps[j], aside);
            }
            char set[4200];
            ckpt_set_path(set, sizeof set, o->ckpt_dir, steps[i], 0);
            say("resume:  %s: step %ld, continuing at step %ld\n", set, steps[i], steps[i] + 1);
            return steps[i];
        }
        MPI_CHECK(MPI_Bcast(err, sizeof err, MPI_CHAR, who, MPI_COMM_WORLD));
        if (worst == CKPT_MISMATCH) usage_error("%s", err);
        say("resume:  %s\n", err);
        if (!*first_err) snprintf(first_err, sizeof first_err, "%.700s", err);
    }
    usage_error("no readable checkpoint in %s: %s", o->ckpt_dir, first_err);
}

/* ---- weights ------------------------------------------------------------------------ */
static uint64_t params_hash(train_t *tr, float *host) {
    model_get_params(&tr->model, host);
    return hash_bytes(host, tr->model.size * sizeof(float), HASH_SEED);
}

/* Every rank of the gradient group holds the same weights: their hashes agree. */
static uint64_t check_same_weights(train_t *tr, const char *when) {
    if (!tr->model.params) return 0;
    float *host = xmalloc(tr->model.size * sizeof(float));
    uint64_t h = params_hash(tr, host), lo = h, hi = h;
    free(host);
    dist_allreduce(&lo, 1, MPI_UINT64_T, MPI_MIN, tr->grad.mpi, "weights check");
    dist_allreduce(&hi, 1, MPI_UINT64_T, MPI_MAX, tr->grad.mpi, "weights check");
    if (lo != hi) die("weights differ across data-parallel ranks %s (checksum %016" PRIx64 " here)", when, h);
    return h;
}

void train_optimizer(train_t *tr, const optim_piece_t *pieces, int npieces, size_t n) {
    model_t *m = &tr->model;
    optim_piece_t whole = {0, 0, m->size, m->grads, m->params};
    if (!pieces) {
        pieces = &whole;
        npieces = 1;
        n = m->size;
    }
    size_t N = model_param_count(&tr->cfg);
    float *full[3] = {xmalloc(N * sizeof(float)), NULL, NULL};
    long start = 0;
    float *zbuf[2], *zhost = NULL;
    size_t zlen[2], ztotal;
    const char *zname[2];
    int zk = compressor_arrays(tr, zbuf, zlen, zname, &ztotal);
    if (tr->o.resume) {
        full[1] = xmalloc(N * sizeof(float));
        full[2] = xmalloc(N * sizeof(float));
        if (zk) zhost = xmalloc(ztotal * sizeof(float));
        start = resume(tr, full, zhost);
    }
    if (start)   /* the compressor continues where it stopped */
        for (int k = 0, off = 0; k < zk; off += (int)zlen[k], k++)
            dev_from_host(&tr->dev, zbuf[k], zhost + off, zlen[k] * sizeof(float));
    free(zhost);
    if (start == 0) {   /* the data-parallel root initialises; the others receive */
        if (tr->grad.rank == 0) model_init_params(full[0], &tr->cfg, (uint64_t)tr->o.c.seed);
        bcast_floats(full[0], N, 0, tr->grad.mpi);
    }
    tr->start = start;
    float *host[3] = {xcalloc(n, sizeof(float)), xcalloc(n, sizeof(float)), xcalloc(n, sizeof(float))};
    for (int p = 0; p < npieces; p++)
        for (int k = 0; k < (start ? 3 : 1); k++)
            model_shard_slice(&tr->cfg, &tr->shard, pieces[p].flat, pieces[p].count, full[k],
                              host[k] + pieces[p].off);
    optim_init(&tr->opt, pieces, npieces, n, host[0], &tr->cfg, &tr->shard, &tr->dev);
    tr->opt.sgd = !strcmp(tr->o.optim, "sgd");
    if (start) {
        dev_from_host(&tr->dev, tr->opt.m, host[1], n * sizeof(float));
        dev_from_host(&tr->dev, tr->opt.v, host[2], n * sizeof(float));
    }
    if (m->params) {   /* the whole shard's working weights */
        float *w = xmalloc(m->size * sizeof(float));
        model_shard_slice(&tr->cfg, &tr->shard, 0, m->size, full[0], w);
        model_load_params(m, w);
        free(w);
    } else {           /* only the pieces' */
        for (int p = 0; p < npieces; p++)
            if (pieces[p].work)
                op_cast(&tr->dev, tr->opt.master + pieces[p].off, DT_F32, pieces[p].work, tr->dtype,
                        pieces[p].count);
    }
    for (int k = 0; k < 3; k++) {
        free(full[k]);
        free(host[k]);
    }
    uint64_t h = check_same_weights(tr, "after the broadcast");
    int g = tr->grad.size;
    if (m->params)
        say("weights: %s; checksum %016" PRIx64 " identical on the %d rank%s of each data-parallel group\n",
            start ? "resumed" : "initialised on the data-parallel root, broadcast", h, g, g == 1 ? "" : "s");
    else
        say("weights: %s\n", start ? "resumed" : "initialised on the data-parallel root, broadcast");
}

/* The full model of a per-piece host array (n elements, piece order): each
 * rank places what it owns, and a sum over the world completes it. */
static float *gather_full(train_t *tr, const float *host) {
    size_t N = model_param_count(&tr->cfg);
    float *full = xcalloc(N, sizeof(float));
    if (tr->part_unique)
        for (int p = 0; p < tr->opt.npieces; p++)
            model_shard_place(&tr->cfg, &tr->shard, tr->opt.pieces[p].flat, tr->opt.pieces[p].count,
                              host + tr->opt.pieces[p].off, full, 1);
    sum_floats(full, N, MPI_COMM_WORLD);
    return full;
}

float *train_full_master(train_t *tr) {
    float *host = xmalloc(tr->opt.n * sizeof(float));
    dev_to_host(&tr->dev, host, tr->opt.master, tr->opt.n * sizeof(float));
    float *full = gather_full(tr, host);
    free(host);
    return full;
}

/* --dump: the full model's weights (as the step used them), the whole
 * global batch, its mean loss, and the gradient of that loss. */
static void write_dump(train_t *tr, double loss) {
    const optim_t *o = &tr->opt;
    float *g = xcalloc(o->n, sizeof(float));
    for (int p = 0; p < o->npieces; p++)
        dev_to_host(&tr->dev, g + o->pieces[p].off, o->pieces[p].grad, o->pieces[p].count * sizeof(float));
    float *grads = gather_full(tr, g), *params = train_full_master(tr);
    if (tr->dtype == DT_BF16)   /* the working weights the step used */
        for (size_t i = 0; i < model_param_count(&tr->cfg); i++) params[i] = bf16_to_f32(f32_to_bf16(params[i]));
    if (tr->dist.rank == 0) {
        size_t nt = (size_t)tr->o.batch * tr->o.seq;
        int *in = xmalloc(nt * sizeof(int)), *tg = xmalloc(nt * sizeof(int));
        data_batch(&tr->data, 0, tr->o.batch, 0, tr->o.batch, in, tg);
        model_dump_write(tr->o.dump, &tr->cfg, params, in, tg, tr->o.batch, loss, grads);
        say("dump:    step 1 (parameters, tokens, loss %.6f, gradients) written to %s\n", loss, tr->o.dump);
        free(in);
        free(tg);
    }
    free(g);
    free(grads);
    free(params);
}

/* ---- the loop --------------------------------------------------------------------------- */
static double sent_total(const train_t *tr) {
    double s = comm_sent_bytes(&tr->grad);
    for (int a = 0; a < AXES; a++) s += comm_sent_bytes(&tr->axis[a]);
    for (int i = 0; i < tr->ncomms; i++) s += comm_sent_bytes(tr->comms[i]);
    return s;
}

void train_hooks_add(train_hooks_t *h, train_hook_fn fn, void *ctx) {
    if (h->n == TRAIN_MAX_HOOKS) die("train: more than %d hooks at one point", TRAIN_MAX_HOOKS);
    h->at[h->n].fn = fn;
    h->at[h->n++].ctx = ctx;
}

static void run_hooks(train_t *tr, const train_hooks_t *h) {
    for (int i = 0; i < h->n; i++) h->at[i].fn(tr, h->at[i].ctx);
}

float train_lr(const train_t *tr, long update) {
    const train_opts_t *o = &tr->o;
    int per = tr->updates_per_step;
    return lr_at((int)update, o->warmup * per, o->steps * per, (float)o->lr, (float)(o->lr / 10));
}

float train_update(train_t *tr, long update, double sumsq, double *norm) {
    float scale = clip_factor(sumsq, (float)tr->o.clip, norm), lr = train_lr(tr, update);
    optim_step(&tr->opt, tr->dtype, lr, scale, (int)update);
    run_hooks(tr, &tr->after_update);
    dev_sync(&tr->dev);
    return lr;
}

void train_record(train_t *tr, long step, double loss, double norm) {
    size_t most = (size_t)tr->o.steps * (size_t)tr->updates_per_step;   /* every update of the run */
    if (!tr->run_steps) {
        tr->run_steps = xmalloc(sizeof(long) * most);
        tr->run_losses = xmalloc(sizeof(double) * most);
        tr->run_norms = xmalloc(sizeof(double) * most);
    }
    if ((size_t)tr->nrun == most) die("train: more than %zu results recorded", most);
    tr->run_steps[tr->nrun] = step;
    tr->run_losses[tr->nrun] = loss;
    tr->run_norms[tr->nrun++] = norm;
}

void train_run(train_t *tr, train_step_fn step_fn, void *ctx) {
    const train_opts_t *o = &tr->o;
    int world = tr->dist.world;
    say("\n");
    for (long step = tr->start + 1; step <= o->steps; step++) {
        trace_pause(!(step >= tr->start + 2 && step < tr->start + 2 + o->trace_steps));
        double t0 = now_s(), sent0 = sent_total(tr);
        record_pause(step == tr->start + 1);   /* the record: the steps after the first, each whole */
        record_mark("step");
        train_step_t st = {0};
        st.bubble_s = -1;
        step_fn(tr, ctx, step, &st);

        /* The step's numbers over the world: the counted loss, the exposed
         * communication and the bubble (means over ranks), recomputation,
         * and the squared gradient norm of the unique parts. */
        double red[8] = {st.loss, st.exposed_s, st.bubble_s >= 0 ? st.bubble_s : 0, st.recompute_flops,
                         tr->part_unique ? optim_grad_sumsq(&tr->opt) : 0.0, st.bubble_s >= 0,
                         st.fwd_s, st.bwd_s};
        record_enter();
        record_call(tr->record_world, COLL_ALLREDUCE, 0, 0, 0, sizeof red);
        dist_allreduce(red, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "step totals");
        record_leave();
        double loss = red[0] / (double)tr->global_tokens, exposed_ms = red[1] / world * 1e3;
        double bubble_s = red[5] > 0 ? red[2] / red[5] : -1, recompute = red[3];
        if (step == 1 && o->dump) write_dump(tr, loss);

        double to = now_s(), norm;
        float lr = train_update(tr, step, tr->own_norm ? optim_grad_sumsq(&tr->opt) : red[4], &norm);
        double t1 = now_s();
        record_mark("end");   /* the measured step ends here too */
        record_pause(1);
        trace_span(tr->trace_track, "optimizer", to, t1);
        double mx[2] = {(double)dev_mem()->total_peak, t1 - t0};
        dist_allreduce(mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "step totals");
        /* bytes after the update too (ZeRO all-gathers the updated weights there) */
        double sent = sent_total(tr) - sent0;
        dist_allreduce(&sent, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "step totals");

        double secs = mx[1], ms = secs * 1e3, tok_s = tr->global_tokens / secs;
        double model_flops = tr->flops_token * (double)tr->global_tokens;
        double mfu = tr->peak > 0 ? model_flops / secs / (world * tr->peak) : NAN;
        double hfu = tr->peak > 0 ? (model_flops + recompute) / secs / (world * tr->peak) : NAN;
        if (hfu > 1.0)
            die("HFU %.0f%% is impossible: the peak of %.4g TFLOP/s per rank is wrong (pass --peak)",
                100 * hfu, tr->peak / 1e12);
        char ub[48], tb[32], bub[112] = "";
        if (bubble_s >= 0) snprintf(bub, sizeof bub, " | bubble %.1f%%", 100 * bubble_s / secs);
        if (recompute > 0) {   /* recomputation: the hardware did more than the model asks */
            char hu[48];
            size_t nb = strlen(bub);
            snprintf(bub + nb, sizeof bub - nb, " | HFU %s",
                     perf_util_str(hu, sizeof hu, (model_flops + recompute) / secs / world, tr->peak));
        }
        say("step %5ld/%d | loss %.4f | lr %.2e | norm %.3f | %7.1f ms | %s tok/s | MFU %s | comm %.2f ms "
            "exposed%s", step, o->steps, loss, lr, norm, ms, train_si(tb, sizeof tb, tok_s),
            perf_util_str(ub, sizeof ub, model_flops / secs / world, tr->peak), exposed_ms, bub);
        if (tr->dist.rank == 0) run_hooks(tr, &tr->step_note);
        say("\n");
        if (tr->csv) {
            fprintf(tr->csv, "%ld,%.6f,%.3f,%.1f,%.6g,%.6g,%.6g,%.6g,%.3f,%.3f,", step, loss, ms, tok_s,
                    100 * mfu, 100 * hfu, lr, norm, exposed_ms, ms - exposed_ms);
            if (bubble_s >= 0) fprintf(tr->csv, "%.4f,", bubble_s / secs); else fprintf(tr->csv, "nan,");
            fprintf(tr->csv, "%.3f,%.4f,%d,%.4f,%.4f", mx[0] / 1048576.0, sent / world / 1e6, world,
                    tr->data.unigram_entropy, tr->data.entropy_rate);
            csv_end_row(tr->csv, "measured");
            out_flush(tr->csv, tr->o.c.csv);
        }
        train_record(tr, step, loss, norm);
        if (step > tr->start + 1) {   /* the first step pays for warming up */
            tr->sum_ms += ms;
            tr->sum_exposed += exposed_ms;
            tr->sum_fwd += red[6] / world * 1e3;   /* means over ranks, as the exposed time: */
            tr->sum_bwd += red[7] / world * 1e3;   /* ranks that wait longer compute less */
            tr->sum_opt += (t1 - to) * 1e3;
            tr->sum_bubble += bubble_s >= 0 ? bubble_s * 1e3 : 0;
            tr->sum_recompute += recompute;
            tr->timed++;
        }
        int due = o->ckpt_dir && ((o->ckpt_every && step % o->ckpt_every == 0) || step == o->steps);
        if (tr->after_step) tr->after_step(tr, tr->after_step_ctx, step, due);
        else if (due) save_checkpoint(tr, step);
    }
    trace_pause(0);
    trace_write();
    record_write();
    tr->sent_bytes = sent_total(tr);
}

static void save_final(train_t *tr) {
    float *w = train_full_master(tr);
    if (tr->dist.rank == 0) {
        const char *path = tr->o.save_final;
        FILE *f = fopen(path, "wb");
        if (!f) die("cannot write %s: %s", path, strerror(errno));
        uint32_t version = FINAL_VERSION, k = (uint32_t)tr->nrun;
        uint64_t np = model_param_count(&tr->cfg);
        fwrite(FINAL_MAGIC, 1, 8, f);
        fwrite(&version, 4, 1, f);
        fwrite(&k, 4, 1, f);
        fwrite(&np, 8, 1, f);
        for (int i = 0; i < tr->nrun; i++) {
            int64_t s = tr->run_steps[i];
            fwrite(&s, 8, 1, f);
            fwrite(&tr->run_losses[i], 8, 1, f);
            fwrite(&tr->run_norms[i], 8, 1, f);
        }
        fwrite(w, sizeof(float), np, f);
        out_close(f, path);   /* every fwrite above is checked here */
    }
    free(w);
}

void train_finish(train_t *tr) {
    int world = tr->dist.world;
    uint64_t h = check_same_weights(tr, "at the end");
    if (tr->timed > 0) {
        double ms = tr->sum_ms / tr->timed, ex = tr->sum_exposed / tr->timed;
        double flops_s = tr->flops_token * tr->global_tokens / (ms / 1e3) / world;
        char ub[48], tb[32], hb[64] = "", hu[48];
        if (tr->sum_recompute > 0)
            snprintf(hb, sizeof hb, " | HFU %s", perf_util_str(hu, sizeof hu, flops_s + tr->sum_recompute /
                                                              tr->timed / (ms / 1e3) / world, tr->peak));
        say("\nmean of steps %ld-%d: %.1f ms/step (%.1f compute + %.2f exposed comm) | %s tok/s | MFU %s%s\n",
            tr->start + 2, tr->o.steps, ms, ms - ex, ex,
            train_si(tb, sizeof tb, tr->global_tokens / (ms / 1e3)), perf_util_str(ub, sizeof ub, flops_s, tr->peak), hb);
        double f = tr->sum_fwd / tr->timed, b = tr->sum_bwd / tr->timed, op = tr->sum_opt / tr->timed;
        /* pipelines: idle, waiting on a neighbour; a mean over ranks like the
         * forward, backward and exposed times, so the line adds up to the step */
        double bu = tr->sum_bubble / tr->timed;
        char bub[48] = "";
        if (bu > 0) snprintf(bub, sizeof bub, " + pipeline bubble %.1f", bu);
        say("time:    forward %.1f + backward %.1f + exposed comm %.2f%s + optimizer %.1f + other %.1f ms "
            "(means over ranks where shared)\n", f, b, ex, bub, op, ms - f - b - ex - bu - op);
    }
    const mem_stats_t *mem = dev_mem();
    double peak[MEM_KINDS + 1];
    for (int k = 0; k < MEM_KINDS; k++) peak[k] = (double)mem->peak[k];
    peak[MEM_KINDS] = (double)mem->total_peak;
    dist_allreduce(peak, MEM_KINDS + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "memory totals");
    say("memory:  %.2f MB at most on a rank (largest per kind:", peak[MEM_KINDS] / 1e6);
    for (int k = 0; k < MEM_KINDS; k++)
        if (peak[k] > 0) say(" %s %.2f", mem_kind_name[k], peak[k] / 1e6);
    say(")\n");
    if (tr->model.params)
        say("weights: checksum %016" PRIx64 " identical on the %d rank%s of each data-parallel group "
            "after step %d\n", h, tr->grad.size, tr->grad.size == 1 ? "" : "s", tr->o.steps);
    if (tr->o.save_final) save_final(tr);

    if (tr->csv) out_close(tr->csv, tr->o.c.csv);
    free(tr->tokens);
    free(tr->targets);
    free(tr->run_steps);
    free(tr->run_losses);
    free(tr->run_norms);
    optim_free(&tr->opt);
    if (tr->acts.bufs) model_acts_free(&tr->model, &tr->acts);
    model_free(&tr->model);
    data_free(&tr->data);
    comm_destroy(&tr->grad);
    for (int a = 0; a < AXES; a++) comm_destroy(&tr->axis[a]);
    device_finalize(&tr->dev);
    mesh_destroy(&tr->mesh);
    dist_finalize();
}

int train_main(int argc, char **argv, const train_chapter_t *ch) {
    train_t tr;
    train_defaults(&tr);
    if (ch->defaults) ch->defaults(&tr, ch->ctx, argc, argv);
    train_init(&tr, &argc, &argv, &ch->prog);
    int tp = 1, cp = 1, pp = 1;
    if (ch->check) ch->check(&tr, ch->ctx, &tp, &cp, &pp);
    train_setup(&tr, tp, cp, pp);
    void *step_ctx = NULL;
    train_step_fn step = ch->compose(&tr, ch->ctx, &step_ctx);
    train_run(&tr, step, step_ctx);
    if (ch->report) ch->report(&tr, ch->ctx);
    train_finish(&tr);
    return 0;
}
