/* ops_cuda.cu: the CUDA backend of ops.h.
 *
 * Matrix products go to cuBLAS (GemmEx: bf16 or fp32 operands, fp32
 * accumulation); everything else is a CUDA kernel on d->stream. Kernels read
 * and write bf16 or fp32 storage through load()/store() (one element) and
 * load8()/store8() (eight, with 16-byte accesses), the device twins of
 * dtype_get()/dtype_set(): the storage type is a kernel argument (uniform
 * across a launch, so the branch costs nothing next to the memory traffic),
 * and all arithmetic is fp32.
 *
 * Two tables. ops_cuda is the backend the suite runs; ops_cuda_simple keeps
 * the straightforward kernels each fast one replaced (as chapter 01 keeps its
 * ladder of matmul kernels), so that tests compare both with the CPU and
 * tests/bench_ops.c measures what each step gains. Per op, the fast version:
 *
 * - attention (bf16, head dim 16, 32, 64 or 128): flash attention on the
 *   tensor cores (Dao et al. 2022; FlashAttention-2, Dao 2023) through the
 *   WMMA API, one launch per direction for all heads and sequences, masked key
 *   tiles skipped, no score matrix in global memory; the backward pass is two
 *   kernels (dk and dv per key tile; dq per query tile) so that every output
 *   has one writer and no atomics are needed. fp32 and other head dims take
 *   the simple path: widen to fp32, cuBLAS per head, a softmax kernel.
 * - element-wise ops, RMSNorm, RoPE, cross-entropy, AdamW: 16-byte loads and
 *   stores where the pointers and shapes allow (else the scalar loop), a warp
 *   per row for the norms, one online-softmax pass over the vocabulary for
 *   the cross-entropy's lse, and the RMSNorm weight gradient as block partial
 *   sums reduced in a second pass.
 * - embedding backward: the tokens sorted once (with their positions), then
 *   one block per distinct row adds that row's gradients in order of n.
 *
 * Determinism: no atomics. Every sum runs in an order fixed by the shapes
 * alone (warp shuffles in a fixed pattern, then the warps in order; partial
 * sums over fixed row groups, then the groups in order; WMMA products over
 * tiles in a fixed order), so one input gives one result, run after run. */
#include "cuda_common.cuh"

#include <math.h>
#include <mma.h>
#include <stdint.h>

#include "ops.h"

static const unsigned int THREADS = 256;    /* per block: 8 warps */
#define FULL_MASK 0xffffffffu

/* for (i over [0, n)) split across the whole grid */
#define GRID_STRIDE(i, n)                                                      \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
         i += (size_t)gridDim.x * blockDim.x)

/* Blocks for a grid-stride loop over n items: at least one, at most enough
 * to fill a large GPU several times over. */
static unsigned int stride_grid(size_t n) {
    unsigned int g = ceil_div(n, THREADS);
    return g < 1 ? 1 : g > 1024 ? 1024 : g;
}

/* Threads for a block that owns one row of n elements: whole warps, enough
 * for one element each up to THREADS (short rows leave no thread idle). */
static unsigned int row_threads(int n) {
    unsigned int t = 32 * ceil_div(n > 0 ? n : 1, 32);
    return t < THREADS ? t : THREADS;
}

static cudaStream_t stream_of(const device_t *d) { return (cudaStream_t)d->stream; }

/* 16-byte accesses need 16-byte aligned addresses: buffers from cudaMalloc
 * are, but a caller may pass a pointer into the middle of one. */
static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ---- storage ---------------------------------------------------------------- */
__device__ inline float load(const void *p, dtype_t t, size_t i) {
    return t == DT_BF16 ? __bfloat162float(((const __nv_bfloat16 *)p)[i]) : ((const float *)p)[i];
}

