/* replay/main.c: a record (--record of any multi-rank program) replayed on
 * one core per rank, and priced on a described GPU cluster -- the two
 * timings besides a measurement that mean something on any machine.
 *
 *   replayed  every rank on its own core: each compute takes its recorded
 *             thread CPU seconds, each call the link model's alpha-beta time
 *             (common/replay.h; the link inside a node defaults to chapter
 *             02's ping-pong fit on 2 ranks, the cpu preset of
 *             10_nd_llama/cost.c)
 *   modeled   the same actions on a cluster (--cluster): a compute with FLOPs
 *             takes FLOPs / (peak x efficiency), the efficiency chapter 01's
 *             bf16 GEMM table (01_matmul_hfu/reference/h100_hfu.csv) at a
 *             square GEMM of the action's FLOPs (an action is several GEMMs
 *             of smaller shapes: the table's efficiency at their sizes is
 *             lower, so this is optimistic); a compute without FLOPs (copies,
 *             reductions) its CPU seconds scaled by the memory bandwidths
 *             (--host-gbps against the GPU's); every call priced by the
 *             cluster's NVLink and network links (cost_links)
 *
 * One row per segment label (the record's marks: "step" for trainers,
 * "op:algo:bytes" for chapter 02), its mean over the segments of that
 * label. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "check.h"
#include "dist.h"
#include "outfile.h"
#include "perf.h"
#include "replay.h"
#include "10_nd_llama/cost.h"

#define CSV_HEADER "source,cluster,label,segment,ranks,segments,step_s,busy_s,idle_share,flops,tflops_per_rank,mfu"

typedef struct {
    const char *record, *cluster, *gemm_csv, *label, *csv;
    double gbps, alpha_us, inter_gbps, inter_us, host_gbps;
    int node_size, comm_only;
} options_t;

typedef struct {
    const cluster_t *cl;
    const gemm_table_t *gemm;
    double host_bw;
} pricing_t;

/* A compute on the cluster's GPU (see the top of the file). */
static double model_seconds(const rp_event_t *e, void *ctx) {
    const pricing_t *m = ctx;
    if (e->flops <= 0) return e->secs * m->host_bw / m->cl->mem_bw;
    double n = cbrt(e->flops / 2);
    return e->flops / (m->cl->peak * gemm_eff_at(m->gemm, n, n, n));
}

/* --comm-only: the alpha-beta model's assumption, communication alone. */
static double no_compute(const rp_event_t *e, void *ctx) {
    (void)e; (void)ctx;
    return 0;
}

/* Mean over the segments of each label (segment k: mark k to mark k + 1;
 * the segments after an "end" mark are the untimed gaps, left out): one row. */
static void rows(FILE *out, const options_t *o, const char *source, const char *cluster, double peak,
                 const replay_trace_t *t, const replay_result_t *r) {
    int M = r->nmarks;
    double *flops = xcalloc((size_t)M + 1, sizeof(double)), *busy = xcalloc((size_t)M + 1, sizeof(double));
    for (int q = 0; q < t->world; q++)
        for (int i = 0, k = -1; i < t->n[q]; i++) {
            const rp_event_t *e = &t->ev[q][i];
            if (e->op == RP_MARK) k++;
            if (e->op != RP_COMPUTE || k < 0) continue;
            flops[k] += e->flops;
            busy[k] += (r->t1[q][i] - r->t0[q][i]) / t->world;
        }
    int *done = xcalloc((size_t)M + 1, sizeof(int));
    for (int k = 0; k + 1 < M; k++) {
        if (done[k] || !strcmp(r->mark_name[k], "end")) continue;
        double step = 0, f = 0, b = 0;
        int n = 0;
        for (int j = k; j + 1 < M; j++)
            if (!strcmp(r->mark_name[j], r->mark_name[k])) {
                step += r->mark_t[j + 1] - r->mark_t[j];
                f += flops[j];
                b += busy[j];
                done[j] = 1;
                n++;
            }
        step /= n, f /= n, b /= n;
        double tf = step > 0 ? f / step / t->world : 0;
        fprintf(out, "%s,%s,%s,%s,%d,%d,%.6g,%.6g,%.4f,%.6g,%.6g,", source, cluster, o->label, r->mark_name[k],
                t->world, n, step, b, step > 0 ? 1 - b / step : 0, f, tf / 1e12);
        if (peak > 0) fprintf(out, "%.4f\n", tf / peak);
        else fprintf(out, "\n");
    }
    free(flops);
    free(busy);
    free(done);
}

/* --cluster h100xN (N nodes of 8 H100s, the planner's h100 preset) or a file. */
static void load_cluster(const options_t *o, int world, cluster_t *cl) {
    char why[300];
    int nodes = 0;
    if (sscanf(o->cluster, "h100x%d", &nodes) == 1) {
        if (nodes != 1 && nodes != 2 && nodes != 4 && nodes != 8 && nodes != 16)
            usage_error("--cluster h100xN: N is 1, 2, 4, 8 or 16 nodes");
        cost_cluster(cl, "h100");
    } else if (cost_cluster_file(cl, o->cluster, why, sizeof why)) {
        usage_error("--cluster: %s", why);
    }
    if (nodes && world > nodes * cl->node)
        usage_error("--cluster %s has %d GPUs; the record has %d ranks", o->cluster, nodes * cl->node, world);
}

