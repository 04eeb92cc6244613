/* summary.c: 07_pipeline/pipeline's end of run: the bubble measured beside
 * its formula and replayed on a clock (at this stage count and the --replay
 * ones), the activations held per stage against the schedule's promise, and
 * the bytes sent between the stages; the --bubble-csv, --memory-csv and
 * --gantt-csv rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "perf.h"
#include "pipeline.h"

/* What the parts of the summary share: every stage's measurements, the
 * schedule's bubble formula, and the open CSVs (rank 0; else NULL). */
typedef struct {
    pipeline_t *p;
    train_t *tr;
    runner_report_t r;
    const char *kind;
    double formula;
    FILE *bub, *gan;
} summary_t;

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

/* One row of --bubble-csv (rank 0; none without the flag): KIND on P stages
 * of M micro-batches, the bubble from SOURCE beside its formula. */
static void bubble_row(const summary_t *x, const char *kind, int P, int M, const char *source, double bubble,
                       double formula, double step_s) {
    if (!x->bub) return;
    fprintf(x->bub, "%s,%d,%d,%d,%s,%.5f,%.5f,%.3f", kind, P, M, x->p->s.V, source, bubble, formula, 1e3 * step_s);
    csv_end_row(x->bub, NULL);
}

/* The bubble measured per stage, beside its formula. */
static void bubble_measured(summary_t *x) {
    const runner_report_t *r = &x->r;
    const pipe_schedule_t *s = &x->p->s;
    int P = s->P, M = s->M, V = s->V, K = s->slices;   /* M: units (micro-batches x K) */
    static const char *fname[PIPE_KINDS] = {"(P-1)/P", "(P-1)/(M+P-1)", "(P-1)/(M+P-1)", "(P-1)/(V M+P-1)",
                                            "(P-1)/(3M+P-1)", "(P-1)/(M K+P-1)"};
    double measured = 0, span = 0;
    for (int st = 0; st < P; st++) {
        measured += r->span[st] > 0 ? r->idle[st] / r->span[st] / P : 0;
        span += r->span[st] / P;
    }
    char chunks[32] = "";
    if (V > 1) snprintf(chunks, sizeof chunks, " x %d chunks", V);
    char slices[32] = "";
    if (K > 1) snprintf(slices, sizeof slices, " x %d slices", K);
    say("\nbubble:  %s, %d stage%s%s x %d micro-batch%s%s: formula %s = %.1f%%\n", x->kind, P, P == 1 ? "" : "s",
        chunks, M / K, M / K == 1 ? "" : "es", slices, fname[s->kind], 100 * x->formula);
    say("         measured, steps %ld-%d (idle / step, mean over stages): %.1f%%\n", x->tr->start + 2, x->tr->o.steps,
        100 * measured);
    for (int st = 0; st < P; st++)
        say("           stage %d: busy %.3f + idle %.3f + other %.3f = step %.3f ms (idle %.1f%%)\n", st,
            1e3 * r->busy[st], 1e3 * r->idle[st], 1e3 * (r->span[st] - r->busy[st] - r->idle[st]), 1e3 * r->span[st],
            r->span[st] > 0 ? 100 * r->idle[st] / r->span[st] : 0.0);
    bubble_row(x, x->kind, P, M / K, "measured", measured, x->formula, span);
    if (x->gan) gantt_rows(x->gan, "measured", s, r->t0, r->t1);
}

/* The same lists on a clock: with this run's action times, then with its
 * layer times, 1F1B beside a split backward, and the --replay stage counts. */
