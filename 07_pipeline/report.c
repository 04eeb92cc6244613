/* report.c: the pipeline's measurements gathered from every stage, and the
 * replay's costs built from them (see report.h). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static void sum_world(double *x, int n, MPI_Comm w) {
    dist_allreduce(x, n, MPI_DOUBLE, MPI_SUM, w, "the pipeline's report");
}

/* One array summed over the world, in slots: each rank fills its stage's. */
typedef struct {
    double *busy, *idle, *span;   /* (P) per step */
    double *fwd, *bwd, *wt;       /* (P V) per chunk micro-batch */
    double *lf, *lb;              /* (L) each layer's forward, backward */
    double *eh;                   /* (4) embedding forward, backward, head forward, backward */
    double *sent;                 /* (1) bytes per step */
    double *t0, *t1;              /* (every stage's actions, in stage order) the last step's timeline */
    double *dob;                  /* (P) a held output gradient's bytes */
    double *sf, *sb;              /* (P K) each token slice's forward, backward */
} report_slots_t;

/* The array and its slots; returns the array, its length in *N. */
static double *slots_alloc(const runner_t *e, report_slots_t *q, size_t *N) {
    const pipe_schedule_t *s = e->s;
    int P = s->P, V = s->V, L = e->m->cfg.layers, K = s->slices, nt = 0;
    for (int p = 0; p < P; p++) nt += s->n[p];
    *N = 3 * (size_t)P + 3 * (size_t)P * V + 2 * (size_t)L + 4 + 1 + 2 * (size_t)nt + P + 2 * (size_t)P * K;
    double *x = xcalloc(*N, sizeof(double));
    q->busy = x, q->idle = q->busy + P, q->span = q->idle + P, q->fwd = q->span + P, q->bwd = q->fwd + P * V;
    q->lf = q->bwd + P * V, q->lb = q->lf + L, q->eh = q->lb + L, q->sent = q->eh + 4, q->t0 = q->sent + 1;
    q->t1 = q->t0 + nt, q->wt = q->t1 + nt, q->dob = q->wt + P * V, q->sf = q->dob + P, q->sb = q->sf + P * K;
    return x;
}

/* This rank's means per step and per chunk micro-batch (over its replicas),
 * and, on replica 0, the last step's timeline from the earliest stage's start. */
static void slots_fill(const runner_t *e, MPI_Comm world, int replicas, int replica, const report_slots_t *q) {
    const pipe_schedule_t *s = e->s;
    const model_t *m = e->m;
    int V = s->V, L = m->cfg.layers, K = s->slices, st = e->stage;
    double T = e->timed > 0 ? e->timed : 1, per = T * s->M * replicas;
    q->busy[st] = e->sum_busy / T / replicas;
    q->idle[st] = e->sum_idle / T / replicas;
    q->span[st] = e->sum_span / T / replicas;
    for (int c = 0; c < V; c++) {
        q->fwd[st * V + c] = e->sum_fwd[c] / per;
        q->wt[st * V + c] = e->sum_w[c] / per;
        q->bwd[st * V + c] = e->sum_bwd[c] / per;
    }
    for (int u = 0; u < m->n_units; u++) {
        int l = m->units[u].layer;
        double f = e->unit_s[0][u] / per, b = e->unit_s[1][u] / per;
        if (l < 0) { q->eh[0] += f; q->eh[1] += b; }
        else if (l >= L) { q->eh[2] += f; q->eh[3] += b; }
        else { q->lf[l] += f; q->lb[l] += b; }
    }
    *q->sent = e->sum_sent / T / replicas;
    if (e->links.split && e->pool_free[0] > 0) q->dob[st] = (double)e->pool[0]->dout_bytes / replicas;
    for (int k = 0; k < K; k++) {   /* each slice runs M / K times per step */
        q->sf[st * K + k] = e->slice_s[0][k] / (per / K);
        q->sb[st * K + k] = e->slice_s[1][k] / (per / K);
    }
    int off = 0;
    for (int p = 0; p < st; p++) off += s->n[p];
    double start = e->t_zero, first = start;
    dist_allreduce(&first, 1, MPI_DOUBLE, MPI_MIN, world, "the pipeline's report");
    if (replica == 0)
        for (int i = 0; i < e->links.n; i++) {
            q->t0[off + i] = e->t0[i] + start - first;
            q->t1[off + i] = e->t1[i] + start - first;
        }
}

static double *copy_of(const double *x, size_t n) {
    double *c = xmalloc(sizeof(double) * n);
    memcpy(c, x, sizeof(double) * n);
    return c;
}