static void run(const options_t *o, FILE *out, replay_trace_t *t) {
    char err[300];
    replay_links_t l = {.node_size = o->node_size, .intra_us = o->alpha_us, .intra_gbps = o->gbps,
                        .inter_us = o->inter_us, .inter_gbps = o->inter_gbps};
    replay_result_t r;
    if (replay_run(t, &l, o->comm_only ? no_compute : NULL, NULL, &r, err, sizeof err)) die("replay: %s", err);
    rows(out, o, "replayed", o->comm_only ? "links_only" : "one_core_per_rank", 0, t, &r);
    replay_result_free(&r);
    if (!o->cluster) return;
    cluster_t cl;
    gemm_table_t g;
    load_cluster(o, t->world, &cl);
    if (gemm_table_load(&g, o->gemm_csv, "bf16", err, sizeof err)) usage_error("--gemm-csv: %s", err);
    pricing_t m = {&cl, &g, o->host_gbps * 1e9};
    cost_links(&cl, &l);
    if (replay_run(t, &l, model_seconds, &m, &r, err, sizeof err)) die("replay: %s", err);
    char name[64];
    snprintf(name, sizeof name, "%s", strchr(o->cluster, '/') ? cl.name : o->cluster);
    for (char *c = name; *c; c++) if (*c == ',' || *c == ' ') *c = '_';
    rows(out, o, "modeled", name, cl.peak, t, &r);
    replay_result_free(&r);
}

int main(int argc, char **argv) {
    dist_t d;
    dist_init(&argc, &argv, &d);
    cluster_t cpu;
    cost_cluster(&cpu, "cpu");
    options_t o = {.gemm_csv = "01_matmul_hfu/reference/h100_hfu.csv", .label = "run",
                   .alpha_us = -1, .inter_gbps = 10, .inter_us = 20,
                   .host_gbps = cpu.mem_bw / 1e9};
    arg_t flags[] = {
        {"record", ARG_STRING, &o.record, "the record file (--record of a trainer or of 02_allreduce/allreduce)", NULL, 0, 0},
        {"cluster", ARG_STRING, &o.cluster, "also model the actions on h100x1|h100x2|h100x4|h100x8|h100x16 (nodes of "
         "8 H100s, 400 Gb/s InfiniBand between them) or a cluster file (format: 10_nd_llama/cost.h)", NULL, 0, 0},
        {"gemm-csv", ARG_STRING, &o.gemm_csv, "the GPU's GEMM efficiency table (chapter 01's CSV, bf16 rows)", NULL, 0, 0},
        {"gbps", ARG_DOUBLE, &o.gbps, "replayed: GB/s of a message inside a node (default: the record's link "
         "line, chapter 02's ping-pong; else the planner's cpu preset)", NULL, 0, 1e6},
        {"alpha-us", ARG_DOUBLE, &o.alpha_us, "replayed: latency of a message inside a node, microseconds (default: "
         "as --gbps)", NULL, -1, 1e7},
        {"node-size", ARG_INT, &o.node_size, "replayed: ranks per simulated node (0: one node)", NULL, 0, 1e6},
        {"inter-gbps", ARG_DOUBLE, &o.inter_gbps, "replayed: GB/s between simulated nodes", NULL, 1e-6, 1e6},
        {"inter-us", ARG_DOUBLE, &o.inter_us, "replayed: latency between simulated nodes, microseconds", NULL, 0, 1e7},
        {"host-gbps", ARG_DOUBLE, &o.host_gbps, "modeled: this CPU's memory GB/s (work without FLOPs scales by it)", NULL, 1e-3, 1e6},
        {"comm-only", ARG_FLAG, &o.comm_only, "replayed: every compute takes no time (the communication alone, "
         "as the alpha-beta model has it)", NULL, 0, 0},
        {"label", ARG_STRING, &o.label, "the CSV's label column (a sweep's point)", NULL, 0, 0},
        {"csv", ARG_STRING, &o.csv, "append the rows to this CSV (else: stdout)", NULL, 0, 0},
    };
    args_parse(argc, argv, "replay/replay",
               "A record replayed on one core per rank (source replayed) and priced on a GPU\n"
               "cluster (source modeled): one CSV row per segment label of the record.",
               flags, ARRAY_LEN(flags));
    if (!o.record) usage_error("--record FILE is required");
    if (o.comm_only && o.cluster) usage_error("--comm-only replays without compute: drop --cluster");
    if (strchr(o.label, ',')) usage_error("--label must not contain a comma");
    if (d.world != 1) usage_error("replay/replay runs as one process");
    replay_trace_t t;
    char err[300];
    if (replay_trace_read(&t, o.record, err, sizeof err)) usage_error("%s", err);
    if (o.gbps == 0) o.gbps = t.link_gbps > 0 ? t.link_gbps : cpu.intra_bw / 1e9;
    if (o.alpha_us < 0) o.alpha_us = t.link_gbps > 0 ? t.link_us : 1e6 * cpu.intra_lat;
    FILE *out = o.csv ? csv_open(o.csv, CSV_HEADER) : stdout;
    if (!o.csv) printf("%s\n", CSV_HEADER);
    run(&o, out, &t);
    if (o.csv) out_close(out, o.csv);
    replay_trace_free(&t);
    dist_finalize();
    return 0;
}
