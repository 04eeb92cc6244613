/* main.c: the collective benchmark, nccl-tests style.
 *
 *   mpirun -np 4 ./02_allreduce/allreduce --op allreduce --algo all \
 *       --minbytes 4 --maxbytes 64M --stepfactor 2
 *
 * For every op and algorithm asked for, and every size of the sweep: fill the
 * inputs, run once and compare every element with the exact result, then time
 * --iters calls after --warmup untimed ones: the time of one call on the
 * slowest rank (nccl-tests averages over ranks by default; the maximum is the
 * honest figure when, as for gather, the other ranks finish long before the
 * root). That is repeated --repeat times: the table and the CSV give the
 * median, and the CSV also the fastest and slowest repeat, so the noise shows.
 * Beside each row, the alpha-beta model's prediction for the algorithm, from
 * a ping-pong measurement of the link at start-up; after each algorithm's
 * sweep, its own alpha-beta fit. A watchdog turns a hang into an error.
 *
 * Test-only: ALLREDUCE_TEST_SLOW=RANK:US makes RANK sleep US microseconds
 * after each timed call, inside the timed region (the time reported must
 * cover it: it is the slowest rank's); ALLREDUCE_TEST_HANG=RANK makes RANK
 * stop before its first timed call (the watchdog must report it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "check.h"
#include "comm.h"
#include "compressed.h"
#include "device.h"
#include "dist.h"
#include "perf.h"
#include "replay.h"
#include "trace.h"

#define CSV_HEADER "op,algo,ranks,bytes,count,dtype,time_us,time_min_us,time_max_us,algbw_gbs," \
                   "busbw_gbs,model_us,wrong"

typedef struct {
    size_t bytes, count;
    double time_us;            /* median over the repeats of the slowest rank's time per call */
    double time_min, time_max; /* fastest and slowest repeat */
    double algbw, busbw;       /* from the median */
    double model_us;           /* alpha-beta prediction; NAN: none */
    long long wrong;           /* -1: not checked */
} row_t;

/* The test-only knobs (see the top). */
static int slow_rank = -1, hang_rank = -1;
static long slow_us;

static void test_knobs(void) {
    const char *s = getenv("ALLREDUCE_TEST_SLOW"), *h = getenv("ALLREDUCE_TEST_HANG");
    if (s && sscanf(s, "%d:%ld", &slow_rank, &slow_us) != 2)
        usage_error("ALLREDUCE_TEST_SLOW=%s: expected RANK:MICROSECONDS", s);
    if (h) hang_rank = atoi(h);
}

static void sleep_us(long us) {
    nanosleep(&(struct timespec){us / 1000000, (us % 1000000) * 1000}, NULL);
}

/* Buffers that grow to the largest size asked for. */
typedef struct { void *p; size_t bytes; int on_dev; } buf_t;

static void *buf_get(buf_t *b, const device_t *dev, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (b->bytes < bytes) {
        if (b->p) b->on_dev ? dev_free(dev, b->p) : free(b->p);
        b->p = b->on_dev ? dev_alloc(dev, bytes) : xmalloc(bytes);
        b->bytes = bytes;
    }
    return b->p;
}

typedef struct {
    const device_t *dev;
    bench_ctx_t x;
    buf_t hsend, hrecv, dsend, drecv;
    int iters, warmup, repeat, check, corrupt;
    ab_fit_t link;     /* the ping-pong's alpha and beta */
    size_t chunk;      /* bytes */
} harness_t;

