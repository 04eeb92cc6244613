/* perf.c: peak tables, the measured CPU peak, utilisation strings, CSV files. */
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "check.h"

const char *const precision_name[4] = {"fp32", "tf32", "bf16", "fp8"};

/* Dense peaks (TFLOP/s) from the vendors' data sheets: fp32 on the FP32
 * cores; tf32, bf16 (fp32 accumulation) and fp8 on the tensor cores; data
 * sheets quote tensor-core figures with 2:4 sparsity, halved here. 0: the
 * GPU has no such unit. The first entry whose name matches wins, so the
 * specific names come first. A peak is units x FLOP per clock x clock: the
 * sources give that product where the data sheet's figure follows from it.
 *
 * columns: match, label, {fp32, tf32, bf16, fp8}, fp16, tensor cores, year,
 * flagship (the data-centre GPU of its generation: the chart of peaks). */
static const gpu_peak_t gpu_peaks[] = {
    {"K40", "K40", {4.29, 0, 0, 0}, 0, 0, 2013, 1,
     "Tesla K40 board specification BD-06902-001: 2880 FP32 cores x 2 FLOP x 745 MHz "
     "(the base clock boards ship at) = 4.29 (5.04 at the 875 MHz boost clock); "
     "no 16-bit arithmetic"},
    {"P100-PCIE", "P100 PCIe", {9.3, 0, 0, 0}, 18.7, 0, 2016, 0,
     "Tesla P100 PCIe data sheet; fp16 at twice the fp32 rate on the FP32 cores"},
    {"P100", "P100 SXM2", {10.6, 0, 0, 0}, 21.2, 0, 2016, 1,
     "Tesla P100 data sheet (SXM2): 56 SMs x 64 FP32 cores x 2 x 1.48 GHz = 10.6; "
     "fp16 as two packed values per FP32 core = 21.2; no tensor cores, no bf16"},
    {"V100-PCIE", "V100 PCIe", {14.0, 0, 0, 0}, 112.0, 1, 2017, 0,
     "Tesla V100 PCIe data sheet: tensor cores 112 (fp16 inputs); no bf16"},
    {"V100", "V100 SXM2", {15.7, 0, 0, 0}, 125.0, 1, 2017, 1,
     "Tesla V100 data sheet (SXM2): 80 SMs x 64 FP32 cores x 2 x 1.53 GHz = 15.7; "
     "tensor cores (fp16 inputs, fp32 accumulation) 80 SMs x 8 x 64 FMA x 2 x 1.53 GHz "
     "= 125; no bf16, no tf32"},
    {"A100", "A100", {19.5, 156.0, 312.0, 0.0}, 312.0, 1, 2020, 1,
     "A100 data sheet: 108 SMs x 64 FP32 cores x 2 x 1.41 GHz = 19.5; tensor cores "
     "108 SMs x 4 x 256 FMA x 2 x 1.41 GHz = 312 (bf16 and fp16); tf32 at half that"},
    {"H100 NVL", "H100 NVL", {60.0, 417.5, 835.5, 1670.5}, 835.5, 1, 2023, 0,
     "H100 NVL data sheet (per GPU), sparse figures halved"},
    {"H100 PCIe", "H100 PCIe", {51.2, 378.0, 756.0, 1513.0}, 756.0, 1, 2022, 0,
     "H100 PCIe data sheet, sparse figures halved"},
    {"H100", "H100 SXM", {66.9, 494.7, 989.4, 1978.9}, 989.4, 1, 2022, 1,
     "H100 SXM data sheet and Hopper whitepaper: tensor cores 132 SMs x 4 x 512 FMA x 2 "
     "x 1.83 GHz = 989.4 (bf16 and fp16; 1978.9 with 2:4 sparsity); fp32 132 SMs x 128 "
     "FP32 cores x 2 x 1.98 GHz = 66.9"},
    {"H200 NVL", "H200 NVL", {60.0, 417.5, 835.5, 1670.5}, 835.5, 1, 2024, 0,
     "H200 NVL data sheet, sparse figures halved"},
    {"H200", "H200 SXM", {66.9, 494.7, 989.4, 1978.9}, 989.4, 1, 2024, 1,
     "H200 data sheet: the H100 SXM's compute with more and faster memory"},
    {"B200", "B200", {75.0, 1100.0, 2250.0, 4500.0}, 2250.0, 1, 2024, 1,
     "HGX B200 data sheet, per GPU: fp32 75; tensor cores tf32 2.2, fp16/bf16 4.5, "
     "fp8 9 PFLOP/s with 2:4 sparsity, halved here"},
    {"L40S", "L40S", {91.6, 183.0, 362.05, 733.0}, 362.05, 1, 2023, 0,
     "L40S data sheet, sparse figures halved"},
    {"L4", "L4", {30.3, 60.0, 121.0, 242.5}, 121.0, 1, 2023, 0,
     "L4 data sheet, sparse figures halved"},
    {"RTX 4090", "RTX 4090", {82.6, 82.6, 165.2, 330.3}, 165.2, 1, 2022, 0,
     "Ada Lovelace whitepaper (GeForce RTX 4090), fp32 accumulation, dense"},
};

