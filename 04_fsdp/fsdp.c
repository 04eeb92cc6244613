/* fsdp.c: ZeRO-1/2/3 and FSDP over any data-parallel communicator, with
 * hybrid sharding's replicas (see fsdp.h). The model's unit hooks carry the
 * technique: before a unit runs, its gradient buffer (ZeRO-2/3) and its
 * gathered weights (ZeRO-3); after it, the weights go back; grad_sync
 * reduce-scatters each unit's gradient as backward finishes it. */
#include "fsdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"
#include "trace.h"

enum { EMPTY, INFLIGHT, READY };   /* a unit's gathered weights (ZeRO-3) */

const char *fsdp_stage_name(int zero) {
    static const char *name[4] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    return zero >= 0 && zero <= 3 ? name[zero] : "?";
}

static size_t es(const fsdp_t *f) { return dtype_size(f->wt); }
static void *at(const fsdp_t *f, void *p, size_t n) { return (char *)p + n * es(f); }
static int min_int(int a, int b) { return a < b ? a : b; }

/* ---- what the stage holds ------------------------------------------------------ */
/* Buffers of units in flight, each N x per_max elements: gathered weights
 * (ZeRO-3: the unit running and the prefetched ones, or every unit when
 * they stay until backward) and gradients (ZeRO-2/3: the unit in backward
 * and those whose reduce-scatter is in flight). */
static int weight_slots(const fsdp_t *f, int zero) {
    if (zero != 3) return 0;
    if (!f->reshard || f->keep_gathered) return f->n_units;
    /* in a pipeline the last unit, kept for its backward, may wait while
     * other micro-batches' forwards run */
    return min_int(f->n_units, 1 + f->o.prefetch + (f->stages > 1));
}
static int rs_inflight(const fsdp_t *f) {
    return min_int(f->n_units, f->o.no_overlap ? 1 : FSDP_RS_INFLIGHT);
}
static int grad_slots(const fsdp_t *f, int zero) {
    if (zero < 2 || f->N == 1) return 0;
    return f->o.no_overlap ? 1 : min_int(f->n_units, FSDP_RS_INFLIGHT + 1);
}
/* Some unit does not split into N equal pieces: ZeRO-1/2 gather it through
 * a buffer of N whole pieces (the weights array has no room for padding). */
static int uneven(const fsdp_t *f) {
    for (int u = 0; u < f->n_units; u++)
        if (f->count[u] % (size_t)f->N) return 1;
    return 0;
}

static void predict(const fsdp_t *f, int zero, fsdp_mem_t *mem) {
    memset(mem, 0, sizeof *mem);
    double P = 0, S = (double)f->S, N = f->N, w = (double)es(f), unit = N * (double)f->per_max;
    for (int u = 0; u < f->n_units; u++) P += (double)f->count[u];
    double *k = mem->kind;
    /* the paper's mixed-precision bytes: 2 weights, 2 gradients, 12 Adam (fp32 master, m, v) */
    static const double paper[4][2] = {{16, 0}, {4, 12}, {2, 14}, {0, 16}};
    mem->paper = paper[zero][0] * P + paper[zero][1] * P / N;
    if (zero == 0) {
        k[MEM_PARAMS] = P * w;
        k[MEM_GRADS] = 4 * P;
        k[MEM_OPTIM] = 12 * P;
        if (f->wt == DT_BF16 && N > 1) k[MEM_COMM] = 2 * P;   /* the bf16 wire copy */
        mem->state = (w + 16) * P;
    } else {
        k[MEM_PARAMS] = zero <= 2 ? P * w : 0;
        k[MEM_GRADS] = 4 * S + (zero == 1 && N > 1 ? 4 * N * S : 0);
        k[MEM_OPTIM] = 12 * S;
        /* one rank alone keeps no second, whole gradient: its shard is all of it */
        mem->state = (zero <= 2 ? w * P : 0) + (zero == 1 && N > 1 ? 4 * P : 0) + 16 * P / N;
        k[MEM_PARAMS] += weight_slots(f, zero) * unit * w;
        k[MEM_GRADS] += grad_slots(f, zero) * unit * 4;
        if (N > 1) {   /* grad_sync's receive slots (and their bf16 wire copies) */
            int s = rs_inflight(f);
            k[MEM_COMM] = s * (double)f->per_max * 4;
            if (f->wt == DT_BF16) k[MEM_COMM] += s * (double)f->per_max * (N + 1) * 2;
            if (zero <= 2 && uneven(f)) k[MEM_COMM] += unit * w;   /* the bounce buffer */
        }
        if (f->R > 1 && f->wt == DT_BF16) k[MEM_COMM] += 2 * S;   /* bf16 copy for the replicas */
    }
    mem->buffers = k[MEM_PARAMS] + k[MEM_GRADS] + k[MEM_OPTIM] + k[MEM_COMM] - mem->state;
}

