/* runner.c: runs this rank's action list on the model (see runner.h). */
#include "runner.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace.h"

static double elapsed(const runner_t *e) { return now_s() - e->t_zero; }

/* ---- pools: micro-batch objects per chunk, message buffers ------------------------------ */
/* The object of unit mb through chunk c; pools per (chunk, slice). */
static model_acts_t *acts_get(runner_t *e, int c, int B, int mb) {
    int M = e->s->M, K = e->s->slices, k = mb % K, pl = c * K + k;
    model_acts_t *a;
    if (e->pool_free[pl] > 0) {
        a = e->pool[pl * M + --e->pool_free[pl]];
    } else {
        a = xmalloc(sizeof *a);
        if (K > 1) model_acts_init_slice(e->m, a, c, B, e->slice_pos[k], e->slice_pos[k + 1] - e->slice_pos[k]);
        else model_acts_init(e->m, a, c, B, e->keep);
        e->made[pl]++;
    }
    if (K > 1) {   /* the micro-batch's earlier slices (V = 1: acts[mb - k .. mb - 1]) */
        a->before = &e->acts[mb - k];
        a->n_before = k;
    }
    e->held++;
    e->held_bytes += (double)a->bytes;
    e->held_kv += (double)a->kv_bytes;
    if (e->held > e->held_peak) e->held_peak = e->held;
    if (e->held_bytes > e->held_bytes_peak) e->held_bytes_peak = e->held_bytes;
    if (e->held_kv > e->held_kv_peak) e->held_kv_peak = e->held_kv;
    return a;
}

static void acts_put(runner_t *e, model_acts_t *a) {
    int K = e->s->slices, k = 0;
    while (k < K - 1 && e->slice_pos[k] != a->pos) k++;
    int pl = a->chunk * K + k;
    e->held--;
    e->held_bytes -= (double)a->bytes;
    e->held_kv -= (double)a->kv_bytes;
    e->pool[pl * e->s->M + e->pool_free[pl]++] = a;
}

static void buf_put(runner_t *e, void *p) { e->bufs[e->nbufs++] = p; }

/* A request is complete: its buffer (a gradient's SEND) goes back. */
static void finished(runner_t *e, int i) {
    comm_wait(e->comm, &e->req[i]);
    if (e->send_buf[i]) {
        buf_put(e, e->send_buf[i]);
        e->send_buf[i] = NULL;
        for (int k = 0; k < e->npending; k++)
            if (e->pending[k] == i) e->pending[k] = e->pending[--e->npending];
    }
}

static void *buf_get(runner_t *e) {
    /* gradients sent by now give their buffers back (not those of an open
     * group: their requests complete only with the group) */
    for (int k = e->npending - 1; k >= 0 && e->nbufs == 0 && !e->comm->grouping; k--)
        if (k < e->npending && comm_progress(e->comm, &e->req[e->pending[k]])) finished(e, e->pending[k]);
    if (e->nbufs > 0) return e->bufs[--e->nbufs];
    e->bufs_made++;
    return dev_alloc_as(e->dev, e->msg_bytes, MEM_COMM);
}

/* Wait for action i's request, sleeping between polls; returns the seconds. */
static double wait_req(runner_t *e, int i, const char *why) {
    comm_req_t *r = &e->req[i];
    if (!r->active) return 0;
    double t0 = now_s();
    if (!comm_progress(e->comm, r)) {
        comm_watch(e->comm, r, why);
        while (!comm_progress(e->comm, r)) comm_nap();
        watch_end();
    }
    finished(e, i);
    double t1 = now_s();
    if (t1 - t0 > 10e-6) trace_span(e->track, why, t0, t1);
    return t1 - t0;
}

/* ---- the unit hook: layer times, and MPI progress during compute ------------------------ */
static void unit_before(void *ctx, model_t *m, int u, model_pass_t pass) {
    (void)m; (void)u; (void)pass;
    runner_t *e = ctx;
    if (!e->time_units) return;
    if (e->sync) dev_sync(e->dev);
    e->unit_t = now_s();
}