/* The summed slots into the report's arrays. */
static void slots_take(const pipe_schedule_t *s, const report_slots_t *q, runner_report_t *r) {
    size_t P = (size_t)r->P, PV = P * (size_t)r->V, L = (size_t)r->L, PK = P * (size_t)r->K;
    r->busy = copy_of(q->busy, P);
    r->idle = copy_of(q->idle, P);
    r->span = copy_of(q->span, P);
    r->fwd = copy_of(q->fwd, PV);
    r->bwd = copy_of(q->bwd, PV);
    r->w = copy_of(q->wt, PV);
    r->dout_bytes = copy_of(q->dob, P);
    r->layer_fwd = copy_of(q->lf, L);
    r->layer_bwd = copy_of(q->lb, L);
    r->slice_fwd = copy_of(q->sf, PK);
    r->slice_bwd = copy_of(q->sb, PK);
    r->emb_fwd = q->eh[0];
    r->emb_bwd = q->eh[1];
    r->head_fwd = q->eh[2];
    r->head_bwd = q->eh[3];
    r->sent = *q->sent;
    r->t0 = xcalloc(P, sizeof(double *));
    r->t1 = xcalloc(P, sizeof(double *));
    for (int p = 0, o = 0; p < r->P; o += s->n[p], p++) {
        r->t0[p] = xmalloc(sizeof(double) * ((size_t)s->n[p] + 1));
        r->t1[p] = xmalloc(sizeof(double) * ((size_t)s->n[p] + 1));
        memcpy(r->t0[p], q->t0 + o, sizeof(double) * (size_t)s->n[p]);
        memcpy(r->t1[p], q->t1 + o, sizeof(double) * (size_t)s->n[p]);
    }
}

/* The peaks: the largest over the replicas. */
static void report_peaks(const runner_t *e, MPI_Comm world, runner_report_t *r) {
    int P = r->P, st = e->stage;
    double *pk = xcalloc(4 * (size_t)P, sizeof(double));
    pk[st] = e->held_peak;
    pk[P + st] = e->held_bytes_peak;
    pk[2 * P + st] = e->bufs_made;
    pk[3 * P + st] = e->held_kv_peak;
    dist_allreduce(pk, 4 * P, MPI_DOUBLE, MPI_MAX, world, "the pipeline's report");
    r->held = xmalloc(sizeof(int) * (size_t)P);
    r->held_bytes = xmalloc(sizeof(double) * (size_t)P);
    r->bufs = xmalloc(sizeof(int) * (size_t)P);
    r->held_kv = xmalloc(sizeof(double) * (size_t)P);
    for (int q = 0; q < P; q++) {
        r->held_kv[q] = pk[3 * P + q];
        r->held[q] = (int)pk[q];
        r->held_bytes[q] = pk[P + q];
        r->bufs[q] = (int)pk[2 * P + q];
    }
    free(pk);
}

void runner_report(const runner_t *e, MPI_Comm world, int replicas, int replica, runner_report_t *r) {
    memset(r, 0, sizeof *r);
    r->P = e->s->P;
    r->V = e->s->V;
    r->L = e->m->cfg.layers;
    r->K = e->s->slices;
    r->steps = e->timed;
    report_slots_t q;
    size_t N;
    double *x = slots_alloc(e, &q, &N);
    slots_fill(e, world, replicas, replica, &q);
    sum_world(x, (int)N, world);
    slots_take(e->s, &q, r);
    free(x);
    report_peaks(e, world, r);
}

void runner_report_free(runner_report_t *r) {
    for (int q = 0; q < r->P && r->t0; q++) {
        free(r->t0[q]);
        free(r->t1[q]);
    }
    free(r->t0); free(r->t1); free(r->busy); free(r->idle); free(r->span); free(r->fwd); free(r->bwd);
    free(r->layer_fwd); free(r->layer_bwd); free(r->held); free(r->held_bytes); free(r->bufs);
    free(r->w); free(r->dout_bytes); free(r->held_kv); free(r->slice_fwd); free(r->slice_bwd);
    memset(r, 0, sizeof *r);
}

/* Every layer has the same shapes: each costs the mean of the measured
 * layers (so that a slower core or a busier moment of one stage in the run
 * does not become one stage's property in the replay); the embedding and the
 * head keep their own times. */
void pipe_costs_from_layers(const runner_report_t *r, int P, int V, double *fwd, double *bwd) {
    int per = r->L / (P * V), last = P * V - 1;
    if (per < 1 || r->L % (P * V)) die("pipeline: %d layers do not cut into %d x %d chunks", r->L, P, V);
    double lf = 0, lb = 0;
    for (int l = 0; l < r->L; l++) {
        lf += r->layer_fwd[l] / r->L;
        lb += r->layer_bwd[l] / r->L;
    }
    for (int s = 0; s < P; s++)
        for (int c = 0; c < V; c++) {
            int vs = c * P + s;
            double f = per * lf, b = per * lb;
            if (vs == 0) { f += r->emb_fwd; b += r->emb_bwd; }
            if (vs == last) { f += r->head_fwd; b += r->head_bwd; }
            fwd[s * V + c] = f;
            bwd[s * V + c] = b;
        }
}