__device__ inline void store(void *p, dtype_t t, size_t i, float v) {
    if (t == DT_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16(v);   /* nearest even */
    else ((float *)p)[i] = v;
}

/* Two bf16 in a 32-bit word, element 2k in the low half (little-endian). */
__device__ inline void bf16x2_unpack(unsigned int u, float &lo, float &hi) {
    lo = __uint_as_float(u << 16);
    hi = __uint_as_float(u & 0xffff0000u);
}
__device__ inline unsigned int bf16x2_pack(float lo, float hi) {
    return (unsigned int)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           ((unsigned int)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16);
}

/* Elements [i, i + 8) with 16-byte accesses (one for bf16, two for fp32):
 * p + i must be 16-byte aligned, which the host checks (aligned16) before it
 * asks a kernel for this path. */
__device__ inline void load8(const void *p, dtype_t t, size_t i, float v[8]) {
    if (t == DT_BF16) {
        const uint4 u = *reinterpret_cast<const uint4 *>((const __nv_bfloat16 *)p + i);
        bf16x2_unpack(u.x, v[0], v[1]);
        bf16x2_unpack(u.y, v[2], v[3]);
        bf16x2_unpack(u.z, v[4], v[5]);
        bf16x2_unpack(u.w, v[6], v[7]);
    } else {
        const float4 a = *reinterpret_cast<const float4 *>((const float *)p + i);
        const float4 b = *reinterpret_cast<const float4 *>((const float *)p + i + 4);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
        v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    }
}

__device__ inline void store8(void *p, dtype_t t, size_t i, const float v[8]) {
    if (t == DT_BF16) {
        uint4 u;
        u.x = bf16x2_pack(v[0], v[1]);
        u.y = bf16x2_pack(v[2], v[3]);
        u.z = bf16x2_pack(v[4], v[5]);
        u.w = bf16x2_pack(v[6], v[7]);
        *reinterpret_cast<uint4 *>((__nv_bfloat16 *)p + i) = u;
    } else {
        *reinterpret_cast<float4 *>((float *)p + i) = make_float4(v[0], v[1], v[2], v[3]);
        *reinterpret_cast<float4 *>((float *)p + i + 4) = make_float4(v[4], v[5], v[6], v[7]);
    }
}

/* ---- warps and blocks ------------------------------------------------------------ */
enum { SUM = 0, MAX = 1 };

template <int OP> __device__ inline float combine(float a, float b) {
    return OP == MAX ? fmaxf(a, b) : a + b;
}

template <int OP> __device__ inline float warp_reduce(float v) {
    for (int o = 16; o > 0; o /= 2) v = combine<OP>(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

/* Kernels that give each row a warp (THREADS / 32 rows per block): the row
 * of this thread's warp. */
__device__ inline size_t warp_row() { return ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; }

/* v reduced over the block, returned to every thread (blockDim.x a multiple
 * of 32). Every warp reduces the per-warp partials itself, so no broadcast is
 * needed; the first barrier lets consecutive calls reuse `part`. */
template <int OP> __device__ float block_reduce(float v) {
    __shared__ float part[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_reduce<OP>(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < warps ? part[lane] : (OP == MAX ? -INFINITY : 0.0f);
    return warp_reduce<OP>(v);
}

/* ---- scratch ------------------------------------------------------------------ */
/* One device buffer for the temporaries of attention, the RMSNorm weight
 * gradient, the embedding sort and sumsq. Every op runs on d->stream, so an
 * op that reuses it is ordered after the last one that did. It grows and
 * never shrinks; growing first waits for queued work that may still read the
 * old buffer, which happens in the first steps of a run only. (A rank drives
 * one GPU.) */
static float *scratch_buf;
static size_t scratch_len;

static float *scratch(const device_t *d, size_t n) {
    if (n > scratch_len) {
        if (scratch_buf) {
            CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
            CUDA_CHECK(cudaFree(scratch_buf));
        }
        CUDA_CHECK(cudaMalloc((void **)&scratch_buf, n * sizeof(float)));
        scratch_len = n;
    }
    return scratch_buf;
}

static void cast_any(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
                     size_t n, int fast);

/* An fp32 view of n elements of type t: p itself for fp32, else the next n
 * floats of scratch at *next, filled with p widened when `copy`. */
static float *f32_view(const device_t *d, const void *p, dtype_t t, size_t n, float **next,
                       int copy) {
    if (t == DT_F32) return (float *)p;
    float *f = *next;
    *next += n;
    if (copy) cast_any(d, p, t, f, DT_F32, n, 1);
    return f;
}

/* ---- matrix product ------------------------------------------------------------- */
static cudaDataType_t blas_type(dtype_t t) { return t == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* Row-major C = alpha op(A) op(B) + beta C (ops.h's op_matmul) for `batch`
 * products whose matrices lie stride_a/b/c elements apart. cuBLAS is
 * column-major, where a row-major matrix reads as its transpose; so it
 * computes C^T = op(B)^T op(A)^T: the operands swap, each keeps its own
 * transpose flag, and M and N trade places. */
static void gemm(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
                 const void *A, int lda, long long stride_a, const void *B, int ldb,
                 long long stride_b, dtype_t ab_t, float beta, void *C, int ldc,
                 long long stride_c, dtype_t c_t, int batch) {
    if (ab_t == DT_F32 && c_t == DT_BF16)
        die("matmul: fp32 operands with a bf16 result are not supported on CUDA");
    cublasHandle_t h = (cublasHandle_t)d->blas;
    cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t ab = blas_type(ab_t), c = blas_type(c_t);
    if (batch == 1)
        CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, N, M, K, &alpha, B, ab, ldb, A, ab, lda, &beta,
                                  C, c, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, N, M, K, &alpha, B, ab, ldb,
                                                stride_b, A, ab, lda, stride_a, &beta, C, c, ldc,
                                                stride_c, batch, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT));
}

static void cuda_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K,
                        float alpha, const void *A, int lda, const void *B, int ldb, dtype_t ab_t,
                        float beta, void *C, int ldc, dtype_t c_t) {
    if (M <= 0 || N <= 0) return;
    gemm(d, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, ab_t, beta, C, ldc, 0, c_t, 1);
}

/* ---- embedding ---------------------------------------------------------------- */
/* Simple: one thread per element. */
__global__ void embedding_forward_kernel(dtype_t t, const int *tokens, const void *table,
                                         void *out, int N, int C, int v0, int Vs) {
    GRID_STRIDE(i, (size_t)N * C) {
        size_t n = i / C, c = i % C;
        int v = tokens[n] - v0;   /* another shard's token gives a zero row */
        store(out, t, i, v >= 0 && v < Vs ? load(table, t, (size_t)v * C + c) : 0.0f);
    }
}

/* Fast: a gather is a copy, so rows move as 16-byte words whatever the type
 * (row16 words per row). */
__global__ void embedding_forward_vec_kernel(const int *tokens, const uint4 *table, uint4 *out,
                                             int N, int row16, int v0, int Vs) {
    GRID_STRIDE(i, (size_t)N * row16) {
        size_t n = i / row16, c = i % row16;
        int v = tokens[n] - v0;
        out[i] = v >= 0 && v < Vs ? table[(size_t)v * row16 + c] : make_uint4(0, 0, 0, 0);
    }
}

/* Simple backward: one thread per channel walks the tokens in order n = 0..N-1:
 * repeated tokens sum in a fixed order without atomics, but only C threads
 * work (1024 threads looping over 16384 tokens at C = 1024). */
__global__ void embedding_backward_kernel(dtype_t t, const int *tokens, const void *dout,
                                          float *dtable, int N, int C, int v0, int Vs) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int n = 0; n < N; n++) {
        int v = tokens[n] - v0;
        if (v >= 0 && v < Vs) dtable[(size_t)v * C + c] += load(dout, t, (size_t)n * C + c);
    }
}

/* Fast backward, in three steps. Each token n becomes the 64-bit key
 * (row << 32) | n, row = tokens[n] - v0 for a token of the shard and Vs
 * (after every real row) otherwise. The keys are unique, so their sorted order
 * is unique too, however the sort runs:
 *   1. each block sorts a chunk of 2 * blockDim.x keys in shared memory
 *      (bitonic sort: log2(chunk) (log2(chunk) + 1) / 2 compare-exchange
 *      rounds, each a barrier);
 *   2. runs of width w merge pairwise until one run remains: a key's place in
 *      the merged run is its place in its own run plus the number of keys of
 *      the partner run below it (a binary search; no ties, keys are unique);
 *   3. one block per distinct row adds that row's gradients, which the sort
 *      left in order of n: dtable[row] += dout[n1], then += dout[n2], ... in
 *      fp32, exactly the CPU backend's order. */
__global__ void embedding_sort_chunks_kernel(const int *tokens, unsigned long long *keys, int N,
                                             int v0, int Vs) {
    extern __shared__ unsigned long long sorted_keys[];            /* 2 * blockDim.x */
    const int chunk = 2 * blockDim.x, base = blockIdx.x * chunk;
    for (int i = threadIdx.x; i < chunk; i += blockDim.x) {
        const int n = base + i;
        unsigned long long key = ~0ull;                            /* padding sorts last */
        if (n < N) {
            const int v = tokens[n] - v0;
            const unsigned int row = v >= 0 && v < Vs ? (unsigned int)v : (unsigned int)Vs;
            key = ((unsigned long long)row << 32) | (unsigned int)n;
        }
        sorted_keys[i] = key;
    }
    __syncthreads();
    for (int size = 2; size <= chunk; size *= 2)          /* bitonic sequences of `size` */
        for (int stride = size / 2; stride > 0; stride /= 2) {
            for (int i = threadIdx.x; i < chunk; i += blockDim.x) {
                const int j = i ^ stride;
                if (j > i) {
                    const bool up = (i & size) == 0;
                    const unsigned long long a = sorted_keys[i], b = sorted_keys[j];
                    if ((a > b) == up) {
                        sorted_keys[i] = b;
                        sorted_keys[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < chunk && base + i < N; i += blockDim.x)
        keys[base + i] = sorted_keys[i];
}

/* Sorted runs of w keys, [r w, (r + 1) w), merged pairwise into `out`. */
__global__ void merge_runs_kernel(const unsigned long long *in, unsigned long long *out, int N,
                                  int w) {
    GRID_STRIDE(i, (size_t)N) {
        const unsigned long long key = in[i];
        const int run = (int)(i / w), pos = (int)(i % w), partner = (run ^ 1) * w;
        int lo = 0, hi = partner < N ? min(w, N - partner) : 0;   /* partner keys below key */
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (in[partner + mid] < key) lo = mid + 1;
            else hi = mid;
        }
        out[(size_t)(run & ~1) * w + pos + lo] = key;
    }
}

/* Blocks take sorted positions p in turn; the block at the first key of a
 * row's run adds the whole run, 8 channels per thread when vec. */
__global__ void embedding_backward_sorted_kernel(dtype_t t, const unsigned long long *keys,
                                                 const void *dout, float *dtable, int N, int C,
                                                 int Vs, int vec) {
    for (int p = blockIdx.x; p < N; p += gridDim.x) {
        const unsigned int row = (unsigned int)(keys[p] >> 32);
        if (row >= (unsigned int)Vs) break;                 /* other shards' tokens sort last */
        if (p > 0 && (unsigned int)(keys[p - 1] >> 32) == row) continue;   /* not its first */
        float *dst = dtable + (size_t)row * C;
        if (vec) {
            for (int c = 8 * threadIdx.x; c < C; c += 8 * blockDim.x) {
                float acc[8], g[8];
                load8(dst, DT_F32, c, acc);
                for (int q = p; q < N && (unsigned int)(keys[q] >> 32) == row; q++) {
                    load8(dout, t, (size_t)(unsigned int)keys[q] * C + c, g);
                    for (int e = 0; e < 8; e++) acc[e] += g[e];
                }
                store8(dst, DT_F32, c, acc);
            }
        } else {
            for (int c = threadIdx.x; c < C; c += blockDim.x) {
                float acc = dst[c];
                for (int q = p; q < N && (unsigned int)(keys[q] >> 32) == row; q++)
                    acc += load(dout, t, (size_t)(unsigned int)keys[q] * C + c);
                dst[c] = acc;
            }
        }
    }
}

static void embedding_forward_simple(const device_t *d, dtype_t t, const int *tokens,
                                     const void *table, void *out, int N, int C, int v0, int Vs) {
    if (N <= 0 || C <= 0) return;
    LAUNCH(embedding_forward_kernel, stride_grid((size_t)N * C), THREADS, 0, stream_of(d), t,
           tokens, table, out, N, C, v0, Vs);
}

static void cuda_embedding_forward(const device_t *d, dtype_t t, const int *tokens,
                                   const void *table, void *out, int N, int C, int v0, int Vs) {
    const size_t row_bytes = (size_t)C * dtype_size(t);
    if (N <= 0 || C <= 0) return;
    if (row_bytes % 16 != 0 || !aligned16(table) || !aligned16(out)) {
        embedding_forward_simple(d, t, tokens, table, out, N, C, v0, Vs);
        return;
    }
    const int row16 = (int)(row_bytes / 16);
    LAUNCH(embedding_forward_vec_kernel, stride_grid((size_t)N * row16), THREADS, 0, stream_of(d),
           tokens, (const uint4 *)table, (uint4 *)out, N, row16, v0, Vs);
}

static void embedding_backward_simple(const device_t *d, dtype_t t, const int *tokens,
                                      const void *dout, float *dtable, int N, int C, int v0,
                                      int Vs) {
    if (C <= 0) return;
    LAUNCH(embedding_backward_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), t, tokens,
           dout, dtable, N, C, v0, Vs);
}

static void cuda_embedding_backward(const device_t *d, dtype_t t, const int *tokens,
                                    const void *dout, float *dtable, int N, int C, int v0, int Vs) {
    if (N <= 0 || C <= 0) return;
    unsigned int threads = 32;                        /* chunks of 2 * threads keys, up to 2048 */
    while (threads < 1024 && 2 * threads < (unsigned int)N) threads *= 2;
    const int chunk = 2 * threads;
    unsigned long long *keys = (unsigned long long *)scratch(d, 4 * (size_t)N), *tmp = keys + N;
    LAUNCH(embedding_sort_chunks_kernel, ceil_div(N, chunk), threads, chunk * sizeof(*keys),
           stream_of(d), tokens, keys, N, v0, Vs);
    for (int w = chunk; w < N; w *= 2) {
        LAUNCH(merge_runs_kernel, stride_grid(N), THREADS, 0, stream_of(d), keys, tmp, N, w);
        unsigned long long *s = keys;
        keys = tmp;
        tmp = s;
    }
    const int vec = C % 8 == 0 && aligned16(dout) && aligned16(dtable);
    LAUNCH(embedding_backward_sorted_kernel, N < 8192 ? N : 8192, row_threads(vec ? C / 8 : C), 0,
           stream_of(d), t, keys, dout, dtable, N, C, Vs, vec);
}

/* ---- RMSNorm ------------------------------------------------------------------ */
/* Simple forward: one block per row. */
__global__ void rmsnorm_forward_kernel(dtype_t t, const void *x, const void *w, void *y,
                                       float *rstd, int C, float eps) {
    const size_t o = (size_t)blockIdx.x * C;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = load(x, t, o + c);
        ss += v * v;
    }
    ss = block_reduce<SUM>(ss);
    const float r = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        store(y, t, o + c, (load(x, t, o + c) * r) * load(w, t, c));
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

/* Fast forward: a warp per row (no barriers), 8 elements per 16-byte access
 * when vec; the second read of x mostly hits the cache. */
__global__ void rmsnorm_forward_warp_kernel(dtype_t t, const void *x, const void *w, void *y,
                                            float *rstd, int N, int C, float eps, int vec) {
    const size_t n = warp_row();
    const int lane = threadIdx.x % 32;
    if (n >= (size_t)N) return;                       /* the whole warp: one row */
    const size_t o = n * C;
    float ss = 0.0f;
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float v[8];
            load8(x, t, o + c, v);
            for (int e = 0; e < 8; e++) ss += v[e] * v[e];
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float v = load(x, t, o + c);
            ss += v * v;
        }
    }
    ss = warp_reduce<SUM>(ss);
    const float r = 1.0f / sqrtf(ss / (float)C + eps);
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float v[8], g[8];
            load8(x, t, o + c, v);
            load8(w, t, c, g);
            for (int e = 0; e < 8; e++) v[e] = (v[e] * r) * g[e];
            store8(y, t, o + c, v);
        }
    } else {
        for (int c = lane; c < C; c += 32) store(y, t, o + c, (load(x, t, o + c) * r) * load(w, t, c));
    }
    if (lane == 0) rstd[n] = r;
}

/* Simple backward: block b handles rows [b*rows, min(N, (b+1)*rows)) in
 * order: dx for each row, and the partial sum of dy * xhat over its rows into
 * part[b][c] (each column is owned by one thread, so the running sum needs no
 * atomics, but it is read and written in global memory once per row).
 * A thread reads dy[c] and dres[c] before it writes dx[c], and the row's
 * reduction has a barrier before any write: dx may alias dy or dres. */
