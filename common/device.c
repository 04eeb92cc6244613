/* device.c: device choice, buffers, copies and timers (see device.h). */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "device_cuda.h"

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
#define cuda_sync(d) (void)0
#define cuda_timer_start(t) (void)0
#define cuda_timer_stop_ms(t) 0.0
#endif

void *dev_alloc(const device_t *d, size_t bytes) {
    if (ON_GPU(d)) return cuda_alloc(d, bytes);
    return xcalloc(1, bytes);
}

void dev_free(const device_t *d, void *p) {
    if (ON_GPU(d)) cuda_free(d, p);
    else free(p);
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