void fsdp_mem_predict(const fsdp_t *f, fsdp_mem_t *mem) { predict(f, f->o.zero, mem); }

void fsdp_bytes_predict(const fsdp_t *f, fsdp_bytes_t *b) {
    memset(b, 0, sizeof *b);
    double N = f->N, R = f->R, w = (double)es(f), m = f->micro, S = (double)f->S, P = 0;
    for (int u = 0; u < f->n_units; u++) P += (double)f->count[u];
    if (!f->z.shard_optim) {
        b->shard[COLL_ALLREDUCE] = N > 1 ? 2 * (N - 1) / N * P * w : 0;
    } else if (N > 1) {
        b->shard[COLL_REDUCE_SCATTER] = (f->z.whole_grads ? 1 : m) * (N - 1) * S * w;
        if (!f->z.gather_weights) {
            b->shard[COLL_ALLGATHER] = (N - 1) * S * w;
        } else if (f->keep_gathered) {   /* once per step, kept across the micro-batches */
            b->shard[COLL_ALLGATHER] = (N - 1) * S * w;
        } else {   /* forward: every unit; backward: all but the one kept from forward */
            double back = f->reshard ? S - (double)f->per[f->n_units - 1] : 0;
            b->shard[COLL_ALLGATHER] = m * (N - 1) * (S + back) * w;
        }
    }
    if (f->z.shard_optim && R > 1) b->replicate[COLL_ALLREDUCE] = 2 * (R - 1) / R * S * w;
}

/* ---- ZeRO-3: gathered weights ---------------------------------------------------- */
static int take_weight_slot(fsdp_t *f, int u) {
    for (int s = 0; s < f->nwslots; s++)
        if (f->wslot_unit[s] < 0) {
            f->wslot_unit[s] = u;
            return s;
        }
    /* an order the preallocated slots did not foresee (recomputation keeps
     * a segment's units): one more */
    int s = f->nwslots++;
    f->wslot = realloc(f->wslot, sizeof *f->wslot * (size_t)f->nwslots);
    f->wslot_unit = realloc(f->wslot_unit, sizeof *f->wslot_unit * (size_t)f->nwslots);
    if (!f->wslot || !f->wslot_unit) die("out of memory for FSDP buffers");
    f->wslot[s] = dev_alloc_as(f->d, (size_t)f->N * f->per_max * es(f), MEM_PARAMS);
    f->wslot_unit[s] = u;
    return s;
}

/* Cast this rank's fp32 master piece into its place in the unit's buffer and
 * all-gather the others' around it (in place). */
static void gather_start(fsdp_t *f, int u) {
    /* ASSIGNMENT 04-zero3: ZeRO-3's gather and reduce-scatter (04_fsdp/README.md, "Assignment: ZeRO-3's hooks") */
    /* STUB: (void)f, (void)u; */
    /* STUB: not_implemented("the all-gather before use", "04_fsdp/README.md, Assignment: ZeRO-3's hooks"); */
    fsdp_gather_t *g = &f->g[u];
    g->slot = take_weight_slot(f, u);
    size_t per = f->per[u];
    void *buf = f->wslot[g->slot], *mine = at(f, buf, (size_t)f->shard->rank * per);
    op_cast(f->d, f->tr->opt.master + f->pieces[u].off, DT_F32, mine, f->wt, per);
    g->t0 = now_s();
    if (f->N > 1) {
        comm_iallgather(f->shard, mine, buf, per, f->wt, &g->req);
        g->state = INFLIGHT;
    } else {
        g->state = READY;
    }
    /* END ASSIGNMENT 04-zero3 */
}

static void trace_gather(fsdp_t *f, int u, double t0, double t1) {
    if (!trace_on()) return;
    /* gathers in flight at once go to separate lanes (a track cannot hold
     * overlapping slices); at most 3, within the trace's 8 tracks */
    static const char *lane_name[3] = {"all-gather", "all-gather 2", "all-gather 3"};
    int lane = 0;
    while (lane < 2 && f->lane_end[lane] > t0) lane++;
    if (f->gather_track[lane] < 0) f->gather_track[lane] = trace_track(lane_name[lane]);
    f->lane_end[lane] = t1;
    char name[TRACE_NAME];
    snprintf(name, sizeof name, "all-gather unit %d %.2f MB", u, f->N * f->per[u] * es(f) / 1e6);
    trace_span(f->gather_track[lane], name, t0, t1);
}

static void gather_finish(fsdp_t *f, int u) {
    fsdp_gather_t *g = &f->g[u];
    comm_wait(f->shard, &g->req);
    g->state = READY;
    trace_gather(f, u, g->t0, now_s());
}

static void release_weights(fsdp_t *f, int u) {
    fsdp_gather_t *g = &f->g[u];
    if (g->state == INFLIGHT) gather_finish(f, u);
    if (g->state == EMPTY) return;
    f->wslot_unit[g->slot] = -1;
    g->state = EMPTY;
    f->m->unit_w[u] = NULL;
}

