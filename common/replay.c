/* replay.c: the replay engine and the record reader (see replay.h). */
#include "replay.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void *grow(void *p, size_t bytes) {
    void *q = realloc(p, bytes);
    if (!q) die("replay: out of memory (%zu bytes)", bytes);
    return q;
}

/* ---- building a trace --------------------------------------------------------------------- */
void replay_trace_init(replay_trace_t *t, int world) {
    memset(t, 0, sizeof *t);
    t->world = world;
    t->n = xcalloc((size_t)world, sizeof(int));
    t->cap = xcalloc((size_t)world, sizeof(int));
    t->ev = xcalloc((size_t)world, sizeof(rp_event_t *));
    int *all = xmalloc(sizeof(int) * (size_t)world);
    for (int r = 0; r < world; r++) all[r] = r;
    replay_trace_group(t, "world", world, all);   /* group 0: the marks' */
    free(all);
}

int replay_trace_group(replay_trace_t *t, const char *name, int size, const int *world_ranks) {
    if (t->ngroups == t->cap_groups) {
        t->cap_groups = t->cap_groups ? 2 * t->cap_groups : 8;
        t->group = grow(t->group, sizeof(rp_group_t) * (size_t)t->cap_groups);
    }
    rp_group_t *g = &t->group[t->ngroups];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->size = size;
    g->world = xmalloc(sizeof(int) * (size_t)size);
    memcpy(g->world, world_ranks, sizeof(int) * (size_t)size);
    return t->ngroups++;
}

int replay_trace_add(replay_trace_t *t, int rank, const rp_event_t *e) {
    if (t->n[rank] == t->cap[rank]) {
        t->cap[rank] = t->cap[rank] ? 2 * t->cap[rank] : 64;
        t->ev[rank] = grow(t->ev[rank], sizeof(rp_event_t) * (size_t)t->cap[rank]);
    }
    t->ev[rank][t->n[rank]] = *e;
    return t->n[rank]++;
}

void replay_trace_free(replay_trace_t *t) {
    for (int r = 0; r < t->world; r++) free(t->ev[r]);
    for (int g = 0; g < t->ngroups; g++) free(t->group[g].world);
    free(t->ev); free(t->n); free(t->cap); free(t->group);
    memset(t, 0, sizeof *t);
}

/* ---- pricing ------------------------------------------------------------------------------ */
static int is_collective(const rp_event_t *e) {
    return e->op == RP_MARK || (e->op == RP_COMM && e->kind != COLL_SEND && e->kind != COLL_RECV &&
                                e->kind != COLL_SENDRECV);
}

static int same_node(const replay_links_t *l, int a, int b) {
    return l->node_size <= 0 || a / l->node_size == b / l->node_size;
}

/* alpha (s) and seconds per byte of the link between world ranks a and b */
static void link_of(const replay_links_t *l, int inter, double *alpha, double *per_byte) {
    double us = inter ? l->inter_us : l->intra_us, gbps = inter ? l->inter_gbps : l->intra_gbps;
    *alpha = us * 1e-6;
    *per_byte = gbps > 0 ? 1 / (gbps * 1e9) : 0;
}

double replay_coll_cost(coll_kind k, double X, int n, const int *members, const replay_links_t *l) {
    if (n <= 1) return 0;
    int inter = 0;
    for (int i = 1; i < n; i++) inter |= !same_node(l, members[0], members[i]);
    double a, b, logn = ceil(log2(n));
    link_of(l, inter, &a, &b);
    switch (k) {
    case COLL_ALLREDUCE: return 2 * (n - 1) * (a + X / n * b);
    case COLL_REDUCE_SCATTER: case COLL_ALLGATHER: case COLL_ALLTOALL: return (n - 1) * (a + X / n * b);
    case COLL_BROADCAST: case COLL_REDUCE: return logn * (a + X * b);
    case COLL_BARRIER: return logn * a;
    default: return a + X * b;   /* one message between the first two members */
    }
}

/* ---- the engine --------------------------------------------------------------------------- */
typedef struct {          /* arrival times of the messages from one rank to another on one group */
    double *t;
    int n, cap, taken;
} msgq_t;

typedef struct {
    const replay_trace_t *t;
    const replay_links_t *l;
    replay_compute_fn price;
    void *ctx;
    replay_result_t *r;
    int W;
    double *clock, *send_free, *coll_free;
    int *pc, **posted;     /* posted[r][i]: the call at i has been made */
    double **done;         /* completion of a call, -1 while unknown */
    double **left;         /* when a call's message has left (its post time without one) */
    int **seq;             /* a collective's call number on its group; a receive's in its queue */
    int **colls, *ncolls, *head;   /* each rank's collectives in order, the oldest unresolved */
    int **cnt;             /* [group][call] members that have made it */
    double **tmax;         /* [group][call] the latest of their calls */
    msgq_t *q;             /* [(group W + from) W + to] */
} engine_t;

