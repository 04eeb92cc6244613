/* device.h: where a rank's buffers live and how its work is timed.
 *
 * One binary serves both devices. --device auto takes GPU
 * (local_rank % gpu_count) when the CUDA runtime answers and the CPU
 * otherwise; --device cuda without a usable GPU is an error. A build without
 * nvcc (CUDA=0) has only the CPU. All CUDA calls live in device_cuda.cu. */
#ifndef DEVICE_H
#define DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DEV_CPU = 0, DEV_CUDA = 1 } device_kind;

typedef struct {
    device_kind kind;
    int gpu;              /* CUDA ordinal, -1 on the CPU */
    int gpu_count;        /* GPUs visible to this rank */
    int threads;          /* CPU threads this rank uses (OpenBLAS and loops) */
    char name[128];       /* "NVIDIA H100 80GB HBM3" or the CPU model name */
    void *stream;         /* cudaStream_t for compute (NULL on the CPU) */
    void *comm_stream;    /* cudaStream_t for communication (NULL on the CPU) */
    void *blas;           /* cublasHandle_t (NULL on the CPU) */
} device_t;

/* want: "auto", "cpu" or "cuda". threads <= 0 means cores per node / ranks
 * per node. Prints nothing; the caller's header line reports the choice. */
void device_init(device_t *d, const char *want, int local_rank, int local_world, int threads);
void device_finalize(device_t *d);
/* True when this build has the CUDA backend compiled in. */
int device_cuda_built(void);

/* Memory is counted by what it holds, so trainers can print each kind's
 * high-water mark beside the formulas of their chapter. */
typedef enum { MEM_PARAMS, MEM_GRADS, MEM_OPTIM, MEM_ACTS, MEM_COMM, MEM_OTHER, MEM_KINDS } mem_kind;
extern const char *const mem_kind_name[MEM_KINDS];   /* "params", "grads", ... */
typedef struct {
    size_t now[MEM_KINDS], peak[MEM_KINDS];   /* bytes per kind: in use, high-water */
    size_t total_now, total_peak;             /* all kinds together */
} mem_stats_t;

void *dev_alloc(const device_t *d, size_t bytes);      /* zeroed, counted as MEM_OTHER */
void *dev_alloc_as(const device_t *d, size_t bytes, mem_kind kind);
void dev_free(const device_t *d, void *p);            /* NULL is fine */
/* This rank's device memory as counted by dev_alloc (one device per rank). */
const mem_stats_t *dev_mem(void);
/* Restart the high-water marks at the current use. */
void dev_mem_reset_peak(void);
/* A cap on this rank's counted memory (0: none): an allocation that would
 * take the total above it ends the job with one line naming the bytes (what
 * was asked, for what kind, the total it would reach, the cap). */
void dev_mem_limit(size_t bytes);
void dev_memset0(const device_t *d, void *p, size_t bytes);
void dev_to_host(const device_t *d, void *host, const void *src, size_t bytes);
void dev_from_host(const device_t *d, void *dst, const void *host, size_t bytes);
void dev_copy(const device_t *d, void *dst, const void *src, size_t bytes);
/* A strided block: `rows` runs of `width` bytes, row i from src + i * spitch
 * to dst + i * dpitch (both on the device; one cudaMemcpy2D on a GPU). It
 * gathers a column block of a row-major tensor (a group of heads of every
 * token) or scatters it back, as all-to-all layouts need. */
void dev_copy_2d(const device_t *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                 size_t width, size_t rows);
/* Make d the calling thread's current device (CUDA keeps it per thread): a
 * thread that drives a device it did not open calls it first. Nothing on
 * the CPU. */
void dev_bind(const device_t *d);
/* Wait until all work queued on the device (both streams) has finished. */
void dev_sync(const device_t *d);

/* Wall-clock seconds (monotonic). */
double now_s(void);

/* Timing of device work: on the CPU the wall clock around synchronous work;
 * on a GPU, CUDA events on the compute stream. */
typedef struct { const device_t *d; double t0; void *ev0, *ev1; } dev_timer_t;
void dev_timer_start(dev_timer_t *t, const device_t *d);
double dev_timer_stop_ms(dev_timer_t *t);   /* synchronises, returns ms */

#ifdef __cplusplus
}
#endif
#endif