static void unit_after(void *ctx, model_t *m, int u, model_pass_t pass) {
    (void)m;
    runner_t *e = ctx;
    if (e->time_units) {
        if (e->sync) dev_sync(e->dev);
        if (e->steps > 0) e->unit_s[pass != PASS_FORWARD][u] += now_s() - e->unit_t;
    }
    /* MPI moves data only inside its calls; testing any request drives its
     * progress engine (on NCCL the GPU moves it by itself) */
    if (e->comm->backend == COMM_MPI && e->last_post >= 0 && e->req[e->last_post].active)
        comm_progress(e->comm, &e->req[e->last_post]);
}

/* ---- set-up ---------------------------------------------------------------------------- */
void runner_init(runner_t *e, const pipe_schedule_t *s, train_t *tr, grad_strategy_t gs, int sync,
                 int time_units) {
    memset(e, 0, sizeof *e);
    if (!s) {
        pipe_schedule_one_stage(&e->one_stage, tr->o.micro);
        s = &e->one_stage;
    }
    model_t *m = &tr->model;
    comm_t *comm = &tr->axis[AXIS_PP];
    if (comm->size != s->P) die("runner: the pipeline communicator has %d ranks for %d stages", comm->size, s->P);
    e->s = s;
    e->stage = comm->rank;
    e->m = m;
    e->comm = comm;
    e->gs = gs;
    e->dev = m->d;
    e->keep = tr->recompute;
    e->sync = sync;
    e->time_units = time_units;
    const model_shard_t *sh = &m->shard;
    if (sh->chunks != s->V) die("runner: the model has %d chunks, the schedule %d", sh->chunks, s->V);
    int K = s->slices;
    if (K > 1 && (m->nck != 1 || sh->tp != 1 || m->T % K || tr->recompute.every || tr->recompute.block ||
                  tr->recompute.selective || s->V != 1))
        die("runner: %d token slices need one chunk per stage, no tensor or context parallelism, no "
            "recomputation, and slices that divide the %d tokens", K, m->T);
    size_t rows = (size_t)m->max_batch * m->T / (sh->sp ? sh->tp : 1) / K;   /* one slice's */
    e->msg_elems = rows * m->cfg.dim;
    e->msg_bytes = e->msg_elems * dtype_size(m->dtype);
    e->tok_elems = e->msg_elems * K / m->T;
    e->slice_pos = xmalloc(sizeof(int) * ((size_t)K + 1));
    for (int k = 0; k <= K; k++) e->slice_pos[k] = k * (m->T / K);
    pipe_links_make(s, e->stage, &e->links);
    int n = e->links.n, MV = s->M * s->V;
    e->keep.defer_w = e->links.split;   /* the micro-batch object and backward_end wait for W */
    e->req = xcalloc((size_t)n, sizeof(comm_req_t));
    e->send_buf = xcalloc((size_t)n, sizeof(void *));
    e->acts = xcalloc((size_t)MV, sizeof(void *));
    e->grad_in = xcalloc((size_t)MV, sizeof(void *));
    e->grad_out = xcalloc((size_t)MV, sizeof(void *));
    e->pool = xcalloc((size_t)MV * K, sizeof(void *));
    e->pool_free = xcalloc((size_t)s->V * K, sizeof(int));
    e->made = xcalloc((size_t)s->V * K, sizeof(int));
    for (int p = 0; p < 2; p++) e->slice_s[p] = xcalloc((size_t)K, sizeof(double));
    e->bufs = xcalloc((size_t)2 * MV + 2, sizeof(void *));
    e->pending = xcalloc((size_t)n + 1, sizeof(int));
    e->t0 = xcalloc((size_t)n + 1, sizeof(double));
    e->t1 = xcalloc((size_t)n + 1, sizeof(double));
    e->sum_fwd = xcalloc((size_t)s->V, sizeof(double));
    e->sum_bwd = xcalloc((size_t)s->V, sizeof(double));
    e->sum_w = xcalloc((size_t)s->V, sizeof(double));
    for (int p = 0; p < 2; p++) e->unit_s[p] = xcalloc((size_t)m->n_units, sizeof(double));
    e->track = trace_track("schedule");
    model_add_hook(m, unit_before, unit_after, e);
    if (tr->acts.bufs && !e->links.split && K == 1) {   /* train_model's object (no defer_w, no slices): chunk 0's first */
        e->borrowed = &tr->acts;
        e->pool[e->pool_free[0]++] = e->borrowed;
        e->made[0]++;
    }
}