static msgq_t *queue(engine_t *x, int g, int from, int to) { return &x->q[((size_t)g * x->W + from) * x->W + to]; }

static int world_of(const engine_t *x, int g, int member) { return x->t->group[g].world[member]; }

static void post_send(engine_t *x, int r, const rp_event_t *e, double now, double *left) {
    int to = world_of(x, e->group, e->peer);
    double a, b;
    link_of(x->l, !same_node(x->l, r, to), &a, &b);
    double start = fmax(now, x->send_free[r]), occ = e->bytes * b;
    x->send_free[r] = start + occ;
    msgq_t *m = queue(x, e->group, r, to);
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->t = grow(m->t, sizeof(double) * (size_t)m->cap);
    }
    m->t[m->n++] = start + a + occ;
    *left = start + occ;
}

/* Make the call at event i of rank r (once): sends leave, receives take
 * their place in line, collectives are counted on their group. */
static void post(engine_t *x, int r, int i) {
    const rp_event_t *e = &x->t->ev[r][i];
    double now = x->clock[r];
    x->posted[r][i] = 1;
    x->r->t0[r][i] = now;
    if (is_collective(e)) {
        int g = e->op == RP_MARK ? 0 : e->group, k = x->seq[r][i];
        x->cnt[g][k]++;
        if (now > x->tmax[g][k]) x->tmax[g][k] = now;
        return;
    }
    x->left[r][i] = now;
    if (e->kind == COLL_SEND || e->kind == COLL_SENDRECV) post_send(x, r, e, now, &x->left[r][i]);
    if (e->kind == COLL_SEND) x->done[r][i] = x->r->t1[r][i] = x->left[r][i];
    if (e->kind == COLL_RECV || e->kind == COLL_SENDRECV) {
        msgq_t *m = queue(x, e->group, world_of(x, e->group, e->src), r);
        x->seq[r][i] = m->taken++;
    }
}

/* The completion of the call at event i of rank r, or -1 while unknown. */
static double completion(engine_t *x, int r, int i) {
    const rp_event_t *e = &x->t->ev[r][i];
    if (x->done[r][i] >= 0 || is_collective(e) || e->kind == COLL_SEND) return x->done[r][i];
    msgq_t *m = queue(x, e->group, world_of(x, e->group, e->src), r);
    int k = x->seq[r][i];
    if (k >= m->n) return -1;
    x->done[r][i] = x->r->t1[r][i] = fmax(x->left[r][i], m->t[k]);
    return x->done[r][i];
}

/* Run rank r until it waits for something not yet known; 1 if it moved. */
static int advance(engine_t *x, int r) {
    const replay_trace_t *t = x->t;
    int moved = 0;
    while (x->pc[r] < t->n[r]) {
        int i = x->pc[r];
        const rp_event_t *e = &t->ev[r][i];
        double *clock = &x->clock[r];
        if (e->op == RP_COMPUTE) {
            double d = x->price ? x->price(e, x->ctx) : e->secs;
            x->r->t0[r][i] = *clock;
            *clock += d;
            x->r->busy[r] += d;
            x->r->t1[r][i] = *clock;
        } else if (e->op == RP_WAIT) {
            double d = completion(x, r, e->ref);
            if (d < 0) break;
            x->r->t0[r][i] = *clock;
            if (d > *clock) *clock = d;
            x->r->t1[r][i] = *clock;
        } else {
            if (!x->posted[r][i]) { post(x, r, i); moved = 1; }
            if (!e->nb) {
                double d = completion(x, r, i);
                if (d < 0) break;
                if (d > *clock) *clock = d;
                x->r->t1[r][i] = *clock;
            }
        }
        x->pc[r]++;
        moved = 1;
    }
    return moved;
}

/* Start every collective that all its members have called and that is the
 * oldest unresolved one of each; 1 if any did. */