const gpu_peak_t *perf_gpu_table(int *n) {
    *n = (int)(sizeof gpu_peaks / sizeof gpu_peaks[0]);
    return gpu_peaks;
}

/* Whole-word match, so "L4" does not match "L40S"; a lower-case suffix
 * ("Tesla K40m", "K40c") still matches its word. */
static int name_has(const char *name, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(name, word); p; p = strstr(p + 1, word)) {
        int left = p == name || p[-1] == ' ' || p[-1] == '-';
        char r = p[n];
        int right = r == 0 || r == ' ' || r == '-' || (r >= 'a' && r <= 'z');
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
/* A core's peak is clock x FLOP per cycle, and FLOP per cycle is fixed by
 * the instruction set and the core's FMA units: an FMA is 2 FLOP on each of
 * its lanes (16 fp32 lanes in AVX-512, 8 in AVX2), and a core issues one or
 * two of them per cycle. The CPU does not report how many, so one core runs
 * independent FMAs (the rate) and a chain of dependent adds (the clock, one
 * add per cycle); rate / clock / (2 x lanes) is close to 1 or to 2, and says
 * which. The clock printed is then the one the FMA rate implies: rate /
 * FLOP per cycle. Both are timed in thread CPU time (see thread_seconds). */

#define CHAINS 12   /* independent FMA chains: 12 x 4-cycle latency covers 2 ports with room */
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

/* Seconds this thread has run on a core: time the scheduler gave to other
 * processes (or to OpenBLAS's worker threads, which spin for a while after
 * each call) does not count, so the peak is the core's own, even on a busy
 * machine. */
static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* FLOP/s of one core running the FMA loop: the best of PEAK_RUNS runs of
 * about 30 ms, a short pause apart (so a burst of other work on the machine
 * passes in between). A disturbance (a migration, a cold core, another
 * virtual machine on the same physical core) can only make a run slower, so
 * the best run is the peak. */
#define PEAK_RUNS 15
static double fma_rate(int lanes) {
    const long iters = 20000000 / (lanes / 8);
    double best = 0;
    volatile float sink = 0;
    for (int rep = 0; rep < PEAK_RUNS; rep++) {
        double t0 = thread_seconds();
        sink += lanes == 16 ? fma_avx512(iters) : fma_avx2(iters);
        double f = (double)iters * CHAINS * lanes * 2 / (thread_seconds() - t0);
        if (f > best) best = f;
        nanosleep(&(struct timespec){0, 20000000}, NULL);
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
    for (int rep = 0; rep < 7; rep++) {
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

/* snprintf for paths and messages that must fit whole: a string that would
 * be cut becomes "" (a cut path would name the wrong file). */
static int fits(int written, size_t len) { return written >= 0 && (size_t)written < len; }

/* One core's figures: what the cache file holds. */
typedef struct {
    int lanes;            /* fp32 lanes of the widest FMA the CPU has */
    int flop_per_cycle;   /* 2 x lanes x FMAs per cycle (1 or 2) */
    double ghz;           /* the FMA rate / flop_per_cycle, to 1 MHz */
    char when[64];        /* when it was measured */
} core_peak_t;

int perf_flop_per_cycle(double fma_flops, double clock_hz, int lanes) {
    /* FMAs per cycle: 1 or 2, whichever the ratio is nearer (on a log
     * scale: the boundary is sqrt(2)); a measurement is off by a few
     * percent, never by 40 */
    const int per_cycle = fma_flops / clock_hz / (2.0 * lanes) >= sqrt(2.0) ? 2 : 1;
    return 2 * lanes * per_cycle;
}

static void measure(core_peak_t *c) {
    const double rate = fma_rate(c->lanes), clock = clock_ghz() * 1e9;
    c->flop_per_cycle = perf_flop_per_cycle(rate, clock, c->lanes);
    c->ghz = round(rate / c->flop_per_cycle / 1e6) / 1e3;
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(c->when, sizeof c->when, "%Y-%m-%d %H:%M", &tm);
}

/* ---- the CPU peak's cache file ---------------------------------------------- */

/* "AMD EPYC | family 25 model 17 stepping 1": the model name alone is not
 * enough (a virtual machine may call every EPYC "AMD EPYC"). */
static void cpu_identity(char *out, size_t len) {
    char name[128] = "unknown CPU", fam[16] = "?", model[16] = "?", step[16] = "?", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        if (strncmp(line, "model name", 10) == 0) snprintf(name, sizeof name, "%s", v);
        else if (strncmp(line, "cpu family", 10) == 0) snprintf(fam, sizeof fam, "%s", v);
        else if (strncmp(line, "model\t", 6) == 0) snprintf(model, sizeof model, "%s", v);
        else if (strncmp(line, "stepping", 8) == 0) snprintf(step, sizeof step, "%s", v);
        if (strncmp(line, "stepping", 8) == 0) break;   /* the first CPU's block is enough */
    }
    if (f) fclose(f);
    snprintf(out, len, "%s | family %s model %s stepping %s", name, fam, model, step);
}

/* The folder of the cache: $CPU_PEAK_CACHE ("off": none), else build/cpu_peak
 * in the suite's root, found as the nearest folder above the program that
 * holds both a Makefile and build/. "" when there is none. */
static void cache_dir(char *out, size_t len) {
    out[0] = 0;
    const char *env = getenv("CPU_PEAK_CACHE");
    if (env && *env) {
        if (strcmp(env, "off") != 0) snprintf(out, len, "%s", env);
        return;
    }
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return;
    dir[n] = 0;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) return;
        *slash = 0;
        char mk[PATH_MAX + 16], bd[PATH_MAX + 16];
        snprintf(mk, sizeof mk, "%s/Makefile", dir);
        snprintf(bd, sizeof bd, "%s/build", dir);
        struct stat st;
        if (access(mk, R_OK) == 0 && stat(bd, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!fits(snprintf(out, len, "%s/build/cpu_peak", dir), len)) out[0] = 0;
            return;
        }
    }
}

/* Reads a cache file written by cache_write for `key`; 1 on success. */
static int cache_read(const char *path, const char *key, core_peak_t *c) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512], got[512] = "";
    int fpc = 0;
    double ghz = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "key ", 4) == 0) {
            if (!fits(snprintf(got, sizeof got, "%s", line + 4), sizeof got)) got[0] = 0;
        }
        else if (strncmp(line, "flop_per_cycle ", 15) == 0) fpc = atoi(line + 15);
        else if (strncmp(line, "ghz ", 4) == 0) ghz = atof(line + 4);
        else if (strncmp(line, "measured ", 9) == 0) {
            if (!fits(snprintf(c->when, sizeof c->when, "%s", line + 9), sizeof c->when)) c->when[0] = 0;
        }
    }
    fclose(f);
    /* an older file (another layout) or another CPU: measured again */
    if (strcmp(got, key) != 0 || (fpc != 2 * c->lanes && fpc != 4 * c->lanes) || !(ghz > 0)) return 0;
    c->flop_per_cycle = fpc;
    c->ghz = ghz;
    return 1;
}