/* Step 1 records the order in which the units run; later steps start the
 * all-gathers of the next --prefetch units of that order (never past the
 * step's end: the optimizer changes the weights there). */
static void record(fsdp_t *f, int code) {
    if (f->norder == f->cap_order) {
        f->cap_order = f->cap_order ? 2 * f->cap_order : 256;
        f->order = realloc(f->order, sizeof(int) * (size_t)f->cap_order);
        if (!f->order) die("out of memory for the unit order");
    }
    f->order[f->norder++] = code;
}

static void prefetch(fsdp_t *f, int u, int code) {
    if (!f->recorded || f->o.prefetch == 0) return;
    int p = f->pos + 1;   /* where this pass should be */
    if (p >= f->norder || f->order[p] != code) {
        for (p = 0; p < f->norder && f->order[p] != code; p++) {}
        if (p == f->norder) { f->pos = f->norder; return; }   /* an order not seen: no guess */
    }
    f->pos = p;
    int seen[64], nseen = 0;
    for (int j = p + 1; j < f->norder && nseen < f->o.prefetch && nseen < 64; j++) {
        int v = f->order[j] / 3, dup = v == u;
        for (int i = 0; i < nseen; i++) dup |= seen[i] == v;
        if (dup) continue;
        seen[nseen++] = v;
        if (f->g[v].state == EMPTY) gather_start(f, v);
    }
}

/* ---- gradients ---------------------------------------------------------------------- */
static void give_grad_buffer(fsdp_t *f, int u) {
    for (int s = 0; s < f->ngslots; s++)
        if (f->gslot_unit[s] < 0) {
            f->gslot_unit[s] = u;
            dev_memset0(f->d, f->gslot[s], (size_t)f->N * f->per[u] * sizeof(float));   /* padding too */
            f->m->unit_g[u] = f->gslot[s];
            return;
        }
    die("fsdp: no free gradient buffer for unit %d (%d in use)", u, f->ngslots);
}

/* Hybrid sharding: unit u's piece is final in this group; sum it over the replicas. */
static void rep_start(fsdp_t *f, int u) {
    float *p = f->gshard + f->pieces[u].off;
    size_t per = f->per[u];
    if (f->wt == DT_BF16) {
        bf16_t *w = (bf16_t *)f->rep_wire + f->pieces[u].off;
        op_cast(f->d, p, DT_F32, w, DT_BF16, per);
        comm_iallreduce(f->rep, w, w, per, DT_BF16, RED_SUM, &f->rep_req[u]);
    } else {
        comm_iallreduce(f->rep, p, p, per, DT_F32, RED_SUM, &f->rep_req[u]);
    }
    f->rep_t0[u] = now_s();
}

static void rep_finish(fsdp_t *f, int u) {
    double t0 = f->rep_t0[u];
    comm_wait(f->rep, &f->rep_req[u]);
    if (f->wt == DT_BF16)
        op_cast(f->d, (bf16_t *)f->rep_wire + f->pieces[u].off, DT_BF16, f->gshard + f->pieces[u].off,
                DT_F32, f->per[u]);
    if (trace_on()) {
        if (f->rep_track < 0) f->rep_track = trace_track("all-reduce across groups");
        char name[TRACE_NAME];
        snprintf(name, sizeof name, "all-reduce unit %d %.2f MB", u, f->per[u] * es(f) / 1e6);
        trace_span(f->rep_track, name, t0, now_s());
    }
}

static void rep_progress(fsdp_t *f) {
    if (f->R == 1) return;
    for (int u = 0; u < f->n_units; u++)
        if (f->rep_req[u].active && comm_progress(f->rep, &f->rep_req[u])) rep_finish(f, u);
}

/* grad_sync: unit u's reduce-scatter is done and added into the shard. */
static void on_reduced(void *ctx, int u) {
    fsdp_t *f = ctx;
    if (f->z.shard_grads)
        for (int s = 0; s < f->ngslots; s++)
            if (f->gslot_unit[s] == u) {
                f->gslot_unit[s] = -1;
                f->m->unit_g[u] = NULL;
            }
    if (f->R > 1 && f->last_micro) rep_start(f, u);
}

/* ---- the hooks -------------------------------------------------------------------------- */
static void before_unit(void *ctx, model_t *m, int u, model_pass_t pass) {
    fsdp_t *f = ctx;
    int code = u * 3 + (int)pass;
    if (!f->recorded) record(f, code);
    if (pass == PASS_BACKWARD && f->z.shard_grads && f->N > 1) give_grad_buffer(f, u);
    double t0 = now_s();
    if (f->z.gather_weights) {
        if (f->g[u].state == EMPTY) gather_start(f, u);
        if (f->g[u].state == INFLIGHT) gather_finish(f, u);
        m->unit_w[u] = f->wslot[f->g[u].slot];
        prefetch(f, u, code);
    }
    rep_progress(f);
    f->exposed_s += now_s() - t0;
}

