/* trace.c: the span recorder and its Chrome trace writer (see trace.h). */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "device.h"
#include "outfile.h"
#include "replay.h"

typedef struct {
    double t0, t1;   /* seconds since this rank's time zero */
    int track;
    char name[TRACE_NAME];
} span_t;

static struct {
    int on, paused;
    MPI_Comm comm;
    char *path;
    double zero;
    span_t *spans;
    int n, max, dropped;
    int ntracks;
    char tracks[TRACE_MAX_TRACKS][TRACE_NAME];
} tr;

void trace_init(MPI_Comm comm, const char *path, int max_spans) {
    if (!path) return;
    /* Tracks registered before (by modules set up earlier) are kept. */
    tr.on = tr.paused = tr.n = tr.dropped = 0;
    MPI_CHECK(MPI_Comm_dup(comm, &tr.comm));
    tr.path = strdup(path);
    tr.max = max_spans > 0 ? max_spans : 100000;
    tr.spans = xmalloc(sizeof(span_t) * (size_t)tr.max);
    MPI_CHECK(MPI_Barrier(tr.comm));
    tr.zero = now_s();
    tr.on = 1;
}

int trace_on(void) { return tr.on && !tr.paused; }

void trace_pause(int paused) { tr.paused = paused; }

int trace_track(const char *name) {
    for (int i = 0; i < tr.ntracks; i++)
        if (strncmp(tr.tracks[i], name, TRACE_NAME - 1) == 0) return i;
    if (tr.ntracks == TRACE_MAX_TRACKS) die("trace: more than %d tracks", TRACE_MAX_TRACKS);
    snprintf(tr.tracks[tr.ntracks], TRACE_NAME, "%s", name);
    return tr.ntracks++;
}

void trace_span(int track, const char *name, double t0, double t1) {
    if (!trace_on()) return;
    if (tr.n == tr.max) { tr.dropped++; return; }
    span_t *s = &tr.spans[tr.n++];
    s->t0 = t0 - tr.zero;
    s->t1 = t1 - tr.zero;
    s->track = track;
    snprintf(s->name, TRACE_NAME, "%s", name);
}

/* JSON string body: names are ours, but escape quotes and backslashes anyway. */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

void trace_write(void) {
    if (!tr.on) return;
    tr.on = 0;
    int rank, world;
    MPI_Comm_rank(tr.comm, &rank);
    MPI_Comm_size(tr.comm, &world);
    /* Each rank sends its track names then its spans, as bytes. */
    int bytes = (int)(sizeof tr.tracks + sizeof(span_t) * (size_t)tr.n);
    char *mine = xmalloc((size_t)bytes);
    memcpy(mine, tr.tracks, sizeof tr.tracks);
    memcpy(mine + sizeof tr.tracks, tr.spans, sizeof(span_t) * (size_t)tr.n);
    int *counts = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        counts = xmalloc(sizeof(int) * world);
        displs = xmalloc(sizeof(int) * world);
    }
    MPI_CHECK(MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, tr.comm));
    int dropped = 0;
    MPI_CHECK(MPI_Reduce(&tr.dropped, &dropped, 1, MPI_INT, MPI_SUM, 0, tr.comm));
    long total = 0;
    if (rank == 0) {
        for (int r = 0; r < world; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        if (total > 2000000000L) die("trace too large to gather (%ld bytes)", total);
        all = xmalloc((size_t)total);
    }
    MPI_CHECK(MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, tr.comm));
    if (rank == 0) {
        FILE *f = fopen(tr.path, "w");
        if (!f) die("cannot write trace %s: %s", tr.path, strerror(errno));
        fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
        int first = 1;
        long nspans = 0;
        for (int r = 0; r < world; r++) {
            char (*names)[TRACE_NAME] = (char (*)[TRACE_NAME])(all + displs[r]);
            span_t *s = (span_t *)(all + displs[r] + sizeof tr.tracks);
            int n = (int)((counts[r] - (int)sizeof tr.tracks) / (int)sizeof(span_t));
            fprintf(f, "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}},\n",
                    first ? "" : ",\n", r, r);
            fprintf(f, "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, \"args\": {\"sort_index\": %d}}",
                    r, r);
            first = 0;
            for (int t = 0; t < TRACE_MAX_TRACKS && names[t][0]; t++) {
                fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ", r, t);
                json_str(f, names[t]);
                fprintf(f, "}},\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %d, \"tid\": %d, \"args\": {\"sort_index\": %d}}",
                        r, t, t);
            }
            for (int i = 0; i < n; i++) {
                fprintf(f, ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"name\": ",
                        r, s[i].track, s[i].t0 * 1e6, (s[i].t1 - s[i].t0) * 1e6);
                json_str(f, s[i].name);
                fputc('}', f);
            }
            nspans += n;
        }
        fprintf(f, "\n]}\n");
        out_close(f, tr.path);
        say("trace: %s (%ld spans from %d ranks%s; open in https://ui.perfetto.dev)\n",
            tr.path, nspans, world, dropped ? ", some dropped: raise the span limit" : "");
        free(counts);
        free(displs);
        free(all);
    }
    free(mine);
    free(tr.spans);
    free(tr.path);
    MPI_Comm_free(&tr.comm);
    tr.spans = NULL;
    tr.path = NULL;
    tr.n = tr.max = 0;
}

