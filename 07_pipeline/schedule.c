/* schedule.c: the schedules, their lowering to action lists, the checker and
 * the replay (see schedule.h). Nothing here touches a model or a network:
 * the lists are plain data, so the tests check them by themselves. */
#include "schedule.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "replay.h"

const char *const pipe_kind_name[PIPE_KINDS] = {"naive", "gpipe", "1f1b", "interleaved", "zbh1", "terapipe"};

int pipe_kind_parse(const char *name) {
    for (int k = 0; k < PIPE_KINDS; k++)
        if (strcmp(name, pipe_kind_name[k]) == 0) return k;
    return -1;
}

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && len) vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

int pipe_schedule_valid(pipe_kind_t kind, int P, int M, int V, char *why, size_t len) {
    if ((int)kind < 0 || kind >= PIPE_KINDS) return fail(why, len, "unknown schedule %d", (int)kind);
    if (P < 1 || M < 1 || V < 1) return fail(why, len, "stages, micro-batches and chunks must be >= 1");
    if (kind != PIPE_INTERLEAVED) {
        if (V != 1) return fail(why, len, "%d chunks per stage need the interleaved schedule", V);
        return 0;
    }
    if (P < 2) return fail(why, len, "the interleaved schedule needs at least 2 stages");
    if (V < 2) return fail(why, len, "the interleaved schedule needs at least 2 chunks per stage");
    if (M % P)
        return fail(why, len, "the interleaved schedule runs micro-batches in groups of the %d stages: "
                    "%d micro-batches are not a multiple of %d", P, M, P);
    return 0;
}

/* ---- the compute order of each schedule ------------------------------------------------ */
/* One compute, and whether the stage communicates after it (the end of a
 * block: its outputs are sent and the next block's inputs received there). */
typedef struct { int op, mb, chunk, block_end; } comp_t;

/* 1F1B, PipeDream-Flush (Narayanan et al. 2019, 2021), on stage s of P with M
 * micro-batches: warm up with the forwards the later stages need, then
 * alternate one forward and one backward, then the remaining backwards.
 * Writes the computes to o (one chunk, each the end of its block), returns
 * how many. */
static int order_1f1b(int P, int M, int s, comp_t *o) {
    /* ASSIGNMENT 07-1f1b: the 1F1B schedule (07_pipeline/README.md, "Assignment: the 1F1B schedule") */
    /* STUB: (void)P, (void)M, (void)s, (void)o; */
    /* STUB: not_implemented("the 1F1B compute order", "07_pipeline/README.md, Assignment: the 1F1B schedule"); */
    /* STUB: return 0; */
    int w = P - s - 1 < M ? P - s - 1 : M, n = 0;
    for (int i = 0; i < w; i++) o[n++] = (comp_t){PA_FWD, i, 0, 1};
    for (int k = 0; k < M - w; k++) {
        o[n++] = (comp_t){PA_FWD, w + k, 0, 1};
        o[n++] = (comp_t){PA_BWD, k, 0, 1};
    }
    for (int i = M - w; i < M; i++) o[n++] = (comp_t){PA_BWD, i, 0, 1};
    return n;
    /* END ASSIGNMENT 07-1f1b */
}

static int order(pipe_kind_t kind, int P, int M, int V, int K, int s, comp_t *o) {
    int n = 0;
#define PUT(op_, mb_, c_) (o[n++] = (comp_t){(op_), (mb_), (c_), 1})
    switch (kind) {
    case PIPE_NAIVE:          /* one micro-batch through the whole pipeline at a time */
        for (int i = 0; i < M; i++) { PUT(PA_FWD, i, 0); PUT(PA_BWD, i, 0); }
        break;
    case PIPE_GPIPE:          /* every forward, then every backward (Huang et al. 2019) */
        for (int i = 0; i < M; i++) PUT(PA_FWD, i, 0);
        for (int i = 0; i < M; i++) PUT(PA_BWD, i, 0);
        break;
    case PIPE_1F1B:
        n = order_1f1b(P, M, s, o);
        break;
    case PIPE_INTERLEAVED: {  /* Narayanan et al. 2021, as Megatron-LM orders it: 1F1B over the
                                 V M chunk micro-batches, warming up with 2 (P - s - 1) + (V - 1) P
                                 forwards (the order of stage 0 of a pipeline of that many
                                 stages plus one); the k-th forward runs micro-batch
                                 (k / PV) P + k % P through chunk (k / P) % V, backwards go
                                 through the chunks in reverse. In the steady state a forward
                                 and a backward form one block, with one exchange of messages
                                 after both. */
        int total = M * V, w = 2 * (P - s - 1) + (V - 1) * P;
        n = order_1f1b(w + 1, total, 0, o);
        for (int i = 0; i < n; i++) {
            int k = o[i].mb, c = (k / P) % V;
            o[i].mb = (k / (P * V)) * P + k % P;
            o[i].chunk = o[i].op == PA_FWD ? c : V - 1 - c;
            o[i].block_end = !(w < total && o[i].op == PA_FWD && i + 1 < n && o[i + 1].op == PA_BWD);
        }
        break;
    }
    case PIPE_ZBH1: {         /* ZB-H1 (Qi et al. 2023): 1F1B's order of F and B, with B
                                 the input gradients only; stage s lets up to d = s W's
                                 wait (the first stage none, the last P - 1), so that the
                                 Bs, on the critical path, reach the earlier stages
                                 sooner; each B of the cooldown is followed
                                 by a W, which fills the wait for the next gradient, and
                                 the waiting W's close the step. */
        comp_t *f = xmalloc(sizeof *f * 2 * (size_t)M);
        int nf = order_1f1b(P, M, s, f), d = s, wn = 0, k = 0;
        int steady = P - s - 1 < M ? M - (P - s - 1) : 0;   /* the backwards paired with a forward */
        for (int i = 0; i < nf; i++) {
            PUT(f[i].op, f[i].mb, 0);
            if (f[i].op != PA_BWD) continue;
            if (k >= steady || k + 1 - wn > d) PUT(PA_W, wn++, 0);
            k++;
        }
        while (wn < M) PUT(PA_W, wn++, 0);
        free(f);
        break;
    }
    case PIPE_TERAPIPE:       /* GPipe over units u = mb K + k (Li et al. 2021); a micro-batch's
                                 backwards go from its last slice to its first */
        for (int u = 0; u < M; u++) PUT(PA_FWD, u, 0);
        for (int u = 0; u < M; u++) PUT(PA_BWD, u - u % K + K - 1 - u % K, 0);
        break;
    default:
        die("pipeline: unknown schedule %d", (int)kind);
    }
#undef PUT
    return n;
}

