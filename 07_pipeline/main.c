/* main.c: 07_pipeline/pipeline, the pipeline-parallel trainer: the shared
 * training loop (common/train.h) with a schedule (schedule.h) run by the
 * runner (common/runner.h) on every stage, and the bubble measured, replayed and
 * set beside its formula.
 *
 *   mpirun -np 2 ./07_pipeline/pipeline --schedule 1f1b --micro 8
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule interleaved --dp 2 --micro 4
 *   ./07_pipeline/pipeline --show-schedule --schedule gpipe --stages 4 --micro 4
 *   mpirun -np 4 ./07_pipeline/pipeline --schedule terapipe --slices 4 --micro 2
 *
 * The world is --stages x --dp ranks: stages are consecutive ranks (one
 * pipeline), --dp pipelines are data-parallel replicas whose gradients are
 * all-reduced after each stage's last backward (common/grad_sync). Every
 * rank builds every stage's action list and checks it (schedule.h) before
 * step 1. After the run: the measured bubble (idle / step, mean over stages)
 * beside the schedule's formula, the same lists replayed on a clock with the
 * times measured here (at this stage count, and at the --replay ones from
 * the layer times), the activations held per stage, the bytes sent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grad_sync.h"
#include "perf.h"
#include "report.h"
#include "runner.h"
#include "schedule.h"
#include "train.h"

#define BUBBLE_HEADER "schedule,stages,micro,virtual,source,bubble,formula,step_ms"
#define MEMORY_HEADER "schedule,stages,micro,virtual,stage,held,bound,held_mb"
#define GANTT_HEADER "source,schedule,stages,micro,virtual,stage,op,mb,chunk,start_ms,end_ms"

typedef struct {
    const char *schedule, *replay, *bubble_csv, *memory_csv, *gantt_csv;
    int stages, dp, virt, show, slices, balance;
    double replay_gbps, replay_us;
    pipe_kind_t kind;
    int V, K;                   /* chunks per stage, token slices per micro-batch */
    pipe_schedule_t s;
    runner_t e;
    grad_sync_t gs;
} pipeline_t;

static void build(pipe_schedule_t *s, pipe_kind_t kind, int P, int M, int V, int K) {
    if (kind == PIPE_TERAPIPE) pipe_schedule_terapipe(s, P, M, K);
    else pipe_schedule_build(s, kind, P, M, V);
}

/* "embedding + layers 0-3" for a stage's chunks. */
static void stage_layers(char *buf, size_t len, int P, int V, int L, int st) {
    int per = L / (P * V), n = 0;
    buf[0] = 0;
    for (int c = 0; c < V; c++) {
        int vs = c * P + st, a = vs * per, b = a + per - 1;
        char lay[32];
        if (a == b) snprintf(lay, sizeof lay, "layer %d", a);
        else snprintf(lay, sizeof lay, "layers %d-%d", a, b);
        n += snprintf(buf + n, len - (size_t)n, "%s%s%s%s", c ? ", " : "", vs == 0 ? "embedding + " : "", lay,
                      vs == P * V - 1 ? " + head" : "");
        if ((size_t)n >= len) break;
    }
}

static double msg_seconds(const pipeline_t *p, double bytes) {
    return p->replay_us * 1e-6 + (p->replay_gbps > 0 ? bytes / (p->replay_gbps * 1e9) : 0);
}

static void gantt_rows(FILE *f, const char *source, const pipe_schedule_t *s, double *const *t0,
                       double *const *t1) {
    for (int st = 0; st < s->P; st++)
        for (int i = 0; i < s->n[st]; i++) {
            const pipe_action_t *a = &s->a[st][i];
            if (pipe_is_msg(a->op)) continue;
            fprintf(f, "%s,%s,%d,%d,%d,%d,%s,%d,%d,%.4f,%.4f", source, pipe_kind_name[s->kind], s->P, s->M,
                    s->V, st, a->op == PA_FWD ? "F" : a->op == PA_BWD ? "B" : "W", a->mb, a->chunk,
                    1e3 * t0[st][i], 1e3 * t1[st][i]);
            csv_end_row(f, NULL);   /* its source column says measured or replayed */
        }
}

/* A split backward's replay from layer times (which hold B + W): W takes the
 * share of the backward that this run's W actions took. */
