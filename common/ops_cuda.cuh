/* ops_cuda.cuh: what the files of the CUDA backend share (ops_cuda.cu has
 * the overview and the tables; one ops_cuda_<kind>.cu per kind of layer).
 *
 * Launch shapes (THREADS, GRID_STRIDE, stride_grid, row_threads), the
 * storage helpers load()/store() (one element) and load8()/store8() (eight,
 * with 16-byte accesses), warp and block reductions, the scratch buffer and
 * cuBLAS's gemm, and the entry points the tables name.
 *
 * An op with a fast and a simple kernel has one entry point, a template over
 * FAST: <1> runs the fast kernels (with the scalar or simple path where the
 * shapes or pointers rule them out), <0> the simple kernels they replaced.
 * The file that defines an entry point compiles both (OPS_CUDA_VARIANTS);
 * ops_cuda.cu puts <1> in ops_cuda and <0> in ops_cuda_simple. */
#ifndef OPS_CUDA_CUH
#define OPS_CUDA_CUH

#include "cuda_common.cuh"

#include <math.h>
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
static inline unsigned int stride_grid(size_t n) {
    unsigned int g = ceil_div(n, THREADS);
    return g < 1 ? 1 : g > 1024 ? 1024 : g;
}

/* Threads for a block that owns one row of n elements: whole warps, enough
 * for one element each up to THREADS (short rows leave no thread idle). */
static inline unsigned int row_threads(int n) {
    unsigned int t = 32 * ceil_div(n > 0 ? n : 1, 32);
    return t < THREADS ? t : THREADS;
}

static inline cudaStream_t stream_of(const device_t *d) { return (cudaStream_t)d->stream; }

/* 16-byte accesses need 16-byte aligned addresses: buffers from cudaMalloc
 * are, but a caller may pass a pointer into the middle of one. */
static inline int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ---- storage ---------------------------------------------------------------- */
/* The device twins of dtype_get()/dtype_set(): the storage type is a kernel
 * argument (uniform across a launch, so the branch costs nothing next to the
 * memory traffic), and all arithmetic is fp32. */
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

/* ---- shared state and cuBLAS ---------------------------------------------------- */
/* n floats of the backend's one scratch buffer (ops_cuda.cu). */
float *scratch(const device_t *d, size_t n);

/* Row-major products through cuBLAS, `batch` of them stride_a/b/c elements
 * apart (ops_cuda_matmul.cu). */
void gemm(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
          const void *A, int lda, long long stride_a, const void *B, int ldb, long long stride_b,
          dtype_t ab_t, float beta, void *C, int ldc, long long stride_c, dtype_t c_t, int batch);

/* ---- entry points: the members of ops_t, by file ---------------------------------- */
/* Compiles an entry point's two variants in the file that defines it. */
#define OPS_CUDA_VARIANTS(fn) template decltype(fn<0>) fn<0>; template decltype(fn<1>) fn<1>

/* ops_cuda_matmul.cu */
void cuda_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
                 const void *A, int lda, const void *B, int ldb, dtype_t ab_t, float beta, void *C,
                 int ldc, dtype_t c_t);

/* ops_cuda_embedding.cu */
template <int FAST>
void cuda_embedding_forward(const device_t *d, dtype_t t, const int *tokens, const void *table,
                            void *out, int N, int C, int v0, int Vs);
template <int FAST>
void cuda_embedding_backward(const device_t *d, dtype_t t, const int *tokens, const void *dout,
                             float *dtable, int N, int C, int v0, int Vs);

/* ops_cuda_rmsnorm.cu */
template <int FAST>
void cuda_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                          float *rstd, int N, int C, float eps);
template <int FAST>
void cuda_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                           const float *rstd, const void *dy, const void *dres, void *dx,
                           float *dw, int N, int C);

/* ops_cuda_rope.cu */
template <int FAST>
void cuda_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H, int hd,
               int pos0, int inverse);

/* ops_cuda_attention.cu */
template <int FAST>
void cuda_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k, const void *v,
                       void *out, float *lse, int B, int Tq, int Tk, int H, int KV, int hd,
                       int q_pos0, int k_pos0);
void cuda_attn_merge(const device_t *d, dtype_t t, void *out, float *lse, const void *out_b,
                     const float *lse_b, int B, int T, int H, int hd);
template <int FAST>
void cuda_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k, const void *v,
                        const void *out, const void *dout, const float *lse, void *dq, void *dk,
                        void *dv, int B, int Tq, int Tk, int H, int KV, int hd, int q_pos0,
                        int k_pos0);

/* ops_cuda_elementwise.cu */
template <int FAST>
void cuda_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                         size_t n);
template <int FAST>
void cuda_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                          const void *dout, void *da, void *db, size_t n);
template <int FAST>
void cuda_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n);
template <int FAST>
void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
               size_t n);
template <int FAST>
void cuda_scale(const device_t *d, dtype_t t, void *x, float s, size_t n);
double cuda_sumsq(const device_t *d, dtype_t t, const void *x, size_t n);
void cuda_block_encode(const device_t *d, int sign, const float *x, size_t n, void *out);
void cuda_block_decode_add(const device_t *d, int sign, const void *in, size_t n, float alpha, float *acc);
void cuda_topk_encode(const device_t *d, const float *x, size_t n, size_t k, void *out);
void cuda_topk_decode_add(const device_t *d, const void *in, size_t k, float alpha, float *acc);
void cuda_orthonormalise(const device_t *d, float *a, size_t rows, int R);

/* ops_cuda_xent.cu */
template <int FAST>
void cuda_xent_forward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                       float *picked, float *lse, int N, int V, int v0);
template <int FAST>
void cuda_xent_backward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                        const float *lse, void *dlogits, float scale, int N, int V, int v0);
void cuda_lse_combine(const device_t *d, const float *parts, float *out, int P, int N);

/* ops_cuda_adamw.cu */
template <int FAST>
void cuda_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
                void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                float eps, float wd, float grad_scale, int step);

#endif