/* ---- lowering: the messages around the computes ----------------------------------------
 * At the start and after every block: the sends of the block's outputs, then
 * the receives of the next block's inputs, all posted as one group. */
static void lower(pipe_schedule_t *s, int stage, const comp_t *o, int nc, int group) {
    int P = s->P, last = P * s->V - 1;
    pipe_action_t *a = xcalloc((size_t)nc * 3 + 1, sizeof *a);
    int n = 0;
    for (int b = 0, e; b < nc; b = e) {          /* the block [b, e) */
        for (e = b; e < nc && !o[e].block_end; e++) {}
        e = e < nc ? e + 1 : nc;
        for (int i = b; i < e; i++) {            /* its inputs that come from a neighbour */
            int vs = o[i].chunk * P + stage, fwd = o[i].op == PA_FWD;
            if (o[i].op != PA_W && (fwd ? vs > 0 : vs < last))
                a[n++] = (pipe_action_t){PA_RECV, o[i].mb, o[i].chunk, fwd ? PM_ACT : PM_GRAD,
                                         (fwd ? vs - 1 : vs + 1) % P, 0};
        }
        for (int i = b; i < e; i++)
            a[n++] = (pipe_action_t){.op = o[i].op, .mb = o[i].mb, .chunk = o[i].chunk};
        for (int i = b; i < e; i++) {            /* its outputs that go to a neighbour */
            int vs = o[i].chunk * P + stage, fwd = o[i].op == PA_FWD;
            if (o[i].op != PA_W && (fwd ? vs < last : vs > 0))
                a[n++] = (pipe_action_t){PA_SEND, o[i].mb, o[i].chunk, fwd ? PM_ACT : PM_GRAD,
                                         (fwd ? vs + 1 : vs - 1) % P, 0};
        }
    }
    if (group)   /* messages between two computes go as one group */
        for (int i = 0; i + 1 < n; i++)
            a[i].with_next = pipe_is_msg(a[i].op) && pipe_is_msg(a[i + 1].op);
    s->a[stage] = a;
    s->n[stage] = n;
}

static void build(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V, int K, int group) {
    char why[200];
    if (pipe_schedule_valid(kind, P, M, V, why, sizeof why)) die("pipeline: %s", why);
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->P = P;
    s->M = M;
    s->V = V;
    s->slices = K;
    s->n = xcalloc((size_t)P, sizeof *s->n);
    s->a = xcalloc((size_t)P, sizeof *s->a);
    comp_t *o = xmalloc(sizeof *o * 3 * (size_t)M * (size_t)V);
    for (int st = 0; st < P; st++) lower(s, st, o, order(kind, P, M, V, K, st, o), group);
    free(o);
}

void pipe_schedule_build(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V) {
    if (kind == PIPE_TERAPIPE) die("pipeline: the terapipe schedule is built by pipe_schedule_terapipe");
    build(s, kind, P, M, V, 1, 1);
}

void pipe_schedule_terapipe(pipe_schedule_t *s, int P, int M, int K) {
    if (K < 1) die("pipeline: %d token slices", K);
    build(s, PIPE_TERAPIPE, P, M * K, 1, K, 1);
}

void pipe_schedule_make(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V, int K) {
    if (kind == PIPE_TERAPIPE) pipe_schedule_terapipe(s, P, M, K);
    else pipe_schedule_build(s, kind, P, M, V);
}

void pipe_slices_balanced(int T, int K, double a, double b, int *pos) {
    if (K < 1 || T < K) die("pipeline: %d slices of %d tokens", K, T);
#define COST(t) (a * (t) + b * (t) * ((t) + 1.0) / 2)   /* tokens [0, t) */
    pos[0] = 0;
    for (int k = 1; k < K; k++) {
        double want = COST(T) * k / K;
        int t = pos[k - 1] + 1;
        while (t < T - (K - k) && fabs(COST(t + 1) - want) < fabs(COST(t) - want)) t++;
        pos[k] = t;
    }
#undef COST
    pos[K] = T;
}