void runner_slices(runner_t *e, const int *pos) {
    int K = e->s->slices, most = 0;
    if (pos[0] != 0 || pos[K] != e->m->T) die("runner: slices cover [%d, %d), not the %d tokens", pos[0], pos[K], e->m->T);
    for (int k = 0; k < K; k++) {
        if (pos[k + 1] <= pos[k]) die("runner: slice %d is [%d, %d)", k, pos[k], pos[k + 1]);
        if (pos[k + 1] - pos[k] > most) most = pos[k + 1] - pos[k];
        e->slice_pos[k] = pos[k];
    }
    e->slice_pos[K] = pos[K];
    e->msg_elems = e->tok_elems * most;   /* buffers for the longest slice */
    e->msg_bytes = e->msg_elems * dtype_size(e->m->dtype);
}

/* Elements of unit mb's messages: its slice's. */
static size_t msg_elems_of(const runner_t *e, int mb) {
    int K = e->s->slices, k = mb % K;
    return K > 1 ? e->tok_elems * (size_t)(e->slice_pos[k + 1] - e->slice_pos[k]) : e->msg_elems;
}

void runner_add_seam(runner_t *e, const double *seconds) {
    if (e->nseams == RUNNER_SEAMS) die("runner: more than %d seam counters", RUNNER_SEAMS);
    e->seam[e->nseams++] = seconds;
}

void runner_free(runner_t *e) {
    for (int c = 0; c < e->s->V * e->s->slices; c++)
        for (int j = 0; j < e->pool_free[c]; j++) {
            model_acts_t *a = e->pool[c * e->s->M + j];
            if (a == e->borrowed) continue;
            model_acts_free(e->m, a);
            free(a);
        }
    for (int j = 0; j < e->nbufs; j++) dev_free(e->dev, e->bufs[j]);
    pipe_links_free(&e->links);
    free(e->req); free(e->send_buf); free(e->acts); free(e->grad_in); free(e->grad_out);
    free(e->pool); free(e->pool_free); free(e->made); free(e->bufs); free(e->pending);
    free(e->t0); free(e->t1); free(e->sum_fwd); free(e->sum_bwd); free(e->sum_w);
    free(e->unit_s[0]); free(e->unit_s[1]); free(e->slice_s[0]); free(e->slice_s[1]); free(e->slice_pos);
    pipe_schedule_free(&e->one_stage);
    memset(e, 0, sizeof *e);
}

/* ---- one step ----------------------------------------------------------------------------- */
static void post(runner_t *e, int i, int B) {
    const pipe_schedule_t *s = e->s;
    const pipe_action_t *a = &s->a[e->stage][i];
    int k = a->mb * s->V + a->chunk;
    dtype_t t = e->m->dtype;
    size_t n = msg_elems_of(e, a->mb);
    e->last_post = i;
    if (a->op == PA_RECV && a->msg == PM_ACT) {
        e->acts[k] = acts_get(e, a->chunk, B, a->mb);
        comm_irecv(e->comm, e->acts[k]->resid[0], n, t, a->peer, &e->req[i]);
    } else if (a->op == PA_RECV) {
        e->grad_in[k] = buf_get(e);
        comm_irecv(e->comm, e->grad_in[k], n, t, a->peer, &e->req[i]);
    } else if (a->msg == PM_ACT) {
        model_acts_t *x = e->acts[k];
        comm_isend(e->comm, x->resid[x->n_layers], n, t, a->peer, &e->req[i]);
    } else {
        e->send_buf[i] = e->grad_out[k];
        e->grad_out[k] = NULL;
        e->pending[e->npending++] = i;
        comm_isend(e->comm, e->send_buf[i], n, t, a->peer, &e->req[i]);
    }
}

/* An action's FLOPs for the record (trace.h): its layers' forward FLOPs per
 * token (model.h), the head's 2 C V, over its rows of tokens, shared by the
 * tensor-parallel ranks; a backward twice the forward (B and W once each). */
