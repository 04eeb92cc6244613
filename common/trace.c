/* trace.c: the span recorder and its Chrome trace writer (see trace.h). */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device.h"
#include "outfile.h"

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