void pipe_schedule_ungroup(pipe_schedule_t *s) {
    for (int st = 0; st < s->P; st++)
        for (int i = 0; i < s->n[st]; i++) s->a[st][i].with_next = 0;
}


/* ---- messages ------------------------------------------------------------------------- */
/* A message is named by its kind, micro-batch and the virtual stage that sent
 * it: an activation goes from vs to vs + 1, a gradient from vs to vs - 1. */
static int msg_id(const pipe_schedule_t *s, int msg, int mb, int vs_from) {
    return (msg * s->M + mb) * s->P * s->V + vs_from;
}
static int n_msgs(const pipe_schedule_t *s) { return 2 * s->M * s->P * s->V; }

/* The message a SEND or RECV action of `stage` carries. */
static int action_msg(const pipe_schedule_t *s, int stage, const pipe_action_t *a) {
    int vs = pipe_vstage(s, stage, a->chunk);
    if (a->op == PA_RECV) vs += a->msg == PM_ACT ? -1 : 1;
    return msg_id(s, a->msg, a->mb, vs);
}

/* The message a compute action waits for, or -1. */
static int input_msg(const pipe_schedule_t *s, int stage, const pipe_action_t *a) {
    int vs = pipe_vstage(s, stage, a->chunk), last = s->P * s->V - 1;
    if (a->op == PA_FWD) return vs > 0 ? msg_id(s, PM_ACT, a->mb, vs - 1) : -1;
    if (a->op == PA_BWD) return vs < last ? msg_id(s, PM_GRAD, a->mb, vs + 1) : -1;
    return -1;
}

static const char *op_name(int op) {
    static const char *n[5] = {"FWD", "BWD", "SEND", "RECV", "W"};
    return op >= 0 && op < 5 ? n[op] : "?";
}

static void describe(char *buf, size_t len, const pipe_action_t *a) {
    if (a->op == PA_SEND || a->op == PA_RECV)
        snprintf(buf, len, "%s %s mb %d chunk %d %s stage %d", op_name(a->op),
                 a->msg == PM_ACT ? "activation" : "gradient", a->mb, a->chunk,
                 a->op == PA_SEND ? "to" : "from", a->peer);
    else
        snprintf(buf, len, "%s mb %d chunk %d", op_name(a->op), a->mb, a->chunk);
}

/* ---- the replay: the suite's engine (common/replay.h) on the lists -------------------------
 * Every stage is a rank; SEND and RECV are non-blocking messages of no bytes
 * whose latency is msg_s; a compute waits for its input's RECV, then takes
 * its cost. ev[st][i]: the engine's event of action i. */
static void to_trace(const pipe_schedule_t *s, const pipe_costs_t *c, replay_trace_t *t, int **ev) {
    int P = s->P, V = s->V;
    replay_trace_init(t, P);
    for (int st = 0; st < P; st++) {
        ev[st] = xmalloc(sizeof(int) * ((size_t)s->n[st] + 1));
        for (int i = 0; i < s->n[st]; i++) {
            const pipe_action_t *a = &s->a[st][i];
            rp_event_t e = {.op = RP_COMM, .nb = 1, .group = 0, .peer = a->peer, .src = a->peer};
            if (a->op == PA_SEND || a->op == PA_RECV) {
                e.kind = a->op == PA_SEND ? COLL_SEND : COLL_RECV;
                ev[st][i] = replay_trace_add(t, st, &e);
                continue;
            }
            int in = input_msg(s, st, a);
            for (int j = i - 1; j >= 0 && in >= 0; j--)
                if (s->a[st][j].op == PA_RECV && action_msg(s, st, &s->a[st][j]) == in) {
                    rp_event_t w = {.op = RP_WAIT, .ref = ev[st][j]};
                    replay_trace_add(t, st, &w);
                    break;
                }
            const double *cost = a->op == PA_FWD ? c->fwd : a->op == PA_BWD ? c->bwd : c->w;
            if (!cost) die("pipeline: a replay of a list with W's needs their times");
            rp_event_t x = {.op = RP_COMPUTE, .secs = cost[st * V + a->chunk]};
            ev[st][i] = replay_trace_add(t, st, &x);
        }
    }
}

int pipe_replay(const pipe_schedule_t *s, const pipe_costs_t *c, pipe_replay_t *r, char *err,
                size_t len) {
    int P = s->P;
    replay_trace_t t;
    int **ev = xcalloc((size_t)P, sizeof(int *));
    to_trace(s, c, &t, ev);
    replay_links_t l = {.intra_us = 1e6 * c->msg_s};
    replay_result_t x;
    int rc = replay_run(&t, &l, NULL, NULL, &x, NULL, 0);
    memset(r, 0, sizeof *r);
    r->P = P;
    r->step = x.step;
    r->busy = xcalloc((size_t)P, sizeof(double));
    r->idle = xcalloc((size_t)P, sizeof(double));
    r->t0 = xcalloc((size_t)P, sizeof(double *));
    r->t1 = xcalloc((size_t)P, sizeof(double *));
    for (int st = 0; st < P; st++) {
        r->t0[st] = xcalloc((size_t)s->n[st] + 1, sizeof(double));
        r->t1[st] = xcalloc((size_t)s->n[st] + 1, sizeof(double));
        for (int i = 0; i < s->n[st]; i++) {
            int op = s->a[st][i].op, k = ev[st][i];
            r->t0[st][i] = x.t0[st][k];
            r->t1[st][i] = op == PA_SEND || op == PA_RECV ? x.t0[st][k] : x.t1[st][k];   /* posting takes no time */
        }
        r->busy[st] = x.busy[st];
        r->idle[st] = x.idle[st];
        r->bubble += r->step > 0 ? r->idle[st] / r->step / P : 0;
    }
    for (int st = 0; st < P && rc; st++) {   /* the first stage left waiting, at its action */
        if (x.at[st] == t.n[st]) continue;
        int i = 0;
        while (i + 1 < s->n[st] && ev[st][i] < x.at[st]) i++;
        char what[96];
        describe(what, sizeof what, &s->a[st][i]);
        fail(err, len, "deadlock: every stage waits; stage %d at action %d (%s) for a message not sent yet", st, i, what);
        break;
    }
    replay_result_free(&x);
    replay_trace_free(&t);
    for (int st = 0; st < P; st++) free(ev[st]);
    free(ev);
    return rc;
}