/* ---- the action record ------------------------------------------------------------------- */
static struct {
    int on, paused, depth, begin;
    MPI_Comm comm;
    char *path;
    double mark, inside, entered;
    double link_us, link_gbps;      /* record_link: 0 when not measured */   /* thread CPU seconds: last recorded point, inside calls since, entry */
    rp_event_t *ev;
    int n, cap;
    int *groups, ngroups, gints, gcap;   /* per group: size, then its world ranks */
} rec;

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int record_group(int size, const int *world) {
    if (rec.gints + size + 1 > rec.gcap) {
        rec.gcap = 2 * (rec.gints + size + 1);
        int *g = realloc(rec.groups, sizeof(int) * (size_t)rec.gcap);
        if (!g) die("record: out of memory");
        rec.groups = g;
    }
    rec.groups[rec.gints++] = size;
    memcpy(rec.groups + rec.gints, world, sizeof(int) * (size_t)size);
    rec.gints += size;
    return rec.ngroups++;
}

void record_init(MPI_Comm comm, const char *path) {
    if (!path) return;
    MPI_CHECK(MPI_Comm_dup(comm, &rec.comm));
    rec.path = strdup(path);
    rec.n = 0;
    rec.paused = rec.on = 1;
    rec.mark = cpu_s();
    rec.inside = 0;
}

static int record_on(void) { return rec.on && !rec.paused; }

void record_pause(int paused) {
    if (!rec.on) return;
    rec.paused = paused;
    rec.mark = cpu_s();
    rec.inside = 0;
}

static int add(const rp_event_t *e) {
    if (rec.n == rec.cap) {
        rec.cap = rec.cap ? 2 * rec.cap : 1024;
        rp_event_t *p = realloc(rec.ev, sizeof(rp_event_t) * (size_t)rec.cap);
        if (!p) die("record: out of memory");
        rec.ev = p;
    }
    rec.ev[rec.n] = *e;
    return rec.n++;
}

/* Close the compute since the last recorded point (nothing when none). */
static void flush(const char *name, double flops) {
    double now = cpu_s(), d = now - rec.mark - rec.inside;
    rec.mark = now;
    rec.inside = 0;
    if (d <= 0 && !flops) return;
    rp_event_t e = {.op = RP_COMPUTE, .secs = d > 0 ? d : 0, .flops = flops};
    snprintf(e.name, sizeof e.name, "%s", name);
    add(&e);
}

void record_enter(void) {
    if (rec.depth++ == 0 && record_on()) rec.entered = cpu_s();
}

void record_leave(void) {
    if (--rec.depth == 0 && record_on()) rec.inside += cpu_s() - rec.entered;
}

int record_call(int group, coll_kind kind, int nb, int peer, int src, double bytes) {
    if (!record_on()) return -1;
    flush("-", 0);
    rp_event_t e = {.op = RP_COMM, .kind = kind, .nb = nb, .group = group, .peer = peer, .src = src, .bytes = bytes};
    return add(&e);
}

void record_wait(int ref) {
    if (!record_on() || ref < 0) return;
    flush("-", 0);
    rp_event_t e = {.op = RP_WAIT, .ref = ref};
    add(&e);
}

void record_action_begin(void) {
    if (!record_on()) return;
    flush("-", 0);
    rec.begin = rec.n;
}