static double action_flops(const runner_t *e, const model_acts_t *x, int op) {
    const model_config_t *c = &e->m->cfg;
    double f = (double)x->n_layers * model_layer_forward_flops_per_token(c) + (x->has_head ? 2.0 * c->dim * c->vocab : 0);
    f *= (double)x->rows_full / e->m->shard.tp;
    return op == PA_BWD && !e->links.split ? 2 * f : f;
}

/* What the step's time leaves out of compute: the strategy's exposed
 * communication and the seams' blocking time, both growing counters. */
static double sync_time(const runner_t *e) { return e->gs.ctx ? e->gs.exposed(e->gs.ctx) : 0; }
static double seam_time(const runner_t *e) {
    double t = 0;
    for (int k = 0; k < e->nseams; k++) t += *e->seam[k];
    return t;
}

/* Action i, a SEND or RECV: posted, opening or closing its group (a SEND
 * with_next and the RECV after it are one grouped call). */
static void post_action(runner_t *e, int i, int B) {
    const pipe_action_t *list = e->s->a[e->stage], *a = &list[i];
    int first = i == 0 || !list[i - 1].with_next, grouped = a->with_next || !first;
    e->t0[i] = elapsed(e);
    if (first && grouped) comm_group_begin(e->comm);
    post(e, i, B);
    if (!a->with_next && grouped) comm_group_end(e->comm);
    e->t1[i] = elapsed(e);
}

/* The model's part of compute action i on its micro-batch object k: a
 * forward (the batch read where the object holds the embedding or the
 * head), a weight-gradient half, or a backward whose input gradient goes
 * into a message buffer when a SEND carries it. */
static void model_action(train_t *tr, runner_t *e, long step, int i, int k, train_step_t *st) {
    const pipe_action_t *a = &e->s->a[e->stage][i];
    model_t *m = e->m;
    if (a->op == PA_FWD) {
        if (!e->acts[k]) e->acts[k] = acts_get(e, a->chunk, tr->mb, a->mb);   /* virtual stage 0 */
        model_acts_t *x = e->acts[k];
        if (x->has_embedding || x->has_head) train_batch(tr, step, a->mb / e->s->slices, x);
        double loss = model_forward(m, x);
        if (x->has_head && model_counts_loss(m)) st->loss += loss;
    } else if (a->op == PA_W) {
        model_backward_weights(m, e->acts[k]);
    } else {
        model_acts_t *x = e->acts[k];
        if (e->links.split) model_backward_input(m, x, tr->loss_scale, e->grad_in[k]);
        else model_backward(m, x, tr->loss_scale, e->grad_in[k]);
        if (e->grad_in[k]) buf_put(e, e->grad_in[k]);
        e->grad_in[k] = NULL;
        if (e->links.sends_grad[i]) {   /* the input gradient lives until the next backward */
            e->grad_out[k] = buf_get(e);
            dev_copy(e->dev, e->grad_out[k], model_grad_input(m), msg_elems_of(e, a->mb) * dtype_size(m->dtype));
        }
    }
}

/* Compute action i: wait for its input, run it, count its compute time (the
 * strategy's and the seams' time inside it left out), and after a
 * micro-batch's last backward hand its gradients to the strategy and its
 * object back to the pool. */