void pipe_replay_free(pipe_replay_t *r) {
    for (int st = 0; st < r->P && r->t0; st++) {
        free(r->t0[st]);
        free(r->t1[st]);
    }
    free(r->t0);
    free(r->t1);
    free(r->busy);
    free(r->idle);
    memset(r, 0, sizeof *r);
}

/* ---- the stream model: every send waits for its receive --------------------------------
 * Each rank's messages form groups (a SEND with_next and its RECV, or one
 * action alone) that complete in the order posted, as on one NCCL stream. A
 * group starts when the computes posted before it are done; each of its
 * operations completes when the partner's operation belongs to the partner's
 * current, started group; the group completes when all of its operations
 * have. A compute runs when the computes before it are done and the group of
 * its input's RECV has completed. */
typedef struct {
    int **group_of;      /* (P) action -> group */
    int **g_first;       /* (P) group -> first action */
    int **g_comps;       /* (P) group -> computes before it */
    int **c_group;       /* (P) compute k -> group of its input */
    int **done;          /* (P) action -> operation completed */
    int *ng, *nc;        /* (P) groups, computes */
    int *head, *cdone;   /* (P) the current group, the computes done */
    int *send_at;        /* (messages, 2) message -> (stage, action) of its SEND */
    int *recv_at;        /* (messages, 2) message -> (stage, action) of its RECV */
    int *recv_group;     /* (messages) message -> group of its RECV */
} streams_t;

/* Stage st's groups, and where each message is sent and received. */
static void stream_groups(const pipe_schedule_t *s, streams_t *m, int st) {
    int n = s->n[st], comps = 0;
    m->group_of[st] = xmalloc(sizeof(int) * (size_t)n + 1);
    m->g_first[st] = xmalloc(sizeof(int) * (size_t)n + 1);
    m->g_comps[st] = xmalloc(sizeof(int) * (size_t)n + 1);
    m->done[st] = xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        const pipe_action_t *a = &s->a[st][i];
        m->group_of[st][i] = -1;
        if (!pipe_is_msg(a->op)) {
            comps++;
            continue;
        }
        int id = action_msg(s, st, a);
        if (i > 0 && s->a[st][i - 1].with_next) {
            m->group_of[st][i] = m->ng[st] - 1;       /* joins the group before it */
        } else {
            m->g_first[st][m->ng[st]] = i;
            m->g_comps[st][m->ng[st]] = comps;
            m->group_of[st][i] = m->ng[st]++;
        }
        int *at = a->op == PA_SEND ? m->send_at : m->recv_at;
        at[2 * id] = st;
        at[2 * id + 1] = i;
        if (a->op == PA_RECV) m->recv_group[id] = m->group_of[st][i];
    }
    m->nc[st] = comps;
}

/* Stage st's computes: the group of each one's input RECV (-1: none). */
static void stream_inputs(const pipe_schedule_t *s, streams_t *m, int st) {
    int comps = 0;
    m->c_group[st] = xmalloc(sizeof(int) * (size_t)s->n[st] + 1);
    for (int i = 0; i < s->n[st]; i++) {
        const pipe_action_t *a = &s->a[st][i];
        if (pipe_is_msg(a->op)) continue;
        int in = input_msg(s, st, a);
        m->c_group[st][comps++] = in >= 0 ? m->recv_group[in] : -1;
    }
}

static void streams_init(const pipe_schedule_t *s, streams_t *m) {
    int P = s->P, nm = n_msgs(s);
    m->group_of = xcalloc((size_t)P, sizeof(int *));
    m->g_first = xcalloc((size_t)P, sizeof(int *));
    m->g_comps = xcalloc((size_t)P, sizeof(int *));
    m->c_group = xcalloc((size_t)P, sizeof(int *));
    m->done = xcalloc((size_t)P, sizeof(int *));
    m->ng = xcalloc((size_t)P, sizeof(int));
    m->nc = xcalloc((size_t)P, sizeof(int));
    m->head = xcalloc((size_t)P, sizeof(int));
    m->cdone = xcalloc((size_t)P, sizeof(int));
    m->send_at = xmalloc(sizeof(int) * 2 * (size_t)nm);
    m->recv_at = xmalloc(sizeof(int) * 2 * (size_t)nm);
    m->recv_group = xmalloc(sizeof(int) * (size_t)nm);
    for (int st = 0; st < P; st++) {
        stream_groups(s, m, st);
        stream_inputs(s, m, st);
    }
}

