/* device.c: device choice, buffers, copies and timers (see device.h). */
#include "device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "device_cuda.h"
#include "perf.h"

void openblas_set_num_threads(int);

int device_cuda_built(void) {
#ifdef USE_CUDA
    return 1;
#else
    return 0;
#endif
}

static void cpu_name(char *out, size_t len) {
    snprintf(out, len, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

void device_init(device_t *d, const char *want, int local_rank, int local_world, int threads) {
    memset(d, 0, sizeof *d);
    d->gpu = -1;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = (int)(cores / (local_world > 0 ? local_world : 1));
        if (threads < 1) threads = 1;
    }
    d->threads = threads;
    csv_set_threads(threads);   /* what the CSV rows record */
    /* One threading layer per rank: OpenBLAS's pool, sized here. */
    openblas_set_num_threads(threads);

    int use_cuda = 0;
    if (strcmp(want, "cpu") != 0) {
        char why[256] = "this build has no CUDA backend (rebuild with nvcc on the PATH)";
        int n = 0;
#ifdef USE_CUDA
        n = cuda_device_count(why, sizeof why);
#endif
        d->gpu_count = n;
        if (n > 0) use_cuda = 1;
        else if (strcmp(want, "cuda") == 0) usage_error("--device cuda: no usable GPU: %s", why);
    }
    if (use_cuda) {
#ifdef USE_CUDA
        d->kind = DEV_CUDA;
        d->gpu = local_rank % d->gpu_count;
        cuda_device_open(d, d->gpu);
#else
        (void)local_rank;
#endif
    } else {
        d->kind = DEV_CPU;
        cpu_name(d->name, sizeof d->name);
    }
}

void device_finalize(device_t *d) {
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) cuda_device_close(d);
#else
    (void)d;
#endif
}

/* Every CUDA branch below is compiled only with USE_CUDA; on a CPU-only
 * build a device_t is always DEV_CPU. */
#ifdef USE_CUDA
#define ON_GPU(d) ((d)->kind == DEV_CUDA)
#else
#define ON_GPU(d) ((void)(d), 0)
#define cuda_alloc(d, b) NULL
#define cuda_free(d, p) (void)(p)
#define cuda_memset0(d, p, b) (void)0
#define cuda_copy(d, dst, src, b, w) (void)0
#define cuda_copy_2d(d, dst, dp, src, sp, w, r) (void)0
#define cuda_sync(d) (void)0
#define cuda_timer_start(t) (void)0
#define cuda_timer_stop_ms(t) 0.0
#endif

/* ---- memory, counted ----------------------------------------------------------
 * Every live buffer is in an open-addressing table (pointer -> bytes, kind),
 * so dev_free knows what it returns. A rank allocates a few hundred buffers,
 * almost all at start-up. */
const char *const mem_kind_name[MEM_KINDS] = {"params", "grads", "optim", "acts", "comm", "other"};
static mem_stats_t mem;
typedef struct { void *p; size_t bytes; int kind; } mem_entry;
static mem_entry *mem_tab;
static size_t mem_cap, mem_used;

static size_t mem_slot(const void *p) { return ((uintptr_t)p >> 6) * 0x9e3779b97f4a7c15ull; }

static void mem_put(void *p, size_t bytes, int kind);
static void mem_grow(void) {
    mem_entry *old = mem_tab;
    size_t n = mem_cap;
    mem_cap = n ? 2 * n : 1024;
    mem_tab = xcalloc(mem_cap, sizeof *mem_tab);
    mem_used = 0;
    for (size_t i = 0; i < n; i++)
        if (old[i].p) mem_put(old[i].p, old[i].bytes, old[i].kind);
    free(old);
}

static void mem_put(void *p, size_t bytes, int kind) {
    if (2 * (mem_used + 1) > mem_cap) mem_grow();
    size_t i = mem_slot(p) & (mem_cap - 1);
    while (mem_tab[i].p) i = (i + 1) & (mem_cap - 1);
    mem_tab[i] = (mem_entry){p, bytes, kind};
    mem_used++;
}

