/* device_cuda.cu: CUDA buffers, streams, events and the cuBLAS handle.
 *
 * Each rank owns one GPU with two non-blocking streams: `stream` for compute
 * and `comm_stream` for NCCL, so communication can overlap compute; events
 * order one after the other where needed (see comm_nccl.cu). */
#include "cuda_common.cuh"

#include <string.h>

#include "device_cuda.h"

extern "C" int cuda_device_count(char *why, size_t len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "%s", cudaGetErrorString(e));
        (void)cudaGetLastError();   /* clear the sticky error for later calls */
        return 0;
    }
    if (n == 0) snprintf(why, len, "the CUDA runtime reports no GPU");
    return n;
}

extern "C" void cuda_device_open(device_t *d, int gpu) {
    CUDA_CHECK(cudaSetDevice(gpu));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
    snprintf(d->name, sizeof d->name, "%.*s", (int)sizeof d->name - 1, prop.name);
    cudaStream_t s, c;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetStream(h, s));
    d->stream = s;
    d->comm_stream = c;
    d->blas = h;
}

extern "C" void cuda_device_close(device_t *d) {
    if (d->blas) CUBLAS_CHECK(cublasDestroy((cublasHandle_t)d->blas));
    if (d->stream) CUDA_CHECK(cudaStreamDestroy((cudaStream_t)d->stream));
    if (d->comm_stream) CUDA_CHECK(cudaStreamDestroy((cudaStream_t)d->comm_stream));
    d->blas = d->stream = d->comm_stream = NULL;
}

/* Zeroed on the compute stream, and finished before the buffer is handed
 * out: both streams are non-blocking, so a plain cudaMemset (legacy default
 * stream) would be ordered after nothing and could land AFTER the first
 * writes to the buffer, wiping them. */
extern "C" void *cuda_alloc(const device_t *d, size_t bytes) {
    void *p = NULL;
    cudaStream_t s = (cudaStream_t)d->stream;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes ? bytes : 1, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return p;
}

/* Work queued on either stream may still read or write p: let it finish
 * before the memory can be handed to someone else. */
extern "C" void cuda_free(const device_t *d, void *p) {
    if (!p) return;
    CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)d->stream));
    CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)d->comm_stream));
    CUDA_CHECK(cudaFree(p));
}

extern "C" void cuda_memset0(const device_t *d, void *p, size_t bytes) {
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, (cudaStream_t)d->stream));
}

extern "C" void cuda_copy(const device_t *d, void *dst, const void *src, size_t bytes, int wait) {
    cudaStream_t s = (cudaStream_t)d->stream;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
    if (wait) CUDA_CHECK(cudaStreamSynchronize(s));
}

extern "C" void cuda_copy_2d(const device_t *d, void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t width, size_t rows) {
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice,
                                 (cudaStream_t)d->stream));
}

extern "C" void cuda_bind(const device_t *d) { CUDA_CHECK(cudaSetDevice(d->gpu)); }

extern "C" void cuda_sync(const device_t *d) {
    (void)d;
    CUDA_CHECK(cudaDeviceSynchronize());
}

extern "C" void cuda_timer_start(dev_timer_t *t) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventRecord(a, (cudaStream_t)t->d->stream));
    t->ev0 = a;
    t->ev1 = b;
}

extern "C" double cuda_timer_stop_ms(dev_timer_t *t) {
    cudaEvent_t a = (cudaEvent_t)t->ev0, b = (cudaEvent_t)t->ev1;
    CUDA_CHECK(cudaEventRecord(b, (cudaStream_t)t->d->stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return ms;
}
