/* ops_cuda.cu: the CUDA backend of ops.h.
 *
 * Matrix products go to cuBLAS (GemmEx: bf16 or fp32 operands, fp32
 * accumulation); everything else is a plain CUDA kernel on d->stream, one per
 * op where possible. Kernels read and write bf16 or fp32 storage through
 * load()/store(), the device twins of dtype_get()/dtype_set(): the storage
 * type is a kernel argument (uniform across a launch, so the branch costs
 * nothing next to the memory traffic), and all arithmetic is fp32.
 *
 * Determinism: no atomics. Every sum runs in an order fixed by the shapes
 * alone (warp shuffles in a fixed pattern, then the warps in order; per-column
 * sums over rows in order), so one input gives one result, run after run.
 *
 * Attention follows the CPU backend's plan: bf16 inputs are widened to fp32
 * copies, and per query head one strided-batched GEMM (over the B sequences)
 * forms the (Tq, Tk) scores, a row kernel applies the causal mask and the
 * softmax, and further GEMMs finish. The scores and probabilities stay fp32,
 * so a bf16 result is rounded once, as ops.h requires; the full square is
 * computed (masked entries are multiplied and then zeroed), which is simple
 * rather than fast: a fused flash-attention kernel is the fast path. */
#include "cuda_common.cuh"

#include <math.h>

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

/* ---- storage ---------------------------------------------------------------- */
__device__ inline float load(const void *p, dtype_t t, size_t i) {
    return t == DT_BF16 ? __bfloat162float(((const __nv_bfloat16 *)p)[i]) : ((const float *)p)[i];
}

__device__ inline void store(void *p, dtype_t t, size_t i, float v) {
    if (t == DT_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16(v);   /* nearest even */
    else ((float *)p)[i] = v;
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
 * gradient and sumsq. Every op runs on d->stream, so an op that reuses it is
 * ordered after the last one that did. It grows and never shrinks; growing
 * first waits for queued work that may still read the old buffer, which
 * happens in the first steps of a run only. (A rank drives one GPU.) */
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

static void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst,
                      dtype_t dst_t, size_t n);

/* An fp32 view of n elements of type t: p itself for fp32, else the next n
 * floats of scratch at *next, filled with p widened when `copy`. */
static float *f32_view(const device_t *d, const void *p, dtype_t t, size_t n, float **next,
                       int copy) {
    if (t == DT_F32) return (float *)p;
    float *f = *next;
    *next += n;
    if (copy) cuda_cast(d, p, t, f, DT_F32, n);
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
                            float alpha, const void *A, int lda, const void *B, int ldb,
                            dtype_t ab_t, float beta, void *C, int ldc, dtype_t c_t) {
    if (M <= 0 || N <= 0) return;
    gemm(d, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, ab_t, beta, C, ldc, 0, c_t, 1);
}

/* ---- embedding ---------------------------------------------------------------- */
__global__ void embedding_forward_kernel(dtype_t t, const int *tokens, const void *table,
                                         void *out, int N, int C, int v0, int Vs) {
    GRID_STRIDE(i, (size_t)N * C) {
        size_t n = i / C, c = i % C;
        int v = tokens[n] - v0;   /* another shard's token gives a zero row */
        store(out, t, i, v >= 0 && v < Vs ? load(table, t, (size_t)v * C + c) : 0.0f);
    }
}

/* One thread per channel walks the tokens in order n = 0..N-1: repeated
 * tokens sum in a fixed order without atomics. Parallel over C only, which
 * is enough for one small op per step. */
__global__ void embedding_backward_kernel(dtype_t t, const int *tokens, const void *dout,
                                          float *dtable, int N, int C, int v0, int Vs) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int n = 0; n < N; n++) {
        int v = tokens[n] - v0;
        if (v >= 0 && v < Vs) dtable[(size_t)v * C + c] += load(dout, t, (size_t)n * C + c);
    }
}