static void after_unit(void *ctx, model_t *m, int u, model_pass_t pass) {
    fsdp_t *f = ctx;
    (void)m;
    double t0 = now_s();
    if (f->z.gather_weights) {
        /* the last unit of forward runs backward next: it keeps its weights */
        int keep = pass == PASS_RECOMPUTE ||
                   (pass == PASS_FORWARD && (!f->reshard || f->keep_gathered || u == f->n_units - 1)) ||
                   (pass == PASS_BACKWARD && f->keep_gathered && !f->last_micro);
        if (!keep) release_weights(f, u);
    }
    if (pass == PASS_BACKWARD && f->z.shard_optim) {
        if (f->N == 1 && f->R > 1 && f->last_micro) rep_start(f, u);   /* nothing to reduce-scatter */
        if (f->o.no_overlap) {
            if (f->R > 1 && f->rep_req[u].active) rep_finish(f, u);
            f->exposed_s += now_s() - t0;
            /* this unit's reduce-scatter, now (grad_sync counts its own wait) */
            if (f->N > 1) grad_sync_finish(&f->gs);
            if (f->R > 1 && f->rep_req[u].active) {   /* started when the reduce-scatter ended */
                t0 = now_s();
                rep_finish(f, u);
                f->exposed_s += now_s() - t0;
            }
            return;
        }
    }
    f->exposed_s += now_s() - t0;
}

/* ZeRO-1/2: every unit's updated pieces, all-gathered into the weights. */
static void gather_updated(train_t *tr, void *ctx) {
    fsdp_t *f = ctx;
    (void)tr;
    if (f->N == 1) {   /* the piece is the whole unit */
        for (int u = 0; u < f->n_units; u++)
            op_cast(f->d, f->tr->opt.master + f->pieces[u].off, DT_F32, f->m->unit_w[u], f->wt, f->count[u]);
        return;
    }
    for (int u = 0; u < f->n_units; u++) {
        size_t per = f->per[u], n = (size_t)f->N * per;
        void *dst = n == f->count[u] ? f->m->unit_w[u] : f->bounce, *mine = at(f, dst, (size_t)f->shard->rank * per);
        op_cast(f->d, f->tr->opt.master + f->pieces[u].off, DT_F32, mine, f->wt, per);
        comm_allgather(f->shard, mine, dst, per, f->wt);
        if (dst == f->bounce) dev_copy(f->d, f->m->unit_w[u], f->bounce, f->count[u] * es(f));
    }
}

/* This rank's bytes since the current step began, by group and collective;
 * returns their sum. */
static double step_bytes(fsdp_t *f) {
    comm_t *c[2] = {f->shard, f->rep};
    double total = 0;
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < COLL_KINDS; k++) {
            double d = c[g] ? c[g]->sent[k] - f->sent0[g][k] : 0;
            (g ? f->step_bytes.replicate : f->step_bytes.shard)[k] = d;
            total += d;
        }
    return total;
}

/* The step line's note (rank 0): this step's bytes per rank, by collective. */
static void note_bytes(train_t *tr, void *ctx) {
    fsdp_t *f = ctx;
    (void)tr;
    double total = step_bytes(f);
    const double *s = f->step_bytes.shard;
    printf(" | sent %.2f MB", total / 1e6);
    if (!f->z.shard_optim) return;
    printf(" (gather %.2f, reduce-scatter %.2f", s[COLL_ALLGATHER] / 1e6, s[COLL_REDUCE_SCATTER] / 1e6);
    if (f->R > 1) printf(", across groups %.2f", f->step_bytes.replicate[COLL_ALLREDUCE] / 1e6);
    printf(")");
}

/* ---- set-up --------------------------------------------------------------------------------- */
/* Units and their sizes from the shard's tensor list, before the model
 * exists (the memory check comes first). */
