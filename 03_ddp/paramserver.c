/* paramserver.c: 03_ddp/paramserver, data-parallel SGD through a parameter
 * server: bulk-synchronous (BSP), asynchronous (ASP) and stale-synchronous
 * (SSP) training.
 *
 *   mpirun -np 4 ./03_ddp/paramserver --servers 1 --sync ssp:2 [--straggler 3:3]
 *
 * Ranks 0..S-1 are servers (--servers S): server s owns the contiguous shard
 * [N s / S, N (s+1) / S) of the flat parameters and its AdamW state (Li et
 * al. 2014). The other W ranks are workers; worker w has data share w of each
 * clock's global batch (--batch sequences over W workers, as DDP's ranks).
 * Worker w, for clock c = 1..steps:
 *     pull   every shard, with the server's version v (updates applied)
 *     compute the gradient of its share (the runner, common/runner.h)
 *     push   each shard's gradient to its server, tagged (c, v)
 * A server applies
 *     BSP    clock c's W gradients, summed in worker order (= the mean
 *            gradient of the global batch, as DDP's all-reduce), as update c;
 *            a pull for clock c waits for version c - 1
 *     SSP:S  the same updates, but a pull for clock c waits only for version
 *            c - 1 - S: a worker runs at most S clocks ahead of the slowest
 *            (Ho et al. 2013's bounded staleness); S = 0 is BSP
 *     ASP    each pushed gradient as one update as it arrives (Dean et al.
 *            2012): W x steps updates, the gradient of the worker's own mean
 *            loss; a pull never waits
 * The staleness of a gradient is the server's version when it is applied
 * minus the version it was computed on: 0 in BSP, at most S in SSP:S,
 * unbounded in ASP. With one worker every mode is the 1-rank trainer
 * (03_ddp/ddp) update for update.
 *
 * Time is a virtual clock, the same on any machine: every rank keeps its
 * own, as if it had a core of its own (the replay's rule, common/replay.h).
 * A worker's compute takes its thread CPU time (which ranks sharing a core
 * do not inflate; --compute-s fixes it instead), and every message of m
 * bytes arrives alpha + m / B after it is sent (--inter-us, --inter-gbps:
 * every rank is a node of its own, priced by replay_coll_cost). A worker's
 * clock is its pull (request and reply), its compute and its push, each
 * message waited for. A server takes the workers' messages in order of
 * their virtual arrival, not of their real one: it holds the next message
 * of every worker that may still send one, and takes the earliest (a
 * conservative discrete-event rule; a worker whose pull waits here for an
 * update sends nothing until it is answered). Its own
 * work is free; it answers at the arrival that allows the answer. So the
 * order of the updates, their staleness and their times are a function of
 * the compute times alone.
 *
 * --straggler RANK:FACTOR makes worker RANK's compute FACTOR times as long
 * on the virtual clock (a slower device); its messages cost what the
 * others' do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "perf.h"
#include "replay.h"
#include "runner.h"
#include "train.h"

/* One row per update, written by server 0: loss against the virtual clock's
 * seconds and against updates. loss: the update's gradients' mean loss;
 * staleness: the largest of its gradients'; worker_rank: whose gradient it
 * is (ASP), or "all" (BSP, SSP). */
#define PS_HEADER "sync,workers,straggler,update,clock,seconds,loss,staleness,lr,norm,worker_rank"

enum { TAG_PULL = 11, TAG_VERSION, TAG_WEIGHTS, TAG_PUSH, TAG_GRAD };
enum { ASP = -1 };   /* bound: -1 for ASP, else SSP's S (BSP: 0) */

typedef struct {
    int servers, workers, bound;
    const char *sync, *straggler, *csv;
    int slow_rank;
    double slow_factor;
    double compute_s;                 /* a clock's compute, fixed (0: its thread CPU time) */
    replay_links_t link;              /* the messages' price: every rank its own node */
    double pull_s, reply_s, push_s;   /* the price of a pull's request, its reply, a push */
    long pushed;                      /* a worker's gradients pushed */
    double t_end;                     /* this rank's virtual clock at its end */
    size_t N, lo, hi;                 /* the model's parameters; this server's shard */
    train_t *tr;
} ps_t;