static void cuda_embedding_forward(const device_t *d, dtype_t t, const int *tokens,
                                   const void *table, void *out, int N, int C, int v0, int Vs) {
    LAUNCH(embedding_forward_kernel, stride_grid((size_t)N * C), THREADS, 0, stream_of(d), t,
           tokens, table, out, N, C, v0, Vs);
}

static void cuda_embedding_backward(const device_t *d, dtype_t t, const int *tokens,
                                    const void *dout, float *dtable, int N, int C, int v0, int Vs) {
    if (C <= 0) return;
    LAUNCH(embedding_backward_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), t, tokens,
           dout, dtable, N, C, v0, Vs);
}

/* ---- RMSNorm ------------------------------------------------------------------ */
/* One block per row. */
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

/* Block b handles rows [b*rows, min(N, (b+1)*rows)) in order: dx for each
 * row, and the partial sum of dy * xhat over its rows into part[b][c] (each
 * column is owned by one thread, so the running sum needs no atomics).
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

static void cuda_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w,
                                     void *y, float *rstd, int N, int C, float eps) {
    if (N <= 0) return;
    LAUNCH(rmsnorm_forward_kernel, N, row_threads(C), 0, stream_of(d), t, x, w, y, rstd, C, eps);
}

static void cuda_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                                      const float *rstd, const void *dy, const void *dres,
                                      void *dx, float *dw, int N, int C) {
    if (N <= 0 || C <= 0) return;
    /* at most 256 blocks of whole rows, none empty */
    const int rows = (int)ceil_div(N, 256), blocks = (int)ceil_div(N, rows);
    float *part = scratch(d, (size_t)blocks * C);                   /* (blocks, C) */
    LAUNCH(rmsnorm_backward_kernel, blocks, row_threads(C), 0, stream_of(d), t, x, w, rstd, dy,
           dres, dx, part, N, C, rows);
    LAUNCH(column_sum_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), part, dw, blocks, C);
}

/* ---- RoPE ----------------------------------------------------------------------- */
/* One thread per adjacent pair (2i, 2i+1); pair p of the flat (B, T, H, hd/2)
 * view sits at elements 2p and 2p+1. */
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

static void cuda_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T,
                          int H, int hd, int pos0, int inverse) {
    size_t pairs = (size_t)B * T * H * (hd / 2);
    LAUNCH(rope_kernel, stride_grid(pairs), THREADS, 0, stream_of(d), t, x, cs, pairs, T, H, hd,
           pos0, inverse ? -1.0f : 1.0f);
}

/* ---- attention -------------------------------------------------------------------- */
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

static void cuda_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k,
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
    if (t != DT_F32) cuda_cast(d, O, DT_F32, out, t, nq);
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
                                const void *out_b, const float *lse_b, int B, int T, int H,
                                int hd) {
    const size_t rows = (size_t)B * T * H;
    if (rows == 0) return;
    LAUNCH(attn_merge_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, out, lse,
           out_b, lse_b, rows, T, H, hd);
}

static void cuda_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
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
        cuda_cast(d, dQ, DT_F32, dq, t, nq);
        cuda_cast(d, dK, DT_F32, dk, t, nkv);
        cuda_cast(d, dV, DT_F32, dv, t, nkv);
    }
}

/* ---- SwiGLU ------------------------------------------------------------------------ */
__global__ void swiglu_forward_kernel(dtype_t t, const void *a, const void *b, void *out,
                                      size_t n) {
    GRID_STRIDE(i, n) {
        float x = load(a, t, i);
        store(out, t, i, x / (1.0f + expf(-x)) * load(b, t, i));
    }
}

/* da may alias a and db may alias b: each thread reads its element first. */
__global__ void swiglu_backward_kernel(dtype_t t, const void *a, const void *b, const void *dout,
                                       void *da, void *db, size_t n) {
    GRID_STRIDE(i, n) {
        float x = load(a, t, i), u = load(b, t, i), g = load(dout, t, i);
        float s = 1.0f / (1.0f + expf(-x));
        store(da, t, i, g * u * s * (1.0f + x * (1.0f - s)));
        store(db, t, i, g * x * s);
    }
}

