/* matmul_cuda.cu: GPU matrix products, naive to tensor cores.
 *
 *   naive   one thread per entry of C, reading its row of A and column of B
 *           straight from global memory (HBM, through L2)
 *   tiled   a block stages 32 x 32 tiles of A and B in shared memory, so
 *           each value loaded from global memory is used 32 times
 *   cuBLAS  fp32 on the FP32 units (default math mode), tf32 and bf16 on the
 *           tensor cores, fp32 accumulation throughout
 * Row-major C = A B is, to column-major cuBLAS, C^T = B^T A^T: the calls
 * pass B first and swap m and n, and nothing is transposed in memory. */
#include "cuda_common.cuh"
#include "matmul.h"

static cudaStream_t stream_of(const device_t *d) { return (cudaStream_t)d->stream; }

/* ---- naive ---------------------------------------------------------------
 * threadIdx.x runs along a row of C, so a warp reads 32 consecutive floats
 * of B (coalesced) and one float of A (broadcast). Every FMA still needs two
 * loads from memory: arithmetic intensity 2 FLOP / 8 bytes. */
__global__ void matmul_naive_kernel(const float *A, const float *B, float *C, int m, int n, int k) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) return;
    float s = 0.0f;
    for (int p = 0; p < k; p++) s += A[(size_t)i * k + p] * B[(size_t)p * n + j];
    C[(size_t)i * n + j] = s;
}

extern "C" void matmul_cuda_naive(const device_t *d, const float *A, const float *B, float *C,
                                  int m, int n, int k) {
    dim3 block(32, 8);
    dim3 grid(ceil_div(n, 32), ceil_div(m, 8));
    LAUNCH(matmul_naive_kernel, grid, block, 0, stream_of(d), A, B, C, m, n, k);
}

/* ---- shared-memory tiles -------------------------------------------------
 * A block of 32 x 8 threads computes a 32 x 32 tile of C, four rows per
 * thread. For each step of 32 along k, the block loads a 32 x 32 tile of A
 * and one of B into shared memory (coalesced, zero outside the matrix), then
 * every thread reads them from shared memory 32 times: intensity rises from
 * 2 FLOP per 8 bytes to 2 x 32 FLOP per 8 bytes of global traffic. */
#define TILE 32
#define TROWS 8                   /* threads per tile column; TILE / TROWS rows each */

__global__ void matmul_tiled_kernel(const float *A, const float *B, float *C, int m, int n, int k) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row0 = blockIdx.y * TILE;
    float acc[TILE / TROWS];
    for (int r = 0; r < TILE / TROWS; r++) acc[r] = 0.0f;
    for (int t0 = 0; t0 < k; t0 += TILE) {
        for (int r = 0; r < TILE / TROWS; r++) {
            const int y = ty + r * TROWS;
            const int i = row0 + y, pa = t0 + tx, pb = t0 + y;
            As[y][tx] = (i < m && pa < k) ? A[(size_t)i * k + pa] : 0.0f;
            Bs[y][tx] = (pb < k && col < n) ? B[(size_t)pb * n + col] : 0.0f;
        }
        __syncthreads();
        for (int p = 0; p < TILE; p++) {
            const float b = Bs[p][tx];                 /* consecutive: no bank conflict */
            for (int r = 0; r < TILE / TROWS; r++)
                acc[r] += As[ty + r * TROWS][p] * b;   /* same address across the warp: broadcast */
        }
        __syncthreads();
    }
    for (int r = 0; r < TILE / TROWS; r++) {
        const int i = row0 + ty + r * TROWS;
        if (i < m && col < n) C[(size_t)i * n + col] = acc[r];
    }
}

extern "C" void matmul_cuda_tiled(const device_t *d, const float *A, const float *B, float *C,
                                  int m, int n, int k) {
    dim3 block(TILE, TROWS);
    dim3 grid(ceil_div(n, TILE), ceil_div(m, TILE));
    LAUNCH(matmul_tiled_kernel, grid, block, 0, stream_of(d), A, B, C, m, n, k);
}

/* ---- cuBLAS --------------------------------------------------------------- */

static cublasHandle_t blas_of(const device_t *d) {
    cublasHandle_t h = (cublasHandle_t)d->blas;
    CUBLAS_CHECK(cublasSetStream(h, stream_of(d)));
    return h;
}

extern "C" void matmul_cublas_f32(const device_t *d, const float *A, const float *B, float *C,
                                  int m, int n, int k, int tf32) {
    cublasHandle_t h = blas_of(d);
    const float one = 1.0f, zero = 0.0f;
    /* CUBLAS_DEFAULT_MATH keeps fp32 on the FP32 units; FAST_TF32 asks for
     * tensor cores with inputs rounded to tf32 (10 mantissa bits). The
     * handle's mode is restored so other users of it see no change. */
    cublasMath_t mode;
    CUBLAS_CHECK(cublasGetMathMode(h, &mode));
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                              B, CUDA_R_32F, n, A, CUDA_R_32F, k, &zero, C, CUDA_R_32F, n,
                              tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasSetMathMode(h, mode));
}

extern "C" void matmul_cublas_bf16(const device_t *d, const bf16_t *A, const bf16_t *B, float *C,
                                   int m, int n, int k) {
    cublasHandle_t h = blas_of(d);
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                              B, CUDA_R_16BF, n, A, CUDA_R_16BF, k, &zero, C, CUDA_R_32F, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

extern "C" size_t matmul_cuda_free_bytes(const device_t *d) {
    (void)d;   /* the current device is d's (device_init set it) */
    size_t free_bytes = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes;
}