static void streams_free(const pipe_schedule_t *s, streams_t *m) {
    for (int st = 0; st < s->P; st++) {
        free(m->group_of[st]);
        free(m->g_first[st]);
        free(m->g_comps[st]);
        free(m->c_group[st]);
        free(m->done[st]);
    }
    free(m->group_of);
    free(m->g_first);
    free(m->g_comps);
    free(m->c_group);
    free(m->done);
    free(m->ng);
    free(m->nc);
    free(m->head);
    free(m->cdone);
    free(m->send_at);
    free(m->recv_at);
    free(m->recv_group);
}

/* Group g of stage st has started: it is the current one and the computes
 * posted before it are done. */
static int stream_started(const streams_t *m, int st, int g) {
    return m->head[st] == g && m->cdone[st] >= m->g_comps[st][g];
}

/* Completes the operations of stage st's current group whose partners'
 * groups have started; returns whether anything moved, and *all whether
 * the whole group has completed. */
static int stream_pair(const pipe_schedule_t *s, streams_t *m, int st, int *all) {
    int g = m->head[st], moved = 0;
    *all = 1;
    for (int i = m->g_first[st][g]; i < s->n[st] && m->group_of[st][i] == g; i++) {
        if (m->done[st][i]) continue;
        const pipe_action_t *a = &s->a[st][i];
        int id = action_msg(s, st, a);
        const int *at = a->op == PA_SEND ? m->recv_at : m->send_at;
        int p = at[2 * id], pi = at[2 * id + 1];
        if (stream_started(m, p, m->group_of[p][pi])) {
            m->done[st][i] = m->done[p][pi] = 1;
            moved = 1;
        } else {
            *all = 0;
        }
    }
    return moved;
}

/* Runs every stage's computes and groups as far as they go. */
static void streams_run(const pipe_schedule_t *s, streams_t *m) {
    for (int moved = 1; moved;) {
        moved = 0;
        for (int st = 0; st < s->P; st++) {
            while (m->cdone[st] < m->nc[st] && m->c_group[st][m->cdone[st]] < m->head[st]) {
                m->cdone[st]++;
                moved = 1;
            }
            while (m->head[st] < m->ng[st] && stream_started(m, st, m->head[st])) {
                int all;
                if (stream_pair(s, m, st, &all)) moved = 1;
                if (!all) break;
                m->head[st]++;
                moved = 1;
            }
        }
    }
}

static int stream_check(const pipe_schedule_t *s, char *err, size_t len) {
    streams_t m;
    int rc = 0;
    streams_init(s, &m);
    streams_run(s, &m);
    for (int st = 0; st < s->P && rc == 0; st++) {
        if (m.head[st] < m.ng[st]) {
            char what[96];
            describe(what, sizeof what, &s->a[st][m.g_first[st][m.head[st]]]);
            rc = fail(err, len, "deadlock when every send waits for its receive (one stream per rank, "
                      "as NCCL runs them): stage %d is stuck at action %d (%s)", st,
                      m.g_first[st][m.head[st]], what);
        } else if (m.cdone[st] < m.nc[st]) {
            rc = fail(err, len, "deadlock when every send waits for its receive: stage %d is stuck "
                      "before its compute number %d", st, m.cdone[st]);
        }
    }
    streams_free(s, &m);
    return rc;
}

/* ---- the checker ---------------------------------------------------------------------- */
int pipe_inflight_max(const pipe_schedule_t *s, int stage) {
    int held = 0, most = 0, split = 0;
    for (int i = 0; i < s->n[stage]; i++) split |= s->a[stage][i].op == PA_W;
    for (int i = 0; i < s->n[stage]; i++) {
        if (s->a[stage][i].op == PA_FWD && ++held > most) most = held;
        if (s->a[stage][i].op == (split ? PA_W : PA_BWD)) held--;
    }
    return most;
}

int pipe_deferred_max(const pipe_schedule_t *s, int stage) {
    int held = 0, most = 0, split = 0;
    for (int i = 0; i < s->n[stage]; i++) split |= s->a[stage][i].op == PA_W;
    for (int i = 0; i < s->n[stage] && split; i++) {
        if (s->a[stage][i].op == PA_BWD && ++held > most) most = held;
        if (s->a[stage][i].op == PA_W) held--;
    }
    return most;
}


int pipe_inflight_bound(pipe_kind_t kind, int P, int M, int V, int stage) {
    int b;
    switch (kind) {
    case PIPE_NAIVE: return 1;
    case PIPE_GPIPE: case PIPE_TERAPIPE: return M;
    case PIPE_1F1B: return P - stage < M ? P - stage : M;
    case PIPE_ZBH1: return P < M ? P : M;
    case PIPE_INTERLEAVED:
        b = 2 * (P - stage - 1) + (V - 1) * P + 1;
        return b < M * V ? b : M * V;
    default: return 0;
    }
}

double pipe_bubble_formula(pipe_kind_t kind, int P, int M, int V) {
    switch (kind) {
    case PIPE_NAIVE: return (P - 1.0) / P;
    case PIPE_GPIPE: case PIPE_1F1B: case PIPE_TERAPIPE: return (P - 1.0) / (M + P - 1.0);
    case PIPE_INTERLEAVED: return (P - 1.0) / ((double)V * M + P - 1.0);
    case PIPE_ZBH1: return (P - 1.0) / (3.0 * M + P - 1.0);
    default: return 0;
    }
}

