/* device_cuda.h: the CUDA side of device.h, implemented in device_cuda.cu.
 * Only device.c calls these; everything else goes through device.h. */
#ifndef DEVICE_CUDA_H
#define DEVICE_CUDA_H

#include <stddef.h>

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable GPUs; 0 with the runtime's reason in why. */
int cuda_device_count(char *why, size_t len);
void cuda_device_open(device_t *d, int gpu);   /* streams, cuBLAS handle, name */
void cuda_device_close(device_t *d);
/* Zeroed and complete on return; free waits for both streams first. */
void *cuda_alloc(const device_t *d, size_t bytes);
void cuda_free(const device_t *d, void *p);
void cuda_memset0(const device_t *d, void *p, size_t bytes);
/* A copy on the compute stream; wait = 1 returns only when it is done (for
 * copies that touch host memory: the caller reads or reuses it next). */
void cuda_copy(const device_t *d, void *dst, const void *src, size_t bytes, int wait);
/* A strided copy on the compute stream (dev_copy_2d), device to device. */
void cuda_copy_2d(const device_t *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                  size_t width, size_t rows);
void cuda_bind(const device_t *d);   /* cudaSetDevice(d->gpu) */
void cuda_sync(const device_t *d);
void cuda_timer_start(dev_timer_t *t);
double cuda_timer_stop_ms(dev_timer_t *t);

#ifdef __cplusplus
}
#endif
#endif