__global__ void rmsnorm_backward_kernel(dtype_t t, const void *x, const void *w,
                                        const float *rstd, const void *dy, const void *dres,
                                        void *dx, float *part, int N, int C, int rows) {
    const int n0 = blockIdx.x * rows, n1 = min(N, n0 + rows);
    float *acc = part + (size_t)blockIdx.x * C;
    for (int n = n0; n < n1; n++) {
        const size_t o = (size_t)n * C;
        const float r = rstd[n];
        float dot = 0.0f;                              /* sum_c g[c] * xhat[c] */
        for (int c = threadIdx.x; c < C; c += blockDim.x)
            dot += load(dy, t, o + c) * load(w, t, c) * (load(x, t, o + c) * r);
        dot = block_reduce<SUM>(dot) / (float)C;
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float xh = load(x, t, o + c) * r, g = load(dy, t, o + c);
            float v = r * (g * load(w, t, c) - xh * dot);
            if (dres) v += load(dres, t, o + c);
            acc[c] = (n == n0 ? 0.0f : acc[c]) + g * xh;
            store(dx, t, o + c, v);
        }
    }
}

/* dw[c] += sum over blocks of part[b][c], blocks in order. */
__global__ void column_sum_kernel(const float *part, float *dw, int blocks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int b = 0; b < blocks; b++) s += part[(size_t)b * C + c];
    dw[c] += s;
}

/* Fast backward, pass 1: the weight gradient's partial sums. Block (32, 8)
 * covers 32 chunks of W columns (W = 8 when vec, else 1) of one group of
 * `rows` rows: thread (x, y) sums rows y, y + 8, ... of the group in
 * registers, then the 8 row lanes combine in order through shared memory
 * into part[group][c]. Every read is a full, coalesced row segment, and each
 * partial is written once (the simple kernel rewrote it every row). */
__global__ void rmsnorm_dw_partial_kernel(dtype_t t, const void *x, const float *rstd,
                                          const void *dy, float *part, int N, int C, int rows,
                                          int vec) {
    __shared__ float lanes[8][32][9];                 /* padded against bank conflicts */
    const int W = vec ? 8 : 1, c0 = (blockIdx.x * 32 + threadIdx.x) * W;
    const int n0 = blockIdx.y * rows, n1 = min(N, n0 + rows);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (c0 < C)
        for (int n = n0 + threadIdx.y; n < n1; n += 8) {
            const size_t o = (size_t)n * C + c0;
            const float r = rstd[n];
            if (vec) {
                float xv[8], g[8];
                load8(x, t, o, xv);
                load8(dy, t, o, g);
                for (int e = 0; e < 8; e++) acc[e] += g[e] * (xv[e] * r);
            } else {
                acc[0] += load(dy, t, o) * (load(x, t, o) * r);
            }
        }
    for (int e = 0; e < W; e++) lanes[threadIdx.y][threadIdx.x][e] = acc[e];
    __syncthreads();
    if (threadIdx.y == 0)
        for (int e = 0; e < W && c0 + e < C; e++) {
            float s = 0.0f;
            for (int y = 0; y < 8; y++) s += lanes[y][threadIdx.x][e];
            part[(size_t)blockIdx.y * C + c0 + e] = s;
        }
}

/* Fast backward, pass 2: dx, a warp per row. Each lane reads and writes only
 * its own chunks, and the row's reduction (a warp operation) separates the
 * reads of the first loop from the writes of the second: dx may alias dy or
 * dres. */
__global__ void rmsnorm_dx_kernel(dtype_t t, const void *x, const void *w, const float *rstd,
                                  const void *dy, const void *dres, void *dx, int N, int C,
                                  int vec) {
    const size_t n = warp_row();
    const int lane = threadIdx.x % 32;
    if (n >= (size_t)N) return;
    const size_t o = n * C;
    const float r = rstd[n];
    float dot = 0.0f;                                 /* sum_c g[c] * xhat[c] */
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float xv[8], g[8], wv[8];
            load8(x, t, o + c, xv);
            load8(dy, t, o + c, g);
            load8(w, t, c, wv);
            for (int e = 0; e < 8; e++) dot += g[e] * wv[e] * (xv[e] * r);
        }
    } else {
        for (int c = lane; c < C; c += 32) dot += load(dy, t, o + c) * load(w, t, c) * (load(x, t, o + c) * r);
    }
    dot = warp_reduce<SUM>(dot) / (float)C;
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float xv[8], g[8], wv[8], res[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            load8(x, t, o + c, xv);
            load8(dy, t, o + c, g);
            load8(w, t, c, wv);
            if (dres) load8(dres, t, o + c, res);
            for (int e = 0; e < 8; e++) xv[e] = r * (g[e] * wv[e] - (xv[e] * r) * dot) + res[e];
            store8(dx, t, o + c, xv);
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float xh = load(x, t, o + c) * r, g = load(dy, t, o + c);
            float v = r * (g * load(w, t, c) - xh * dot);
            if (dres) v += load(dres, t, o + c);
            store(dx, t, o + c, v);
        }
    }
}

static void rmsnorm_forward_simple(const device_t *d, dtype_t t, const void *x, const void *w,
                                   void *y, float *rstd, int N, int C, float eps) {
    if (N <= 0) return;
    LAUNCH(rmsnorm_forward_kernel, N, row_threads(C), 0, stream_of(d), t, x, w, y, rstd, C, eps);
}

static void cuda_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w,
                                 void *y, float *rstd, int N, int C, float eps) {
    if (N <= 0) return;
    const int vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);
    LAUNCH(rmsnorm_forward_warp_kernel, ceil_div(N, THREADS / 32), THREADS, 0, stream_of(d), t, x,
           w, y, rstd, N, C, eps, vec);
}

static void rmsnorm_backward_simple(const device_t *d, dtype_t t, const void *x, const void *w,
                                    const float *rstd, const void *dy, const void *dres, void *dx,
                                    float *dw, int N, int C) {
    if (N <= 0 || C <= 0) return;
    /* at most 256 blocks of whole rows, none empty */
    const int rows = (int)ceil_div(N, 256), blocks = (int)ceil_div(N, rows);
    float *part = scratch(d, (size_t)blocks * C);                   /* (blocks, C) */
    LAUNCH(rmsnorm_backward_kernel, blocks, row_threads(C), 0, stream_of(d), t, x, w, rstd, dy,
           dres, dx, part, N, C, rows);
    LAUNCH(column_sum_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), part, dw, blocks, C);
}

/* dw first: it reads dy, which dx may overwrite. Groups of at least 64 rows,
 * at most 4096 of them (the grid's y limit is 65535). */
static void cuda_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                                  const float *rstd, const void *dy, const void *dres, void *dx,
                                  float *dw, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(dy) &&
                    (!dres || aligned16(dres)) && aligned16(dx);
    const int rows = (int)(ceil_div(N, 4096) > 64 ? ceil_div(N, 4096) : 64);
    const int groups = (int)ceil_div(N, rows);
    float *part = scratch(d, (size_t)groups * C);                   /* (groups, C) */
    const dim3 grid(ceil_div(C, 32 * (vec ? 8 : 1)), groups);
    LAUNCH(rmsnorm_dw_partial_kernel, grid, dim3(32, 8), 0, stream_of(d), t, x, rstd, dy, part, N,
           C, rows, vec);
    LAUNCH(column_sum_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), part, dw, groups, C);
    LAUNCH(rmsnorm_dx_kernel, ceil_div(N, THREADS / 32), THREADS, 0, stream_of(d), t, x, w, rstd,
           dy, dres, dx, N, C, vec);
}

/* ---- RoPE ----------------------------------------------------------------------- */
/* Simple: one thread per adjacent pair (2i, 2i+1); pair p of the flat
 * (B, T, H, hd/2) view sits at elements 2p and 2p+1. */
__global__ void rope_kernel(dtype_t t, void *x, const float *cs, size_t pairs, int T, int H,
                            int hd, int pos0, float sign) {
    const int half = hd / 2;
    GRID_STRIDE(p, pairs) {
        size_t i = p % half, row = p / half;                         /* row of (B, T, H) */
        size_t pos = (size_t)pos0 + (row / H) % T;
        const float *r = cs + (pos * half + i) * 2;
        float c = r[0], s = sign * r[1];
        float x0 = load(x, t, 2 * p), x1 = load(x, t, 2 * p + 1);
        store(x, t, 2 * p, x0 * c - x1 * s);
        store(x, t, 2 * p + 1, x0 * s + x1 * c);
    }
}

/* Fast: four pairs (8 elements, one chunk) per thread, hd % 8 == 0 so no
 * chunk straddles two heads; their (cos, sin) are 8 consecutive floats of
 * the table, two 16-byte loads. */
__global__ void rope_vec_kernel(dtype_t t, void *x, const float *cs, size_t chunks, int T, int H,
                                int hd, int pos0, float sign) {
    const int per_row = hd / 8;
    GRID_STRIDE(c, chunks) {
        const size_t row = c / per_row, pos = (size_t)pos0 + (row / H) % T;
        const float4 *r = reinterpret_cast<const float4 *>(cs + pos * hd + (c % per_row) * 8);
        const float4 a = r[0], b = r[1];
        const float tab[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        float v[8];
        load8(x, t, 8 * c, v);
        for (int p = 0; p < 4; p++) {
            const float co = tab[2 * p], s = sign * tab[2 * p + 1], x0 = v[2 * p], x1 = v[2 * p + 1];
            v[2 * p] = x0 * co - x1 * s;
            v[2 * p + 1] = x0 * s + x1 * co;
        }
        store8(x, t, 8 * c, v);
    }
}

static void rope_simple(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T,
                        int H, int hd, int pos0, int inverse) {
    size_t pairs = (size_t)B * T * H * (hd / 2);
    if (pairs == 0) return;
    LAUNCH(rope_kernel, stride_grid(pairs), THREADS, 0, stream_of(d), t, x, cs, pairs, T, H, hd,
           pos0, inverse ? -1.0f : 1.0f);
}

static void cuda_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H,
                      int hd, int pos0, int inverse) {
    if (hd % 8 != 0 || !aligned16(x) || !aligned16(cs)) {
        rope_simple(d, t, x, cs, B, T, H, hd, pos0, inverse);
        return;
    }
    const size_t chunks = (size_t)B * T * H * (hd / 8);
    if (chunks == 0) return;
    LAUNCH(rope_vec_kernel, stride_grid(chunks), THREADS, 0, stream_of(d), t, x, cs, chunks, T, H,
           hd, pos0, inverse ? -1.0f : 1.0f);
}

/* ---- attention: the simple path ---------------------------------------------------
 * The CPU backend's plan on cuBLAS: bf16 inputs are widened to fp32 copies,
 * and per query head one strided-batched GEMM (over the B sequences) forms
 * the (Tq, Tk) scores, a row kernel applies the causal mask and the softmax,
 * and further GEMMs finish. Scores and probabilities stay fp32, so a bf16
 * result is rounded once. The full square is computed (masked entries are
 * multiplied and then zeroed), H small GEMMs run one after another, and the
 * scores make a round trip through global memory: simple, and the reference
 * the flash kernels below are checked against. It serves fp32 storage and
 * head dims the flash kernels do not cover. */

