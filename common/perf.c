/* perf.c: peak tables, the measured CPU peak, utilisation strings, CSV files. */
#include "perf.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"

const char *const precision_name[4] = {"fp32", "tf32", "bf16", "fp8"};

/* Dense peaks (TFLOP/s) from the vendors' data sheets: fp32 on the FP32
 * cores; tf32, bf16 (fp32 accumulation) and fp8 on the tensor cores; data
 * sheets quote tensor-core figures with 2:4 sparsity, halved here. 0: the
 * GPU has no such unit. The first entry whose name matches wins, so the
 * specific names come first. */
static const gpu_peak_t gpu_peaks[] = {
    {"H100 NVL", "H100 NVL", {60.0, 417.5, 835.5, 1670.5}},
    {"H100 PCIe", "H100 PCIe", {51.2, 378.0, 756.0, 1513.0}},
    {"H100", "H100 SXM", {66.9, 494.7, 989.4, 1978.9}},
    {"H200 NVL", "H200 NVL", {60.0, 417.5, 835.5, 1670.5}},
    {"H200", "H200 SXM", {66.9, 494.7, 989.4, 1978.9}},
    {"B200", "B200", {75.0, 1100.0, 2250.0, 4500.0}},
    {"A100", "A100", {19.5, 156.0, 312.0, 0.0}},
    {"L40S", "L40S", {91.6, 183.0, 362.05, 733.0}},
    {"L4", "L4", {30.3, 60.0, 121.0, 242.5}},
    {"RTX 4090", "RTX 4090", {82.6, 82.6, 165.2, 330.3}},
};

/* Whole-word match, so "L4" does not match "L40S". */
static int name_has(const char *name, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(name, word); p; p = strstr(p + 1, word)) {
        int left = p == name || p[-1] == ' ' || p[-1] == '-';
        char r = p[n];
        int right = r == 0 || r == ' ' || r == '-';
        if (left && right) return 1;
    }
    return 0;
}

const gpu_peak_t *perf_gpu_lookup(const char *device_name) {
    for (size_t i = 0; i < sizeof gpu_peaks / sizeof gpu_peaks[0]; i++)
        if (name_has(device_name, gpu_peaks[i].match)) return &gpu_peaks[i];
    return NULL;
}

/* ---- the CPU peak ---------------------------------------------------------- */
/* FLOP/s: independent FMA chains, enough of them to cover the FMA latency on
 * every FMA port (12 chains x 4-cycle latency covers 2 ports with room).
 * Clock: a chain of dependent integer adds, one per cycle. Both are timed in
 * thread CPU time (see thread_seconds). */

#define CHAINS 12
#define FMA_BODY(V)                                                            \
    V acc[CHAINS];                                                             \
    V mul, add;                                                                \
    for (int i = 0; i < (int)(sizeof(V) / 4); i++) { mul[i] = 0.9999999f; add[i] = 1e-7f; } \
    for (int c = 0; c < CHAINS; c++) acc[c] = add * (float)c;                  \
    for (long it = 0; it < iters; it++)                                        \
        for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * mul + add;          \
    float s = 0;                                                               \
    for (int c = 0; c < CHAINS; c++) s += acc[c][0];                           \
    return s;

typedef float v8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));

/* Optimised and uninstrumented whatever the build (SANITIZE=1 compiles at
 * -O1 with checks on every access, which would measure the checks). */
#define FMA_FN(isa) __attribute__((target(isa), noinline, optimize("O3"), no_sanitize("address", "undefined")))
FMA_FN("avx2,fma") static float fma_avx2(long iters) { FMA_BODY(v8) }
FMA_FN("avx512f") static float fma_avx512(long iters) { FMA_BODY(v16) }

typedef struct { int lanes; long iters; double seconds; float sink; } fma_job;

/* Seconds this thread has run on a core: time the scheduler gave to other
 * processes (or to OpenBLAS's worker threads, which spin for a while after
 * each call) does not count, so the peak is the cores' own, even on a busy
 * machine. */
static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *fma_thread(void *arg) {
    fma_job *j = arg;
    double t0 = thread_seconds();
    j->sink = j->lanes == 16 ? fma_avx512(j->iters) : fma_avx2(j->iters);
    j->seconds = thread_seconds() - t0;
    return NULL;
}

