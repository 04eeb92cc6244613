/* ddp.c: bucketed, overlapped gradient all-reduce (see ddp.h). */
#include "ddp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"
#include "trace.h"

void ddp_init(ddp_t *g, comm_t *comm, float *grads, size_t n, dtype_t wire,
              size_t bucket_bytes, int overlap) {
    memset(g, 0, sizeof *g);
    g->comm = comm;
    g->dev = comm->dev;
    g->grads = grads;
    g->n = n;
    g->wire = wire;
    g->cap = bucket_bytes / dtype_size(wire);
    if (g->cap < 1) g->cap = 1;
    g->overlap = overlap;
    if (wire == DT_BF16) g->wire_buf = dev_alloc(g->dev, n * sizeof(bf16_t));
    g->max_buckets = 64;
    g->buckets = xcalloc((size_t)g->max_buckets, sizeof(ddp_bucket_t));
    g->work_track = trace_track("compute");
}

void ddp_free(ddp_t *g) {
    if (g->wire_buf) dev_free(g->dev, g->wire_buf);
    free(g->buckets);
    memset(g, 0, sizeof *g);
}

void ddp_begin(ddp_t *g, int sync) {
    g->sync = sync;
    if (sync) {
        g->nbuckets = 0;
        g->lo = g->hi = 0;
        g->exposed_s = 0;
    }
}

static void launch(ddp_t *g, ddp_bucket_t *b) {
    b->t_launch = now_s();
    if (g->wire == DT_BF16) {
        bf16_t *w = (bf16_t *)g->wire_buf + b->offset;
        op_cast(g->dev, g->grads + b->offset, DT_F32, w, DT_BF16, b->count);
        comm_iallreduce(g->comm, w, w, b->count, DT_BF16, RED_SUM, &b->req);
    } else {
        float *p = g->grads + b->offset;
        comm_iallreduce(g->comm, p, p, b->count, DT_F32, RED_SUM, &b->req);
    }
    b->state = 1;
}

static void completed(ddp_t *g, ddp_bucket_t *b, int index) {
    b->state = 2;
    if (!trace_on()) return;
    static const char *lane_name[4] = {"comm", "comm 2", "comm 3", "comm 4"};
    int lane = 0;
    while (lane < g->lanes && g->lane_end[lane] > b->t_launch) lane++;
    if (lane == 4) lane = 3;   /* more than 4 at once: let the last lane overlap */
    if (lane == g->lanes) g->lane_track[g->lanes++] = trace_track(lane_name[lane]);
    double t = now_s();
    g->lane_end[lane] = t;
    char name[TRACE_NAME];
    snprintf(name, sizeof name, "allreduce b%d %.2f MB", index, b->count * dtype_size(g->wire) / 1e6);
    trace_span(g->lane_track[lane], name, b->t_launch, t);
}

/* Close the pending range into a bucket; start it now when overlapping. */
static void form_bucket(ddp_t *g) {
    if (g->lo == g->hi) return;
    if (g->nbuckets == g->max_buckets) {
        g->max_buckets *= 2;
        g->buckets = realloc(g->buckets, sizeof(ddp_bucket_t) * (size_t)g->max_buckets);
        if (!g->buckets) die("out of memory for buckets");
    }
    ddp_bucket_t *b = &g->buckets[g->nbuckets++];
    memset(b, 0, sizeof *b);
    b->offset = g->lo;
    b->count = g->hi - g->lo;
    g->lo = g->hi = 0;
    if (g->overlap) launch(g, b);
}

/* Let MPI move the buckets in flight (a no-op cost when there are none). */
static void progress(ddp_t *g) {
    for (int i = 0; i < g->nbuckets; i++) {
        ddp_bucket_t *b = &g->buckets[i];
        if (b->state == 1 && comm_progress(g->comm, &b->req)) completed(g, b, i);
    }
}

void ddp_grad_ready(void *ctx, size_t offset, size_t count) {
    ddp_t *g = ctx;
    if (!g->sync || count == 0) return;   /* no_sync: accumulate only */
    double t0 = now_s();
    if (g->lo == g->hi) {
        g->lo = offset;
        g->hi = offset + count;
    } else if (offset + count == g->lo) {
        g->lo = offset;                    /* the usual case: backward walks down */
    } else if (offset == g->hi) {
        g->hi += count;
    } else {
        form_bucket(g);                    /* not adjacent: never mix ranges */
        g->lo = offset;
        g->hi = offset + count;
    }
    if (g->hi - g->lo >= g->cap) form_bucket(g);
    if (g->overlap) progress(g);
    /* On the CPU this time was taken from the backward pass. On a GPU the
     * host only queued work; ddp_finish measures what the stream waited. */
    double t1 = now_s();
    if (g->dev->kind == DEV_CPU) g->exposed_s += t1 - t0;
    if (t1 - t0 > 20e-6) trace_span(g->work_track, "ddp: launch, MPI progress", t0, t1);
}

void ddp_finish(ddp_t *g) {
    dev_timer_t t;
    dev_timer_start(&t, g->dev);
    form_bucket(g);
    if (!g->overlap)
        for (int i = 0; i < g->nbuckets; i++) launch(g, &g->buckets[i]);
    for (int i = 0; i < g->nbuckets; i++) {
        ddp_bucket_t *b = &g->buckets[i];
        comm_wait(g->comm, &b->req);
        if (b->state != 2) completed(g, b, i);
        if (g->wire == DT_BF16)
            op_cast(g->dev, (bf16_t *)g->wire_buf + b->offset, DT_BF16, g->grads + b->offset,
                    DT_F32, b->count);
    }
    g->exposed_s += dev_timer_stop_ms(&t) / 1e3;
}