/* Keys [0, n) of the block are visible to query row i (block-relative):
 * k_pos0 + j <= q_pos0 + i, with off = q_pos0 - k_pos0. */
__device__ inline int visible_keys(int i, int Tk, int off) {
    return max(0, min(Tk, off + i + 1));
}

/* A warp per query row r = (b, i) of head h (rows = B * Tq; a row of
 * scores is short enough for one warp, and needs no barrier). s: that row
 * of the (B, Tq, Tk) scores, replaced by the probabilities (0 where masked);
 * lse: (B, H, Tq). */
__global__ void attn_softmax_kernel(float *S, float *lse, size_t rows, int Tq, int Tk, int H,
                                    int h, int off) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t b = r / Tq;
    const int i = (int)(r % Tq), n = visible_keys(i, Tk, off);
    float *s = S + r * Tk;
    float mx = -INFINITY;
    for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s[j]);
    mx = warp_reduce<MAX>(mx);
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) sum += expf(s[j] - mx);
    sum = warp_reduce<SUM>(sum);
    const float inv = 1.0f / sum;
    for (int j = lane; j < Tk; j += 32) s[j] = j < n ? expf(s[j] - mx) * inv : 0.0f;
    if (lane == 0) lse[(b * H + h) * Tq + i] = n > 0 ? mx + logf(sum) : -INFINITY;
}

/* A warp per query row r = (b, i) of head h: S holds the scores s and
 * becomes p = exp(s - lse); dP holds dout . v and becomes
 * ds = p (dp - D), D = dout_i . out_i (read from the (B, Tq, H, hd) tensors). */
__global__ void attn_dscores_kernel(dtype_t t, float *S, float *dP, const float *lse,
                                    const void *out, const void *dout, size_t rows, int Tq,
                                    int Tk, int H, int hd, int h, int off) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t b = r / Tq, o = (r * H + h) * hd;           /* r * H = (b * Tq + i) * H */
    const int i = (int)(r % Tq);
    float D = 0.0f;
    for (int c = lane; c < hd; c += 32) D += load(dout, t, o + c) * load(out, t, o + c);
    D = warp_reduce<SUM>(D);
    const float l = lse[(b * H + h) * Tq + i];
    const int n = l == -INFINITY ? 0 : visible_keys(i, Tk, off);
    float *s = S + r * Tk, *dp = dP + r * Tk;
    for (int j = lane; j < Tk; j += 32) {
        float p = j < n ? expf(s[j] - l) : 0.0f;
        s[j] = p;
        dp[j] = p * (dp[j] - D);
    }
}

static void attn_forward_simple(const device_t *d, dtype_t t, const void *q, const void *k,
                                const void *v, void *out, float *lse, int B, int Tq, int Tk,
                                int H, int KV, int hd, int q_pos0, int k_pos0) {
    if (B <= 0 || Tq <= 0 || H <= 0) return;
    const size_t nq = (size_t)B * Tq * H * hd, nkv = (size_t)B * Tk * KV * hd;
    const size_t rows = (size_t)B * Tq, ns = rows * Tk;
    float *S = scratch(d, ns + (t == DT_F32 ? 0 : 2 * nq + 2 * nkv));   /* (B, Tq, Tk) */
    float *next = S + ns;
    const float *Q = f32_view(d, q, t, nq, &next, 1);
    const float *K = f32_view(d, k, t, nkv, &next, 1);
    const float *Vf = f32_view(d, v, t, nkv, &next, 1);
    float *O = f32_view(d, out, t, nq, &next, 0);
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    const long long sq = (long long)Tq * ldq, sk = (long long)Tk * ldk, ss = (long long)Tq * Tk;
    for (int h = 0; h < H; h++) {
        const size_t qo = (size_t)h * hd, ko = (size_t)(h / group) * hd;
        /* s = q k^T / sqrt(hd) */
        gemm(d, 0, 1, Tq, Tk, hd, scale, Q + qo, ldq, sq, K + ko, ldk, sk, DT_F32, 0.0f, S, Tk, ss,
             DT_F32, B);
        LAUNCH(attn_softmax_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), S, lse,
               rows, Tq, Tk, H, h, q_pos0 - k_pos0);
        /* out = p v */
        gemm(d, 0, 0, Tq, hd, Tk, 1.0f, S, Tk, ss, Vf + ko, ldk, sk, DT_F32, 0.0f, O + qo, ldq, sq,
             DT_F32, B);
    }
    if (t != DT_F32) cast_any(d, O, DT_F32, out, t, nq, 1);
}

static void attn_backward_simple(const device_t *d, dtype_t t, const void *q, const void *k,
                                 const void *v, const void *out, const void *dout,
                                 const float *lse, void *dq, void *dk, void *dv, int B, int Tq,
                                 int Tk, int H, int KV, int hd, int q_pos0, int k_pos0) {
    if (B <= 0 || Tq <= 0 || Tk <= 0 || H <= 0) return;
    const size_t nq = (size_t)B * Tq * H * hd, nkv = (size_t)B * Tk * KV * hd;
    const size_t rows = (size_t)B * Tq, ns = rows * Tk;
    float *S = scratch(d, 2 * ns + (t == DT_F32 ? 0 : 3 * nq + 4 * nkv));
    float *dP = S + ns;                                                /* (B, Tq, Tk) each */
    float *next = dP + ns;
    const float *Q = f32_view(d, q, t, nq, &next, 1);
    const float *K = f32_view(d, k, t, nkv, &next, 1);
    const float *Vf = f32_view(d, v, t, nkv, &next, 1);
    const float *dO = f32_view(d, dout, t, nq, &next, 1);
    float *dQ = f32_view(d, dq, t, nq, &next, 1);          /* widened: the GEMMs accumulate */
    float *dK = f32_view(d, dk, t, nkv, &next, 1);
    float *dV = f32_view(d, dv, t, nkv, &next, 1);
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    const long long sq = (long long)Tq * ldq, sk = (long long)Tk * ldk, ss = (long long)Tq * Tk;
    /* heads sharing a kv head add into its dk, dv one after another, in order */
    for (int h = 0; h < H; h++) {
        const size_t qo = (size_t)h * hd, ko = (size_t)(h / group) * hd;
        /* s = q k^T / sqrt(hd), recomputed;  dp = dout v^T */
        gemm(d, 0, 1, Tq, Tk, hd, scale, Q + qo, ldq, sq, K + ko, ldk, sk, DT_F32, 0.0f, S, Tk, ss,
             DT_F32, B);
        gemm(d, 0, 1, Tq, Tk, hd, 1.0f, dO + qo, ldq, sq, Vf + ko, ldk, sk, DT_F32, 0.0f, dP, Tk,
             ss, DT_F32, B);
        LAUNCH(attn_dscores_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, S,
               dP, lse, out, dout, rows, Tq, Tk, H, hd, h, q_pos0 - k_pos0);
        /* dv += p^T dout;  dq += ds k / sqrt(hd);  dk += ds^T q / sqrt(hd) */
        gemm(d, 1, 0, Tk, hd, Tq, 1.0f, S, Tk, ss, dO + qo, ldq, sq, DT_F32, 1.0f, dV + ko, ldk, sk,
             DT_F32, B);
        gemm(d, 0, 0, Tq, hd, Tk, scale, dP, Tk, ss, K + ko, ldk, sk, DT_F32, 1.0f, dQ + qo, ldq,
             sq, DT_F32, B);
        gemm(d, 1, 0, Tk, hd, Tq, scale, dP, Tk, ss, Q + qo, ldq, sq, DT_F32, 1.0f, dK + ko, ldk,
             sk, DT_F32, B);
    }
    if (t != DT_F32) {
        cast_any(d, dQ, DT_F32, dq, t, nq, 1);
        cast_any(d, dK, DT_F32, dk, t, nkv, 1);
        cast_any(d, dV, DT_F32, dv, t, nkv, 1);
    }
}

/* Warp per row r of (B, T, H). Lane 0 rewrites lse only after every lane of
 * the warp has read it (__syncwarp). The two special cases keep the result
 * exact where one side saw no key. */
__global__ void attn_merge_kernel(dtype_t t, void *out, float *lse, const void *out_b,
                                  const float *lse_b, size_t rows, int T, int H, int hd) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t h = r % H, bt = r / H, li = ((bt / T) * H + h) * T + bt % T, o = r * hd;
    const float la = lse[li], lb = lse_b[li];
    __syncwarp();
    if (lb == -INFINITY) return;                   /* nothing new: keep (out, lse) */
    if (la == -INFINITY) {                         /* nothing yet: take block b */
        for (int c = lane; c < hd; c += 32) store(out, t, o + c, load(out_b, t, o + c));
        if (lane == 0) lse[li] = lb;
        return;
    }
    const float m = fmaxf(la, lb), wa = expf(la - m), wb = expf(lb - m), inv = 1.0f / (wa + wb);
    for (int c = lane; c < hd; c += 32)
        store(out, t, o + c, (wa * load(out, t, o + c) + wb * load(out_b, t, o + c)) * inv);
    if (lane == 0) lse[li] = m + logf(wa + wb);
}

static void cuda_attn_merge(const device_t *d, dtype_t t, void *out, float *lse,
                            const void *out_b, const float *lse_b, int B, int T, int H, int hd) {
    const size_t rows = (size_t)B * T * H;
    if (rows == 0) return;
    LAUNCH(attn_merge_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, out, lse,
           out_b, lse_b, rows, T, H, hd);
}