/* Remove p; returns its entry (p NULL when it was not counted). */
static mem_entry mem_take(const void *p) {
    mem_entry e = {0};
    if (!mem_cap) return e;
    size_t i = mem_slot(p) & (mem_cap - 1);
    while (mem_tab[i].p && mem_tab[i].p != p) i = (i + 1) & (mem_cap - 1);
    if (!mem_tab[i].p) return e;
    e = mem_tab[i];
    mem_tab[i].p = NULL;
    mem_used--;
    /* re-insert the rest of the cluster so lookups still find them */
    for (size_t j = (i + 1) & (mem_cap - 1); mem_tab[j].p; j = (j + 1) & (mem_cap - 1)) {
        mem_entry m = mem_tab[j];
        mem_tab[j].p = NULL;
        mem_used--;
        mem_put(m.p, m.bytes, m.kind);
    }
    return e;
}

static size_t mem_limit_bytes;

void dev_mem_limit(size_t bytes) { mem_limit_bytes = bytes; }

void *dev_alloc_as(const device_t *d, size_t bytes, mem_kind kind) {
    if (mem_limit_bytes && mem.total_now + bytes > mem_limit_bytes)
        die("memory limit: %zu more bytes (%.2f MB) of %s would bring this rank to %zu bytes "
            "(%.2f MB), above its limit of %zu bytes (%.2f MB)", bytes, bytes / 1e6,
            mem_kind_name[kind], mem.total_now + bytes, (mem.total_now + bytes) / 1e6,
            mem_limit_bytes, mem_limit_bytes / 1e6);
    void *p = ON_GPU(d) ? cuda_alloc(d, bytes) : xcalloc(1, bytes);
    mem_put(p, bytes, kind);
    mem.now[kind] += bytes;
    mem.total_now += bytes;
    if (mem.now[kind] > mem.peak[kind]) mem.peak[kind] = mem.now[kind];
    if (mem.total_now > mem.total_peak) mem.total_peak = mem.total_now;
    return p;
}

void *dev_alloc(const device_t *d, size_t bytes) { return dev_alloc_as(d, bytes, MEM_OTHER); }

void dev_free(const device_t *d, void *p) {
    if (!p) return;
    mem_entry e = mem_take(p);
    if (e.p) {
        mem.now[e.kind] -= e.bytes;
        mem.total_now -= e.bytes;
    }
    if (ON_GPU(d)) cuda_free(d, p);
    else free(p);
}

const mem_stats_t *dev_mem(void) { return &mem; }

void dev_mem_reset_peak(void) {
    for (int k = 0; k < MEM_KINDS; k++) mem.peak[k] = mem.now[k];
    mem.total_peak = mem.total_now;
}

void dev_memset0(const device_t *d, void *p, size_t bytes) {
    if (ON_GPU(d)) cuda_memset0(d, p, bytes);
    else memset(p, 0, bytes);
}

void dev_to_host(const device_t *d, void *host, const void *src, size_t bytes) {
    if (ON_GPU(d)) cuda_copy(d, host, src, bytes, 1);
    else memcpy(host, src, bytes);
}

void dev_from_host(const device_t *d, void *dst, const void *host, size_t bytes) {
    if (ON_GPU(d)) cuda_copy(d, dst, host, bytes, 1);
    else memcpy(dst, host, bytes);
}

void dev_copy(const device_t *d, void *dst, const void *src, size_t bytes) {
    if (ON_GPU(d)) cuda_copy(d, dst, src, bytes, 0);
    else memmove(dst, src, bytes);
}

void dev_copy_2d(const device_t *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                 size_t width, size_t rows) {
    if (!rows || !width) return;
    if (width > dpitch || width > spitch)
        die("dev_copy_2d: rows of %zu bytes do not fit pitches of %zu and %zu", width, dpitch, spitch);
    if (ON_GPU(d)) {
        cuda_copy_2d(d, dst, dpitch, src, spitch, width, rows);
        return;
    }
    for (size_t i = 0; i < rows; i++)
        memcpy((char *)dst + i * dpitch, (const char *)src + i * spitch, width);
}

void dev_bind(const device_t *d) {
    if (ON_GPU(d)) cuda_bind(d);
}

void dev_sync(const device_t *d) {
    if (ON_GPU(d)) cuda_sync(d);
}

double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void dev_timer_start(dev_timer_t *t, const device_t *d) {
    t->d = d;
    t->ev0 = t->ev1 = NULL;
    if (ON_GPU(d)) cuda_timer_start(t);
    else t->t0 = now_s();
}

double dev_timer_stop_ms(dev_timer_t *t) {
    if (ON_GPU(t->d)) return cuda_timer_stop_ms(t);
    return 1e3 * (now_s() - t->t0);
}