static int resolve(engine_t *x) {
    int moved = 0;
    for (int r = 0; r < x->W; r++) {
        if (x->head[r] == x->ncolls[r]) continue;
        int i = x->colls[r][x->head[r]];
        const rp_event_t *e = &x->t->ev[r][i];
        int g = e->op == RP_MARK ? 0 : e->group, k = x->seq[r][i];
        const rp_group_t *G = &x->t->group[g];
        if (x->cnt[g][k] < G->size) continue;
        double start = x->tmax[g][k];
        int ok = 1;
        for (int m = 0; m < G->size && ok; m++) {
            int w = G->world[m];
            if (x->head[w] == x->ncolls[w]) { ok = 0; break; }
            int j = x->colls[w][x->head[w]];
            const rp_event_t *f = &x->t->ev[w][j];
            ok = (f->op == RP_MARK ? 0 : f->group) == g && x->seq[w][j] == k;
            start = fmax(start, x->coll_free[w]);
        }
        if (!ok) continue;
        double end = start + (e->op == RP_MARK ? 0 : replay_coll_cost(e->kind, e->bytes, G->size, G->world, x->l));
        for (int m = 0; m < G->size; m++) {
            int w = G->world[m], j = x->colls[w][x->head[w]++];
            x->done[w][j] = end;
            x->r->t1[w][j] = end;
            if (e->op != RP_MARK) x->coll_free[w] = end;
        }
        moved = 1;
    }
    return moved;
}

/* Number every collective on its group and list each rank's in order. */
static void number_calls(engine_t *x) {
    const replay_trace_t *t = x->t;
    int *calls = xcalloc((size_t)t->world * t->ngroups, sizeof(int)), *most = xcalloc((size_t)t->ngroups, sizeof(int));
    for (int r = 0; r < t->world; r++)
        for (int i = 0; i < t->n[r]; i++) {
            const rp_event_t *e = &t->ev[r][i];
            if (!is_collective(e)) continue;
            int g = e->op == RP_MARK ? 0 : e->group, k = calls[r * t->ngroups + g]++;
            x->seq[r][i] = k;
            x->colls[r][x->ncolls[r]++] = i;
            if (k + 1 > most[g]) most[g] = k + 1;
        }
    for (int g = 0; g < t->ngroups; g++) {
        x->cnt[g] = xcalloc((size_t)most[g] + 1, sizeof(int));
        x->tmax[g] = xcalloc((size_t)most[g] + 1, sizeof(double));
    }
    free(calls);
    free(most);
}

static void engine_init(engine_t *x, const replay_trace_t *t, replay_result_t *r) {
    int W = t->world;
    x->W = W;
    x->clock = xcalloc((size_t)W, sizeof(double));
    x->send_free = xcalloc((size_t)W, sizeof(double));
    x->coll_free = xcalloc((size_t)W, sizeof(double));
    x->pc = xcalloc((size_t)W, sizeof(int));
    x->head = xcalloc((size_t)W, sizeof(int));
    x->ncolls = xcalloc((size_t)W, sizeof(int));
    x->posted = xcalloc((size_t)W, sizeof(int *));
    x->seq = xcalloc((size_t)W, sizeof(int *));
    x->colls = xcalloc((size_t)W, sizeof(int *));
    x->done = xcalloc((size_t)W, sizeof(double *));
    x->left = xcalloc((size_t)W, sizeof(double *));
    memset(r, 0, sizeof *r);
    r->world = W;
    r->busy = xcalloc((size_t)W, sizeof(double));
    r->idle = xcalloc((size_t)W, sizeof(double));
    r->t0 = xcalloc((size_t)W, sizeof(double *));
    r->t1 = xcalloc((size_t)W, sizeof(double *));
    for (int q = 0; q < W; q++) {
        size_t n = (size_t)t->n[q] + 1;
        x->posted[q] = xcalloc(n, sizeof(int));
        x->seq[q] = xcalloc(n, sizeof(int));
        x->colls[q] = xcalloc(n, sizeof(int));
        x->done[q] = xmalloc(sizeof(double) * n);
        x->left[q] = xcalloc(n, sizeof(double));
        for (size_t i = 0; i < n; i++) x->done[q][i] = -1;
        r->t0[q] = xcalloc(n, sizeof(double));
        r->t1[q] = xcalloc(n, sizeof(double));
    }
    x->cnt = xcalloc((size_t)t->ngroups, sizeof(int *));
    x->tmax = xcalloc((size_t)t->ngroups, sizeof(double *));
    x->q = xcalloc((size_t)t->ngroups * W * W, sizeof(msgq_t));
    number_calls(x);
}

static void engine_free(engine_t *x) {
    for (int q = 0; q < x->W; q++) {
        free(x->posted[q]); free(x->seq[q]); free(x->colls[q]); free(x->done[q]); free(x->left[q]);
    }
    for (int g = 0; g < x->t->ngroups; g++) { free(x->cnt[g]); free(x->tmax[g]); }
    for (size_t k = 0; k < (size_t)x->t->ngroups * x->W * x->W; k++) free(x->q[k].t);
    free(x->clock); free(x->send_free); free(x->coll_free); free(x->pc); free(x->head); free(x->ncolls);
    free(x->posted); free(x->seq); free(x->colls); free(x->done); free(x->left); free(x->cnt); free(x->tmax); free(x->q);
}