/* ---- attention: flash attention on the tensor cores ---------------------------------
 * (Dao et al. 2022, "FlashAttention"; Dao 2023, "FlashAttention-2".) For bf16
 * storage and head dims 16, 32, 64 and 128. A block of 4 warps takes a tile of
 * 64 query rows of one head (16 rows per warp) and walks the key tiles of 64
 * keys its rows can see: the fully masked tiles after the diagonal are never
 * loaded, and a warp skips a tile none of its rows sees. Per tile, with bf16
 * operands and fp32 accumulation on the tensor cores:
 *
 *   s = q k^T                    (16 x 64 per warp)
 *   m' = max(m, rowmax s)        p = exp(s - m')        l = l e^(m - m') + rowsum p
 *   o = o e^(m - m') + p v       and at the end  out = o / l,  lse = m + log l
 *
 * so scores and probabilities live in registers and shared memory only. The
 * WMMA API does not say which lane holds which element of a fragment, so the
 * row-wise softmax goes through shared memory: a warp stores s there (fp32),
 * two lanes per row compute p, write it back as bf16 for the p v product and
 * keep the rescaled o in registers (lane 2r + h owns columns h, h + 2, ... of
 * row r). Exponentials are exp2 of scores scaled by log2(e) / sqrt(hd): the
 * change of base folds into the scale that is applied anyway.
 *
 * Backward (FlashAttention-2's recomputation from lse): D_i = dout_i . out_i
 * first, then two kernels, so that every output element has exactly one
 * writer and needs no atomics:
 *   dk/dv kernel, a block per (key tile of 64, kv head, sequence): each warp
 *     keeps its 16 keys' k and v in fragments and dk, dv in accumulators, and
 *     walks every query head of the group and every query tile that sees its
 *     keys: s^T = k q^T, p^T = exp(s^T - lse), dv += p^T dout,
 *     dp^T = v dout^T, ds^T = p^T (dp^T - D), dk += ds^T q.
 *   dq kernel, a block per (query tile, head, sequence), like the forward:
 *     s = q k^T, p, dp = dout v^T, ds = p (dp - D), dq += ds k.
 * The dq kernel recomputes s and dp (7 tile products instead of 5), the price
 * of determinism without a (Tq, Tk) buffer. Both add their tile's result into
 * dq, dk, dv once, rounding to bf16 once (the op accumulates).
 *
 * Precision: p and ds are rounded to bf16 for their products, as in
 * FlashAttention (relative 2^-9 per term, inside sums that are fp32); l and
 * every sum stay fp32. */
namespace wmma = nvcuda::wmma;