/* Written whole to a temporary file, then renamed: a reader never sees half. */
static int cache_write(const char *path, const char *key, const core_peak_t *c) {
    char tmp[PATH_MAX + 32];
    if (!fits(snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid()), sizeof tmp)) return 0;
    FILE *f = fopen(tmp, "w");
    if (!f) return 0;
    fprintf(f, "# One core's peak for HFU and MFU, measured by perf_cpu_peak (common/perf.c):\n"
               "# best of %d runs of an FMA loop. Every program of the suite on this machine\n"
               "# uses it, for any number of threads; delete this file to measure again.\n", PEAK_RUNS);
    fprintf(f, "key %s\nflop_per_cycle %d\nghz %.3f\nmeasured %s\n", key, c->flop_per_cycle, c->ghz, c->when);
    int ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    return ok;
}

/* One core's figures and where they came from: read from the cache file, or
 * measured and saved; once per process. */
static const core_peak_t *core_peak(const char **isa, const char **source) {
    static core_peak_t c;
    static const char *isa_name;
    static char src[PATH_MAX + 256];
    *isa = isa_name;
    *source = src;
    if (c.ghz > 0) return &c;
    /* The widest vector unit the CPU has. Where 512-bit FMAs run at the
     * 256-bit rate (AMD Zen 4 splits them in two halves) the core issues one
     * 512-bit FMA per cycle instead of two 256-bit ones: the same FLOP per
     * cycle either way, so nothing is lost by not comparing the widths. */
    __builtin_cpu_init();
    c.lanes = __builtin_cpu_supports("avx512f") ? 16
            : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8 : 0;
    if (c.lanes == 0) die("CPU peak: this CPU has neither AVX-512 nor AVX2 with FMA; pass --peak");
    *isa = isa_name = c.lanes == 16 ? "AVX-512" : "AVX2";

    char ident[256], key[320], dir[PATH_MAX], path[PATH_MAX + 64] = "";
    cpu_identity(ident, sizeof ident);
    snprintf(key, sizeof key, "%s | %s | one core", ident, isa_name);
    cache_dir(dir, sizeof dir);
    const char *off = getenv("CPU_PEAK_CACHE");
    const char *why_not = off && strcmp(off, "off") == 0 ? "CPU_PEAK_CACHE=off" : "no build/ folder found";
    if (dir[0]) {
        mkdir(dir, 0777);   /* build/ exists; an error shows when the file is written */
        /* a file name from the key: letters and digits, the rest '_' */
        char name[320];
        size_t k = 0;
        for (const char *p = key; *p && k + 1 < sizeof name; p++)
            name[k++] = ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
                            ? *p : '_';
        name[k] = 0;
        if (!fits(snprintf(path, sizeof path, "%s/%s.txt", dir, name), sizeof path)) {
            dir[0] = 0;
            why_not = "the cache folder's path is too long";
        }
    }
    int lock = -1;
    if (dir[0]) {
        /* One measurement at a time: ranks started together wait here (asleep,
         * so they do not disturb it) and then read what the first one wrote. */
        char lockpath[PATH_MAX + 16];
        if (fits(snprintf(lockpath, sizeof lockpath, "%s/.lock", dir), sizeof lockpath)) {
            lock = open(lockpath, O_CREAT | O_RDWR, 0666);
            if (lock >= 0) flock(lock, LOCK_EX);
        }
    }
    /* the file as the user would name it: relative to the current folder when inside it */
    const char *shown = path;
    char cwd[PATH_MAX];
    if (dir[0] && getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd);
        if (strncmp(path, cwd, n) == 0 && path[n] == '/') shown = path + n + 1;
    }
    if (dir[0] && cache_read(path, key, &c)) {
        snprintf(src, sizeof src, "measured %s on one core (best of %d runs of an FMA loop), read from %s "
                 "(delete it to measure again)", c.when, PEAK_RUNS, shown);
    } else {
        measure(&c);
        if (dir[0] && cache_write(path, key, &c))
            snprintf(src, sizeof src, "measured now on one core (best of %d runs of an FMA loop), saved to "
                     "%s for every later run", PEAK_RUNS, shown);
        else
            snprintf(src, sizeof src, "measured now on one core (best of %d runs of an FMA loop); not saved: "
                     "%s", PEAK_RUNS, dir[0] ? "could not write the cache file" : why_not);
    }
    if (lock >= 0) close(lock);   /* releases the lock */
    return &c;
}

