/* bench.c: inputs, the exact check and the alpha-beta fit (see bench.h).
 *
 * Exact check: every input is a small integer, so every partial sum, in any
 * order, is an integer that fp32 (exact up to 2^24) and bf16 (8 significant
 * bits: exact up to 256) represent exactly. Any correct algorithm then gives
 * bit-identical results, and one wrong, missing or misplaced element shows.
 * The pattern is a hash of (seed, rank, index), so a block sent to the wrong
 * place or summed twice does not match by accident. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "device.h"

static uint32_t mix64(uint64_t x) {   /* a bijective 64-bit mixer (splitmix64's finaliser) */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (uint32_t)x;
}

float bench_input(const bench_case_t *c, int r, size_t i) {
    uint64_t h = (uint64_t)i ^ ((uint64_t)(uint32_t)r * 0x9e3779b97f4a7c15ULL) ^
                 ((uint64_t)c->seed * 0xd1b54a32d192ed03ULL);
    return (float)(1 + mix64(h) % c->k);
}

void bench_case_init(bench_case_t *c, op_id op, size_t total, int rank, int world,
                     int root, dtype_t dt, uint32_t seed) {
    c->op = op;
    c->rank = rank;
    c->world = world;
    c->root = root;
    c->dt = dt;
    c->seed = seed;
    /* Largest exact integer: 2^24 in fp32, 2^8 in bf16. A sum over N ranks of
     * values <= k stays exact when N k <= that. */
    uint32_t exact = dt == DT_BF16 ? 256u : 1u << 24;
    uint32_t k = bench_ops[op].reduces ? exact / (uint32_t)world : exact;
    if (k > 65536) k = 65536;
    c->k = k ? k : 1;
    bench_ops[op].shape(c, total);
}

int bench_check_possible(const bench_case_t *c) {
    uint32_t exact = c->dt == DT_BF16 ? 256u : 1u << 24;
    return !bench_ops[c->op].reduces || (uint32_t)c->world <= exact;
}

void bench_fill(const bench_case_t *c, void *send, void *recv) {
    const op_t *op = &bench_ops[c->op];
    for (size_t i = 0; i < c->send_count; i++) dtype_set(send, c->dt, i, bench_input(c, c->rank, i));
    for (size_t i = 0; i < c->recv_count; i++) dtype_set(recv, c->dt, i, -1.0f);
    if (op->in_place && c->rank == c->root)
        for (size_t i = 0; i < c->recv_count; i++) dtype_set(recv, c->dt, i, bench_input(c, c->rank, i));
}

size_t bench_check(const bench_case_t *c, const void *recv) {
    const op_t *op = &bench_ops[c->op];
    size_t wrong = 0;
    for (size_t i = 0; i < c->check_count; i++)
        if (dtype_get(recv, c->dt, i) != op->expected(c, i)) wrong++;
    return wrong;
}

/* Minimise sum_i ((alpha + beta x_i - t_i) / t_i)^2: weighted least squares
 * with weights w_i = 1 / t_i^2. Normal equations:
 *   [S_w   S_wx ] [alpha]   [S_wt ]
 *   [S_wx  S_wxx] [beta ] = [S_wxt]
 * A negative parameter means the data do not show that term (e.g. a sweep of
 * big messages only has no visible latency): it is set to 0 and the other
 * refitted alone. */
ab_fit_t ab_fit(const double *x, const double *t, int n) {
    ab_fit_t f = {0, 0, 0};
    double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (!(t[i] > 0)) continue;
        double w = 1.0 / (t[i] * t[i]);
        sw += w; swx += w * x[i]; swxx += w * x[i] * x[i];
        swt += w * t[i]; swxt += w * x[i] * t[i];
        if (x[i] != x[0]) distinct = 1;
    }
    if (sw == 0 || !distinct) return f;
    double det = sw * swxx - swx * swx;
    if (det <= 0) return f;
    f.alpha_us = (swt * swxx - swx * swxt) / det;
    f.beta_us_per_byte = (sw * swxt - swx * swt) / det;
    if (f.beta_us_per_byte < 0) {
        f.beta_us_per_byte = 0;
        f.alpha_us = swt / sw;
    } else if (f.alpha_us < 0) {
        f.alpha_us = 0;
        f.beta_us_per_byte = swxt / swxx;
    }
    f.ok = 1;
    return f;
}

/* ---- the link: ping-pong between ranks 0 and 1 -------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ab_fit_t bench_pingpong(p2p_comm_t *pc, int reps) {
    ab_fit_t f = {0, 0, 0};
    if (pc->size < 2) return f;
    enum { SIZES = 11 };   /* 4 B .. 4 MiB, x 4 */
    double x[SIZES], t[SIZES], *rt = xmalloc(sizeof(double) * (size_t)reps);
    char *buf = xcalloc((size_t)4 << 20, 1);
    const size_t es = pc->es;
    MPI_CHECK(MPI_Barrier(pc->mpi));
    for (int s = 0; s < SIZES; s++) {
        const size_t bytes = (size_t)4 << (2 * s), n = bytes / es ? bytes / es : 1;
        x[s] = (double)(n * es);
        for (int r = -2; r < reps; r++) {   /* two untimed round trips first */
            double t0 = now_s();
            if (pc->rank == 0) {
                p2p_send(pc, buf, n, 1);
                p2p_recv(pc, buf, n, 1);
            } else if (pc->rank == 1) {
                p2p_recv(pc, buf, n, 0);
                p2p_send(pc, buf, n, 0);
            }
            if (r >= 0) rt[r] = (now_s() - t0) * 1e6 / 2;   /* one way */
            watch_tick();   /* a round trip is progress: on a busy machine the whole can take long */
        }
        /* the fastest round trip: what the link can do (a slower one met a
         * descheduled rank or another process, which the model leaves out) */
        qsort(rt, (size_t)reps, sizeof *rt, cmp_double);
        t[s] = rt[0];
    }
    if (pc->rank == 0) f = ab_fit(x, t, SIZES);
    MPI_CHECK(MPI_Bcast(&f, sizeof f, MPI_BYTE, 0, pc->mpi));
    free(rt);
    free(buf);
    return f;
}

/* ---- what the watchdog (check.h) says we are doing ---------------------------- */

void bench_doing(const char *fmt, ...) {
    static int active;
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (active) watch_end();
    watch_begin(buf, NULL, NULL, WATCH_WORLD);
    active = 1;
}