static const char *op_word(const rp_event_t *e) {
    if (e->op == RP_COMPUTE) return "compute";
    if (e->op == RP_WAIT) return "wait";
    if (e->op == RP_MARK) return "mark";
    return coll_name[e->kind];
}

/* The marks' times and labels, from rank 0's list. */
static void collect_marks(const replay_trace_t *t, replay_result_t *r) {
    for (int i = 0; i < t->n[0]; i++) r->nmarks += t->ev[0][i].op == RP_MARK;
    r->mark_t = xcalloc((size_t)r->nmarks + 1, sizeof(double));
    r->mark_name = xcalloc((size_t)r->nmarks + 1, sizeof(char *));
    for (int i = 0, k = 0; i < t->n[0]; i++)
        if (t->ev[0][i].op == RP_MARK) {
            r->mark_t[k] = r->t1[0][i];
            r->mark_name[k++] = t->ev[0][i].name;
        }
}

int replay_run(const replay_trace_t *t, const replay_links_t *l, replay_compute_fn price, void *ctx,
               replay_result_t *r, char *err, size_t len) {
    engine_t x = {.t = t, .l = l, .price = price, .ctx = ctx, .r = r};
    engine_init(&x, t, r);
    for (int moved = 1; moved;) {
        moved = 0;
        for (int q = 0; q < t->world; q++) moved |= advance(&x, q);
        moved |= resolve(&x);
    }
    int rc = 0;
    for (int q = 0; q < t->world; q++) {
        if (x.pc[q] < t->n[q] && rc == 0) {
            const rp_event_t *e = &t->ev[q][x.pc[q]];
            if (err) snprintf(err, len, "deadlock: rank %d waits at event %d (%s) for a call no rank makes", q,
                              x.pc[q], op_word(e->op == RP_WAIT ? &t->ev[q][e->ref] : e));
            rc = -1;
        }
        if (x.clock[q] > r->step) r->step = x.clock[q];
    }
    r->at = xmalloc(sizeof(int) * (size_t)t->world);
    for (int q = 0; q < t->world; q++) {
        r->idle[q] = r->step - r->busy[q];
        r->at[q] = x.pc[q];
    }
    collect_marks(t, r);
    engine_free(&x);
    return rc;
}

void replay_result_free(replay_result_t *r) {
    for (int q = 0; q < r->world && r->t0; q++) {
        free(r->t0[q]);
        free(r->t1[q]);
    }
    free(r->t0); free(r->t1); free(r->busy); free(r->idle); free(r->mark_t); free(r->mark_name); free(r->at);
    memset(r, 0, sizeof *r);
}

/* ---- reading a record (format: trace.h) --------------------------------------------------- */
static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err) vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* The trace's group for rank r's k-th communicator of these members: the
 * first such group r has not claimed yet (every rank makes its
 * communicators in the same order), or a new one. claimed[g W + r]. */
static int group_index(replay_trace_t *t, int r, int size, const int *w, unsigned char **claimed) {
    int W = t->world;
    for (int g = 1; g < t->ngroups; g++)
        if (!(*claimed)[g * W + r] && t->group[g].size == size &&
            memcmp(t->group[g].world, w, sizeof(int) * (size_t)size) == 0) {
            (*claimed)[g * W + r] = 1;
            return g;
        }
    char name[16];
    snprintf(name, sizeof name, "g%d", t->ngroups);
    int g = replay_trace_group(t, name, size, w);
    *claimed = grow(*claimed, (size_t)t->ngroups * W);
    memset(*claimed + (size_t)g * W, 0, (size_t)W);
    (*claimed)[g * W + r] = 1;
    return g;
}

static int kind_of(const char *word) {
    for (int k = 0; k < COLL_KINDS; k++)
        if (strcmp(word, coll_name[k]) == 0) return k;
    return -1;
}