/* Where, in one stage's list, each (mb, chunk)'s computes and each
 * message's SEND and RECV are (-1: nowhere yet). */
typedef struct {
    int *fpos, *bpos, *wpos;   /* (M V) its FWD, BWD, W */
    int *recv_pos, *send_pos;  /* (messages) */
    int split;                 /* the list has W's */
} stage_pos_t;

/* 1, 2, 7 action by action on stage st: each compute once, in order, after
 * its input; each message to the right neighbour, once, after its compute. */
static int action_check(const pipe_schedule_t *s, int st, stage_pos_t *q, char *err, size_t len) {
    int P = s->P, M = s->M, V = s->V, PV = P * V, rc = 0;
    char what[96];
    for (int i = 0; i < s->n[st] && rc == 0; i++) {
        const pipe_action_t *a = &s->a[st][i];
        describe(what, sizeof what, a);
        if (a->mb < 0 || a->mb >= M || a->chunk < 0 || a->chunk >= V || a->op < PA_FWD || a->op > PA_W) {
            rc = fail(err, len, "stage %d action %d (%s): no such micro-batch, chunk or operation", st, i, what);
            break;
        }
        int vs = pipe_vstage(s, st, a->chunk);
        if (a->op == PA_W) {   /* 7: the weight-gradient half, once, after its B */
            int k = a->mb * V + a->chunk;
            q->split = 1;
            if (q->wpos[k] >= 0)
                rc = fail(err, len, "stage %d computes %s twice (actions %d and %d)", st, what, q->wpos[k], i);
            else if (q->bpos[k] < 0) rc = fail(err, len, "stage %d runs %s (action %d) before its backward", st, what, i);
            q->wpos[k] = i;
            continue;
        }
        if (a->op == PA_FWD || a->op == PA_BWD) {
            int *pos = a->op == PA_FWD ? q->fpos : q->bpos, k = a->mb * V + a->chunk;
            if (pos[k] >= 0) rc = fail(err, len, "stage %d computes %s twice (actions %d and %d)", st, what, pos[k], i);
            else if (a->op == PA_BWD && q->fpos[k] < 0)
                rc = fail(err, len, "stage %d runs %s (action %d) before its forward", st, what, i);
            pos[k] = i;
            int in = input_msg(s, st, a);
            if (rc == 0 && in >= 0 && q->recv_pos[in] < 0)
                rc = fail(err, len, "stage %d runs %s (action %d) without receiving its input first", st, what, i);
            continue;
        }
        int want_peer = (a->op == PA_SEND) == (a->msg == PM_ACT) ? vs + 1 : vs - 1;
        if (want_peer < 0 || want_peer >= PV) {
            rc = fail(err, len, "stage %d action %d (%s): virtual stage %d has no such neighbour", st, i, what, vs);
            break;
        }
        if (a->peer != want_peer % P) {
            rc = fail(err, len, "stage %d action %d (%s): the other end is stage %d", st, i, what, want_peer % P);
            break;
        }
        int id = action_msg(s, st, a);
        int *pos = a->op == PA_SEND ? q->send_pos : q->recv_pos;
        if (pos[id] >= 0) {
            rc = fail(err, len, "stage %d posts %s twice (actions %d and %d)", st, what, pos[id], i);
            break;
        }
        pos[id] = i;
        if (a->op == PA_SEND) {
            int k = a->mb * V + a->chunk, from = a->msg == PM_ACT ? q->fpos[k] : q->bpos[k];
            if (from < 0) rc = fail(err, len, "stage %d action %d (%s) sends before computing it", st, i, what);
        }
        if (a->with_next && (i + 1 >= s->n[st] || !pipe_is_msg(s->a[st][i + 1].op)))
            rc = fail(err, len, "stage %d action %d (%s) is grouped with an action that is no message", st, i, what);
    }
    return rc;
}

/* 1, 2, 7 over stage st's whole list: every compute of each (mb, chunk)
 * runs, and every output it produces is sent. */
static int output_check(const pipe_schedule_t *s, int st, const stage_pos_t *q, char *err, size_t len) {
    int V = s->V, PV = s->P * V, rc = 0;
    for (int k = 0; k < s->M * V && rc == 0; k++) {
        int mb = k / V, c = k % V, vs = pipe_vstage(s, st, c);
        if (q->fpos[k] < 0 || q->bpos[k] < 0 || (q->split && q->wpos[k] < 0))
            rc = fail(err, len, "stage %d never runs the %s of micro-batch %d chunk %d", st,
                      q->fpos[k] < 0 ? "forward" : q->bpos[k] < 0 ? "backward" : "W (weight gradients)", mb, c);
        else if (vs < PV - 1 && q->send_pos[msg_id(s, PM_ACT, mb, vs)] < 0)
            rc = fail(err, len, "stage %d never sends the activation of micro-batch %d chunk %d", st, mb, c);
        else if (vs > 0 && q->send_pos[msg_id(s, PM_GRAD, mb, vs)] < 0)
            rc = fail(err, len, "stage %d never sends the input gradient of micro-batch %d chunk %d", st, mb, c);
    }
    return rc;
}