static void cuda_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b,
                                    void *out, size_t n) {
    LAUNCH(swiglu_forward_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, a, b, out, n);
}

static void cuda_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                                     const void *dout, void *da, void *db, size_t n) {
    LAUNCH(swiglu_backward_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, a, b, dout, da, db,
           n);
}

/* ---- cross-entropy -------------------------------------------------------------------- */
/* One block per row: max, then the sum of exp(x - max), both over V. */
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

/* Element-wise given lse; dlogits may alias logits. */
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

static void cuda_xent_forward(const device_t *d, dtype_t t, const void *logits,
                              const int *targets, float *picked, float *lse, int N, int V, int v0) {
    if (N <= 0) return;
    LAUNCH(xent_forward_kernel, N, row_threads(V), 0, stream_of(d), t, logits, targets, picked,
           lse, V, v0);
}

static void cuda_xent_backward(const device_t *d, dtype_t t, const void *logits,
                               const int *targets, const float *lse, void *dlogits, float scale,
                               int N, int V, int v0) {
    const size_t n = (size_t)N * V;
    LAUNCH(xent_backward_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, logits, targets, lse,
           dlogits, scale, V, v0, n);
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
__global__ void add_kernel(dtype_t t, const void *a, const void *b, void *out, size_t n) {
    GRID_STRIDE(i, n) store(out, t, i, load(a, t, i) + load(b, t, i));
}

__global__ void cast_kernel(const void *src, dtype_t src_t, void *dst, dtype_t dst_t, size_t n) {
    GRID_STRIDE(i, n) store(dst, dst_t, i, load(src, src_t, i));
}

__global__ void scale_kernel(dtype_t t, void *x, float s, size_t n) {
    GRID_STRIDE(i, n) store(x, t, i, load(x, t, i) * s);
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

static void cuda_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                         size_t n) {
    LAUNCH(add_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, a, b, out, n);
}

static void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst,
                          dtype_t dst_t, size_t n) {
    if (src_t == dst_t) {                       /* a copy, bit for bit */
        if (dst != src && n > 0)
            CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(src_t), cudaMemcpyDeviceToDevice,
                                       stream_of(d)));
        return;
    }
    LAUNCH(cast_kernel, stride_grid(n), THREADS, 0, stream_of(d), src, src_t, dst, dst_t, n);
}

static void cuda_scale(const device_t *d, dtype_t t, void *x, float s, size_t n) {
    LAUNCH(scale_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, x, s, n);
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
/* c1, c2: the bias corrections; decay = 1 - lr * wd. */
__global__ void adamw_kernel(float *master, float *m, float *v, const float *grad, void *working,
                             dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                             float eps, float decay, float grad_scale, float c1, float c2) {
    GRID_STRIDE(i, n) {
        float g = grad[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        float p = master[i] * decay;
        p = p - lr * (mi / c1) / (sqrtf(vi / c2) + eps);
        m[i] = mi;
        v[i] = vi;
        master[i] = p;
        if (working) store(working, working_t, i, p);
    }
}

static void cuda_adamw(const device_t *d, float *master, float *m, float *v,
                           const float *grad, void *working, dtype_t working_t, size_t n,
                           float lr, float beta1, float beta2, float eps, float wd,
                           float grad_scale, int step) {
    const float c1 = (float)(1.0 - pow((double)beta1, step));
    const float c2 = (float)(1.0 - pow((double)beta2, step));
    LAUNCH(adamw_kernel, stride_grid(n), THREADS, 0, stream_of(d), master, m, v, grad, working,
           working_t, n, lr, beta1, beta2, eps, 1.0f - lr * wd, grad_scale, c1, c2);
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