const cpu_peak_t *perf_cpu_peak(int threads) {
    static cpu_peak_t p;
    const char *source;
    const core_peak_t *c = core_peak(&p.isa, &source);
    p.threads = threads;
    p.ghz = c->ghz;
    p.flop_per_cycle = c->flop_per_cycle;
    p.flops = threads * c->ghz * 1e9 * c->flop_per_cycle;
    p.source = source;
    snprintf(p.formula, sizeof p.formula,
             "%d core%s x %.3f GHz x %d FLOP/cycle (%s FMA: %d fp32 lanes x 2 FLOP x %d per cycle) = %.1f GFLOP/s",
             threads, threads == 1 ? "" : "s", c->ghz, c->flop_per_cycle, p.isa, c->lanes,
             c->flop_per_cycle / (2 * c->lanes), p.flops / 1e9);
    return &p;
}

double perf_peak(const device_t *d, precision_t prec, double override_tflops) {
    if (override_tflops > 0) return override_tflops * 1e12;
    if (d->kind == DEV_CPU) return perf_cpu_peak(d->threads)->flops;
    const gpu_peak_t *g = perf_gpu_lookup(d->name);
    return g ? g->tflops[prec] * 1e12 : 0.0;
}

const char *perf_peak_desc(char *buf, size_t len, const device_t *d, precision_t p, double override_tflops) {
    if (override_tflops > 0) {
        snprintf(buf, len, "%.6g TFLOP/s per rank, from --peak", override_tflops);
    } else if (d->kind == DEV_CPU) {
        const cpu_peak_t *c = perf_cpu_peak(d->threads);
        snprintf(buf, len, "%s per rank\n         %s", c->formula, c->source);
    } else {
        const gpu_peak_t *g = perf_gpu_lookup(d->name);
        if (g && g->tflops[p] > 0)
            snprintf(buf, len, "%.6g TFLOP/s per rank: %s %s dense, data sheet (common/perf.c)", g->tflops[p],
                     g->label, precision_name[p]);
        else
            snprintf(buf, len, "unknown for this GPU at %s; pass --peak TFLOPS for MFU", precision_name[p]);
    }
    return buf;
}