/* 2 on stage st: nothing received after the compute that reads it. */
static int input_check(const pipe_schedule_t *s, int st, const stage_pos_t *q, char *err, size_t len) {
    char what[96];
    for (int i = 0; i < s->n[st]; i++) {
        const pipe_action_t *a = &s->a[st][i];
        if (a->op != PA_RECV) continue;
        int k = a->mb * s->V + a->chunk, user = a->msg == PM_ACT ? q->fpos[k] : q->bpos[k];
        describe(what, sizeof what, a);
        if (user < i) return fail(err, len, "stage %d action %d (%s) comes after the compute that needs it", st, i, what);
    }
    return 0;
}

/* 1, 2, 7: each compute once, forward first; its messages around it. */
static int stage_check(const pipe_schedule_t *s, char *err, size_t len) {
    int MV = s->M * s->V, nm = n_msgs(s), rc = 0;
    stage_pos_t q = {xmalloc(sizeof(int) * (size_t)MV), xmalloc(sizeof(int) * (size_t)MV),
                     xmalloc(sizeof(int) * (size_t)MV), xmalloc(sizeof(int) * (size_t)nm),
                     xmalloc(sizeof(int) * (size_t)nm), 0};
    for (int st = 0; st < s->P && rc == 0; st++) {
        for (int i = 0; i < MV; i++) q.fpos[i] = q.bpos[i] = q.wpos[i] = -1;
        for (int i = 0; i < nm; i++) q.recv_pos[i] = q.send_pos[i] = -1;
        q.split = 0;
        rc = action_check(s, st, &q, err, len);
        if (rc == 0) rc = output_check(s, st, &q, err, len);
        if (rc == 0) rc = input_check(s, st, &q, err, len);
    }
    free(q.fpos);
    free(q.bpos);
    free(q.wpos);
    free(q.recv_pos);
    free(q.send_pos);
    return rc;
}

/* 3: between each ordered pair, the k-th send is the k-th receive's message. */
static int match_check(const pipe_schedule_t *s, char *err, size_t len) {
    for (int from = 0; from < s->P; from++)
        for (int to = 0; to < s->P; to++) {
            int i = 0, j = 0;
            for (int k = 0;; k++) {
                while (i < s->n[from] && !(s->a[from][i].op == PA_SEND && s->a[from][i].peer == to)) i++;
                while (j < s->n[to] && !(s->a[to][j].op == PA_RECV && s->a[to][j].peer == from)) j++;
                if (i == s->n[from] && j == s->n[to]) break;
                if (i == s->n[from] || j == s->n[to])
                    return fail(err, len, "stage %d sends %s messages to stage %d than that stage receives",
                                from, i == s->n[from] ? "fewer" : "more", to);
                if (action_msg(s, from, &s->a[from][i]) != action_msg(s, to, &s->a[to][j])) {
                    char what[96], w2[96];
                    describe(what, sizeof what, &s->a[from][i]);
                    describe(w2, sizeof w2, &s->a[to][j]);
                    return fail(err, len, "message %d from stage %d to stage %d: sent as %s (action %d) but "
                                "received as %s (action %d); one tag matches them in order", k, from, to,
                                what, i, w2, j);
                }
                i++;
                j++;
            }
        }
    return 0;
}

/* 4 (a): no deadlock when posting never blocks: the replay at unit costs ends. */
static int replay_check(const pipe_schedule_t *s, char *err, size_t len) {
    int PV = s->P * s->V;
    double *one = xmalloc(sizeof(double) * (size_t)PV);
    for (int i = 0; i < PV; i++) one[i] = 1;
    pipe_costs_t c = {one, one, 0, one};
    pipe_replay_t r;
    int rc = pipe_replay(s, &c, &r, err, len);
    pipe_replay_free(&r);
    free(one);
    return rc;
}

/* 5: token slices: a slice's forward after the earlier slices' (it attends to their keys
 * and values), its backward before theirs (it adds into their key and value gradients) */
static int slice_check(const pipe_schedule_t *s, char *err, size_t len) {
    int M = s->M, K = s->slices, rc = 0;
    char what[96];
    for (int st = 0; st < s->P && rc == 0 && K > 1; st++) {
        int *fdone = xcalloc((size_t)M, sizeof(int)), *bdone = xcalloc((size_t)M, sizeof(int));
        for (int i = 0; i < s->n[st] && rc == 0; i++) {
            const pipe_action_t *a = &s->a[st][i];
            if (a->op != PA_FWD && a->op != PA_BWD) continue;
            int k = a->mb % K, first = a->mb - k;
            describe(what, sizeof what, a);
            for (int j = 0; j < K && rc == 0; j++) {
                if (a->op == PA_FWD && j < k && !fdone[first + j])
                    rc = fail(err, len, "stage %d runs %s (slice %d, action %d) before the forward of slice %d of "
                              "its micro-batch, whose keys and values it attends to", st, what, k, i, j);
                if (a->op == PA_BWD && j > k && !bdone[first + j])
                    rc = fail(err, len, "stage %d runs %s (slice %d, action %d) before the backward of slice %d of "
                              "its micro-batch, which adds into its key and value gradients", st, what, k, i, j);
            }
            (a->op == PA_FWD ? fdone : bdone)[a->mb] = 1;
        }
        free(fdone);
        free(bdone);
    }
    return rc;
}

/* 6: activations in flight within the schedule's promise. */
static int inflight_check(const pipe_schedule_t *s, char *err, size_t len) {
    for (int st = 0; st < s->P; st++) {
        int most = pipe_inflight_max(s, st), b = pipe_inflight_bound(s->kind, s->P, s->M, s->V, st);
        if (most > b)
            return fail(err, len, "stage %d holds the activations of %d chunk micro-batches at once; the %s "
                        "schedule promises at most %d", st, most, pipe_kind_name[s->kind], b);
    }
    return 0;
}