/* One measurement: check, then time. Returns the row (same on every rank). */
static row_t measure(harness_t *h, const algo_t *a, const bench_case_t *c) {
    size_t es = dtype_size(c->dt);
    int staged = a->lib && h->dev->kind == DEV_CUDA;   /* lib on device buffers */
    void *hs = buf_get(&h->hsend, h->dev, c->send_count * es);
    void *hr = buf_get(&h->hrecv, h->dev, c->recv_count * es);
    void *send = hs, *recv = hr;
    bench_fill(c, hs, hr);
    if (staged) {
        send = buf_get(&h->dsend, h->dev, c->send_count * es);
        recv = buf_get(&h->drecv, h->dev, c->recv_count * es);
        dev_from_host(h->dev, send, hs, c->send_count * es);
        dev_from_host(h->dev, recv, hr, c->recv_count * es);
    }
    if (bench_ops[c->op].in_place) send = recv;

    bench_doing("%s %s at %zu B on %d ranks (the checked call)", bench_ops[c->op].name, a->name,
                   c->bytes, c->world);
    a->run(&h->x, c, send, recv);
    dev_sync(h->dev);
    long long wrong = -1;
    if (h->check && bench_check_possible(c)) {
        if (staged) dev_to_host(h->dev, hr, recv, c->recv_count * es);
        if (h->corrupt && c->check_count &&
            c->rank == (c->op == OP_REDUCE || c->op == OP_GATHER ? c->root : c->world - 1)) {
            size_t i = c->check_count / 2;   /* one element, off by one */
            dtype_set(hr, c->dt, i, dtype_get(hr, c->dt, i) + 1.0f);
        }
        long long mine = (long long)bench_check(c, hr);
        MPI_CHECK(MPI_Allreduce(&mine, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    }

    bench_doing("%s %s at %zu B on %d ranks (the timed calls)", bench_ops[c->op].name, a->name,
                   c->bytes, c->world);
    for (int i = 0; i < h->warmup; i++) {
        a->run(&h->x, c, send, recv);
        watch_tick();
    }
    dev_sync(h->dev);
    if (c->rank == hang_rank)
        for (;;) pause();   /* ALLREDUCE_TEST_HANG: the others wait for us forever */
    double per_repeat[64];
    const int reps = h->repeat < 64 ? h->repeat : 64;
    char label[REPLAY_NAME];   /* the record's mark of each call: op:algo:bytes */
    snprintf(label, sizeof label, "%s:%s:%zu", bench_ops[c->op].name, a->name, c->bytes);
    for (int rep = 0; rep < reps; rep++) {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        record_pause(rep > 0);
        double t0 = now_s();
        for (int i = 0; i < h->iters; i++) {
            record_mark(label);
            a->run(&h->x, c, send, recv);
            if (c->rank == slow_rank) sleep_us(slow_us);   /* ALLREDUCE_TEST_SLOW */
            watch_tick();
        }
        dev_sync(h->dev);
        record_mark("end");
        record_pause(1);
        /* the call is done when its slowest rank is: for rooted ops the others
         * may return long before the root has everything */
        double mine = (now_s() - t0) / h->iters * 1e6, slowest = 0;
        MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        per_repeat[rep] = slowest;
    }

    row_t r;
    r.bytes = c->bytes;
    r.count = c->bytes / es;
    r.time_us = median(per_repeat, reps);   /* sorts per_repeat */
    r.time_min = per_repeat[0];
    r.time_max = per_repeat[reps - 1];
    r.algbw = (double)c->bytes / r.time_us / 1e3;   /* GB/s: bytes / (us x 1e3) */
    r.busbw = r.algbw * bench_ops[c->op].busbw_factor(c->world);
    r.model_us = NAN;
    if (a->model && h->link.ok) r.model_us = a->model(c, h->link, h->chunk);
    r.wrong = wrong;
    return r;
}

static int algo_matches(const algo_t *a, const char *want) {
    return strcmp(want, "all") == 0 || strcmp(want, a->name) == 0;
}

static void print_table_head(op_id op, int world, int root) {
    const op_t *o = &bench_ops[op];
    say("\n# %s: busbw = algbw x %s = %.3f with N = %d", o->name, o->factor_text,
        o->busbw_factor(world), world);
    if (op == OP_BROADCAST || op == OP_REDUCE || op == OP_SCATTER || op == OP_GATHER)
        say(", root %d", root);
    say("\n#%11s %13s %6s %8s %10s %6s %8s %8s %7s   %10s %6s\n", "size", "count", "type", "algo",
        "time", "spread", "algbw", "busbw", "#wrong", "model", "error");
    say("#%11s %13s %6s %8s %10s %6s %8s %8s %7s   %10s %6s\n", "(B)", "(elements)", "", "",
        "(us)", "(%)", "(GB/s)", "(GB/s)", "", "(us)", "(%)");
}

/* A row: the median time, the spread of the repeats ((max - min) / median),
 * the bandwidths, and the alpha-beta model's prediction with its error. */
static void print_rows(const char *label, dtype_t dt, const row_t *rows, int n, ab_fit_t fit,
                       double factor) {
    for (int i = 0; i < n; i++) {
        const row_t *r = &rows[i];
        char wrong[24], model[24] = "-", err[24] = "-";
        if (r->wrong < 0) snprintf(wrong, sizeof wrong, "N/A");
        else snprintf(wrong, sizeof wrong, "%lld", r->wrong);
        if (r->model_us > 0) {
            snprintf(model, sizeof model, "%.2f", r->model_us);
            snprintf(err, sizeof err, "%+.0f", (r->time_us - r->model_us) / r->model_us * 100);
        }
        say("%12zu %13zu %6s %8s %10.2f %6.0f %8.3f %8.3f %7s   %10s %6s\n", r->bytes, r->count,
            dtype_name(dt), label, r->time_us, (r->time_max - r->time_min) / r->time_us * 100,
            r->algbw, r->busbw, wrong, model, err);
    }
    if (!fit.ok) {
        say("#   %s: alpha-beta fit needs two sizes or more\n", label);
        return;
    }
    /* beta in us/B: 1/beta is the bandwidth the curve tends to for long messages */
    double bw = fit.beta_us_per_byte > 0 ? 1e-3 / fit.beta_us_per_byte : INFINITY;
    say("#   %s fit: time = alpha + bytes x beta, alpha %.2f us (latency), "
        "1/beta %.3f GB/s algbw = %.3f GB/s busbw\n", label, fit.alpha_us, bw, bw * factor);
}

/* The command line, checked. */
typedef struct {
    common_args_t ca;
    size_t minbytes, maxbytes, chunk;
    double stepfactor, timeout;
    int iters, warmup, repeat, root, check, corrupt;
    const char *op_s, *algo_s;
    const char *compress;   /* --compress: the specs, or NULL */
    const char *record;     /* --record: the action record of the first timed repeat (common/trace.h) */
    dtype_t dt;
} options_t;

/* Parse and check the flags; every refusal is one usage_error line. */
static void parse_options(int argc, char **argv, int world, options_t *o) {
    *o = (options_t){.ca = COMMON_ARGS_DEFAULT, .minbytes = 4, .maxbytes = 64u << 20,
                     .chunk = 512u << 10,   /* fits L2 with room to spare */
                     .stepfactor = 2, .timeout = 60, .iters = 20, .warmup = 5, .repeat = 5,
                     .op_s = "allreduce", .algo_s = "all"};
    int check_on = 0, check_off = 0;
    const char *dtype_s = "fp32";
    arg_t flags[] = {
        {"op", ARG_CHOICE, &o->op_s, "collective to measure",
         "allreduce|reduce_scatter|allgather|broadcast|reduce|scatter|gather|alltoall|all", 0, 0},
        {"algo", ARG_CHOICE, &o->algo_s,
         "ps: parameter server, tree: binomial, rd: recursive doubling, pairwise: "
         "all-to-all, lib: MPI's or NCCL's own (--comm), all: each the op has",
         "ps|tree|rd|ring|pairwise|lib|all", 0, 0},
        {"dtype", ARG_CHOICE, &dtype_s, "element type", "fp32|bf16", 0, 0},
        {"minbytes", ARG_BYTES, &o->minbytes, "smallest size (nccl-tests -b)", NULL, 1, 1099511627776.0},
        {"maxbytes", ARG_BYTES, &o->maxbytes, "largest size (nccl-tests -e)", NULL, 1, 1099511627776.0},
        {"stepfactor", ARG_DOUBLE, &o->stepfactor, "size multiplier between steps (nccl-tests -f)",
         NULL, 1.01, 1024},
        {"iters", ARG_INT, &o->iters, "timed calls per size (nccl-tests -n)", NULL, 1, 1e6},
        {"warmup", ARG_INT, &o->warmup, "untimed calls before timing (nccl-tests -w)", NULL, 0, 1e6},
        {"repeat", ARG_INT, &o->repeat, "times the --iters calls are timed: the median is reported, "
         "and min and max in the CSV", NULL, 1, 64},
        {"timeout", ARG_DOUBLE, &o->timeout, "seconds without progress before the watchdog calls it "
         "a hang and stops the run (0: never)", NULL, 0, 1e6},
        {"root", ARG_INT, &o->root, "root rank of broadcast, reduce, scatter, gather", NULL, 0, 1e6},
        {"chunk", ARG_BYTES, &o->chunk, "pipeline chunk of the hand-written algorithms", NULL, 4,
         1073741824.0},
        {"check", ARG_FLAG, &check_on, "exact check of every element (the default)", NULL, 0, 0},
        {"no-check", ARG_FLAG, &check_off, "skip the check (nccl-tests -c 0)", NULL, 0, 0},
        {"corrupt", ARG_FLAG, &o->corrupt,
         "change one result element per size before the check, to see it fail", NULL, 0, 0},
        {"compress", ARG_STRING, &o->compress, "instead of --op: the compressed all-reduce of fp32 "
         "gradients, comma-separated none|int8|sign|topk:F|powersgd:R, or all (" COMPRESS_ALL ")", NULL, 0, 0},
        {"record", ARG_STRING, &o->record, "record every rank's calls and compute (CPU time) in the first "
         "timed repeat of each size, one mark per call, for replay/replay (CPU only)", NULL, 0, 0},
        COMMON_ARGS(o->ca),
    };
    args_parse(argc, argv, "02_allreduce/allreduce",
               "Collective communication benchmark in the style of nccl-tests: hand-written\n"
               "algorithms over MPI point-to-point beside the library's own, every element\n"
               "checked exactly, bandwidths as nccl-tests computes them, the alpha-beta model's\n"
               "prediction for each algorithm from a ping-pong measurement of the link.",
               flags, ARRAY_LEN(flags));
    if (check_on && check_off) usage_error("--check and --no-check contradict each other");
    if (o->corrupt && check_off) usage_error("--corrupt needs the check (drop --no-check)");
    if (o->minbytes > o->maxbytes)
        usage_error("--minbytes (%zu) must not exceed --maxbytes (%zu)", o->minbytes, o->maxbytes);
    if (o->root >= world) usage_error("--root %d is not a rank (world %d)", o->root, world);
    if (o->compress) {
        if (strcmp(o->compress, "all") == 0) o->compress = COMPRESS_ALL;
        if (strcmp(dtype_s, "fp32")) usage_error("--compress compresses fp32 gradients: drop --dtype %s", dtype_s);
        if (args_given(&o->op_s) || args_given(&o->algo_s))
            usage_error("--compress measures the compressed all-reduce instead of --op and --algo: drop them");
        if (o->corrupt)
            usage_error("--corrupt changes an element before the exact check, and --compress has none "
                        "(compression is lossy): drop one");
        char *buf = xmalloc(strlen(o->compress) + 1);   /* the whole list, however long */
        strcpy(buf, o->compress);
        compress_spec_t spec;
        int n = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++)
            if (compress_parse(t, &spec))
                usage_error("--compress %s: expected none, int8, sign, topk:F (0 < F <= 1) or powersgd:R", t);
        free(buf);
        if (n == 0) usage_error("--compress '%s' names no compressor", o->compress);
    }
    if (o->record && o->compress) usage_error("--record records the --op sweep, not --compress");
    args_check_output(MPI_COMM_WORLD, "csv", o->ca.csv, o->compress ? COMPRESSED_CSV_HEADER : CSV_HEADER);
    args_check_output(MPI_COMM_WORLD, "record", o->record, NULL);
    o->dt = strcmp(dtype_s, "bf16") == 0 ? DT_BF16 : DT_F32;
    o->check = !check_off;
}

static int op_selected(const options_t *o, int op) {
    return strcmp(o->op_s, "all") == 0 || strcmp(o->op_s, bench_ops[op].name) == 0;
}

/* Every (op, algo) pair asked for must exist. */
static void check_algos_exist(const options_t *o) {
    for (int op = 0; op < OPS; op++) {
        if (!op_selected(o, op)) continue;
        int found = 0;
        char have[96] = "";
        for (int i = 0; i < bench_nalgos; i++) {
            if (bench_algos[i].op != (op_id)op) continue;
            found |= algo_matches(&bench_algos[i], o->algo_s);
            strncat(have, " ", sizeof have - strlen(have) - 1);
            strncat(have, bench_algos[i].name, sizeof have - strlen(have) - 1);
        }
        if (!found && strcmp(o->op_s, "all") != 0)
            usage_error("--algo %s does not implement %s (it has:%s)", o->algo_s, o->op_s, have);
    }
}

static void harness_init(harness_t *h, const device_t *dev, comm_t *cm, const options_t *o) {
    memset(h, 0, sizeof *h);
    h->dev = dev;
    h->x.lib = cm;
    h->iters = o->iters;
    h->warmup = o->warmup;
    h->repeat = o->repeat;
    h->check = o->check;
    h->corrupt = o->corrupt;
    p2p_init(&h->x.p2p, MPI_COMM_WORLD, o->dt, o->chunk);
    h->chunk = h->x.p2p.chunk * dtype_size(o->dt);
    h->dsend.on_dev = h->drecv.on_dev = 1;
}

static void harness_free(harness_t *h) {
    free(h->hsend.p); free(h->hrecv.p);
    if (h->dsend.p) dev_free(h->dev, h->dsend.p);
    if (h->drecv.p) dev_free(h->dev, h->drecv.p);
    p2p_destroy(&h->x.p2p);
}

static void print_header(const dist_t *d, const device_t *dev, const char *lib_name, const options_t *o) {
    say("# 02_allreduce: %d rank%s on %d node%s | device %s (%s) | lib = %s | dtype %s\n",
        d->world, d->world == 1 ? "" : "s", d->nodes, d->nodes == 1 ? "" : "s",
        dev->kind == DEV_CUDA ? "cuda" : "cpu", dev->name, lib_name, dtype_name(o->dt));
    say("# sizes %zu..%zu B x %g | iters %d, warmup %d, repeat %d (median; spread = (max - min) / "
        "median) | check %s | chunk %zu B\n", o->minbytes, o->maxbytes, o->stepfactor, o->iters,
        o->warmup, o->repeat, o->check ? "exact" : "off", o->chunk);
    if (dev->kind == DEV_CUDA)
        say("# hand-written algorithms run on host memory over MPI; lib runs on GPU buffers\n");
}

/* The ping-pong of ranks 0 and 1 that the model column stands on. */
static void measure_link(harness_t *h, int rank) {
    /* only the two ranks in it watch it: the others wait for its result, however long a
     * busy machine makes it, and a hang in it is seen by the two */
    if (rank < 2) bench_doing("the ping-pong between ranks 0 and 1");
    h->link = bench_pingpong(&h->x.p2p, 20);
    if (h->link.ok)
        say("# link: ping-pong of ranks 0 and 1, 4 B..4 MiB: alpha %.2f us, 1/beta %.3f GB/s; the model "
            "column is the alpha-beta cost of each algorithm on such links\n", h->link.alpha_us,
            h->link.beta_us_per_byte > 0 ? 1e-3 / h->link.beta_us_per_byte : INFINITY);
}

/* The requested element totals: minbytes x stepfactor^i, floored to whole
 * elements, repeats dropped. */
static size_t *sweep_totals(const options_t *o, int *nsizes) {
    size_t es = dtype_size(o->dt);
    int n = 0, cap = 64;
    size_t *totals = xmalloc(sizeof(size_t) * (size_t)cap);
    for (double b = (double)o->minbytes; b <= (double)o->maxbytes * (1 + 1e-12); b *= o->stepfactor) {
        size_t t = (size_t)(b / (double)es);
        if (t == 0) t = 1;
        if (n && totals[n - 1] == t) continue;
        if (n == cap) totals = realloc(totals, sizeof(size_t) * (size_t)(cap *= 2));
        if (!totals) die("out of memory");
        totals[n++] = t;
    }
    *nsizes = n;
    return totals;
}

/* One sweep of the sizes: the sizes, their rows and the fit's points. */
typedef struct {
    size_t *totals;
    int nsizes;
    row_t *rows;
    double *xs, *ts;
} sweep_t;

/* One algorithm over every size; returns the rows measured. */
static int sweep_algo(harness_t *h, const options_t *o, const dist_t *d, const algo_t *a, sweep_t *s) {
    int n = 0;
    size_t last = 0;
    for (int si = 0; si < s->nsizes; si++) {
        bench_case_t c;
        bench_case_init(&c, a->op, s->totals[si], d->rank, d->world, o->root, o->dt,
                        (uint32_t)o->ca.seed);
        if (c.bytes == last) continue;   /* sizes that round to the same shape */
        last = c.bytes;
        if (si == 0 && h->check && !bench_check_possible(&c))
            say("#   exact check impossible: bf16 sums over %d ranks exceed 256\n", d->world);
        s->rows[n] = measure(h, a, &c);
        s->xs[n] = (double)s->rows[n].bytes;
        s->ts[n] = s->rows[n].time_us;
        n++;
    }
    return n;
}

static void csv_rows(FILE *csv, const char *path, const char *op, const char *label, int world,
                     dtype_t dt, const row_t *rows, int n) {
    for (int i = 0; i < n; i++) {
        fprintf(csv, "%s,%s,%d,%zu,%zu,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%lld", op, label, world,
                rows[i].bytes, rows[i].count, dtype_name(dt), rows[i].time_us, rows[i].time_min,
                rows[i].time_max, rows[i].algbw, rows[i].busbw, rows[i].model_us, rows[i].wrong);
        csv_end_row(csv, "measured");
    }
    out_flush(csv, path);
}

/* Every op and algorithm asked for: the table, the fits and the CSV rows.
 * Returns the wrong elements over all of them. */
static long long run_all(harness_t *h, const options_t *o, const dist_t *d, const comm_t *cm,
                         FILE *csv) {
    const char *lib_name = comm_backend_name(cm->backend);
    sweep_t s;
    s.totals = sweep_totals(o, &s.nsizes);
    s.rows = xmalloc(sizeof(row_t) * (size_t)s.nsizes);
    s.xs = xmalloc(sizeof(double) * (size_t)s.nsizes);
    s.ts = xmalloc(sizeof(double) * (size_t)s.nsizes);
    long long total_wrong = 0;
    for (int op = 0; op < OPS; op++) {
        if (!op_selected(o, op)) continue;
        int printed_head = 0;
        for (int ai = 0; ai < bench_nalgos; ai++) {
            const algo_t *a = &bench_algos[ai];
            if (a->op != (op_id)op || !algo_matches(a, o->algo_s)) continue;
            if (!printed_head) print_table_head((op_id)op, d->world, o->root);
            printed_head = 1;
            const char *label = a->lib ? lib_name : a->name;
            /* Each algorithm on a communicator of its own: one that is broken
             * (a message sent and never received) cannot feed stray messages
             * to the next, whose rows then stay its own. */
            p2p_destroy(&h->x.p2p);
            p2p_init(&h->x.p2p, MPI_COMM_WORLD, o->dt, o->chunk);
            if (a->mpi_host && (cm->backend != COMM_MPI || h->dev->kind != DEV_CPU)) {
                say("#   lib %s skipped: NCCL has no %s, and MPI's needs host buffers\n",
                    bench_ops[op].name, bench_ops[op].name);
                continue;
            }
            int n = sweep_algo(h, o, d, a, &s);
            for (int i = 0; i < n; i++)
                if (s.rows[i].wrong > 0) total_wrong += s.rows[i].wrong;
            ab_fit_t fit = ab_fit(s.xs, s.ts, n);
            print_rows(label, o->dt, s.rows, n, fit, bench_ops[op].busbw_factor(d->world));
            if (csv) csv_rows(csv, o->ca.csv, bench_ops[op].name, label, d->world, o->dt, s.rows, n);
        }
    }
    free(s.rows); free(s.xs); free(s.ts); free(s.totals);
    return total_wrong;
}

/* The closing line and the CSV. */
static void report(long long total_wrong, int checked, FILE *csv, const char *path) {
    if (total_wrong > 0) say("\n# wrong elements: %lld\n", total_wrong);
    else say("\n# wrong elements: 0%s\n", checked ? " (every result exact)" : " (not checked)");
    if (csv) {
        out_close(csv, path);
        say("# rows appended to %s\n", path);
    }
}

int main(int argc, char **argv) {
    dist_t d;
    dist_init(&argc, &argv, &d);
    options_t o;
    parse_options(argc, argv, d.world, &o);
    test_knobs();
    watchdog_start(o.timeout, "--timeout");
    check_algos_exist(&o);

    device_t dev;
    device_init(&dev, o.ca.device, d.local_rank, d.local_world, o.ca.threads);
    if (o.record && dev.kind != DEV_CPU) usage_error("--record times compute in CPU time: it needs --device cpu");
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, o.ca.comm, &dev);
    harness_t h;
    harness_init(&h, &dev, &cm, &o);
    print_header(&d, &dev, comm_backend_name(cm.backend), &o);
    if (o.compress) {   /* every compressor on the device, with either comm backend */
        FILE *csv = o.ca.csv && d.rank == 0 ? csv_open(o.ca.csv, COMPRESSED_CSV_HEADER) : NULL;
        int nsizes;
        o.dt = DT_F32;
        size_t *counts = sweep_totals(&o, &nsizes);
        int bad = compressed_sweep(&cm, o.compress, counts, nsizes, o.iters, csv, o.ca.csv);
        if (csv) out_close(csv, o.ca.csv);
        free(counts);
        harness_free(&h);
        comm_destroy(&cm);
        device_finalize(&dev);
        if (bad && d.rank == 0) fprintf(stderr, "error: %d rows sent other bytes than their formula\n", bad);
        dist_finalize();
        return bad > 0;
    }
    FILE *csv = o.ca.csv && d.rank == 0 ? csv_open(o.ca.csv, CSV_HEADER) : NULL;
    measure_link(&h, d.rank);
    record_init(MPI_COMM_WORLD, o.record);
    if (h.link.ok) record_link(h.link.alpha_us, 1e-3 / h.link.beta_us_per_byte);

    long long total_wrong = run_all(&h, &o, &d, &cm, csv);
    record_write();
    report(total_wrong, h.check, csv, o.ca.csv);
    harness_free(&h);
    comm_destroy(&cm);
    device_finalize(&dev);
    if (total_wrong > 0 && d.rank == 0)
        fprintf(stderr, "error: %lld elements differ from the exact result (#wrong column)\n",
                total_wrong);
    dist_finalize();
    return total_wrong > 0;
}