const char *perf_util_str(char *buf, size_t len, double flops_per_s, double peak) {
    if (!(peak > 0)) {
        snprintf(buf, len, "peak unknown, pass --peak");
        return buf;
    }
    const double pct = 100.0 * flops_per_s / peak;
    /* decimals for three significant digits below 1%, at most 12 */
    int decimals = pct >= 1 || !(pct > 0) ? 1 : 2 - (int)floor(log10(pct));
    snprintf(buf, len, "%.*f%%", decimals < 12 ? decimals : 12, pct);
    return buf;
}

double perf_utilisation(double flops_per_s, double peak, const char *what) {
    if (!(peak > 0)) return NAN;
    const double u = flops_per_s / peak;
    if (u > 1.0)
        die("%s is %.1f%% (%.4g TFLOP/s against a peak of %.4g TFLOP/s): above 100%% is "
            "impossible, so either the peak is too low (see where the header's peak line "
            "says it came from; --peak overrides it) or the time or the FLOP count is wrong",
            what, 100.0 * u, flops_per_s / 1e12, peak / 1e12);
    return u;
}

/* ---- CSV ---------------------------------------------------------------------- */

/* The provenance every row ends with (perf.h). The load and the clock at
 * the program's start are read before main, before the run loads the
 * machine itself. */
static double start_load = -1, start_time;
static int csv_threads = 1;

static double load_1min(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

__attribute__((constructor)) static void csv_start(void) {
    start_load = load_1min();
    start_time = now_s();
}

void csv_set_threads(int threads) { csv_threads = threads > 0 ? threads : 1; }

static int header_has_source(const char *header) {
    size_t n = strlen("source");
    for (const char *p = strstr(header, "source"); p; p = strstr(p + 1, "source"))
        if ((p == header || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

void csv_end_row(FILE *f, const char *source) {
    static char cpu[256];
    if (!cpu[0]) {
        char ident[256];
        cpu_identity(ident, sizeof ident);
        ident[strcspn(ident, "|")] = 0;
        size_t n = strlen(ident);
        while (n > 0 && ident[n - 1] == ' ') ident[--n] = 0;
        for (char *p = ident; *p; p++)
            if (*p == ',') *p = ' ';
        snprintf(cpu, sizeof cpu, "%s", ident);
    }
    int ranks = 1, up = 0, down = 0;
    MPI_Initialized(&up);
    if (up) MPI_Finalized(&down);
    if (up && !down) MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    fprintf(f, ",%ld,%d,%d,%s,%.2f,%.2f,%.1f", sysconf(_SC_NPROCESSORS_ONLN), ranks, csv_threads, cpu, start_load,
            load_1min(), now_s() - start_time);
    if (source) fprintf(f, ",%s", source);
    fputc('\n', f);
}

const char *csv_header(char *buf, size_t len, const char *header) {
    if (!fits(snprintf(buf, len, "%s,%s%s", header, CSV_PROVENANCE, header_has_source(header) ? "" : ",source"),
              len))
        die("CSV header too long: %.60s...", header);
    return buf;
}

FILE *csv_open(const char *path, const char *header) {
    FILE *f = fopen(path, "a+");
    if (!f) usage_error("cannot open CSV file %s: %s", path, strerror(errno));
    char full[1024], first[1024] = "";
    csv_header(full, sizeof full, header);
    rewind(f);
    if (!fgets(first, sizeof first, f)) {
        fprintf(f, "%s\n", full);
    } else {
        first[strcspn(first, "\r\n")] = 0;
        if (strcmp(first, full) != 0)
            usage_error("CSV file %s has other columns (%.60s...); use a new file", path, first);
    }
    fseek(f, 0, SEEK_END);
    return f;
}

void csv_append_row(const char *path, const char *header, const char *fmt, ...) {
    if (!path || check_rank != 0) return;
    FILE *f = csv_open(path, header);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    csv_end_row(f, "measured");
    out_close(f, path);
}