static void split_costs(const runner_report_t *r, int n, double *b, double *w) {
    double sb = 0, sw = 0;
    for (int i = 0; i < r->P * r->V; i++) { sb += r->bwd[i]; sw += r->w[i]; }
    for (int i = 0; i < n; i++) {
        w[i] = sb + sw > 0 ? b[i] * sw / (sb + sw) : 0;
        b[i] -= w[i];
    }
}

/* Token slices: the keys and values kept, against their formula, and each
 * slice's time (attention grows with the position: later slices cost more). */
static void slices_summary(const runner_report_t *r, const train_t *tr, const int *pos, int P, int M, int K) {
    const model_t *m = &tr->model;
    /* per layer and micro-batch held: k and v of all T tokens, and the gradients the later
     * slices add into, for the tokens before the last slice (pos[K-1]: T - T/K when equal);
     * GPipe order holds all M */
    double kv = (double)tr->mb * m->KV * m->hd * dtype_size(m->dtype), T = m->T;
    double want = (double)M * (tr->cfg.layers / P) * kv * (2 * T + 2 * pos[K - 1]);
    say("keys and values kept per stage at the peak (k, v of every slice and the gradients later slices add "
        "into them): formula M (L/P) B KV hd bytes (2 T + 2 x %d tokens before the last slice) = %.0f bytes\n",
        pos[K - 1], want);
    for (int st = 0; st < P; st++) say("           stage %d: %.0f bytes measured\n", st, r->held_kv[st]);
    say("slices:  ms per forward | backward of each slice (mean over stages; attention grows with the position):\n");
    double f0 = 0, fl = 0;
    for (int k = 0; k < K; k++) {
        double f = 0, b = 0;
        for (int st = 0; st < P; st++) {
            f += r->slice_fwd[st * K + k] / P;
            b += r->slice_bwd[st * K + k] / P;
        }
        if (k == 0) f0 = f + b;
        if (k == K - 1) fl = f + b;
        say("           slice %d, tokens %d-%d: %.3f | %.3f\n", k, pos[k], pos[k + 1] - 1, 1e3 * f, 1e3 * b);
    }
    say("           last slice / first slice (forward + backward): %.2f\n", f0 > 0 ? fl / f0 : 0.0);
}