void record_action_end(const char *name, double flops) {
    if (!record_on()) return;
    flush(name, 0);
    double secs = 0;
    int pieces = 0;
    for (int i = rec.begin; i < rec.n; i++)
        if (rec.ev[i].op == RP_COMPUTE) { secs += rec.ev[i].secs; pieces++; }
    for (int i = rec.begin; i < rec.n; i++) {
        rp_event_t *e = &rec.ev[i];
        if (e->op != RP_COMPUTE) continue;
        e->flops = secs > 0 ? flops * e->secs / secs : flops / pieces;
        snprintf(e->name, sizeof e->name, "%s", name);
    }
}

void record_mark(const char *name) {
    if (!record_on()) return;
    flush("-", 0);
    rp_event_t e = {.op = RP_MARK};
    snprintf(e.name, sizeof e.name, "%s", name);
    add(&e);
}

void record_link(double alpha_us, double gbps) {
    rec.link_us = alpha_us;
    rec.link_gbps = gbps;
}

/* One rank's lines: its groups, then its events. */
static void record_lines(FILE *f, int r, const int *g, int gints, const rp_event_t *ev, int n) {
    for (int k = 0, id = 0; k < gints; k += g[k] + 1, id++) {
        fprintf(f, "group %d %d %d", r, id, g[k]);
        for (int j = 1; j <= g[k]; j++) fprintf(f, " %d", g[k + j]);
        fputc('\n', f);
    }
    for (int i = 0; i < n; i++) {
        const rp_event_t *e = &ev[i];
        if (e->op == RP_COMPUTE) fprintf(f, "%d compute %.9g %.6g %s\n", r, e->secs, e->flops, e->name);
        else if (e->op == RP_WAIT) fprintf(f, "%d wait %d\n", r, e->ref);
        else if (e->op == RP_MARK) fprintf(f, "%d mark %s\n", r, e->name);
        else fprintf(f, "%d %s %d %d %d %d %.0f\n", r, coll_name[e->kind], e->nb, e->group, e->peer, e->src, e->bytes);
    }
}

/* Every rank's groups and events to rank 0, as bytes. */
static char *gather_bytes(const void *mine, int bytes, int rank, int world, int **displs_out, int **counts_out) {
    int *counts = rank == 0 ? xmalloc(sizeof(int) * (size_t)world) : NULL;
    int *displs = rank == 0 ? xmalloc(sizeof(int) * (size_t)world) : NULL;
    MPI_CHECK(MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, rec.comm));
    char *all = NULL;
    if (rank == 0) {
        long total = 0;
        for (int r = 0; r < world; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        if (total > 2000000000L) die("record too large to gather (%ld bytes)", total);
        all = xmalloc((size_t)total + 1);
    }
    MPI_CHECK(MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, rec.comm));
    *displs_out = displs;
    *counts_out = counts;
    return all;
}

void record_write(void) {
    if (!rec.on) return;
    rec.on = 0;
    int rank, world;
    MPI_Comm_rank(rec.comm, &rank);
    MPI_Comm_size(rec.comm, &world);
    int *gd, *gc, *ed, *ec;
    char *g = gather_bytes(rec.groups, (int)(sizeof(int) * (size_t)rec.gints), rank, world, &gd, &gc);
    char *e = gather_bytes(rec.ev, (int)(sizeof(rp_event_t) * (size_t)rec.n), rank, world, &ed, &ec);
    if (rank == 0) {
        FILE *f = fopen(rec.path, "w");
        if (!f) die("cannot write record %s: %s", rec.path, strerror(errno));
        fprintf(f, "record 1 %d\n", world);
        if (rec.link_gbps > 0) fprintf(f, "link %.6g %.6g\n", rec.link_us, rec.link_gbps);
        long n = 0;
        for (int r = 0; r < world; r++) {
            record_lines(f, r, (const int *)(g + gd[r]), gc[r] / (int)sizeof(int), (const rp_event_t *)(e + ed[r]),
                         ec[r] / (int)sizeof(rp_event_t));
            n += ec[r] / (int)sizeof(rp_event_t);
        }
        out_close(f, rec.path);
        say("record: %s (%ld events from %d ranks; replay it with replay/replay)\n", rec.path, n, world);
    }
    free(g); free(e); free(gd); free(gc); free(ed); free(ec);
    free(rec.path);
    free(rec.ev);
    rec.ev = NULL;
    rec.path = NULL;
    rec.n = rec.cap = 0;
    MPI_Comm_free(&rec.comm);
}
