/* cuda_common.cuh: what every CUDA source of the suite includes.
 *
 * Error macros for the CUDA runtime, cuBLAS and NCCL, and LAUNCH, the one
 * form every kernel launch takes. Under nvcc LAUNCH is the triple-chevron
 * launch; the test harness in tests/cuda_emu compiles the same sources with
 * the host compiler (CUDA_EMU defined) and runs the kernels on the CPU. */
#ifndef CUDA_COMMON_CUH
#define CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>

#include "check.h"

#define CUDA_CHECK(call)                                                       \
    do {                                                                       \
        cudaError_t cuda_err_ = (call);                                        \
        if (cuda_err_ != cudaSuccess)                                          \
            die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,             \
                cudaGetErrorString(cuda_err_));                                \
    } while (0)

#define CUBLAS_CHECK(call)                                                     \
    do {                                                                       \
        cublasStatus_t blas_err_ = (call);                                     \
        if (blas_err_ != CUBLAS_STATUS_SUCCESS)                                \
            die("%s:%d: %s failed: cuBLAS status %d", __FILE__, __LINE__,      \
                #call, (int)blas_err_);                                        \
    } while (0)

#define NCCL_CHECK(call)                                                       \
    do {                                                                       \
        ncclResult_t nccl_err_ = (call);                                       \
        if (nccl_err_ != ncclSuccess)                                          \
            die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,             \
                ncclGetErrorString(nccl_err_));                                \
    } while (0)

/* LAUNCH(kernel, grid, block, shared_bytes, stream, args...) */
#ifdef CUDA_EMU
#define LAUNCH(kernel, grid, block, smem, stream, ...)                         \
    do {                                                                       \
        cuda_emu_launch(kernel, dim3(grid), dim3(block), (smem), (stream),     \
                        __VA_ARGS__);                                          \
        CUDA_CHECK(cudaGetLastError());                                        \
    } while (0)
#else
#define LAUNCH(kernel, grid, block, smem, stream, ...)                         \
    do {                                                                       \
        kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__);            \
        CUDA_CHECK(cudaGetLastError());                                        \
    } while (0)
#endif

/* Blocks of `threads` threads covering n items. */
static inline unsigned int ceil_div(size_t n, unsigned int threads) {
    return (unsigned int)((n + threads - 1) / threads);
}

#endif