/* The summary after the run: measured against formula and replay. */
static void summary(pipeline_t *p, train_t *tr) {
    const pipe_schedule_t *s = &p->s;
    int P = s->P, M = s->M, V = s->V, K = s->slices;   /* M: units (micro-batches x K) */
    runner_report_t r;
    runner_report(&p->e, MPI_COMM_WORLD, tr->dp, tr->dp_rank, &r);
    double formula = pipe_bubble_formula(s->kind, P, M, V);
    static const char *fname[PIPE_KINDS] = {"(P-1)/P", "(P-1)/(M+P-1)", "(P-1)/(M+P-1)", "(P-1)/(V M+P-1)",
                                            "(P-1)/(3M+P-1)", "(P-1)/(M K+P-1)"};
    const char *kind = pipe_kind_name[s->kind];
    double measured = 0, span = 0;
    for (int st = 0; st < P; st++) {
        measured += r.span[st] > 0 ? r.idle[st] / r.span[st] / P : 0;
        span += r.span[st] / P;
    }
    FILE *bub = NULL, *gan = NULL;
    if (tr->dist.rank == 0 && p->bubble_csv) bub = csv_open(p->bubble_csv, BUBBLE_HEADER);
    if (tr->dist.rank == 0 && p->gantt_csv) gan = csv_open(p->gantt_csv, GANTT_HEADER);
    char chunks[32] = "";
    if (V > 1) snprintf(chunks, sizeof chunks, " x %d chunks", V);
    char slices[32] = "";
    if (K > 1) snprintf(slices, sizeof slices, " x %d slices", K);
    say("\nbubble:  %s, %d stage%s%s x %d micro-batch%s%s: formula %s = %.1f%%\n", kind, P, P == 1 ? "" : "s",
        chunks, M / K, M / K == 1 ? "" : "es", slices, fname[s->kind], 100 * formula);
    say("         measured, steps %ld-%d (idle / step, mean over stages): %.1f%%\n", tr->start + 2, tr->o.steps,
        100 * measured);
    for (int st = 0; st < P; st++)
        say("           stage %d: busy %.3f + idle %.3f + other %.3f = step %.3f ms (idle %.1f%%)\n", st,
            1e3 * r.busy[st], 1e3 * r.idle[st], 1e3 * (r.span[st] - r.busy[st] - r.idle[st]), 1e3 * r.span[st],
            r.span[st] > 0 ? 100 * r.idle[st] / r.span[st] : 0.0);
    if (bub) {
        fprintf(bub, "%s,%d,%d,%d,measured,%.5f,%.5f,%.3f", kind, P, M / K, V, measured, formula, 1e3 * span);
        csv_end_row(bub, NULL);
    }
    if (gan) gantt_rows(gan, "measured", s, r.t0, r.t1);

    /* the same lists on a clock: with this run's action times, then with its layer times */
    int most = (P > 32 ? P : 32) * V;
    double msg = msg_seconds(p, (double)p->e.msg_bytes), *f = xmalloc(sizeof(double) * 3 * (size_t)most),
           *b = f + most, *w = b + most;
    char err[300];
    pipe_costs_t c = {r.fwd, r.bwd, msg, r.w};
    pipe_replay_t rp;
    if (pipe_replay(s, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
    say("         replayed with this run's action times: %.1f%% (step %.2f ms)", 100 * rp.bubble, 1e3 * rp.step);
    if (bub) {
        fprintf(bub, "%s,%d,%d,%d,replay_actions,%.5f,%.5f,%.3f", kind, P, M / K, V, rp.bubble, formula, 1e3 * rp.step);
        csv_end_row(bub, NULL);
    }
    pipe_replay_free(&rp);
    pipe_costs_from_layers(&r, P, V, f, b);
    if (p->e.split) split_costs(&r, P * V, b, w);
    c = (pipe_costs_t){f, b, msg, w};
    if (pipe_replay(s, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
    say("; with its layer times: %.1f%%\n", 100 * rp.bubble);
    if (bub) {
        fprintf(bub, "%s,%d,%d,%d,replay_layers,%.5f,%.5f,%.3f", kind, P, M / K, V, rp.bubble, formula, 1e3 * rp.step);
        csv_end_row(bub, NULL);
    }
    pipe_replay_free(&rp);
    if (p->e.split) {   /* 1F1B at the same P and M on the same times, its backward B + W in one */
        double tf = 0, tb = 0, tw = 0;
        for (int i = 0; i < P * V; i++) { tf += r.fwd[i] / (P * V); tb += r.bwd[i] / (P * V); tw += r.w[i] / (P * V); }
        say("         action times, mean over stages: F %.2f, B %.2f, W %.2f ms (W = %.0f%% of the backward)\n",
            1e3 * tf, 1e3 * tb, 1e3 * tw, tb + tw > 0 ? 100 * tw / (tb + tw) : 0.0);
        pipe_schedule_t q;
        pipe_schedule_build(&q, PIPE_1F1B, P, M, V);
        for (int i = 0; i < P * V; i++) b[i] = r.bwd[i] + r.w[i];
        c = (pipe_costs_t){r.fwd, b, msg, NULL};
        if (pipe_replay(&q, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
        double f1 = pipe_bubble_formula(PIPE_1F1B, P, M, V);
        say("         1F1B replayed with the same action times (its backward = B + W): %.1f%% (step %.2f ms; "
            "formula (P-1)/(M+P-1) = %.1f%%)\n", 100 * rp.bubble, 1e3 * rp.step, 100 * f1);
        if (bub) {
            fprintf(bub, "1f1b,%d,%d,%d,replay_split_actions,%.5f,%.5f,%.3f", P, M, V, rp.bubble, f1, 1e3 * rp.step);
            csv_end_row(bub, NULL);
        }
        pipe_replay_free(&rp);
        pipe_schedule_free(&q);
    }
    long want[16];
    int nw = strcmp(p->replay, "none") ? args_size_list(p->replay, want, 16, "replay") : 0;
    for (int i = 0; i < nw; i++) {
        int Q = (int)want[i];
        char why[200];
        if (Q > 32 || pipe_schedule_valid(s->kind, Q, M / K, V, why, sizeof why) ||
            tr->cfg.layers % (Q * V)) {
            if (Q > 32) snprintf(why, sizeof why, "at most 32 stages are replayed");
            else if (tr->cfg.layers % (Q * V))
                snprintf(why, sizeof why, "%d layers do not cut into %d x %d chunks", tr->cfg.layers, Q, V);
            say("         not replayed at %d stages: %s\n", Q, why);
            continue;
        }
        pipe_schedule_t q;
        if (K > 1) pipe_schedule_terapipe(&q, Q, M / K, K);
        else pipe_schedule_build(&q, s->kind, Q, M, V);
        pipe_costs_from_layers(&r, Q, V, f, b);
        if (p->e.split) split_costs(&r, Q * V, b, w);
        c = (pipe_costs_t){f, b, msg, w};
        if (pipe_replay(&q, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
        double fq = pipe_bubble_formula(s->kind, Q, M, V);
        say("         replayed at %d stages (layer times): %.1f%% (formula %.1f%%), step %.2f ms\n", Q,
            100 * rp.bubble, 100 * fq, 1e3 * rp.step);
        if (bub) {
            fprintf(bub, "%s,%d,%d,%d,replay_layers,%.5f,%.5f,%.3f", kind, Q, M / K, V, rp.bubble, fq, 1e3 * rp.step);
            csv_end_row(bub, NULL);
        }
        if (gan) gantt_rows(gan, "replayed", &q, rp.t0, rp.t1);
        pipe_replay_free(&rp);
        pipe_schedule_free(&q);
    }
    if (msg > 0) say("         (replays charge %.1f us per message)\n", 1e6 * msg);
    free(f);

    /* memory: activations held at the peak, against the schedule's promise */
    FILE *mem = tr->dist.rank == 0 && p->memory_csv ? csv_open(p->memory_csv, MEMORY_HEADER) : NULL;
    static const char *promise[PIPE_KINDS] = {"1", "M", "min(M, P - stage)",
                                              "min(V M, 2 (P - stage - 1) + (V - 1) P + 1)", "min(M, P)", "M K"};
    say("memory:  activations held at the peak, measured, in %smicro-batches (%s promises %s):\n",
        V > 1 ? "chunk " : K > 1 ? "slice " : "", kind, promise[s->kind]);
    for (int st = 0; st < P; st++) {
        int bound = pipe_inflight_bound(s->kind, P, M, V, st);
        if (V == 1 && r.held[st] > 0)
            say("           stage %d: %d (promised %d) x %.4f MB = %.4f MB\n", st, r.held[st], bound,
                r.held_bytes[st] / r.held[st] / 1e6, r.held_bytes[st] / 1e6);
        else
            say("           stage %d: %d (promised %d), %.4f MB\n", st, r.held[st], bound, r.held_bytes[st] / 1e6);
        if (mem) {
            fprintf(mem, "%s,%d,%d,%d,%d,%d,%d,%.4f", kind, P, M / K, V, st, r.held[st], bound, r.held_bytes[st] / 1e6);
            csv_end_row(mem, "measured");
        }
    }
    if (p->e.split) {   /* what W's deferral costs: every object keeps its linears' output gradients */
        say("         of which kept from B for W (each linear's output gradient, model_dout_bytes):\n");
        for (int st = 0; st < P; st++)
            say("           stage %d: %d x %.4f MB = %.4f MB; W's waiting at most: %d\n", st, r.held[st],
                r.dout_bytes[st] / 1e6, r.held[st] * r.dout_bytes[st] / 1e6, pipe_deferred_max(s, st));
    }
    if (K > 1) slices_summary(&r, tr, p->e.slice_pos, P, M / K, K);
    /* bytes: every boundary between virtual stages carries M activations and M gradients */
    /* (token slices: M K messages of a slice each, M of a whole sequence's worth) */
    double per_msg = K > 1 ? (double)p->e.tok_elems * tr->model.T * dtype_size(tr->dtype) : (double)p->e.msg_bytes;
    double want_b = 2.0 * (M / K) * (P * V - 1) * per_msg;
    say("sent:    %.0f bytes (%.3f MB) per step between the stages of one pipeline; formula 2 M (P V - 1) x "
        "%.0f bytes = %.0f\n", r.sent, r.sent / 1e6, per_msg, want_b);
    if (bub) out_close(bub, p->bubble_csv);
    if (gan) out_close(gan, p->gantt_csv);
    if (mem) out_close(mem, p->memory_csv);
    runner_report_free(&r);
}

static pipeline_t pl = {.schedule = "1f1b", .replay = "4,8", .dp = 1};

/* The pipeline's defaults: 8 micro-batches, 8 layers (2, 4 or 8 stages). */
static void defaults(train_t *tr, void *ctx, int argc, char **argv) {
    (void)ctx, (void)argc, (void)argv;
    tr->o.micro = 8;
    tr->o.layers = 8;
}

/* The schedule's parameters against the world and the model; --show-schedule
 * prints the checked schedule and exits. */
static void check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    pipeline_t *p = ctx;
    (void)tp, (void)cp;
    int world = tr->dist.world, L = tr->cfg.layers, M = tr->o.micro;
    p->kind = (pipe_kind_t)pipe_kind_parse(p->schedule);
    if (p->stages < 1) p->stages = p->show ? 1 : world / p->dp;
    int P = p->stages, V = p->V = p->virt ? p->virt : p->kind == PIPE_INTERLEAVED ? 2 : 1;
    char why[200];
    if (pipe_schedule_valid(p->kind, P, M, V, why, sizeof why)) usage_error("%s", why);
    int K = p->K = p->slices ? p->slices : p->kind == PIPE_TERAPIPE ? 4 : 1;
    if (K > 1 && p->kind != PIPE_TERAPIPE) usage_error("%d token slices need the terapipe schedule", K);
    if (p->balance && K == 1) usage_error("--balance needs token slices (--schedule terapipe)");
    if (p->balance && K > 64) usage_error("--balance cuts at most 64 slices");
    if (tr->cfg.seq % K) usage_error("%d token slices do not cut the sequence of %d tokens evenly", K, tr->cfg.seq);
    if (p->show) {   /* the picture, checked, and nothing else */
        build(&p->s, p->kind, P, M, V, K);
        char err[300];
        if (pipe_schedule_check(&p->s, err, sizeof err)) die("the %s schedule fails its check: %s", p->schedule, err);
        if (tr->dist.rank == 0) {
            pipe_schedule_print(&p->s, stdout);
            printf("checked: forwards before backwards, sends match receives in order, no deadlock "
                   "(MPI, or one stream per rank as NCCL), activations within the promise\n");
        }
        pipe_schedule_free(&p->s);
        usage_exit_ok();
    }
    if (P * p->dp != world)
        usage_error("--stages %d x --dp %d = %d ranks, but the world has %d", P, p->dp, P * p->dp, world);
    if (P > L) usage_error("%d stages need at least %d layers (the model has %d)", P, P, L);
    if (L % (P * V))
        usage_error("%d layers do not cut into %d stages x %d chunk%s of equal size", L, P, V, V == 1 ? "" : "s");
    args_check_output(MPI_COMM_WORLD, "bubble-csv", p->bubble_csv, BUBBLE_HEADER);
    args_check_output(MPI_COMM_WORLD, "memory-csv", p->memory_csv, MEMORY_HEADER);
    args_check_output(MPI_COMM_WORLD, "gantt-csv", p->gantt_csv, GANTT_HEADER);
    if (strcmp(p->replay, "none")) {
        long tmp[16];
        args_size_list(p->replay, tmp, 16, "replay");
    }
    *pp = P;
}

/* This stage's layers, the schedule, and the runner executing it. */
static train_step_fn compose(train_t *tr, void *ctx, void **step_ctx) {
    pipeline_t *p = ctx;
    int P = p->stages, V = p->V, K = p->K, M = tr->o.micro, L = tr->cfg.layers;
    if (V > 1) model_shard_stage(&tr->shard, &tr->cfg, P, tr->mesh.coord[AXIS_PP], V);
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    build(&p->s, p->kind, P, M, V, K);
    char err[300];
    if (pipe_schedule_check(&p->s, err, sizeof err)) die("the %s schedule fails its check: %s", p->schedule, err);
    runner_init(&p->e, &p->s, tr, tr->dp > 1 ? train_ddp(tr, &p->gs, 1) : (grad_strategy_t){0}, 1, 1);
    if (p->balance) {   /* a token's matmuls, and its attention per key (model_layer_forward_flops_per_token) */
        int pos[65], T = tr->cfg.seq;
        double b = 4.0 * tr->cfg.heads * tr->cfg.head_dim, a = model_layer_forward_flops_per_token(&tr->cfg) - b * T;
        pipe_slices_balanced(T, K, a, b, pos);
        runner_slices(&p->e, pos);
    }
    say("pipeline: %s schedule, %d stage%s x %d chunk%s, %d micro-batches of %d sequence%s per step and "
        "replica, %d replica%s%s\n", p->schedule, P, P == 1 ? "" : "s", V, V == 1 ? "" : "s", M, tr->mb,
        tr->mb == 1 ? "" : "s", tr->dp, tr->dp == 1 ? "" : "s",
        tr->dp > 1 ? " (gradients all-reduced after each stage's last backward)" : "");
    for (int st = 0; st < P; st++) {
        char lay[256];
        stage_layers(lay, sizeof lay, P, V, L, st);
        say("          stage %d: %s\n", st, lay);
    }
    say("          messages: %zu bytes %s(%d x %d x %d %s), posted in groups between computes; the "
        "lists passed the checker\n", p->e.msg_bytes, p->balance ? "at most " : "each ", tr->mb,
        (int)(p->e.msg_elems / p->e.tok_elems), tr->cfg.dim, dtype_name(tr->dtype));
    if (K > 1) {
        say("          each micro-batch's sequences cut into %d token slices, run in order (%s):", K,
            p->balance ? "equal FLOPs" : "equal length");
        for (int k = 0; k < K; k++) say(" [%d, %d)", p->e.slice_pos[k], p->e.slice_pos[k + 1]);
        say("; a slice's attention also reads the kept keys and values of the slices before it\n");
    }
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = &p->e;
    return runner_step;
}

static void report(train_t *tr, void *ctx) {
    pipeline_t *p = ctx;
    summary(p, tr);
    runner_free(&p->e);
    if (tr->dp > 1) grad_sync_free(&p->gs);
    pipe_schedule_free(&p->s);
}

static arg_t flags[] = {
    {"schedule", ARG_CHOICE, &pl.schedule, "pipeline schedule", "naive|gpipe|1f1b|interleaved|zbh1|terapipe", 0, 0},
    {"slices", ARG_INT, &pl.slices, "token slices per micro-batch for the terapipe schedule (0: 4 there, 1 elsewhere)", NULL, 0, 1e6},
    {"balance", ARG_FLAG, &pl.balance, "terapipe: slices of equal FLOPs (later slices shorter) instead of equal length", NULL, 0, 0},
    {"stages", ARG_INT, &pl.stages, "pipeline stages P (0: world / dp)", NULL, 0, 1e4},
    {"dp", ARG_INT, &pl.dp, "data-parallel replicas of the pipeline (world = stages x dp)", NULL, 1, 1e6},
    {"virtual", ARG_INT, &pl.virt, "model chunks per stage V for the interleaved schedule (0: 2 there, 1 elsewhere)", NULL, 0, 1e4},
    {"show-schedule", ARG_FLAG, &pl.show, "print the schedule as a grid, check it, and exit", NULL, 0, 0},
    {"replay", ARG_STRING, &pl.replay, "also replay the schedule at these stage counts from the measured layer times (none: no others)", NULL, 0, 0},
    {"replay-gbps", ARG_DOUBLE, &pl.replay_gbps, "replays: GB/s of the link between stages (0: messages free)", NULL, 0, 1e6},
    {"replay-us", ARG_DOUBLE, &pl.replay_us, "replays: latency per message, microseconds", NULL, 0, 1e7},
    {"bubble-csv", ARG_STRING, &pl.bubble_csv, "append the bubble (measured, replayed, formula) to this CSV", NULL, 0, 0},
    {"memory-csv", ARG_STRING, &pl.memory_csv, "append the activations held per stage to this CSV", NULL, 0, 0},
    {"gantt-csv", ARG_STRING, &pl.gantt_csv, "append the last step's timeline (measured and replayed) to this CSV", NULL, 0, 0},
};

static const train_chapter_t chapter = {
    {"07_pipeline", "07_pipeline/pipeline", "pipeline parallelism",
     "Pipeline-parallel training of the Llama-style model: the layers cut into\n"
     "stages, micro-batches flowing through them under a schedule (naive, GPipe,\n"
     "1F1B, interleaved 1F1B, ZB-H1, TeraPipe's token slices), the bubble measured,\n"
     "replayed and set beside its formula; data-parallel replicas of the pipeline\n"
     "with --dp.", flags, ARRAY_LEN(flags), NULL, 0},
    &pl, defaults, check, compose, report};

int main(int argc, char **argv) { return train_main(argc, argv, &chapter); }