static void compute_action(train_t *tr, runner_t *e, long step, int i, train_step_t *st) {
    const pipe_schedule_t *s = e->s;
    const pipe_action_t *a = &s->a[e->stage][i];
    grad_strategy_t *gs = e->gs.ctx ? &e->gs : NULL;
    int k = a->mb * s->V + a->chunk;
    char what[TRACE_NAME], chunk[4] = "";
    if (s->V > 1) snprintf(chunk, sizeof chunk, "%c", 'a' + a->chunk);
    if (e->links.in_action[i] >= 0) {
        snprintf(what, sizeof what, "wait %s %d%s", a->op == PA_FWD ? "activation" : "gradient",
                 a->mb, chunk);
        e->idle += wait_req(e, e->links.in_action[i], what);
    }
    const int fin = e->links.split ? PA_W : PA_BWD;
    if (a->op == fin && gs && gs->backward_begin) gs->backward_begin(gs->ctx, e->links.last_bwd[i]);
    double t0 = now_s(), x0 = sync_time(e) + seam_time(e);
    record_action_begin();
    model_action(tr, e, step, i, k, st);
    if (e->sync) dev_sync(e->dev);
    snprintf(what, sizeof what, "%c%d%s", a->op == PA_FWD ? 'F' : a->op == PA_BWD ? 'B' : 'W', a->mb, chunk);
    record_action_end(what, action_flops(e, e->acts[k], a->op));
    double t1 = now_s(), d = t1 - t0 - (sync_time(e) + seam_time(e) - x0);   /* compute only */
    e->busy += d;
    if (a->op == PA_FWD) st->fwd_s += d; else st->bwd_s += d;
    if (e->steps > 0) (a->op == PA_FWD ? e->sum_fwd : a->op == PA_BWD ? e->sum_bwd : e->sum_w)[a->chunk] += d;
    if (e->steps > 0) e->slice_s[a->op != PA_FWD][a->mb % s->slices] += d;
    e->t0[i] = t0 - e->t_zero;
    e->t1[i] = t1 - e->t_zero;
    trace_span(e->track, what, t0, t1);
    if (a->op == fin) {
        if (gs && gs->backward_end) gs->backward_end(gs->ctx, e->links.last_bwd[i]);
        /* the micro-batch object is free once its output has gone */
        if (e->links.act_send[i] >= 0) e->idle += wait_req(e, e->links.act_send[i], "wait for a send");
        acts_put(e, e->acts[k]);
        e->acts[k] = NULL;
    }
}

/* The pipeline drains: every stage waits for the last one (a barrier,
 * polled like a message) -- the end of the bubble, counted as idle.
 * Returns the time it ended. */
static double drain(runner_t *e) {
    double td = now_s();
    MPI_Request b;
    record_enter();
    record_call(e->comm->record_id, COLL_BARRIER, 0, 0, 0, 0);
    MPI_CHECK(MPI_Ibarrier(e->comm->mpi, &b));
    int done = 0;
    watch_begin("the pipeline's drain", e->comm->name, e->comm->world_rank, e->comm->size);
    for (;;) {
        MPI_CHECK(MPI_Test(&b, &done, MPI_STATUS_IGNORE));
        if (done) break;
        comm_nap();
    }
    watch_end();
    record_leave();
    double tend = now_s();
    if (tend - td > 10e-6) trace_span(e->track, "drain", td, tend);
    e->idle += tend - td;
    return tend;
}

void runner_step(train_t *tr, void *runner, long step, train_step_t *st) {
    runner_t *e = runner;
    grad_strategy_t *gs = e->gs.ctx ? &e->gs : NULL;
    double sent0 = comm_sent_bytes(e->comm);
    model_zero_grads(e->m);
    if (gs && gs->step_begin) gs->step_begin(gs->ctx);
    e->t_zero = now_s();
    e->busy = e->idle = 0;
    e->last_post = -1;
    const double sync0 = sync_time(e), seam0 = seam_time(e);
    for (int i = 0; i < e->links.n; i++) {
        if (pipe_is_msg(e->s->a[e->stage][i].op)) post_action(e, i, tr->mb);
        else compute_action(tr, e, step, i, st);
    }
    for (int i = 0; i < e->links.n; i++)
        if (e->req[i].active) e->idle += wait_req(e, i, "wait for a send");
    if (gs && gs->step_end) gs->step_end(gs->ctx);
    e->sync_s = sync_time(e) - sync0;
    st->exposed_s = e->sync_s + seam_time(e) - seam0;
    e->span = drain(e) - e->t_zero;
    e->sent = comm_sent_bytes(e->comm) - sent0;
    st->bubble_s = e->s->P == 1 ? -1 : e->idle;   /* one stage: no pipeline, no bubble */
    if (e->steps > 0) {
        e->sum_busy += e->busy;
        e->sum_idle += e->idle;
        e->sum_span += e->span;
        e->sum_sent += e->sent;
        e->timed++;
    }
    e->steps++;
}
