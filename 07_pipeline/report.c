/* report.c: the pipeline's measurements gathered from every stage, and the
 * replay's costs built from them (see report.h). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static void sum_world(double *x, int n, MPI_Comm w) {
    dist_allreduce(x, n, MPI_DOUBLE, MPI_SUM, w, "the pipeline's report");
}

void runner_report(const runner_t *e, MPI_Comm world, int replicas, int replica, runner_report_t *r) {
    const pipe_schedule_t *s = e->s;
    const model_t *m = e->m;
    int P = s->P, V = s->V, L = m->cfg.layers, st = e->stage;
    memset(r, 0, sizeof *r);
    r->P = P;
    r->V = V;
    r->L = L;
    r->steps = e->timed;
    double T = e->timed > 0 ? e->timed : 1, per = T * s->M * replicas;
    /* one array, summed over the world: each rank fills its stage's slots */
    int nt = 0;
    for (int q = 0; q < P; q++) nt += s->n[q];
    int off = 0;
    for (int q = 0; q < st; q++) off += s->n[q];
    int K = s->slices;
    size_t N = 3 * (size_t)P + 3 * (size_t)P * V + 2 * (size_t)L + 4 + 1 + 2 * (size_t)nt + P + 2 * (size_t)P * K;
    double *x = xcalloc(N, sizeof(double));
    double *busy = x, *idle = busy + P, *span = idle + P, *fwd = span + P, *bwd = fwd + P * V;
    double *lf = bwd + P * V, *lb = lf + L, *eh = lb + L, *sent = eh + 4, *t0 = sent + 1, *t1 = t0 + nt;
    double *wt = t1 + nt, *dob = wt + P * V, *sf = dob + P, *sb = sf + P * K;
    busy[st] = e->sum_busy / T / replicas;
    idle[st] = e->sum_idle / T / replicas;
    span[st] = e->sum_span / T / replicas;
    for (int c = 0; c < V; c++) {
        fwd[st * V + c] = e->sum_fwd[c] / per;
        wt[st * V + c] = e->sum_w[c] / per;
        bwd[st * V + c] = e->sum_bwd[c] / per;
    }
    for (int u = 0; u < m->n_units; u++) {
        int l = m->units[u].layer;
        double f = e->unit_s[0][u] / per, b = e->unit_s[1][u] / per;
        if (l < 0) { eh[0] += f; eh[1] += b; }
        else if (l >= L) { eh[2] += f; eh[3] += b; }
        else { lf[l] += f; lb[l] += b; }
    }
    *sent = e->sum_sent / T / replicas;
    if (e->split && e->pool_free[0] > 0) dob[st] = (double)e->pool[0]->dout_bytes / replicas;
    for (int k = 0; k < K; k++) {   /* each slice runs M / K times per step */
        sf[st * K + k] = e->slice_s[0][k] / (per / K);
        sb[st * K + k] = e->slice_s[1][k] / (per / K);
    }
    /* the last step's timeline of replica 0, from the earliest stage's start */
    double start = e->t_zero, first = start;
    dist_allreduce(&first, 1, MPI_DOUBLE, MPI_MIN, world, "the pipeline's report");
    if (replica == 0)
        for (int i = 0; i < e->n; i++) {
            t0[off + i] = e->t0[i] + start - first;
            t1[off + i] = e->t1[i] + start - first;
        }
    sum_world(x, (int)N, world);
    r->busy = xmalloc(sizeof(double) * (size_t)P);
    r->idle = xmalloc(sizeof(double) * (size_t)P);
    r->span = xmalloc(sizeof(double) * (size_t)P);
    r->fwd = xmalloc(sizeof(double) * (size_t)P * V);
    r->bwd = xmalloc(sizeof(double) * (size_t)P * V);
    r->layer_fwd = xmalloc(sizeof(double) * (size_t)L);
    r->layer_bwd = xmalloc(sizeof(double) * (size_t)L);
    memcpy(r->busy, busy, sizeof(double) * (size_t)P);
    memcpy(r->idle, idle, sizeof(double) * (size_t)P);
    memcpy(r->span, span, sizeof(double) * (size_t)P);
    memcpy(r->fwd, fwd, sizeof(double) * (size_t)P * V);
    memcpy(r->bwd, bwd, sizeof(double) * (size_t)P * V);
    r->w = xmalloc(sizeof(double) * (size_t)P * V);
    r->dout_bytes = xmalloc(sizeof(double) * (size_t)P);
    memcpy(r->w, wt, sizeof(double) * (size_t)P * V);
    memcpy(r->dout_bytes, dob, sizeof(double) * (size_t)P);
    memcpy(r->layer_fwd, lf, sizeof(double) * (size_t)L);
    memcpy(r->layer_bwd, lb, sizeof(double) * (size_t)L);
    r->K = K;
    r->slice_fwd = xmalloc(sizeof(double) * (size_t)P * K);
    r->slice_bwd = xmalloc(sizeof(double) * (size_t)P * K);
    memcpy(r->slice_fwd, sf, sizeof(double) * (size_t)P * K);
    memcpy(r->slice_bwd, sb, sizeof(double) * (size_t)P * K);
    r->emb_fwd = eh[0];
    r->emb_bwd = eh[1];
    r->head_fwd = eh[2];
    r->head_bwd = eh[3];
    r->sent = *sent;
    r->t0 = xcalloc((size_t)P, sizeof(double *));
    r->t1 = xcalloc((size_t)P, sizeof(double *));
    for (int q = 0, o = 0; q < P; o += s->n[q], q++) {
        r->t0[q] = xmalloc(sizeof(double) * ((size_t)s->n[q] + 1));
        r->t1[q] = xmalloc(sizeof(double) * ((size_t)s->n[q] + 1));
        memcpy(r->t0[q], t0 + o, sizeof(double) * (size_t)s->n[q]);
        memcpy(r->t1[q], t1 + o, sizeof(double) * (size_t)s->n[q]);
    }
    free(x);
    /* the peaks: the largest over the replicas */
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