enum { FA_TILE = 64, FA_WARPS = 4, FA_THREADS = 32 * FA_WARPS };
#define FA_LOG2E 1.44269504088896340736f
#define FA_LN2 0.69314718055994530942f

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> frag_b;
/* a matrix_b read column-major from a row-major tile: the tile's transpose */
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* Shared memory of the three kernels for head dim HD: two 64-row bf16 tiles
 * (q and dout, or k and v), then per warp a 16-row fp32 scratch (s, dp, or a
 * 16 x HD result) and a 16 x 64 bf16 tile (p or ds), then 2 x 64 floats (the
 * dk/dv kernel's lse and D of a query tile). Rows are padded by 16 bytes so
 * that consecutive rows start in different banks; every region and every
 * 16 x 16 sub-tile starts on 32 bytes, as WMMA requires. HD = 64: 44.5 KiB,
 * HD = 128: 76.5 KiB (over 48 KiB: the launch raises the kernel's limit). */
template <int HD> struct fa_layout {
    static constexpr int LDT = HD + 8;                          /* bf16 tile row */
    static constexpr int LDS = (HD > FA_TILE ? HD : FA_TILE) + 4;   /* fp32 scratch row */
    static constexpr int LDP = FA_TILE + 8;                     /* bf16 p row */
    static constexpr size_t TILE = (size_t)FA_TILE * LDT * 2;
    static constexpr size_t SCR = (size_t)16 * LDS * 4;
    static constexpr size_t PRB = (size_t)16 * LDP * 2;
    static constexpr size_t ROWS = 2 * TILE + FA_WARPS * (SCR + PRB);   /* offset of lse, D */
    static constexpr size_t BYTES = ROWS + 2 * FA_TILE * 4;
};

/* Rows [r0, r0 + 64) of a bf16 matrix whose row r (HD values) starts at
 * base + r * stride, into a 64-row shared tile; zeros past `rows`, so that
 * padding rows and keys contribute nothing. 16-byte loads when vec. */
template <int HD>
__device__ void fa_load_tile(__nv_bfloat16 *dst, const __nv_bfloat16 *base, size_t stride, int r0,
                             int rows, int vec) {
    constexpr int LDT = fa_layout<HD>::LDT, CH = HD / 8;
    if (vec) {
        for (int c = threadIdx.x; c < FA_TILE * CH; c += blockDim.x) {
            const int r = c / CH, e = (c % CH) * 8;
            uint4 u = make_uint4(0, 0, 0, 0);
            if (r0 + r < rows) u = *reinterpret_cast<const uint4 *>(base + (size_t)(r0 + r) * stride + e);
            *reinterpret_cast<uint4 *>(dst + r * LDT + e) = u;
        }
    } else {
        for (int c = threadIdx.x; c < FA_TILE * HD; c += blockDim.x) {
            const int r = c / HD, e = c % HD;
            dst[r * LDT + e] = r0 + r < rows ? base[(size_t)(r0 + r) * stride + e] : __float2bfloat16(0.0f);
        }
    }
}

/* A warp's 16 x HD fp32 result (in its scratch s) into rows [r0, r0 + 16) of
 * a bf16 matrix (rows < `rows` only), added to what is there when
 * `accumulate`; one rounding either way. Lanes take whole 8-element chunks
 * of a row, so stores are coalesced. */
template <int HD>
__device__ void fa_write_rows(__nv_bfloat16 *base, size_t stride, int r0, int rows, const float *s,
                              int accumulate, int vec) {
    constexpr int LDS = fa_layout<HD>::LDS, CH = HD / 8;
    for (int c = threadIdx.x % 32; c < 16 * CH; c += 32) {
        const int r = c / CH, e = (c % CH) * 8;
        if (r0 + r >= rows) continue;
        __nv_bfloat16 *dst = base + (size_t)(r0 + r) * stride + e;
        float v[8], old[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (vec && accumulate) load8(dst, DT_BF16, 0, old);
        if (!vec && accumulate)
            for (int k = 0; k < 8; k++) old[k] = __bfloat162float(dst[k]);
        for (int k = 0; k < 8; k++) v[k] = accumulate ? old[k] + s[r * LDS + e + k] : s[r * LDS + e + k];
        if (vec) store8(dst, DT_BF16, 0, v);
        else
            for (int k = 0; k < 8; k++) dst[k] = __float2bfloat16(v[k]);
    }
}

/* 16 x 64 product of a warp's 16 rows (fragments a[HD/16], the K dimension
 * HD) with the 64 rows of tile t transposed, into the warp's scratch s. */
template <int HD>
__device__ void fa_rows_times_tile_t(const frag_a *a, const __nv_bfloat16 *t, float *s) {
    constexpr int LDT = fa_layout<HD>::LDT, LDS = fa_layout<HD>::LDS;
#pragma unroll
    for (int n = 0; n < FA_TILE / 16; n++) {
        frag_c acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            frag_bt bt;
            wmma::load_matrix_sync(bt, t + 16 * n * LDT + 16 * kk, LDT);
            wmma::mma_sync(acc, a[kk], bt, acc);
        }
        wmma::store_matrix_sync(s + 16 * n, acc, LDS, wmma::mem_row_major);
    }
}

/* acc[n] (16 x HD, as HD/16 accumulators) += p (16 x 64 bf16, the warp's
 * tile) times the 64 x HD tile t. p's four fragments are loaded once and
 * serve every column block of the result. */
template <int HD>
__device__ void fa_p_times_tile(frag_c *acc, const __nv_bfloat16 *p, const __nv_bfloat16 *t) {
    constexpr int LDT = fa_layout<HD>::LDT, LDP = fa_layout<HD>::LDP;
    frag_a pa[FA_TILE / 16];
#pragma unroll
    for (int kk = 0; kk < FA_TILE / 16; kk++) wmma::load_matrix_sync(pa[kk], p + 16 * kk, LDP);
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
#pragma unroll
        for (int kk = 0; kk < FA_TILE / 16; kk++) {
            frag_b tb;
            wmma::load_matrix_sync(tb, t + 16 * kk * LDT + 16 * n, LDT);
            wmma::mma_sync(acc[n], pa[kk], tb, acc[n]);
        }
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_forward_flash_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                          __nv_bfloat16 *out, float *lse, int Tq, int Tk, int H, int KV, int off,
                          float scale_log2, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_fwd_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tk = (__nv_bfloat16 *)fa_fwd_smem, *tv = (__nv_bfloat16 *)(fa_fwd_smem + L::TILE);
    float *s = (float *)(fa_fwd_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_fwd_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    const int b = blockIdx.z, h = blockIdx.y, g = h / (H / KV);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * FA_TILE;     /* the longest rows start first */
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t qo = ((size_t)b * Tq * H + h) * HD, ko = ((size_t)b * Tk * KV + g) * HD;
    /* query row i sees keys [0, visible_keys(i)) of the block */
    const int wi0 = i0 + 16 * warp;
    const int block_keys = visible_keys(min(i0 + FA_TILE, Tq) - 1, Tk, off);
    const int warp_keys = wi0 < Tq ? visible_keys(min(wi0 + 16, Tq) - 1, Tk, off) : 0;
    const int r = lane / 2, half = lane % 2, i = wi0 + r;     /* this lane's row, half its columns */
    const int row_keys = i < Tq ? visible_keys(i, Tk, off) : 0;

    fa_load_tile<HD>(tk, q + qo, qstride, i0, Tq, vec);       /* q passes through the k tile */
    __syncthreads();
    frag_a qf[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
        wmma::load_matrix_sync(qf[kk], tk + 16 * warp * L::LDT + 16 * kk, L::LDT);
    float o[HD / 2];
#pragma unroll
    for (int u = 0; u < HD / 2; u++) o[u] = 0.0f;
    float m = -INFINITY, l = 0.0f;        /* running max (log2 units) and sum of exp2(s - m) */
    for (int j0 = 0; j0 < block_keys; j0 += FA_TILE) {
        __syncthreads();                                      /* q and the last tiles are read */
        fa_load_tile<HD>(tk, k + ko, kstride, j0, Tk, vec);
        fa_load_tile<HD>(tv, v + ko, kstride, j0, Tk, vec);
        __syncthreads();
        if (j0 >= warp_keys) continue;                        /* no row of this warp sees them */
        fa_rows_times_tile_t<HD>(qf, tk, s);                  /* s = q k^T */
        __syncwarp();
        float x[FA_TILE / 2], mx = -INFINITY;
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            x[u] = j0 + c < row_keys ? s[r * L::LDS + c] * scale_log2 : -INFINITY;
            mx = fmaxf(mx, x[u]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 1));
        const float m_new = fmaxf(m, mx), base = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2f(m - base);                  /* 0 while the row has seen nothing */
        float sum = 0.0f;
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const float p = exp2f(x[u] - base);
            sum += p;
            pb[r * L::LDP + 2 * u + half] = __float2bfloat16(p);
        }
        sum += __shfl_xor_sync(FULL_MASK, sum, 1);
        l = l * alpha + sum;
        m = m_new;
        __syncwarp();                                         /* p written, s read by all lanes */
        frag_c pv[HD / 16];
#pragma unroll
        for (int n = 0; n < HD / 16; n++) wmma::fill_fragment(pv[n], 0.0f);
        fa_p_times_tile<HD>(pv, pb, tv);                      /* p v */
#pragma unroll
        for (int n = 0; n < HD / 16; n++)
            wmma::store_matrix_sync(s + 16 * n, pv[n], L::LDS, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int u = 0; u < HD / 2; u++) o[u] = o[u] * alpha + s[r * L::LDS + 2 * u + half];
    }
    __syncwarp();                                             /* every lane has read s */
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;             /* a row that saw nothing: 0 */
#pragma unroll
    for (int u = 0; u < HD / 2; u++) s[r * L::LDS + 2 * u + half] = o[u] * inv;
    if (half == 0 && i < Tq)
        lse[((size_t)b * H + h) * Tq + i] = l > 0.0f ? (m + log2f(l)) * FA_LN2 : -INFINITY;
    __syncwarp();
    fa_write_rows<HD>(out + qo, qstride, wi0, Tq, s, 0, vec);
}

/* D[b][h][i] = dout_i . out_i, a warp per row of (B, T, H). */
__global__ void attn_rowdot_kernel(dtype_t t, const void *out, const void *dout, float *D,
                                   size_t rows, int T, int H, int hd) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t h = r % H, bt = r / H, o = r * hd;
    float s = 0.0f;
    for (int c = lane; c < hd; c += 32) s += load(dout, t, o + c) * load(out, t, o + c);
    s = warp_reduce<SUM>(s);
    if (lane == 0) D[((bt / T) * H + h) * T + bt % T] = s;
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_backward_dkdv_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                          const __nv_bfloat16 *dout, const float *lse, const float *D,
                          __nv_bfloat16 *dk, __nv_bfloat16 *dv, int Tq, int Tk, int H, int KV,
                          int off, float scale_log2, float scale, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_dkdv_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tq = (__nv_bfloat16 *)fa_dkdv_smem, *tdo = (__nv_bfloat16 *)(fa_dkdv_smem + L::TILE);
    float *s = (float *)(fa_dkdv_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_dkdv_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    float *lse_s = (float *)(fa_dkdv_smem + L::ROWS), *D_s = lse_s + FA_TILE;
    const int b = blockIdx.z, g = blockIdx.y, group = H / KV;
    const int j0 = blockIdx.x * FA_TILE;             /* the first key tiles have the most queries */
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t ko = ((size_t)b * Tk * KV + g) * HD;
    const int wj0 = j0 + 16 * warp;
    const int r = lane / 2, half = lane % 2, j = wj0 + r;     /* this lane's key, half the queries */

    fa_load_tile<HD>(tq, k + ko, kstride, j0, Tk, vec);       /* k, v pass through the q, dout tiles */
    fa_load_tile<HD>(tdo, v + ko, kstride, j0, Tk, vec);
    __syncthreads();
    frag_a kf[HD / 16], vf[HD / 16];
    frag_c dkacc[HD / 16], dvacc[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        wmma::load_matrix_sync(kf[kk], tq + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::load_matrix_sync(vf[kk], tdo + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::fill_fragment(dkacc[kk], 0.0f);
        wmma::fill_fragment(dvacc[kk], 0.0f);
    }
    /* query i sees key j iff j <= i + off: key j0 is first seen by query j0 - off */
    const int ifirst = max(0, j0 - off);
    for (int hh = 0; hh < group; hh++) {
        const int h = g * group + hh;
        const size_t qo = ((size_t)b * Tq * H + h) * HD, lo = ((size_t)b * H + h) * Tq;
        for (int i0 = ifirst - ifirst % FA_TILE; i0 < Tq; i0 += FA_TILE) {
            __syncthreads();                                  /* the last tiles are read */
            fa_load_tile<HD>(tq, q + qo, qstride, i0, Tq, vec);
            fa_load_tile<HD>(tdo, dout + qo, qstride, i0, Tq, vec);
            for (int c = threadIdx.x; c < FA_TILE; c += blockDim.x) {
                const int i = i0 + c;          /* lse -inf: the row sees no key, no gradient */
                lse_s[c] = i < Tq ? lse[lo + i] * FA_LOG2E : -INFINITY;
                D_s[c] = i < Tq ? D[lo + i] : 0.0f;
            }
            __syncthreads();
            if (wj0 >= Tk || wj0 > min(i0 + FA_TILE, Tq) - 1 + off) continue;   /* unseen keys */
            fa_rows_times_tile_t<HD>(kf, tq, s);              /* s^T = k q^T */
            __syncwarp();
            float p[FA_TILE / 2];
#pragma unroll
            for (int u = 0; u < FA_TILE / 2; u++) {
                const int c = 2 * u + half;
                const bool seen = j < Tk && j <= i0 + c + off && lse_s[c] != -INFINITY;
                p[u] = seen ? exp2f(s[r * L::LDS + c] * scale_log2 - lse_s[c]) : 0.0f;
                pb[r * L::LDP + c] = __float2bfloat16(p[u]);
            }
            __syncwarp();
            fa_p_times_tile<HD>(dvacc, pb, tdo);              /* dv += p^T dout */
            fa_rows_times_tile_t<HD>(vf, tdo, s);             /* dp^T = v dout^T */
            __syncwarp();                                     /* p read by all lanes' loads */
#pragma unroll
            for (int u = 0; u < FA_TILE / 2; u++) {
                const int c = 2 * u + half;
                pb[r * L::LDP + c] = __float2bfloat16(p[u] * (s[r * L::LDS + c] - D_s[c]));
            }
            __syncwarp();
            fa_p_times_tile<HD>(dkacc, pb, tq);               /* dk += ds^T q */
        }
    }
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        for (int e = 0; e < dkacc[n].num_elements; e++) dkacc[n].x[e] *= scale;
    __syncwarp();                                             /* every lane has read s */
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dkacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dk + ko, kstride, wj0, Tk, s, 1, vec);
    __syncwarp();
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dvacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dv + ko, kstride, wj0, Tk, s, 1, vec);
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_backward_dq_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                        const __nv_bfloat16 *dout, const float *lse, const float *D,
                        __nv_bfloat16 *dq, int Tq, int Tk, int H, int KV, int off,
                        float scale_log2, float scale, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_dq_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tk = (__nv_bfloat16 *)fa_dq_smem, *tv = (__nv_bfloat16 *)(fa_dq_smem + L::TILE);
    float *s = (float *)(fa_dq_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_dq_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    const int b = blockIdx.z, h = blockIdx.y, g = h / (H / KV);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * FA_TILE;
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t qo = ((size_t)b * Tq * H + h) * HD, ko = ((size_t)b * Tk * KV + g) * HD;
    const int wi0 = i0 + 16 * warp;
    const int block_keys = visible_keys(min(i0 + FA_TILE, Tq) - 1, Tk, off);
    const int warp_keys = wi0 < Tq ? visible_keys(min(wi0 + 16, Tq) - 1, Tk, off) : 0;
    const int r = lane / 2, half = lane % 2, i = wi0 + r;
    const float lse2 = i < Tq ? lse[((size_t)b * H + h) * Tq + i] * FA_LOG2E : -INFINITY;
    const float Di = i < Tq ? D[((size_t)b * H + h) * Tq + i] : 0.0f;
    const int row_keys = i < Tq && lse2 != -INFINITY ? visible_keys(i, Tk, off) : 0;

    fa_load_tile<HD>(tk, q + qo, qstride, i0, Tq, vec);       /* q, dout pass through the k, v tiles */
    fa_load_tile<HD>(tv, dout + qo, qstride, i0, Tq, vec);
    __syncthreads();
    frag_a qf[HD / 16], dof[HD / 16];
    frag_c dqacc[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        wmma::load_matrix_sync(qf[kk], tk + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::load_matrix_sync(dof[kk], tv + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::fill_fragment(dqacc[kk], 0.0f);
    }
    for (int j0 = 0; j0 < block_keys; j0 += FA_TILE) {
        __syncthreads();
        fa_load_tile<HD>(tk, k + ko, kstride, j0, Tk, vec);
        fa_load_tile<HD>(tv, v + ko, kstride, j0, Tk, vec);
        __syncthreads();
        if (j0 >= warp_keys) continue;
        fa_rows_times_tile_t<HD>(qf, tk, s);                  /* s = q k^T */
        __syncwarp();
        float p[FA_TILE / 2];
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            p[u] = j0 + c < row_keys ? exp2f(s[r * L::LDS + c] * scale_log2 - lse2) : 0.0f;
        }
        __syncwarp();                                         /* s read by all lanes */
        fa_rows_times_tile_t<HD>(dof, tv, s);                 /* dp = dout v^T */
        __syncwarp();
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            pb[r * L::LDP + c] = __float2bfloat16(p[u] * (s[r * L::LDS + c] - Di));
        }
        __syncwarp();
        fa_p_times_tile<HD>(dqacc, pb, tk);                   /* dq += ds k */
    }
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        for (int e = 0; e < dqacc[n].num_elements; e++) dqacc[n].x[e] *= scale;
    __syncwarp();
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dqacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dq + qo, qstride, wi0, Tq, s, 1, vec);
}

/* The head dims the flash kernels are compiled for. */
static int flash_supports(dtype_t t, int hd) {
    return t == DT_BF16 && (hd == 16 || hd == 32 || hd == 64 || hd == 128);
}

template <int HD>
static void flash_forward(const device_t *d, const void *q, const void *k, const void *v, void *out,
                          float *lse, int B, int Tq, int Tk, int H, int KV, int off, int vec) {
    const size_t smem = fa_layout<HD>::BYTES;
    CUDA_CHECK(cudaFuncSetAttribute(attn_forward_flash_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid(ceil_div(Tq, FA_TILE), H, B);
    LAUNCH(attn_forward_flash_kernel<HD>, grid, FA_THREADS, smem, stream_of(d),
           (const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k, (const __nv_bfloat16 *)v,
           (__nv_bfloat16 *)out, lse, Tq, Tk, H, KV, off, FA_LOG2E * (1.0f / sqrtf((float)HD)), vec);
}

template <int HD>
static void flash_backward(const device_t *d, const void *q, const void *k, const void *v,
                           const void *dout, const float *lse, const float *D, void *dq, void *dk,
                           void *dv, int B, int Tq, int Tk, int H, int KV, int off, int vec) {
    const size_t smem = fa_layout<HD>::BYTES;
    const float scale = 1.0f / sqrtf((float)HD), scale_log2 = FA_LOG2E * scale;
    CUDA_CHECK(cudaFuncSetAttribute(attn_backward_dkdv_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_CHECK(cudaFuncSetAttribute(attn_backward_dq_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const __nv_bfloat16 *Q = (const __nv_bfloat16 *)q, *K = (const __nv_bfloat16 *)k;
    const __nv_bfloat16 *V = (const __nv_bfloat16 *)v, *dO = (const __nv_bfloat16 *)dout;
    LAUNCH(attn_backward_dkdv_kernel<HD>, dim3(ceil_div(Tk, FA_TILE), KV, B), FA_THREADS, smem,
           stream_of(d), Q, K, V, dO, lse, D, (__nv_bfloat16 *)dk, (__nv_bfloat16 *)dv, Tq, Tk, H,
           KV, off, scale_log2, scale, vec);
    LAUNCH(attn_backward_dq_kernel<HD>, dim3(ceil_div(Tq, FA_TILE), H, B), FA_THREADS, smem,
           stream_of(d), Q, K, V, dO, lse, D, (__nv_bfloat16 *)dq, Tq, Tk, H, KV, off, scale_log2,
           scale, vec);
}

static void cuda_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k,
                              const void *v, void *out, float *lse, int B, int Tq, int Tk, int H,
                              int KV, int hd, int q_pos0, int k_pos0) {
    if (!flash_supports(t, hd)) {
        attn_forward_simple(d, t, q, k, v, out, lse, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
        return;
    }
    if (B <= 0 || Tq <= 0 || H <= 0) return;
    const int vec = aligned16(q) && aligned16(k) && aligned16(v) && aligned16(out);
    const int off = q_pos0 - k_pos0;
    switch (hd) {
    case 16: flash_forward<16>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    case 32: flash_forward<32>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    case 64: flash_forward<64>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    default: flash_forward<128>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    }
}

static void cuda_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
                               const void *v, const void *out, const void *dout, const float *lse,
                               void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                               int hd, int q_pos0, int k_pos0) {
    if (!flash_supports(t, hd)) {
        attn_backward_simple(d, t, q, k, v, out, dout, lse, dq, dk, dv, B, Tq, Tk, H, KV, hd,
                             q_pos0, k_pos0);
        return;
    }
    if (B <= 0 || Tq <= 0 || Tk <= 0 || H <= 0) return;
    const size_t rows = (size_t)B * Tq * H;
    float *D = scratch(d, rows);                                    /* (B, H, Tq) */
    LAUNCH(attn_rowdot_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, out,
           dout, D, rows, Tq, H, hd);
    const int vec = aligned16(q) && aligned16(k) && aligned16(v) && aligned16(dout) &&
                    aligned16(dq) && aligned16(dk) && aligned16(dv);
    const int off = q_pos0 - k_pos0;
    switch (hd) {
    case 16: flash_backward<16>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    case 32: flash_backward<32>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    case 64: flash_backward<64>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    default: flash_backward<128>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    }
}

/* ---- SwiGLU ------------------------------------------------------------------------ */
/* Element-wise kernels come in one piece: chunks of 8 elements with 16-byte
 * accesses when vec (the host checked every pointer's alignment), and the
 * scalar loop for the rest (all of it when !vec: the simple kernel). */
__device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(dtype_t t, const void *a, const void *b, void *out, size_t n,
                                      int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], u[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, u);
        for (int e = 0; e < 8; e++) x[e] = silu(x[e]) * u[e];
        store8(out, t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(out, t, i, silu(load(a, t, i)) * load(b, t, i));
    }
}

/* da may alias a and db may alias b: each thread reads its elements first. */
__device__ inline void swiglu_grad(float x, float u, float g, float &da, float &db) {
    const float s = 1.0f / (1.0f + expf(-x));
    da = g * u * s * (1.0f + x * (1.0f - s));
    db = g * x * s;
}

__global__ void swiglu_backward_kernel(dtype_t t, const void *a, const void *b, const void *dout,
                                       void *da, void *db, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], u[8], g[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, u);
        load8(dout, t, 8 * c, g);
        for (int e = 0; e < 8; e++) swiglu_grad(x[e], u[e], g[e], x[e], u[e]);
        store8(da, t, 8 * c, x);
        store8(db, t, 8 * c, u);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        float ga, gb;
        swiglu_grad(load(a, t, i), load(b, t, i), load(dout, t, i), ga, gb);
        store(da, t, i, ga);
        store(db, t, i, gb);
    }
}

static void swiglu_forward_any(const device_t *d, dtype_t t, const void *a, const void *b,
                               void *out, size_t n, int fast) {
    const int vec = fast && aligned16(a) && aligned16(b) && aligned16(out);
    LAUNCH(swiglu_forward_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b,
           out, n, vec);
}

static void swiglu_backward_any(const device_t *d, dtype_t t, const void *a, const void *b,
                                const void *dout, void *da, void *db, size_t n, int fast) {
    const int vec = fast && aligned16(a) && aligned16(b) && aligned16(dout) && aligned16(da) &&
                    aligned16(db);
    LAUNCH(swiglu_backward_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b,
           dout, da, db, n, vec);
}

/* ---- cross-entropy -------------------------------------------------------------------- */
/* Simple forward: one block per row, the max, then the sum of exp(x - max):
 * two passes over the row. */
__global__ void xent_forward_kernel(dtype_t t, const void *logits, const int *targets,
                                    float *picked, float *lse, int V, int v0) {
    const int n = blockIdx.x;
    const size_t o = (size_t)n * V;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, load(logits, t, o + j));
    mx = block_reduce<MAX>(mx);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) sum += expf(load(logits, t, o + j) - mx);
    sum = block_reduce<SUM>(sum);
    if (threadIdx.x == 0) {
        const int y = targets[n] - v0;
        lse[n] = mx + logf(sum);
        picked[n] = targets[n] >= 0 && y >= 0 && y < V ? load(logits, t, o + y) : 0.0f;
    }
}

/* Online softmax (Milakov & Gimelshein 2018): a running max m and sum
 * s = sum exp(x - m), rescaled when the max grows, so the row is read once.
 * (m, s) pairs combine the same way: commutative, so every lane of a warp's
 * xor butterfly ends with the same pair. */
__device__ inline void lse_merge(float &m, float &s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;                      /* both empty */
    s = s * expf(m - mn) + s2 * expf(m2 - mn);        /* exp(-inf) = 0 for an empty side */
    m = mn;
}

__device__ void block_reduce_lse(float &m, float &s) {
    __shared__ float pm[32], ps[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int o = 16; o > 0; o /= 2)
        lse_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
    __syncthreads();
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
    }
    __syncthreads();
    m = lane < warps ? pm[lane] : -INFINITY;
    s = lane < warps ? ps[lane] : 0.0f;
    for (int o = 16; o > 0; o /= 2)
        lse_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
}

/* Fast forward: one block per row, one pass (8 logits per 16-byte load when
 * vec: the chunk's max first, then one rescale per chunk). */
__global__ void xent_forward_online_kernel(dtype_t t, const void *logits, const int *targets,
                                           float *picked, float *lse, int V, int v0, int vec) {
    const int n = blockIdx.x;
    const size_t o = (size_t)n * V;
    float m = -INFINITY, s = 0.0f;
    if (vec) {
        for (int c = 8 * threadIdx.x; c < V; c += 8 * blockDim.x) {
            float x[8], cm = -INFINITY, cs = 0.0f;
            load8(logits, t, o + c, x);
            for (int e = 0; e < 8; e++) cm = fmaxf(cm, x[e]);
            if (cm == -INFINITY) continue;
            for (int e = 0; e < 8; e++) cs += expf(x[e] - cm);
            lse_merge(m, s, cm, cs);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            const float x = load(logits, t, o + j);
            if (x != -INFINITY) lse_merge(m, s, x, 1.0f);
        }
    }
    block_reduce_lse(m, s);
    if (threadIdx.x == 0) {
        const int y = targets[n] - v0;
        lse[n] = m + logf(s);
        picked[n] = targets[n] >= 0 && y >= 0 && y < V ? load(logits, t, o + y) : 0.0f;
    }
}

/* Simple backward: element-wise given lse, one thread per logit (a division
 * for the row and a load of its target per element); dlogits may alias
 * logits. */
__global__ void xent_backward_kernel(dtype_t t, const void *logits, const int *targets,
                                     const float *lse, void *dlogits, float scale, int V, int v0,
                                     size_t n) {
    GRID_STRIDE(i, n) {
        const size_t row = i / V;
        const int y = targets[row], j = (int)(i % V);
        float g = 0.0f;                                      /* ignored target: no gradient */
        if (y >= 0) g = (expf(load(logits, t, i) - lse[row]) - (j + v0 == y ? 1.0f : 0.0f)) * scale;
        store(dlogits, t, i, g);
    }
}

/* Fast backward: one block per row, 8 logits per thread step when vec. */
__global__ void xent_backward_row_kernel(dtype_t t, const void *logits, const int *targets,
                                         const float *lse, void *dlogits, float scale, int V,
                                         int v0, int vec) {
    const int n = blockIdx.x, y = targets[n];
    const size_t o = (size_t)n * V;
    const float l = lse[n];
    if (vec) {
        for (int c = 8 * threadIdx.x; c < V; c += 8 * blockDim.x) {
            float x[8];
            load8(logits, t, o + c, x);
            for (int e = 0; e < 8; e++)
                x[e] = y < 0 ? 0.0f : (expf(x[e] - l) - (c + e + v0 == y ? 1.0f : 0.0f)) * scale;
            store8(dlogits, t, o + c, x);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            const float g = y < 0 ? 0.0f : (expf(load(logits, t, o + j) - l) - (j + v0 == y ? 1.0f : 0.0f)) * scale;
            store(dlogits, t, o + j, g);
        }
    }
}

static void xent_forward_simple(const device_t *d, dtype_t t, const void *logits,
                                const int *targets, float *picked, float *lse, int N, int V, int v0) {
    if (N <= 0) return;
    LAUNCH(xent_forward_kernel, N, row_threads(V), 0, stream_of(d), t, logits, targets, picked,
           lse, V, v0);
}

static void cuda_xent_forward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                              float *picked, float *lse, int N, int V, int v0) {
    if (N <= 0) return;
    const int vec = V % 8 == 0 && aligned16(logits);
    LAUNCH(xent_forward_online_kernel, N, row_threads(vec ? V / 8 : V), 0, stream_of(d), t, logits,
           targets, picked, lse, V, v0, vec);
}

static void xent_backward_simple(const device_t *d, dtype_t t, const void *logits,
                                 const int *targets, const float *lse, void *dlogits, float scale,
                                 int N, int V, int v0) {
    const size_t n = (size_t)N * V;
    if (n == 0) return;
    LAUNCH(xent_backward_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, logits, targets, lse,
           dlogits, scale, V, v0, n);
}

static void cuda_xent_backward(const device_t *d, dtype_t t, const void *logits,
                               const int *targets, const float *lse, void *dlogits, float scale,
                               int N, int V, int v0) {
    if (N <= 0 || V <= 0) return;
    const int vec = V % 8 == 0 && aligned16(logits) && aligned16(dlogits);
    LAUNCH(xent_backward_row_kernel, N, row_threads(vec ? V / 8 : V), 0, stream_of(d), t, logits,
           targets, lse, dlogits, scale, V, v0, vec);
}

/* One thread per row over the P shards' lse (P is the tensor-parallel degree:
 * a handful). */
__global__ void lse_combine_kernel(const float *parts, float *out, int P, int N) {
    GRID_STRIDE(n, (size_t)N) {
        float mx = -INFINITY;
        for (int p = 0; p < P; p++) mx = fmaxf(mx, parts[(size_t)p * N + n]);
        float s = 0.0f;
        if (mx != -INFINITY)
            for (int p = 0; p < P; p++) s += expf(parts[(size_t)p * N + n] - mx);
        out[n] = mx == -INFINITY ? -INFINITY : mx + logf(s);
    }
}

static void cuda_lse_combine(const device_t *d, const float *parts, float *out, int P, int N) {
    if (N <= 0) return;
    LAUNCH(lse_combine_kernel, stride_grid((size_t)N), THREADS, 0, stream_of(d), parts, out, P, N);
}

/* ---- element-wise and reductions ---------------------------------------------------- */
__global__ void add_kernel(dtype_t t, const void *a, const void *b, void *out, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], y[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, y);
        for (int e = 0; e < 8; e++) x[e] += y[e];
        store8(out, t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(out, t, i, load(a, t, i) + load(b, t, i));
    }
}