/* One event line after "RANK "; 0 or -1. local[id]: rank's groups in the trace. */
static int parse_event(const char *rest, rp_event_t *e, const int *local, int nlocal) {
    char word[32];
    int used = 0;
    memset(e, 0, sizeof *e);
    if (sscanf(rest, "%31s %n", word, &used) != 1) return -1;
    rest += used;
    if (strcmp(word, "compute") == 0) {
        e->op = RP_COMPUTE;
        return sscanf(rest, "%lf %lf %47s", &e->secs, &e->flops, e->name) == 3 && e->secs >= 0 ? 0 : -1;
    }
    if (strcmp(word, "wait") == 0) {
        e->op = RP_WAIT;
        return sscanf(rest, "%d", &e->ref) == 1 ? 0 : -1;
    }
    if (strcmp(word, "mark") == 0) {
        e->op = RP_MARK;
        return sscanf(rest, "%47s", e->name) == 1 ? 0 : -1;
    }
    int k = kind_of(word), id;
    if (k < 0 || sscanf(rest, "%d %d %d %d %lf", &e->nb, &id, &e->peer, &e->src, &e->bytes) != 5) return -1;
    if (id < 0 || id >= nlocal) return -1;
    e->op = RP_COMM;
    e->kind = (coll_kind)k;
    e->group = local[id];
    return 0;
}

/* Every reference in range, every peer inside its group. */
static int validate(const replay_trace_t *t, char *err, size_t len) {
    for (int r = 0; r < t->world; r++)
        for (int i = 0; i < t->n[r]; i++) {
            const rp_event_t *e = &t->ev[r][i];
            if (e->op == RP_WAIT && (e->ref < 0 || e->ref >= i || t->ev[r][e->ref].op != RP_COMM || !t->ev[r][e->ref].nb))
                return fail(err, len, "rank %d event %d waits for %d, not an earlier non-blocking call", r, i, e->ref);
            if (e->op == RP_COMM) {
                int n = t->group[e->group].size;
                if (e->peer < 0 || e->peer >= n || e->src < 0 || e->src >= n)
                    return fail(err, len, "rank %d event %d names a rank outside its group of %d", r, i, n);
            }
        }
    return 0;
}

static int read_lines(replay_trace_t *t, FILE *f, const char *path, char *err, size_t len) {
    char line[4096];
    int **local = xcalloc((size_t)t->world, sizeof(int *)), *nlocal = xcalloc((size_t)t->world, sizeof(int));
    unsigned char *claimed = grow(NULL, (size_t)t->world);
    int rc = 0;
    for (int ln = 2; rc == 0 && fgets(line, sizeof line, f); ln++) {
        int r, used = 0, id, size;
        if (sscanf(line, "group %d %d %d %n", &r, &id, &size, &used) == 3) {
            if (r < 0 || r >= t->world || size < 1 || size > t->world || id != nlocal[r]) {
                rc = fail(err, len, "%s:%d: a bad group line", path, ln);
                break;
            }
            int *w = xmalloc(sizeof(int) * (size_t)size), got = 0;
            for (int j = 0, u; j < size && sscanf(line + used, "%d %n", &w[j], &u) == 1; j++, got++) used += u;
            if (got == size) {
                local[r] = grow(local[r], sizeof(int) * ((size_t)nlocal[r] + 1));
                local[r][nlocal[r]++] = group_index(t, r, size, w, &claimed);
            } else {
                rc = fail(err, len, "%s:%d: a group of %d ranks lists %d", path, ln, size, got);
            }
            free(w);
            continue;
        }
        rp_event_t e;
        if (sscanf(line, "%d %n", &r, &used) != 1 || r < 0 || r >= t->world ||
            parse_event(line + used, &e, local[r], nlocal[r]))
            rc = fail(err, len, "%s:%d: not a record line: %.60s", path, ln, line);
        else
            replay_trace_add(t, r, &e);
    }
    for (int r = 0; r < t->world; r++) free(local[r]);
    free(local);
    free(nlocal);
    free(claimed);
    return rc;
}

int replay_trace_read(replay_trace_t *t, const char *path, char *err, size_t len) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) return fail(err, len, "cannot read %s: %s", path, strerror(errno));
    int world = 0, version = 0;
    if (fscanf(f, "record %d %d ", &version, &world) != 2 || version != 1 || world < 1 || world > 1 << 20) {
        fclose(f);
        return fail(err, len, "%s: not a record file of version 1 (its first line: record 1 WORLD)", path);
    }
    replay_trace_init(t, world);
    long at = ftell(f);
    if (fscanf(f, "link %lf %lf ", &t->link_us, &t->link_gbps) != 2 || !(t->link_gbps > 0) || t->link_us < 0) {
        t->link_us = t->link_gbps = 0;
        fseek(f, at, SEEK_SET);
    }
    int rc = read_lines(t, f, path, err, len);
    fclose(f);
    if (rc == 0) rc = validate(t, err, len);
    if (rc) replay_trace_free(t);
    return rc;
}