static size_t shard_lo(const ps_t *p, int s) { return p->N * (size_t)s / (size_t)p->servers; }

/* A worker's wait for its pull or push; the watchdog (--timeout-s) ends the
 * job if a server never answers. */
static void wait_all(int n, MPI_Request *r, const char *what) {
    int done = 0;
    watch_begin(what, "world", NULL, WATCH_WORLD);
    for (;;) {
        MPI_CHECK(MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE));
        if (done) break;
        comm_nap();
    }
    watch_end();
}

/* Seconds this thread has run on a core (a worker's compute, whatever else
 * shares its core). */
static double thread_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The virtual seconds of one message of m bytes (alpha + m / B). */
static double price(const ps_t *p, double bytes) {
    return replay_coll_cost(COLL_SEND, bytes, 2, (const int[]){0, 1}, &p->link);
}

static void parse_sync(ps_t *p) {
    char *end;
    if (!strcmp(p->sync, "bsp")) p->bound = 0;
    else if (!strcmp(p->sync, "async")) p->bound = ASP;
    else if (!strncmp(p->sync, "ssp:", 4)) {
        long s = strtol(p->sync + 4, &end, 10);
        if (end == p->sync + 4 || *end || s < 0 || s > 1000000)
            usage_error("--sync %s: the bound S of ssp:S must be an integer from 0 to 1000000", p->sync);
        p->bound = (int)s;
    } else
        usage_error("--sync %s: expected bsp, async or ssp:S", p->sync);
    if (p->straggler) {
        int used = 0;
        /* !(a <= f <= b): NaN compares false, and is refused with the rest */
        if (sscanf(p->straggler, "%d:%lf%n", &p->slow_rank, &p->slow_factor, &used) != 2 ||
            p->straggler[used] || !(p->slow_factor >= 1 && p->slow_factor <= 1000))
            usage_error("--straggler %s: expected RANK:FACTOR with FACTOR from 1 to 1000", p->straggler);
    } else
        p->slow_rank = -1;
}

/* ---- the worker ------------------------------------------------------------------ */
static void worker(ps_t *p, runner_t *run) {
    train_t *tr = p->tr;
    int S = p->servers, W = p->workers;
    float *w = xmalloc(p->N * sizeof(float)), *g = xmalloc(p->N * sizeof(float));
    double *reply = xmalloc(sizeof(double) * 2 * (size_t)S);   /* (S, 2) version, sent at */
    MPI_Request *r = xmalloc(sizeof(MPI_Request) * (size_t)(3 * S));
    double *head = xmalloc(sizeof(double) * 5 * (size_t)S);
    double t = 0;   /* this worker's virtual clock */
    for (long c = 1; c <= tr->o.steps; c++) {
        /* pull: the replies' receives are posted before the requests */
        double req[2] = {(double)c, t};
        for (int s = 0; s < S; s++) {
            size_t lo = shard_lo(p, s);
            MPI_CHECK(MPI_Irecv(&reply[2 * s], 2, MPI_DOUBLE, s, TAG_VERSION, MPI_COMM_WORLD, &r[2 * s]));
            MPI_CHECK(MPI_Irecv(w + lo, (int)(shard_lo(p, s + 1) - lo), MPI_FLOAT, s, TAG_WEIGHTS,
                                MPI_COMM_WORLD, &r[2 * s + 1]));
            MPI_CHECK(MPI_Isend(req, 2, MPI_DOUBLE, s, TAG_PULL, MPI_COMM_WORLD, &r[2 * S + s]));
        }
        wait_all(3 * S, r, "a pull of the weights");
        for (int s = 0; s < S; s++) t = fmax(t, reply[2 * s + 1] + p->reply_s);   /* the last reply's arrival */
        model_load_params(&tr->model, w);

        double cpu0 = thread_s();
        train_step_t st = {0};
        runner_step(tr, run, c, &st);
        dev_to_host(&tr->dev, g, tr->model.grads, p->N * sizeof(float));
        /* ASP applies each gradient alone: the gradient of this worker's
         * mean loss, W x the share of the global mean it holds. */
        double sumsq = 0, share = (double)tr->global_tokens / W;
        if (p->bound == ASP)
            for (size_t i = 0; i < p->N; i++) g[i] *= (float)W;
        for (size_t i = 0; i < p->N; i++) sumsq += (double)g[i] * g[i];
        double compute = p->compute_s > 0 ? p->compute_s : thread_s() - cpu0;
        t += compute * (tr->dist.rank == p->slow_rank ? p->slow_factor : 1);

        for (int s = 0; s < S; s++) {
            size_t lo = shard_lo(p, s);
            double *h = head + 5 * s;
            h[0] = (double)c;
            h[1] = reply[2 * s];
            h[2] = st.loss / share;
            h[3] = sumsq;
            h[4] = t;   /* sent at */
            MPI_CHECK(MPI_Isend(h, 5, MPI_DOUBLE, s, TAG_PUSH, MPI_COMM_WORLD, &r[2 * s]));
            MPI_CHECK(MPI_Isend(g + lo, (int)(shard_lo(p, s + 1) - lo), MPI_FLOAT, s, TAG_GRAD,
                                MPI_COMM_WORLD, &r[2 * s + 1]));
        }
        wait_all(2 * S, r, "a push of the gradient");
        t += p->push_s;   /* the next pull leaves once the push has arrived */
        p->pushed++;
    }
    p->t_end = t;
    free(w);
    free(g);
    free(reply);
    free(r);
    free(head);
}