__global__ void cast_kernel(const void *src, dtype_t src_t, void *dst, dtype_t dst_t, size_t n,
                            int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8];
        load8(src, src_t, 8 * c, x);
        store8(dst, dst_t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(dst, dst_t, i, load(src, src_t, i));
    }
}

__global__ void scale_kernel(dtype_t t, void *x, float s, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float v[8];
        load8(x, t, 8 * c, v);
        for (int e = 0; e < 8; e++) v[e] *= s;
        store8(x, t, 8 * c, v);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(x, t, i, load(x, t, i) * s);
    }
}

/* Each block's fp32 sum of squares into part[blockIdx.x]. */
__global__ void sumsq_kernel(dtype_t t, const void *x, size_t n, float *part) {
    float s = 0.0f;
    GRID_STRIDE(i, n) {
        float v = load(x, t, i);
        s += v * v;
    }
    s = block_reduce<SUM>(s);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

static void add_any(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                    size_t n, int fast) {
    const int vec = fast && aligned16(a) && aligned16(b) && aligned16(out);
    LAUNCH(add_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b, out, n, vec);
}

static void cast_any(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
                     size_t n, int fast) {
    if (src_t == dst_t) {                       /* a copy, bit for bit */
        if (dst != src && n > 0)
            CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(src_t), cudaMemcpyDeviceToDevice,
                                       stream_of(d)));
        return;
    }
    const int vec = fast && aligned16(src) && aligned16(dst);
    LAUNCH(cast_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), src, src_t, dst,
           dst_t, n, vec);
}