/* The properties schedule.h numbers, one check each; the first that fails
 * is the one reported. */
int pipe_schedule_check(const pipe_schedule_t *s, char *err, size_t len) {
    int rc = stage_check(s, err, len);                 /* 1, 2, 7 */
    if (rc == 0) rc = match_check(s, err, len);        /* 3 */
    if (rc == 0) rc = replay_check(s, err, len);       /* 4 (a) */
    if (rc == 0) rc = stream_check(s, err, len);       /* 4 (b) */
    if (rc == 0) rc = slice_check(s, err, len);        /* 5 */
    if (rc == 0) rc = inflight_check(s, err, len);     /* 6 */
    return rc;
}

/* ---- the picture -------------------------------------------------------------------------- */
static long gcd(long a, long b) { return b ? gcd(b, a % b) : a; }

void pipe_schedule_print(const pipe_schedule_t *s, FILE *f) {
    int P = s->P, M = s->M, V = s->V, PV = P * V, K = s->slices;
    double *one = xmalloc(sizeof(double) * (size_t)PV);
    for (int i = 0; i < PV; i++) one[i] = 1;
    pipe_costs_t c = {one, one, 0, one};
    pipe_replay_t r;
    char err[256];
    if (pipe_replay(s, &c, &r, err, sizeof err)) die("pipeline: %s", err);
    int slots = (int)(r.step + 0.5), w = (M / K > 10 ? 3 : 2) + (V > 1 || K > 1) + 1;
    int split = 0;
    for (int i = 0; i < s->n[0]; i++) split |= s->a[0][i].op == PA_W;
    fprintf(f, "schedule %s: %d stage%s x %d micro-batch%s (one slot per forward or backward%s%s, messages free)\n",
            pipe_kind_name[s->kind], P, P == 1 ? "" : "s", M / K, M / K == 1 ? "" : "es",
            V > 1 ? " of a chunk" : K > 1 ? " of a slice" : "",
            split ? ", the backward split in B and W of one slot each" : "");
    if (K > 1) fprintf(f, "  %d token slices per micro-batch: F3a is the first slice of micro-batch 3, F3b the second\n", K);
    if (V > 1) fprintf(f, "  %d chunks per stage: F3a is micro-batch 3 through the stage's first chunk, F3b its second\n", V);
    char *row = xmalloc((size_t)slots * (size_t)w + 1);
    for (int st = 0; st < P; st++) {
        memset(row, ' ', (size_t)slots * (size_t)w);
        row[(size_t)slots * (size_t)w] = 0;
        for (int t = 0; t < slots; t++) row[t * w] = '.';
        for (int i = 0; i < s->n[st]; i++) {
            const pipe_action_t *a = &s->a[st][i];
            if (pipe_is_msg(a->op)) continue;
            char cell[16], op = a->op == PA_FWD ? 'F' : a->op == PA_BWD ? 'B' : 'W';
            if (K > 1) snprintf(cell, sizeof cell, "%c%d%c", op, a->mb / K, 'a' + a->mb % K);
            else if (V > 1) snprintf(cell, sizeof cell, "%c%d%c", op, a->mb, 'a' + a->chunk);
            else snprintf(cell, sizeof cell, "%c%d", op, a->mb);
            memcpy(row + (int)(r.t0[st][i] + 0.5) * w, cell, strlen(cell));
        }
        fprintf(f, "  stage %-2d %s\n", st, row);
    }
    long busy = (2L + split) * M * V * P, all = (long)slots * P, g = gcd(busy, all);
    long idle = all - busy, g2 = gcd(idle, all);
    const char *formula = s->kind == PIPE_NAIVE ? "(P-1)/P"
                        : s->kind == PIPE_INTERLEAVED ? "(P-1)/(V M+P-1)"
                        : s->kind == PIPE_ZBH1 ? "(P-1)/(3M+P-1)"
                        : K > 1 ? "(P-1)/(M K+P-1)" : "(P-1)/(M+P-1)";
    fprintf(f, "busy %ld of %ld stage-slots: utilisation %ld/%ld = %.1f%%, bubble %ld/%ld = %.1f%% "
            "(formula %s = %.1f%%)\n", busy, all, busy / g, all / g, 100.0 * busy / all, idle / g2,
            all / g2, 100.0 * idle / all, formula, 100 * pipe_bubble_formula(s->kind, P, M, V));
    fprintf(f, "activations held at most, in %smicro-batches:", V > 1 ? "chunk " : K > 1 ? "slice " : "");
    for (int st = 0; st < P; st++) fprintf(f, " stage %d: %d", st, pipe_inflight_max(s, st));
    static const char *promise[PIPE_KINDS] = {"1", "M", "min(M, P - stage)",
                                              "min(V M, 2 (P - stage - 1) + (V - 1) P + 1)",
                                              "min(M, P)", "M K"};
    fprintf(f, " (%s)\n", promise[s->kind]);
    if (split) {
        fprintf(f, "W's waiting at most (B run, W not), in micro-batches:");
        for (int st = 0; st < P; st++) fprintf(f, " stage %d: %d", st, pipe_deferred_max(s, st));
        fprintf(f, "\n");
    }
    free(row);
    free(one);
    pipe_replay_free(&r);
}