/* ---- the server ------------------------------------------------------------------ */
typedef struct {
    int got;                          /* gradients of this clock received */
    float *g;                         /* (W, count) in worker order */
    long *pulled;                     /* (W) version each was computed on */
    double *loss;                     /* (W) each worker's mean loss */
    double *sumsq;                    /* (W) its gradient's squared norm (ASP's clipping) */
} ps_slot_t;

typedef struct {
    long version, total;              /* updates applied, to apply */
    long *hist;                       /* (total + 1) gradients per staleness */
    long *wstale;                     /* (2 W) each worker's summed and largest staleness */
    long *pending;                    /* (W) clock of a waiting pull, 0: none */
    long *next;                       /* (W) the clock each worker pushes next */
    long applied;                     /* gradients applied */
    float *host;                      /* (count) the master shard, for replies */
    float *sum;                       /* (count) the update's gradient */
    double t_start;                   /* the run's real start (MPI_Wtime) */
    double now;                       /* the virtual clock: the arrival being taken */
    MPI_Comm servers;
    FILE *csv;
} ps_server_t;

static void reply(ps_t *p, ps_server_t *sv, int w) {
    train_t *tr = p->tr;
    size_t count = p->hi - p->lo;
    int dest = p->servers + w;
    double head[2] = {(double)sv->version, sv->now};   /* sent at the arrival that allows it */
    dev_to_host(&tr->dev, sv->host, tr->opt.master, count * sizeof(float));
    MPI_CHECK(MPI_Send(head, 2, MPI_DOUBLE, dest, TAG_VERSION, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Send(sv->host, (int)count, MPI_FLOAT, dest, TAG_WEIGHTS, MPI_COMM_WORLD));
    sv->pending[w] = 0;
}

/* A pull for clock c may be answered once the server holds version c - 1 - S
 * (BSP: c - 1, every gradient of the clock before); ASP: at once. */
static int may_pull(const ps_t *p, const ps_server_t *sv, long c) {
    return p->bound == ASP || sv->version >= c - 1 - p->bound;
}

/* One optimizer update from the n gradients of slot (worker order). */
static void update(ps_t *p, ps_server_t *sv, const ps_slot_t *sl, const int *workers, int n, long clock) {
    train_t *tr = p->tr;
    size_t count = p->hi - p->lo;
    int W = p->workers;
    memset(sv->sum, 0, count * sizeof(float));
    double loss = 0, sumsq = 0, stale_max = 0;
    for (int k = 0; k < n; k++) {
        int w = workers[k];
        const float *g = sl->g + (size_t)w * count;
        for (size_t i = 0; i < count; i++) sv->sum[i] += g[i];
        long stale = sv->version - sl->pulled[w];
        sv->hist[stale]++;
        sv->wstale[2 * w] += stale;
        if (stale > sv->wstale[2 * w + 1]) sv->wstale[2 * w + 1] = stale;
        if (stale > stale_max) stale_max = (double)stale;
        loss += sl->loss[w] / n;
    }
    if (p->bound == ASP) sumsq = sl->sumsq[workers[0]];   /* the one gradient's, whole */
    else {   /* the mean gradient's norm over every shard */
        for (size_t i = 0; i < count; i++) sumsq += (double)sv->sum[i] * sv->sum[i];
        dist_allreduce(&sumsq, 1, MPI_DOUBLE, MPI_SUM, sv->servers, "the gradient norm");
    }
    sv->version++;
    sv->applied += n;
    double norm;
    dev_from_host(&tr->dev, tr->opt.pieces[0].grad, sv->sum, count * sizeof(float));
    float lr = train_update(tr, sv->version, sumsq, &norm);
    if (tr->dist.rank != 0) return;
    double t = sv->now;
    char who[32];
    if (n == 1) snprintf(who, sizeof who, "worker %d", workers[0]);
    else snprintf(who, sizeof who, "%d workers", n);
    say("update %5ld/%ld | clock %4ld %-10s | loss %.4f | staleness %2.0f | lr %.2e | norm %.3f | %8.3f s\n",
        sv->version, sv->total, clock, who, loss, stale_max, lr, norm, t);
    train_record(tr, sv->version, loss, norm);
    if (sv->csv) {
        fprintf(sv->csv, "%s,%d,%s,%ld,%ld,%.6f,%.6f,%.0f,%.6g,%.6g,", p->sync, W,
                p->straggler ? p->straggler : "none", sv->version, clock, t, loss, stale_max, lr, norm);
        if (n == 1) fprintf(sv->csv, "%d", workers[0] + p->servers);
        else fprintf(sv->csv, "all");
        csv_end_row(sv->csv, p->compute_s > 0 ? "modeled" : "replayed");
        out_flush(sv->csv, p->csv);
    }
}

/* A worker's next message, as the server holds it until it is taken. */
typedef struct {
    int tag;                          /* TAG_PULL, TAG_PUSH; 0: none held */
    long c;                           /* its clock */
    double at;                        /* its virtual arrival */
} ps_msg_t;

/* Receive worker w's next message into m, if one has come (1), else 0. A
 * push's gradient goes to its clock's slot at once: worker w's row there is
 * free, since w pulled this clock only once that slot's earlier clock was
 * applied (ASP: w's earlier gradient was). */
static int receive(ps_t *p, ps_slot_t *slot, int nslots, int w, ps_msg_t *m) {
    int flag = 0, src = p->servers + w;
    MPI_Status stat;
    MPI_CHECK(MPI_Iprobe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &stat));
    if (!flag) return 0;
    double h[5];
    if (stat.MPI_TAG == TAG_PULL) {
        MPI_CHECK(MPI_Recv(h, 2, MPI_DOUBLE, src, TAG_PULL, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        *m = (ps_msg_t){TAG_PULL, (long)h[0], h[1] + p->pull_s};
        return 1;
    }
    if (stat.MPI_TAG != TAG_PUSH)
        die("server %d: unexpected message (tag %d) from rank %d", p->tr->dist.rank, stat.MPI_TAG, src);
    MPI_CHECK(MPI_Recv(h, 5, MPI_DOUBLE, src, TAG_PUSH, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    *m = (ps_msg_t){TAG_PUSH, (long)h[0], h[4] + p->push_s};
    if (m->c < 1 || m->c > p->tr->o.steps)
        die("server %d: worker %d pushed clock %ld of %d", p->tr->dist.rank, w, m->c, p->tr->o.steps);
    size_t count = p->hi - p->lo;
    ps_slot_t *sl = &slot[p->bound == ASP ? 0 : m->c % nslots];
    MPI_CHECK(MPI_Recv(sl->g + (size_t)w * count, (int)count, MPI_FLOAT, src, TAG_GRAD, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    sl->pulled[w] = (long)h[1];
    sl->loss[w] = h[2];
    sl->sumsq[w] = h[3];
    return 1;
}

static void server(ps_t *p, ps_server_t *sv) {
    train_t *tr = p->tr;
    int W = p->workers, nslots = p->bound == ASP ? 1 : p->bound + 1;
    size_t count = p->hi - p->lo;
    ps_slot_t *slot = xcalloc((size_t)nslots, sizeof(ps_slot_t));
    for (int k = 0; k < nslots; k++) {
        slot[k].g = xmalloc((size_t)W * count * sizeof(float));
        slot[k].pulled = xcalloc((size_t)W, sizeof(long));
        slot[k].loss = xcalloc((size_t)W, sizeof(double));
        slot[k].sumsq = xcalloc((size_t)W, sizeof(double));
    }
    int *order = xmalloc(sizeof(int) * (size_t)W);
    for (int w = 0; w < W; w++) order[w] = w;
    ps_msg_t *held = xcalloc((size_t)W, sizeof(ps_msg_t));   /* each worker's next message */
    long pulls = 0, pushes = 0, steps = tr->o.steps;
    /* the watchdog ends the job when no worker sends anything for --timeout-s */
    watch_begin("the workers' pulls and pushes", "world", NULL, WATCH_WORLD);
    while (pushes < (long)W * steps || pulls < (long)W * steps) {
        /* hold the next message of every worker that may send one: not
         * finished, its pull not waiting here (it sends nothing before the
         * answer, which comes at an arrival no earlier than the earliest held) */
        int all = 1, first = -1;
        for (int w = 0; w < W; w++) {
            if (!held[w].tag && sv->next[w] <= steps && !sv->pending[w] && !receive(p, slot, nslots, w, &held[w]))
                all = 0;
            if (held[w].tag && (first < 0 || held[w].at < held[first].at)) first = w;
        }
        if (!all) {
            comm_nap();
            continue;
        }
        if (first < 0) die("server %d: every worker waits for an update", tr->dist.rank);
        watch_tick();
        int w = first;
        ps_msg_t m = held[w];
        held[w].tag = 0;
        sv->now = m.at;
        if (m.tag == TAG_PULL) {
            if (m.c != sv->next[w] || sv->pending[w])
                die("server %d: worker %d pulled for clock %ld, expected %ld", tr->dist.rank, w, m.c, sv->next[w]);
            pulls++;
            sv->pending[w] = m.c;
            if (may_pull(p, sv, m.c)) reply(p, sv, w);
            continue;
        }
        /* every gradient applied exactly once: clocks arrive in order, once each */
        if (m.c != sv->next[w] || m.c > steps)
            die("server %d: worker %d pushed clock %ld, expected %ld", tr->dist.rank, w, m.c, sv->next[w]);
        sv->next[w]++;
        pushes++;
        ps_slot_t *sl = &slot[p->bound == ASP ? 0 : m.c % nslots];
        sl->got++;
        if (p->bound == ASP) {
            update(p, sv, sl, &w, 1, m.c);
            sl->got = 0;
        } else   /* BSP, SSP: the clocks complete in order */
            for (ps_slot_t *n = &slot[(sv->version + 1) % nslots]; n->got == W;
                 n = &slot[(sv->version + 1) % nslots]) {
                update(p, sv, n, order, W, sv->version + 1);
                n->got = 0;
            }
        for (int v = 0; v < W; v++)
            if (sv->pending[v] && may_pull(p, sv, sv->pending[v])) reply(p, sv, v);
    }
    watch_end();
    if (sv->version != sv->total || sv->applied != pushes)
        die("server %d: %ld updates from %ld gradients, expected %ld from %ld", tr->dist.rank, sv->version,
            sv->applied, sv->total, pushes);
    for (int k = 0; k < nslots; k++) {
        free(slot[k].g);
        free(slot[k].pulled);
        free(slot[k].loss);
        free(slot[k].sumsq);
    }
    free(slot);
    free(order);
    free(held);
}

/* ---- the program ----------------------------------------------------------------- */
static void summary(ps_t *p, ps_server_t *sv, const double *seconds) {
    train_t *tr = p->tr;
    int S = p->servers, W = p->workers, is_server = tr->dist.rank < S;
    long n = sv->total + 1, *all = tr->dist.rank == 0 ? xcalloc((size_t)(S * n), sizeof(long)) : NULL;
    long *ws = tr->dist.rank == 0 ? xcalloc((size_t)(2 * S * W), sizeof(long)) : NULL;
    long counts[3] = {is_server ? sv->version : 0, is_server ? sv->applied : 0, p->pushed};
    long *cnt = tr->dist.rank == 0 ? xmalloc(sizeof(long) * 3 * (size_t)tr->dist.world) : NULL;
    MPI_CHECK(MPI_Gather(counts, 3, MPI_LONG, cnt, 3, MPI_LONG, 0, MPI_COMM_WORLD));
    if (is_server) {
        MPI_CHECK(MPI_Gather(sv->hist, (int)n, MPI_LONG, all, (int)n, MPI_LONG, 0, sv->servers));
        MPI_CHECK(MPI_Gather(sv->wstale, 2 * W, MPI_LONG, ws, 2 * W, MPI_LONG, 0, sv->servers));
    }
    if (tr->dist.rank == 0) {
        say("\n");
        for (int s = 0; s < S; s++) {
            long max = 0, sum = 0, k = 0;
            say("server %d: %ld updates from %ld gradients (%d workers x %d clocks); staleness:", s,
                cnt[3 * s], cnt[3 * s + 1], W, tr->o.steps);
            for (long i = 0; i < n; i++)
                if (all[s * n + i]) {
                    say(" %ld:%ld", i, all[s * n + i]);
                    max = i;
                    sum += i * all[s * n + i];
                    k += all[s * n + i];
                }
            say(" (max %ld, mean %.2f)\n", max, k ? (double)sum / k : 0.0);
            say("server %d: staleness by worker rank (mean/max):", s);
            for (int w = 0; w < W; w++)
                say(" %d: %.2f/%ld", S + w, (double)ws[2 * (s * W + w)] / tr->o.steps, ws[2 * (s * W + w) + 1]);
            say("\n");
        }
        /* counted by the workers themselves, against the servers' counts above */
        say("workers: gradients pushed by rank:");
        for (int w = 0; w < W; w++) say(" %d:%ld", S + w, cnt[3 * (S + w) + 2]);
        say("\n");
        say("time:    %ld updates in %.6f s of virtual time = %.1f updates/s, %s tok/s (the run took %.1f s)\n",
            sv->total, seconds[0], sv->total / seconds[0],
            train_si((char[32]){0}, 32, (double)cnt[1] * tr->global_tokens / W / seconds[0]), seconds[1]);
    }
    free(all);
    free(ws);
    free(cnt);
}

/* Refuses a layout of servers and workers that cannot run, and takes --csv
 * for the updates' rows (the rows here are updates, not the trainers' steps). */
static void check_roles(ps_t *p) {
    train_t *tr = p->tr;
    int world = tr->dist.world, S = p->servers, W = world - S;
    if (W < 1) usage_error("--servers %d leaves no worker among the %d ranks", S, world);
    if (p->straggler && (p->slow_rank < S || p->slow_rank >= world))
        usage_error("--straggler %s: rank %d is no worker (workers are ranks %d..%d)", p->straggler,
                    p->slow_rank, S, world - 1);
    if (tr->o.batch % (W * tr->o.micro))
        usage_error("--batch %d must be divisible by the %d workers x --micro %d (a worker's share)",
                    tr->o.batch, W, tr->o.micro);
    p->workers = W;
    p->csv = tr->o.c.csv;
    tr->o.c.csv = NULL;
    args_check_output(MPI_COMM_WORLD, "csv", p->csv, PS_HEADER);
}

/* The data: W shares of each clock's global batch, as DDP's W ranks (the
 * servers take none). */
static void share_batch(ps_t *p) {
    train_t *tr = p->tr;
    int W = p->workers, rank = tr->dist.rank;
    tr->dp = W;
    tr->dp_rank = rank < p->servers ? 0 : rank - p->servers;
    tr->mb = tr->o.batch / W / tr->o.micro;
    free(tr->tokens);
    free(tr->targets);
    tr->tokens = xmalloc(sizeof(int) * (size_t)tr->mb * tr->o.seq);
    tr->targets = xmalloc(sizeof(int) * (size_t)tr->mb * tr->o.seq);
}

/* A server's optimizer holds its shard [lo, hi) of the parameters and its
 * AdamW state; a worker's, an empty part. */
static void shard_optimizer(ps_t *p) {
    train_t *tr = p->tr;
    int rank = tr->dist.rank, is_server = rank < p->servers;
    p->N = tr->model.size;
    p->lo = is_server ? shard_lo(p, rank) : 0;
    p->hi = is_server ? shard_lo(p, rank + 1) : 0;
    optim_piece_t shard = {0, p->lo, p->hi - p->lo, tr->model.grads + p->lo,
                           (char *)tr->model.params + p->lo * dtype_size(tr->dtype)};
    tr->part_unique = is_server;
    train_optimizer(tr, &shard, 1, p->hi - p->lo);
}

/* Every shard priced as the largest, so that every server sees the same
 * arrivals, takes them in the same order and answers alike. */
static void price_messages(ps_t *p) {
    train_t *tr = p->tr;
    size_t S = (size_t)p->servers;
    p->link = (replay_links_t){.node_size = 1, .inter_us = tr->o.inter_us, .inter_gbps = tr->o.inter_gbps};
    double shard_bytes = 4.0 * (double)((p->N + S - 1) / S);
    p->pull_s = price(p, 2 * sizeof(double));
    p->reply_s = price(p, 2 * sizeof(double) + shard_bytes);
    p->push_s = price(p, 5 * sizeof(double) + shard_bytes);
}

/* The lines that say who serves, who works, and what the virtual clock prices. */
static void ps_intro(const ps_t *p, long total) {
    const train_t *tr = p->tr;
    int world = tr->dist.world, S = p->servers, W = p->workers;
    say("ps:      %d server%s (shards of %zu-%zu parameters), %d worker%s (ranks %d..%d, %d sequences each per "
        "clock), --sync %s: %ld updates%s%s\n", S, S == 1 ? "" : "s", p->N / S, (p->N + S - 1) / S, W,
        W == 1 ? "" : "s", S, world - 1, tr->o.batch / W, p->sync, total,
        p->straggler ? ", straggler " : "", p->straggler ? p->straggler : "");
    char compute[64];
    if (p->compute_s > 0) snprintf(compute, sizeof compute, "%g s per clock", p->compute_s);
    else snprintf(compute, sizeof compute, "thread CPU time");
    say("clock:   virtual: compute %s; a message %g us + bytes at %g GB/s (pull %.3g ms, reply %.3g ms, "
        "push %.3g ms)\n", compute, tr->o.inter_us, tr->o.inter_gbps, 1e3 * p->pull_s, 1e3 * p->reply_s,
        1e3 * p->push_s);
}

/* A server's run: its state, the loop, its end on the virtual clock. */
static void server_run(ps_t *p, ps_server_t *sv) {
    int W = p->workers;
    sv->pending = xcalloc((size_t)W, sizeof(long));
    sv->next = xmalloc(sizeof(long) * (size_t)W);
    for (int w = 0; w < W; w++) sv->next[w] = 1;
    sv->host = xmalloc((p->hi - p->lo) * sizeof(float));
    sv->sum = xmalloc((p->hi - p->lo) * sizeof(float));
    server(p, sv);
    p->t_end = sv->now;
    free(sv->pending);
    free(sv->next);
    free(sv->host);
    free(sv->sum);
}

int main(int argc, char **argv) {
    ps_t p = {.servers = 1, .sync = "bsp"};
    arg_t flags[] = {
        {"servers", ARG_INT, &p.servers, "ranks 0..S-1 are servers, each owning a shard of the weights", NULL, 1, 1e6},
        {"sync", ARG_STRING, &p.sync, "bsp (wait for every worker), async (never wait) or ssp:S (at most S "
         "clocks ahead)", NULL, 0, 0},
        {"straggler", ARG_STRING, &p.straggler, "RANK:FACTOR: worker RANK's compute takes FACTOR times as long on the "
         "virtual clock", NULL, 0, 0},
        {"compute-s", ARG_DOUBLE, &p.compute_s, "every clock's compute takes this many virtual seconds (0: the "
         "worker thread's CPU time, --device cpu --threads 1)", NULL, 0, 1e6},
    };
    /* the servers' updates run their own loop: no step of the shared loop to
     * checkpoint, dump or trace */
    static const train_refusal_t refused[] = {
        {"ckpt-dir", "the servers save no checkpoints"},
        {"ckpt-every", "the servers save no checkpoints"},
        {"ckpt-keep", "the servers save no checkpoints"},
        {"resume", "the servers save no checkpoints"},
        {"dump", "there is no step-1 gradient of a global batch: each worker pushes its own"},
        {"trace", "its clocks are no steps of the shared loop"},
        {"record", "its clocks are no steps of the shared loop: its virtual clock is its replay"},
        {"node-size", "its virtual clock makes every rank a node of its own: --inter-us and --inter-gbps price "
         "its messages"},
    };
    train_program_t prog = {
        "03_ddp", "03_ddp/paramserver", "data parallel through a parameter server",
        "Data-parallel SGD through sharded parameter servers: bulk-synchronous,\n"
        "asynchronous or stale-synchronous updates, the staleness of every\n"
        "gradient, and an optional straggler, timed on a virtual clock (compute in\n"
        "thread CPU time, each message alpha + bytes / B; the servers take messages\n"
        "in the order of their virtual arrival). --csv: one row per update. --batch is\n"
        "each clock's global batch, split over the W workers only (the servers take\n"
        "no share).", flags, ARRAY_LEN(flags), refused, ARRAY_LEN(refused)};
    train_t tr;
    train_defaults(&tr);
    train_init(&tr, &argc, &argv, &prog);
    p.tr = &tr;
    parse_sync(&p);
    check_roles(&p);
    tr.batch_per_rank = 1;   /* split over the W workers below, not over every rank */
    train_setup(&tr, 1, 1, 1);
    if (p.compute_s == 0 && (tr.dev.kind != DEV_CPU || tr.dev.threads > 1))
        usage_error("the virtual clock times a worker's compute in its thread's CPU time: it needs --device cpu "
                    "and --threads 1, or a fixed --compute-s");
    int rank = tr.dist.rank, W = p.workers, is_server = rank < p.servers;
    share_batch(&p);
    train_model(&tr, MODEL_PARAMS_AND_GRADS);
    shard_optimizer(&p);
    price_messages(&p);

    ps_server_t sv = {0};
    tr.updates_per_step = p.bound == ASP ? W : 1;   /* ASP: W updates per clock (the lr schedule) */
    sv.total = (long)tr.o.steps * tr.updates_per_step;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, is_server ? 0 : MPI_UNDEFINED, rank, &sv.servers));
    ps_intro(&p, sv.total);
    if (rank == 0 && p.csv) sv.csv = csv_open(p.csv, PS_HEADER);
    runner_t run;
    if (!is_server) runner_init(&run, NULL, &tr, (grad_strategy_t){0}, 0, 0);
    sv.hist = xcalloc((size_t)sv.total + 1, sizeof(long));
    sv.wstale = xcalloc(2 * (size_t)W, sizeof(long));
    say("\n");
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    sv.t_start = MPI_Wtime();
    if (is_server) server_run(&p, &sv);
    else worker(&p, &run);
    double seconds[2] = {p.t_end, MPI_Wtime() - sv.t_start};   /* virtual, real */
    dist_allreduce(seconds, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "run time");
    summary(&p, &sv, seconds);

    /* every rank ends with the servers' weights (train_finish checks it) */
    float *full = train_full_master(&tr);
    model_load_params(&tr.model, full);
    free(full);
    if (sv.csv) out_close(sv.csv, p.csv);
    if (!is_server) runner_free(&run);
    else MPI_CHECK(MPI_Comm_free(&sv.servers));
    free(sv.hist);
    free(sv.wstale);
    train_finish(&tr);
    return 0;
}