static void bubble_replayed(summary_t *x) {
    pipeline_t *p = x->p;
    const runner_report_t *r = &x->r;
    const pipe_schedule_t *s = &p->s;
    int P = s->P, M = s->M, V = s->V, K = s->slices;   /* M: units (micro-batches x K) */
    int most = (P > 32 ? P : 32) * V;
    double msg = msg_seconds(p, (double)p->e.msg_bytes), *f = xmalloc(sizeof(double) * 3 * (size_t)most),
           *b = f + most, *w = b + most;
    char err[300];
    pipe_costs_t c = {r->fwd, r->bwd, msg, r->w};
    pipe_replay_t rp;
    if (pipe_replay(s, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
    say("         replayed with this run's action times: %.1f%% (step %.2f ms)", 100 * rp.bubble, 1e3 * rp.step);
    bubble_row(x, x->kind, P, M / K, "replay_actions", rp.bubble, x->formula, rp.step);
    pipe_replay_free(&rp);
    pipe_costs_from_layers(r, P, V, f, b);
    if (p->e.links.split) split_costs(r, P * V, b, w);
    c = (pipe_costs_t){f, b, msg, w};
    if (pipe_replay(s, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
    say("; with its layer times: %.1f%%\n", 100 * rp.bubble);
    bubble_row(x, x->kind, P, M / K, "replay_layers", rp.bubble, x->formula, rp.step);
    pipe_replay_free(&rp);
    if (p->e.links.split) {   /* 1F1B at the same P and M on the same times, its backward B + W in one */
        double tf = 0, tb = 0, tw = 0;
        for (int i = 0; i < P * V; i++) { tf += r->fwd[i] / (P * V); tb += r->bwd[i] / (P * V); tw += r->w[i] / (P * V); }
        say("         action times, mean over stages: F %.2f, B %.2f, W %.2f ms (W = %.0f%% of the backward)\n",
            1e3 * tf, 1e3 * tb, 1e3 * tw, tb + tw > 0 ? 100 * tw / (tb + tw) : 0.0);
        pipe_schedule_t q;
        pipe_schedule_build(&q, PIPE_1F1B, P, M, V);
        for (int i = 0; i < P * V; i++) b[i] = r->bwd[i] + r->w[i];
        c = (pipe_costs_t){r->fwd, b, msg, NULL};
        if (pipe_replay(&q, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
        double f1 = pipe_bubble_formula(PIPE_1F1B, P, M, V);
        say("         1F1B replayed with the same action times (its backward = B + W): %.1f%% (step %.2f ms; "
            "formula (P-1)/(M+P-1) = %.1f%%)\n", 100 * rp.bubble, 1e3 * rp.step, 100 * f1);
        bubble_row(x, "1f1b", P, M, "replay_split_actions", rp.bubble, f1, rp.step);
        pipe_replay_free(&rp);
        pipe_schedule_free(&q);
    }
    long want[16];
    int nw = strcmp(p->replay, "none") ? args_size_list(p->replay, want, 16, "replay") : 0;
    for (int i = 0; i < nw; i++) {
        int Q = (int)want[i];
        char why[200];
        if (Q > 32 || pipe_schedule_valid(s->kind, Q, M / K, V, why, sizeof why) ||
            x->tr->cfg.layers % (Q * V)) {
            if (Q > 32) snprintf(why, sizeof why, "at most 32 stages are replayed");
            else if (x->tr->cfg.layers % (Q * V))
                snprintf(why, sizeof why, "%d layers do not cut into %d x %d chunks", x->tr->cfg.layers, Q, V);
            say("         not replayed at %d stages: %s\n", Q, why);
            continue;
        }
        pipe_schedule_t q;
        pipe_schedule_make(&q, s->kind, Q, M / K, V, K);
        pipe_costs_from_layers(r, Q, V, f, b);
        if (p->e.links.split) split_costs(r, Q * V, b, w);
        c = (pipe_costs_t){f, b, msg, w};
        if (pipe_replay(&q, &c, &rp, err, sizeof err)) die("pipeline: %s", err);
        double fq = pipe_bubble_formula(s->kind, Q, M, V);
        say("         replayed at %d stages (layer times): %.1f%% (formula %.1f%%), step %.2f ms\n", Q,
            100 * rp.bubble, 100 * fq, 1e3 * rp.step);
        bubble_row(x, x->kind, Q, M / K, "replay_layers", rp.bubble, fq, rp.step);
        if (x->gan) gantt_rows(x->gan, "replayed", &q, rp.t0, rp.t1);
        pipe_replay_free(&rp);
        pipe_schedule_free(&q);
    }
    if (msg > 0) say("         (replays charge %.1f us per message)\n", 1e6 * msg);
    free(f);
}

/* Activations held at the peak, against the schedule's promise. */
static void memory_held(summary_t *x) {
    pipeline_t *p = x->p;
    train_t *tr = x->tr;
    const runner_report_t *r = &x->r;
    const pipe_schedule_t *s = &p->s;
    int P = s->P, M = s->M, V = s->V, K = s->slices;   /* M: units (micro-batches x K) */
    const char *kind = x->kind;
    FILE *mem = tr->dist.rank == 0 && p->memory_csv ? csv_open(p->memory_csv, MEMORY_HEADER) : NULL;
    static const char *promise[PIPE_KINDS] = {"1", "M", "min(M, P - stage)",
                                              "min(V M, 2 (P - stage - 1) + (V - 1) P + 1)", "min(M, P)", "M K"};
    say("memory:  activations held at the peak, measured, in %smicro-batches (%s promises %s):\n",
        V > 1 ? "chunk " : K > 1 ? "slice " : "", kind, promise[s->kind]);
    for (int st = 0; st < P; st++) {
        int bound = pipe_inflight_bound(s->kind, P, M, V, st);
        if (V == 1 && r->held[st] > 0)
            say("           stage %d: %d (promised %d) x %.4f MB = %.4f MB\n", st, r->held[st], bound,
                r->held_bytes[st] / r->held[st] / 1e6, r->held_bytes[st] / 1e6);
        else
            say("           stage %d: %d (promised %d), %.4f MB\n", st, r->held[st], bound, r->held_bytes[st] / 1e6);
        if (mem) {
            fprintf(mem, "%s,%d,%d,%d,%d,%d,%d,%.4f", kind, P, M / K, V, st, r->held[st], bound, r->held_bytes[st] / 1e6);
            csv_end_row(mem, "measured");
        }
    }
    if (p->e.links.split) {   /* what W's deferral costs: every object keeps its linears' output gradients */
        say("         of which kept from B for W (each linear's output gradient, model_dout_bytes):\n");
        for (int st = 0; st < P; st++)
            say("           stage %d: %d x %.4f MB = %.4f MB; W's waiting at most: %d\n", st, r->held[st],
                r->dout_bytes[st] / 1e6, r->held[st] * r->dout_bytes[st] / 1e6, pipe_deferred_max(s, st));
    }
    if (K > 1) slices_summary(r, tr, p->e.slice_pos, P, M / K, K);
    if (mem) out_close(mem, p->memory_csv);
}

void pipeline_summary(pipeline_t *p, train_t *tr) {
    summary_t x = {.p = p, .tr = tr, .kind = pipe_kind_name[p->s.kind]};
    runner_report(&p->e, MPI_COMM_WORLD, tr->dp, tr->dp_rank, &x.r);
    x.formula = pipe_bubble_formula(p->s.kind, p->s.P, p->s.M, p->s.V);
    if (tr->dist.rank == 0 && p->bubble_csv) x.bub = csv_open(p->bubble_csv, BUBBLE_HEADER);
    if (tr->dist.rank == 0 && p->gantt_csv) x.gan = csv_open(p->gantt_csv, GANTT_HEADER);
    bubble_measured(&x);
    bubble_replayed(&x);
    memory_held(&x);
    const runner_report_t *r = &x.r;
    int P = p->s.P, M = p->s.M, V = p->s.V, K = p->s.slices;
    /* bytes: every boundary between virtual stages carries M activations and M gradients */
    /* (token slices: M K messages of a slice each, M of a whole sequence's worth) */
    double per_msg = K > 1 ? (double)p->e.tok_elems * tr->model.T * dtype_size(tr->dtype) : (double)p->e.msg_bytes;
    double want_b = 2.0 * (M / K) * (P * V - 1) * per_msg;
    say("sent:    %.0f bytes (%.3f MB) per step between the stages of one pipeline; formula 2 M (P V - 1) x "
        "%.0f bytes = %.0f\n", r->sent, r->sent / 1e6, per_msg, want_b);
    if (x.bub) out_close(x.bub, p->bubble_csv);
    if (x.gan) out_close(x.gan, p->gantt_csv);
    runner_report_free(&x.r);
}