/* FLOP/s of `threads` threads running the FMA loop at once, each at the rate
 * it reached while on a core; the best of 3 runs of about 30 ms. */
static double fma_rate(int threads, int lanes) {
    long iters = 20000000 / (lanes / 8);
    fma_job jobs[256];
    pthread_t tid[256];
    if (threads > 256) threads = 256;
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        for (int t = 0; t < threads; t++) {
            jobs[t] = (fma_job){lanes, iters, 0, 0};
            pthread_create(&tid[t], NULL, fma_thread, &jobs[t]);
        }
        double flops = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(tid[t], NULL);
            flops += (double)iters * CHAINS * lanes * 2 / jobs[t].seconds;
        }
        if (flops > best) best = flops;
    }
    return best;
}

/* A chain of dependent register-register adds, one per cycle. The addend
 * is a register the compiler cannot see through: some cores (Intel's Golden
 * Cove and later) fold dependent adds of an IMMEDIATE in the renamer, which
 * read 10.7 GHz on a 3.5 GHz Xeon. */
static double clock_ghz(void) {
    const long n = 50000000;
    double best = 0;
    uint64_t one = 1;
    __asm__ volatile("" : "+r"(one));
    for (int rep = 0; rep < 3; rep++) {
        uint64_t x = 0;
        double t0 = thread_seconds();
        for (long i = 0; i < n; i += 8)
            __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                             "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                             : "+r"(x) : "r"(one));
        double ghz = (double)n / (thread_seconds() - t0) / 1e9;
        if (ghz > best) best = ghz;
    }
    return best;
}

const cpu_peak_t *perf_cpu_peak(int threads) {
    static cpu_peak_t cached;
    if (cached.threads == threads && cached.flops > 0) return &cached;
    cpu_peak_t p = {0};
    p.threads = threads;
    __builtin_cpu_init();
    int lanes = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        p.flops = fma_rate(threads, 8);
        lanes = 8;
    }
    if (__builtin_cpu_supports("avx512f")) {
        double f = fma_rate(threads, 16);
        if (f > p.flops * 1.1) { p.flops = f; lanes = 16; }
    }
    if (lanes == 0) die("CPU peak: this CPU has neither AVX2+FMA nor AVX-512; pass --peak");
    p.ghz = clock_ghz();
    double per_cycle = p.flops / threads / (p.ghz * 1e9);
    p.flop_per_cycle = (int)(per_cycle + 0.5);
    /* One FMA is 2 FLOP per lane; a core with two full-width FMA units does
     * 4 x lanes per cycle, one with a single unit (or half-width units) 2 x. */
    snprintf(p.formula, sizeof p.formula,
             "%d core%s x %.2f GHz x %d FLOP/cycle (%s FMA: %d fp32 lanes x 2 per unit) = %.1f GFLOP/s measured",
             threads, threads == 1 ? "" : "s", p.ghz, p.flop_per_cycle, lanes == 16 ? "AVX-512" : "AVX2",
             lanes, p.flops / 1e9);
    cached = p;
    return &cached;
}

double perf_peak(const device_t *d, precision_t prec, double override_tflops) {
    if (override_tflops > 0) return override_tflops * 1e12;
    if (d->kind == DEV_CPU) return perf_cpu_peak(d->threads)->flops;
    const gpu_peak_t *g = perf_gpu_lookup(d->name);
    return g ? g->tflops[prec] * 1e12 : 0.0;
}

const char *perf_util_str(char *buf, size_t len, double flops_per_s, double peak) {
    if (peak > 0) snprintf(buf, len, "%.1f%%", 100.0 * flops_per_s / peak);
    else snprintf(buf, len, "peak unknown, pass --peak");
    return buf;
}

/* ---- CSV ---------------------------------------------------------------------- */

FILE *csv_open(const char *path, const char *header) {
    FILE *f = fopen(path, "a+");
    if (!f) usage_error("cannot open CSV file %s: %s", path, strerror(errno));
    char first[1024] = "";
    rewind(f);
    if (!fgets(first, sizeof first, f)) {
        fprintf(f, "%s\n", header);
    } else {
        first[strcspn(first, "\r\n")] = 0;
        if (strcmp(first, header) != 0)
            usage_error("CSV file %s has other columns (%.60s...); use a new file", path, first);
    }
    fseek(f, 0, SEEK_END);
    return f;
}