static void plan_units(fsdp_t *f, const train_t *tr) {
    int nt = model_tensors(&tr->cfg, &tr->shard, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(&tr->cfg, &tr->shard, ts, nt);
    f->count = xcalloc((size_t)nt, sizeof(size_t));
    f->n_units = 0;
    for (int i = 0; i < nt; i++) {
        if (i == 0 || ts[i].layer != ts[i - 1].layer) f->n_units++;
        f->count[f->n_units - 1] += ts[i].rows * ts[i].cols;
    }
    free(ts);
    f->per = xcalloc((size_t)f->n_units, sizeof(size_t));
    f->S = f->per_max = 0;
    for (int u = 0; u < f->n_units; u++) {
        f->per[u] = (f->count[u] + (size_t)f->N - 1) / (size_t)f->N;
        f->S += f->per[u];
        if (f->per[u] > f->per_max) f->per_max = f->per[u];
    }
}

/* Pipeline stages differ (the ends hold the embedding and the head), so
 * the ranks compare their answers: when one stage does not fit, every rank
 * refuses together. */
static void check_memory_limit(fsdp_t *f) {
    size_t limit = f->tr->o.mem_limit;
    if (!limit) return;
    fsdp_mem_t mine, z3;
    predict(f, f->o.zero, &mine);
    predict(f, 3, &z3);
    double need = 0, need3 = 0;
    for (int k = 0; k < MEM_KINDS; k++) {
        need += mine.kind[k];
        need3 += z3.kind[k];
    }
    char why[400] = "";
    if (need > (double)limit)
        snprintf(why, sizeof why, "--mem-limit %zu bytes (%.2f MB) per rank: %s on %d rank%s needs %.0f bytes "
                 "(%.2f MB) on rank %d for weights, gradients, optimizer state and buffers before any "
                 "activation (ZeRO-3 would need %.2f MB)", limit, limit / 1e6, fsdp_stage_name(f->o.zero), f->N,
                 f->N == 1 ? "" : "s", need, need / 1e6, f->tr->dist.rank, need3 / 1e6);
    usage_error_any(why);
}

fsdp_policy_t fsdp_policy(int zero) {
    return (fsdp_policy_t){.shard_optim = zero >= 1, .shard_grads = zero >= 2, .whole_grads = zero == 1,
                           .gather_weights = zero == 3,
                           .with_params = zero == 0 ? MODEL_PARAMS_AND_GRADS
                                        : zero <= 2 ? MODEL_PARAMS_ONLY : MODEL_NO_PARAMS};
}

/* The options checked, the units and this rank's pieces planned, and the
 * memory limit checked against the plan (collective). */
static void fsdp_plan(fsdp_t *f, train_t *tr, comm_t *shard, comm_t *rep, const fsdp_opts_t *o) {
    memset(f, 0, sizeof *f);
    f->o = *o;
    f->z = fsdp_policy(o->zero);
    f->tr = tr;
    f->d = &tr->dev;
    f->wt = tr->dtype;
    f->shard = shard;
    f->rep = rep && rep->size > 1 ? rep : NULL;
    f->N = shard->size;
    f->R = f->rep ? rep->size : 1;
    f->reshard = strcmp(o->reshard, "on") == 0;
    f->keep_gathered = strcmp(o->reshard_backward, "off") == 0;
    f->stages = tr->mesh.size[AXIS_PP];
    if (rep && !f->z.shard_optim) usage_error("hybrid sharding needs --zero 1, 2 or 3");
    if (f->keep_gathered && !f->z.gather_weights)
        usage_error("--reshard-after-backward off keeps ZeRO-3's gathered weights; ZeRO-%d gathers none "
                    "(every rank holds the whole weights): drop it or use --zero 3", o->zero);
    if (f->z.gather_weights && o->prefetch > tr->cfg.layers)
        usage_error("--prefetch %d is deeper than the model's %d layers", o->prefetch, tr->cfg.layers);
    plan_units(f, tr);
    check_memory_limit(f);
}

/* The model with the arrays the stage keeps, the shard, the gradient and
 * weight buffers, and the gradient synchronisation (DDP: grad_sync's
 * all-reduce; ZeRO: its reduce-scatter into the shard). */
static void fsdp_allocate(fsdp_t *f, train_t *tr) {
    const fsdp_opts_t *o = &f->o;
    train_model(tr, f->z.with_params);
    model_t *m = f->m = &tr->model;
    if (m->n_units != f->n_units) die("fsdp: the model has %d units, the plan %d", m->n_units, f->n_units);
    for (int u = 0; u < f->n_units; u++)
        if (m->units[u].count != f->count[u]) die("fsdp: unit %d has %zu elements, the plan %zu", u,
                                                  m->units[u].count, f->count[u]);
    for (int i = 0; i < 4; i++) f->gather_track[i] = -1;
    f->rep_track = -1;
    if (!f->z.shard_optim) {   /* plain DDP, the baseline: common/grad_sync's all-reduce */
        grad_sync_init_allreduce(&f->gs, f->shard, m, f->wt, (size_t)(tr->o.bucket_mb * 1048576.0),
                                 !o->no_overlap);
        return;
    }
    f->pieces = xcalloc((size_t)f->n_units, sizeof *f->pieces);
    size_t S = grad_sync_pieces(m, f->N, f->shard->rank, f->pieces);
    if (S != f->S) die("fsdp: shard of %zu elements, the plan %zu", S, f->S);
    f->gshard = dev_alloc_as(f->d, S * sizeof(float), MEM_GRADS);
    for (int u = 0; u < f->n_units; u++) f->pieces[u].grad = f->gshard + f->pieces[u].off;
    /* working weights come from the all-gathers, not from the optimizer */

    if (f->N == 1) {   /* nothing to reduce: gradients go straight into the shard */
        for (int u = 0; u < f->n_units; u++) m->unit_g[u] = f->gshard + f->pieces[u].off;
    } else {
        if (f->z.whole_grads) {
            f->gfull = dev_alloc_as(f->d, (size_t)f->N * S * sizeof(float), MEM_GRADS);
            for (int u = 0; u < f->n_units; u++) m->unit_g[u] = f->gfull + (size_t)f->N * f->pieces[u].off;
        }
        f->ngslots = grad_slots(f, o->zero);
        f->gslot = xcalloc((size_t)f->ngslots + 1, sizeof *f->gslot);
        f->gslot_unit = xcalloc((size_t)f->ngslots + 1, sizeof(int));
        for (int s = 0; s < f->ngslots; s++) {
            f->gslot[s] = dev_alloc_as(f->d, (size_t)f->N * f->per_max * sizeof(float), MEM_GRADS);
            f->gslot_unit[s] = -1;
        }
        if (!f->z.gather_weights && uneven(f))
            f->bounce = dev_alloc_as(f->d, (size_t)f->N * f->per_max * es(f), MEM_COMM);
        grad_sync_init_reduce_scatter(&f->gs, f->shard, m, f->wt, f->gshard, f->pieces, 1,
                                      rs_inflight(f), on_reduced, f);
    }
    if (f->z.gather_weights) {
        f->g = xcalloc((size_t)f->n_units, sizeof *f->g);
        f->nwslots = weight_slots(f, 3);
        f->wslot = xcalloc((size_t)f->nwslots, sizeof *f->wslot);
        f->wslot_unit = xcalloc((size_t)f->nwslots, sizeof(int));
        for (int s = 0; s < f->nwslots; s++) {
            f->wslot[s] = dev_alloc_as(f->d, (size_t)f->N * f->per_max * es(f), MEM_PARAMS);
            f->wslot_unit[s] = -1;
        }
    }
    if (f->R > 1) {
        f->rep_req = xcalloc((size_t)f->n_units, sizeof *f->rep_req);
        f->rep_t0 = xcalloc((size_t)f->n_units, sizeof(double));
        if (f->wt == DT_BF16) f->rep_wire = dev_alloc_as(f->d, S * sizeof(bf16_t), MEM_COMM);
    }
}

/* The unit hooks, the all-gather after the optimizer (ZeRO-1/2), which
 * ranks' parts count, the step line's note, and the header's lines. */
static void fsdp_hooks(fsdp_t *f, train_t *tr) {
    const fsdp_opts_t *o = &f->o;
    train_hooks_add(&tr->step_note, note_bytes, f);
    if (!f->z.shard_optim) {
        say("zero:    DDP (--zero 0) over %d rank%s: whole weights, gradients and Adam state on every rank; "
            "%s gradients all-reduced in buckets of %.4g MiB%s\n", f->N, f->N == 1 ? "" : "s",
            dtype_name(f->wt), tr->o.bucket_mb, o->no_overlap ? " after backward" : " during backward");
        return;
    }
    if (!f->z.gather_weights) train_hooks_add(&tr->after_update, gather_updated, f);
    model_add_hook(f->m, before_unit, after_unit, f);
    static const char *kept[4] = {"", "weights and gradients whole; Adam state", "weights whole; gradients and Adam state",
                                  "weights, gradients and Adam state"};
    say("zero:    %s over %d rank%s%s: %s sharded, %d units in pieces of up to %zu elements; %s\n",
        fsdp_stage_name(o->zero), f->N, f->N == 1 ? "" : "s",
        f->R > 1 ? " in each group, replicated across the groups" : "", kept[o->zero], f->n_units, f->per_max,
        o->no_overlap ? "every collective completed before going on (--no-overlap)"
                      : "reduce-scatters overlap backward, at most 2 in flight");
    if (f->z.gather_weights)
        say("         weights all-gathered in %s per unit, %d unit%s ahead (--prefetch), %s after forward; "
            "%d gather buffer%s\n", dtype_name(f->wt), o->prefetch, o->prefetch == 1 ? "" : "s",
            f->keep_gathered ? "kept gathered across the step's micro-batches (--reshard-after-backward off)"
            : f->reshard ? "freed" : "kept until backward", f->nwslots, f->nwslots == 1 ? "" : "s");
    /* every rank of a group owns different pieces; replicas hold copies */
    tr->part_unique = f->R == 1 || f->rep->rank == 0;
}

void fsdp_init(fsdp_t *f, train_t *tr, comm_t *shard, comm_t *rep, const fsdp_opts_t *o) {
    fsdp_plan(f, tr, shard, rep, o);
    fsdp_allocate(f, tr);
    fsdp_hooks(f, tr);
}

void fsdp_free(fsdp_t *f) {
    if (f->N > 1 || !f->z.shard_optim) grad_sync_free(&f->gs);
    for (int s = 0; s < f->nwslots; s++) dev_free(f->d, f->wslot[s]);
    for (int s = 0; s < f->ngslots; s++) dev_free(f->d, f->gslot[s]);
    dev_free(f->d, f->gshard);
    dev_free(f->d, f->gfull);
    dev_free(f->d, f->bounce);
    dev_free(f->d, f->rep_wire);
    free(f->wslot);
    free(f->wslot_unit);
    free(f->gslot);
    free(f->gslot_unit);
    free(f->g);
    free(f->order);
    free(f->rep_req);
    free(f->rep_t0);
    free(f->pieces);
    free(f->count);
    free(f->per);
    memset(f, 0, sizeof *f);
}

/* ---- the strategy the runner calls ------------------------------------------------------ */
static int communicates(const fsdp_t *f) { return !f->z.shard_optim || f->N > 1; }

static void step_begin(void *ctx) {
    fsdp_t *f = ctx;
    if (f->norder) f->recorded = 1;   /* step 1's order is known from now on */
    f->pos = -1;
    for (int k = 0; k < COLL_KINDS; k++) {
        f->sent0[0][k] = f->shard->sent[k];
        f->sent0[1][k] = f->rep ? f->rep->sent[k] : 0;
    }
    if (f->z.shard_optim) {   /* DDP's gradients are the model's, which the runner zeroed */
        dev_memset0(f->d, f->gshard, f->S * sizeof(float));
        if (f->gfull) dev_memset0(f->d, f->gfull, (size_t)f->N * f->S * sizeof(float));
    }
}

/* DDP and ZeRO-1 accumulate whole gradients and communicate on each chunk's
 * last backward (no_sync before); ZeRO-2/3 reduce-scatter every backward. */
static void backward_begin(void *ctx, int last) {
    fsdp_t *f = ctx;
    f->last_micro = last != 0;
    if (!communicates(f)) return;
    if (f->z.shard_grads || last == 2) grad_sync_begin(&f->gs, 1);
    else if (last) grad_sync_continue(&f->gs);
    else grad_sync_begin(&f->gs, 0);
}

static void backward_end(void *ctx, int last) {
    fsdp_t *f = ctx;
    (void)last;
    if (communicates(f) && f->z.shard_grads) grad_sync_finish(&f->gs);
}

static void step_end(void *ctx) {
    fsdp_t *f = ctx;
    if (communicates(f) && !f->z.shard_grads) grad_sync_finish(&f->gs);
    if (f->R > 1) {   /* the replicas' all-reduces still in flight */
        double w0 = now_s();
        for (int u = 0; u < f->n_units; u++)
            if (f->rep_req[u].active) rep_finish(f, u);
        f->exposed_s += now_s() - w0;
    }
    if (f->z.gather_weights)   /* nothing should be left gathered; a stray prefetch is dropped */
        for (int u = 0; u < f->n_units; u++) release_weights(f, u);
}

static double exposed(void *ctx) {
    const fsdp_t *f = ctx;
    return f->exposed_s + (communicates(f) ? f->gs.exposed_total : 0);
}

grad_strategy_t fsdp_strategy(fsdp_t *f) {
    return (grad_strategy_t){.ctx = f, .step_begin = step_begin, .backward_begin = backward_begin,
                             .backward_end = backward_end, .step_end = step_end, .exposed = exposed};
}

train_step_fn fsdp_compose(fsdp_t *f, runner_t *run, train_t *tr, comm_t *shard, comm_t *rep, const fsdp_opts_t *o) {
    fsdp_init(f, tr, shard, rep, o);
    if (!f->z.shard_optim) train_optimizer(tr, NULL, 0, 0);
    else train_optimizer(tr, f->pieces, f->n_units, f->S);
    runner_init(run, NULL, tr, fsdp_strategy(f), 0, 0);
    f->micro = run->s->M;
    return runner_step;
}

/* ---- the report ----------------------------------------------------------------------------- */
void fsdp_report(fsdp_t *f, double *mem_measured, double *mem_predicted, double *sent_measured,
                 double *sent_predicted) {
    const mem_stats_t *ms = dev_mem();
    double peak[MEM_KINDS + 1];
    for (int k = 0; k < MEM_KINDS; k++) peak[k] = (double)ms->peak[k];
    peak[MEM_KINDS] = (double)ms->total_peak;
    dist_allreduce(peak, MEM_KINDS + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "memory totals");
    fsdp_mem_t mem;
    fsdp_mem_predict(f, &mem);
    double P = 0, N = f->N, w = (double)es(f);
    for (int u = 0; u < f->n_units; u++) P += (double)f->count[u];
    /* activations and the RoPE table are not the stage's: measured, then added */
    double pred = mem.kind[MEM_PARAMS] + mem.kind[MEM_GRADS] + mem.kind[MEM_OPTIM] + mem.kind[MEM_COMM] +
                  peak[MEM_ACTS] + peak[MEM_OTHER];
    int z = f->o.zero;
    char groups[64] = "";
    if (f->R > 1) snprintf(groups, sizeof groups, " (in each of %d groups)", f->R);
    say("\nmemory:  %s, N = %d rank%s sharing the state%s, P = %.4gM parameters, %s weights, fp32 gradients "
        "(MB per rank, high-water):\n", fsdp_stage_name(z), f->N, f->N == 1 ? "" : "s", groups, P / 1e6,
        dtype_name(f->wt));
    static const char *what[4][4] = {
        {"w P", "4 P", "12 P (fp32 master, Adam m and v)", "bf16 copy for the wire"},
        {"w P", "4 P (whole, padded) + 4 P/N (shard)", "12 P/N", "reduce-scatter receive slots (+ bounce)"},
        {"w P", "4 P/N (shard) + unit buffers", "12 P/N", "reduce-scatter receive slots (+ bounce)"},
        {"gathered unit buffers", "4 P/N (shard) + unit buffers", "12 P/N (the master piece is the weight shard)",
         "reduce-scatter receive slots"}};
    int kinds[4] = {MEM_PARAMS, MEM_GRADS, MEM_OPTIM, MEM_COMM};
    say("         %-7s %10s %10s   %s\n", "kind", "measured", "predicted", "formula");
    for (int i = 0; i < 4; i++)
        say("         %-7s %10.2f %10.2f   %s\n", mem_kind_name[kinds[i]], peak[kinds[i]] / 1e6,
            mem.kind[kinds[i]] / 1e6, what[z][i]);
    say("         %-7s %10.2f %10s   measured (this run's micro-batch of %d sequence%s)\n", "acts",
        peak[MEM_ACTS] / 1e6, "", f->tr->mb, f->tr->mb == 1 ? "" : "s");
    say("         %-7s %10.2f %10.2f   %+.2f%% (state + buffers predicted, activations measured)\n", "total",
        peak[MEM_KINDS] / 1e6, pred / 1e6, 100 * (peak[MEM_KINDS] - pred) / pred);
    static const char *formula[4] = {"(w + 4 + 12) P", "(w + 4) P + 16 P/N", "w P + 16 P/N", "16 P/N"};
    static const char *paper[4] = {"16 P", "4 P + 12 P/N", "2 P + 14 P/N", "16 P/N"};
    say("         state %s = %.2f MB (w = %.0f) + buffers %.2f MB; the ZeRO paper's %s (2 + 2 + 12 bytes "
        "per parameter) = %.2f MB\n", formula[z], mem.state / 1e6, w, mem.buffers / 1e6, paper[z],
        mem.paper / 1e6);

    fsdp_bytes_t b;
    fsdp_bytes_predict(f, &b);
    step_bytes(f);   /* the last step's, on every rank */
    double got = 0, want = 0;
    say("bytes:   sent per rank in the last step (MB, bus bytes) against the formulas (w = %.0f bytes):\n", w);
    say("         %-28s %10s %10s\n", "collective", "measured", "formula");
    const double *meas[2] = {f->step_bytes.shard, f->step_bytes.replicate}, *form[2] = {b.shard, b.replicate};
    const char *grp[2] = {"", " across groups"};
    char label[48];
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < COLL_KINDS; k++) {
            if (meas[g][k] == 0 && form[g][k] == 0) continue;
            got += meas[g][k];
            want += form[g][k];
            const char *how = "";
            if (g == 1) how = "2 (R-1)/R x P/N x w (the shard, over the replicas)";
            else if (k == COLL_ALLREDUCE) how = "2 (N-1)/N x P x w";
            else if (k == COLL_REDUCE_SCATTER) how = z == 1 ? "(N-1)/N x P x w" : "micro x (N-1)/N x P x w";
            else if (k == COLL_ALLGATHER)
                how = z <= 2 ? "(N-1)/N x P x w (updated weights)"
                             : f->keep_gathered ? "(N-1)/N x P x w (once, kept across the micro-batches)"
                             : f->reshard ? "micro x (N-1)/N x (2 P - last unit) x w (forward + backward)"
                                          : "micro x (N-1)/N x P x w (forward only)";
            snprintf(label, sizeof label, "%s%s", coll_name[k], grp[g]);
            say("         %-28s %10.3f %10.3f   %s\n", label, meas[g][k] / 1e6, form[g][k] / 1e6, how);
        }
    if (want == 0) say("         none: a group of one rank sends nothing\n");
    double W = N * f->R, ddp = W > 1 ? 2 * (W - 1) / W * P * w : 0;   /* DDP over every rank */
    if (W > 1) say("         together %.3f MB = %.3f x DDP's all-reduce of the same weights over %.0f ranks (%.3f MB)\n",
                   got / 1e6, got / ddp, W, ddp / 1e6);
    if (mem_measured) *mem_measured = peak[MEM_KINDS];
    if (mem_predicted) *mem_predicted = pred;
    if (sent_measured) *sent_measured = got;
    if (sent_predicted) *sent_predicted = want;
}