static void scale_any(const device_t *d, dtype_t t, void *x, float s, size_t n, int fast) {
    const int vec = fast && aligned16(x);
    LAUNCH(scale_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, x, s, n, vec);
}

/* The block count depends on n only, so the partial sums, and their total
 * in double on the host in block order, are the same on every run. */
static double cuda_sumsq(const device_t *d, dtype_t t, const void *x, size_t n) {
    static float host[1024];                         /* stride_grid() gives at most 1024 */
    const unsigned int blocks = stride_grid(n);
    float *part = scratch(d, blocks);
    LAUNCH(sumsq_kernel, blocks, THREADS, 0, stream_of(d), t, x, n, part);
    CUDA_CHECK(cudaMemcpyAsync(host, part, blocks * sizeof(float), cudaMemcpyDeviceToHost,
                               stream_of(d)));
    CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
    double sum = 0.0;
    for (unsigned int b = 0; b < blocks; b++) sum += host[b];
    return sum;
}

/* ---- AdamW ------------------------------------------------------------------------------ */
/* One parameter's update; c1, c2: the bias corrections; decay = 1 - lr * wd. */
__device__ inline float adamw_one(float &p, float &mi, float &vi, float g, float lr, float beta1,
                                  float beta2, float eps, float decay, float c1, float c2) {
    mi = beta1 * mi + (1.0f - beta1) * g;
    vi = beta2 * vi + (1.0f - beta2) * g * g;
    p = p * decay;
    p = p - lr * (mi / c1) / (sqrtf(vi / c2) + eps);
    return p;
}

/* 32 bytes read and 12 to 16 written per parameter: float4 accesses (4
 * parameters) when vec, the scalar loop for the rest. */
__global__ void adamw_kernel(float *master, float *m, float *v, const float *grad, void *working,
                             dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                             float eps, float decay, float grad_scale, float c1, float c2, int vec) {
    const size_t n4 = vec ? n / 4 : 0;
    GRID_STRIDE(c, n4) {
        float4 p = reinterpret_cast<float4 *>(master)[c], mi = reinterpret_cast<float4 *>(m)[c];
        float4 vi = reinterpret_cast<float4 *>(v)[c];
        const float4 g = reinterpret_cast<const float4 *>(grad)[c];
        adamw_one(p.x, mi.x, vi.x, g.x * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.y, mi.y, vi.y, g.y * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.z, mi.z, vi.z, g.z * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.w, mi.w, vi.w, g.w * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        reinterpret_cast<float4 *>(master)[c] = p;
        reinterpret_cast<float4 *>(m)[c] = mi;
        reinterpret_cast<float4 *>(v)[c] = vi;
        if (working && working_t == DT_BF16)
            reinterpret_cast<uint2 *>(working)[c] = make_uint2(bf16x2_pack(p.x, p.y), bf16x2_pack(p.z, p.w));
        else if (working)
            reinterpret_cast<float4 *>(working)[c] = p;
    }
    GRID_STRIDE(j, n - 4 * n4) {
        const size_t i = 4 * n4 + j;
        float p = master[i], mi = m[i], vi = v[i];
        adamw_one(p, mi, vi, grad[i] * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        m[i] = mi;
        v[i] = vi;
        master[i] = p;
        if (working) store(working, working_t, i, p);
    }
}

static void adamw_any(const device_t *d, float *master, float *m, float *v, const float *grad,
                      void *working, dtype_t working_t, size_t n, float lr, float beta1,
                      float beta2, float eps, float wd, float grad_scale, int step, int fast) {
    const float c1 = (float)(1.0 - pow((double)beta1, step));
    const float c2 = (float)(1.0 - pow((double)beta2, step));
    const int vec = fast && aligned16(master) && aligned16(m) && aligned16(v) && aligned16(grad) &&
                    (!working || aligned16(working));
    LAUNCH(adamw_kernel, stride_grid(vec ? n / 4 : n), THREADS, 0, stream_of(d), master, m, v, grad,
           working, working_t, n, lr, beta1, beta2, eps, 1.0f - lr * wd, grad_scale, c1, c2, vec);
}

/* ---- the two tables ---------------------------------------------------------------------- */
static void cuda_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b,
                                void *out, size_t n) {
    swiglu_forward_any(d, t, a, b, out, n, 1);
}
static void cuda_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                                 const void *dout, void *da, void *db, size_t n) {
    swiglu_backward_any(d, t, a, b, dout, da, db, n, 1);
}
static void cuda_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                     size_t n) {
    add_any(d, t, a, b, out, n, 1);
}
static void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
                      size_t n) {
    cast_any(d, src, src_t, dst, dst_t, n, 1);
}
static void cuda_scale(const device_t *d, dtype_t t, void *x, float s, size_t n) {
    scale_any(d, t, x, s, n, 1);
}
static void cuda_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
                       void *working, dtype_t working_t, size_t n, float lr, float beta1,
                       float beta2, float eps, float wd, float grad_scale, int step) {
    adamw_any(d, master, m, v, grad, working, working_t, n, lr, beta1, beta2, eps, wd, grad_scale,
              step, 1);
}

static void swiglu_forward_simple(const device_t *d, dtype_t t, const void *a, const void *b,
                                  void *out, size_t n) {
    swiglu_forward_any(d, t, a, b, out, n, 0);
}
static void swiglu_backward_simple(const device_t *d, dtype_t t, const void *a, const void *b,
                                   const void *dout, void *da, void *db, size_t n) {
    swiglu_backward_any(d, t, a, b, dout, da, db, n, 0);
}
static void add_simple(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                       size_t n) {
    add_any(d, t, a, b, out, n, 0);
}
static void cast_simple(const device_t *d, const void *src, dtype_t src_t, void *dst,
                        dtype_t dst_t, size_t n) {
    cast_any(d, src, src_t, dst, dst_t, n, 0);
}
static void scale_simple(const device_t *d, dtype_t t, void *x, float s, size_t n) {
    scale_any(d, t, x, s, n, 0);
}
static void adamw_simple(const device_t *d, float *master, float *m, float *v, const float *grad,
                         void *working, dtype_t working_t, size_t n, float lr, float beta1,
                         float beta2, float eps, float wd, float grad_scale, int step) {
    adamw_any(d, master, m, v, grad, working, working_t, n, lr, beta1, beta2, eps, wd, grad_scale,
              step, 0);
}

/* Positional: the members of ops_t in the order ops.h declares them. */
extern "C" const ops_t ops_cuda = {
    cuda_matmul,
    cuda_embedding_forward,
    cuda_embedding_backward,
    cuda_rmsnorm_forward,
    cuda_rmsnorm_backward,
    cuda_rope,
    cuda_attn_forward,
    cuda_attn_merge,
    cuda_attn_backward,
    cuda_swiglu_forward,
    cuda_swiglu_backward,
    cuda_xent_forward,
    cuda_xent_backward,
    cuda_lse_combine,
    cuda_add,
    cuda_cast,
    cuda_scale,
    cuda_sumsq,
    cuda_adamw,
};

/* The simple kernels the fast ones replaced, same semantics: for tests and
 * tests/bench_ops.c (declared where they use it; ops.h names one backend per
 * device). */
extern "C" const ops_t ops_cuda_simple = {
    cuda_matmul,
    embedding_forward_simple,
    embedding_backward_simple,
    rmsnorm_forward_simple,
    rmsnorm_backward_simple,
    rope_simple,
    attn_forward_simple,
    cuda_attn_merge,
    attn_backward_simple,
    swiglu_forward_simple,
    swiglu_backward_simple,
    xent_forward_simple,
    xent_backward_simple,
    cuda_lse_combine,
    add_simple,
    cast_simple,
    scale_simple,
    cuda_sumsq,
    adamw_simple,
};
